"""Which workload a running pod belongs to, and how many replicas it wants.

With OWNERS (the ReplicaSets, Deployments, StatefulSets, DaemonSets and Jobs of the
cluster, as raw objects), a pod's controller ownerReference is followed: a ReplicaSet
owned by a Deployment counts under the Deployment. Without them (the controller's
informers hold no ReplicaSets), a ReplicaSet whose name is ``<name>-<pod-template-hash>``
(the pod's ``pod-template-hash`` label) counts as Deployment ``<name>``. A pod with no
controller is its own workload (kind ``Pod``).
"""
from collections.abc import Mapping
from typing import Any

OWNER_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job")
# What is read of an owner (``objects.pruning``'s kept-fields table): the chain and the scale.
FIELDS = {"metadata": ("name", "namespace", "ownerReferences", "resourceVersion"),
          "spec": ("selector", "replicas", "parallelism"),
          "status": ("desiredNumberScheduled",)}


def controller_ref(meta):
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref.get("kind") or "", ref.get("name") or ""
    return None


def index_owners(objs):
    """{(namespace, kind, name): raw object} of OBJS (owner kinds only)."""
    out = {}
    for o in objs:
        meta = o.get("metadata") or {}
        if o.get("kind") in OWNER_KINDS:
            out[(meta.get("namespace") or "default", o["kind"], meta.get("name") or "")] = o
    return out


def workload_of(meta: Mapping[str, Any],
                owners: Mapping[tuple[str, str, str], Mapping[str, Any]] | None = None
                ) -> tuple[str, str]:
    """(kind, name) of the workload the pod with metadata META belongs to."""
    ns = meta.get("namespace") or "default"
    ref = controller_ref(meta)
    if ref is None:
        return "Pod", meta.get("name") or ""
    kind, name = ref
    if kind != "ReplicaSet":
        return kind, name
    rs = owners.get((ns, "ReplicaSet", name)) if owners is not None else None
    if rs is not None:
        up = controller_ref(rs.get("metadata") or {})
        return ("Deployment", up[1]) if up and up[0] == "Deployment" else (kind, name)
    h = (meta.get("labels") or {}).get("pod-template-hash")
    if h and name.endswith("-" + h) and len(name) > len(h) + 1:
        return "Deployment", name[:-len(h) - 1]
    return kind, name


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else None


def desired(owners, namespace, kind, name, running):
    """(desired replicas, where it comes from): the owner's spec.replicas (DaemonSet:
    status.desiredNumberScheduled; Job: spec.parallelism), else the running count."""
    o = owners.get((namespace, kind, name)) if owners is not None else None
    if o is not None:
        spec, status = o.get("spec") or {}, o.get("status") or {}
        if kind == "DaemonSet":
            n = _int(status.get("desiredNumberScheduled"))
            if n is not None:
                return n, "status.desiredNumberScheduled"
        elif kind == "Job":
            n = _int(spec.get("parallelism"))
            return (1 if n is None else n), "spec.parallelism"
        else:
            n = spec.get("replicas", 1)
            if _int(n) is not None:
                return n, "spec.replicas"
    return running, "running"
