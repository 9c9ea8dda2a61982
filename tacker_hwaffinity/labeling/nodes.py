"""The planner's KubeNode of a Kubernetes Node object: the one reading of a node's name,
labels, InternalIPs, spec.providerID and host-unknown taint, for the MgmtDriver (kubectl's
JSON), the controller (its informer) and ``hwaffinity audit --openstack`` (snapshot or
API)."""
from typing import Any

from tacker_hwaffinity.constants import CONTROL_PLANE_TAINTS, HOST_UNKNOWN_TAINT
from tacker_hwaffinity.labeling import provider_id
from tacker_hwaffinity.labeling.plan import KubeNode


class NodeObjectError(ValueError):
    """A Node object without what every node has (a metadata.name)."""


def kube_node(obj: Any) -> KubeNode:
    """The KubeNode of OBJ (a Node as a dict); NodeObjectError when it has no name."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise NodeObjectError("a node without metadata.name")
    spec, status = obj.get("spec"), obj.get("status")
    addresses = status.get("addresses") if isinstance(status, dict) else None
    ips = [a["address"] for a in addresses or () if isinstance(a, dict)
           and a.get("type") == "InternalIP" and isinstance(a.get("address"), str)
           and a.get("address")]
    labels = meta.get("labels")
    taints = spec.get("taints") if isinstance(spec, dict) else None
    return KubeNode(meta["name"], ips, labels if isinstance(labels, dict) else {},
                    provider_id.parse(spec.get("providerID") if isinstance(spec, dict)
                                      else None), host_unknown=carries_host_unknown(taints))


def carries_host_unknown(taints: Any) -> bool:
    """Do TAINTS (a node's spec.taints, as read) hold ``HOST_UNKNOWN_TAINT``?"""
    return isinstance(taints, list) and any(
        isinstance(t, dict) and t.get("key") == HOST_UNKNOWN_TAINT for t in taints)


def carries_control_plane(taints: Any) -> bool:
    """Do TAINTS (a node's spec.taints, as read) hold one of kubeadm's control-plane taints
    (``CONTROL_PLANE_TAINTS``)? The node-registration webhook and the controller leave such
    a node without the host-unknown taint."""
    return isinstance(taints, list) and any(
        isinstance(t, dict) and t.get("key") in CONTROL_PLANE_TAINTS for t in taints)
