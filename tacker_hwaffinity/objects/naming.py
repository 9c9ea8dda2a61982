"""How an object is named in messages: 'Kind namespace/name', with the namespace
Kubernetes gives an object that names none (cluster-scoped kinds have none)."""
from collections.abc import Mapping
from typing import Any

DEFAULT_NAMESPACE = "default"
CLUSTER_SCOPED_KINDS = frozenset(("Node", "Namespace", "ClusterRole", "ClusterRoleBinding",
                                  "PersistentVolume", "StorageClass", "PriorityClass",
                                  "CustomResourceDefinition", "KubeSchedulerConfiguration",
                                  "object", "List"))


def object_label(obj: Mapping[str, Any]) -> str:
    """'Kind namespace/name' for messages, from whatever the object has."""
    kind = obj.get("kind") if isinstance(obj.get("kind"), str) else "object"
    metadata = obj.get("metadata")
    meta = metadata if isinstance(metadata, dict) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else "<unnamed>"
    ns = meta.get("namespace") if isinstance(meta.get("namespace"), str) else None
    if not ns and kind not in CLUSTER_SCOPED_KINDS:
        ns = DEFAULT_NAMESPACE
    return "%s %s" % (kind, "%s/%s" % (ns, name) if ns else name)
