"""What the DaemonSet controller makes of its pod template (kubernetes'
pkg/controller/daemon): the tolerations it adds to every daemon pod
(``AddOrUpdateDaemonPodTolerations``), the nodes it runs one pod on
(``NodeShouldRunDaemonPod``: the template's node name, node selector and required node
affinity match the node, and its NoSchedule and NoExecute taints are tolerated), and the
node affinity that pins each pod to its node (``ReplaceDaemonSetPodNodeNameNodeAffinity``:
the required terms replaced by ``matchFields metadata.name In [node]``). kube-scheduler
then places each pod as it places any: its requests count, and one that does not fit
its node stays pending with the scheduler's reasons.
"""
import re
from collections.abc import Iterable, Mapping
from typing import Any

from tacker_hwaffinity.scheduling.model import Node, PodSpecInfo, tolerates

# AddOrUpdateDaemonPodTolerations: every daemon pod tolerates these (NoExecute ones, so
# that node problems do not evict it; the NoSchedule ones of TaintNodesByCondition) ...
DAEMON_TOLERATIONS = tuple(
    {"key": "node.kubernetes.io/%s" % key, "operator": "Exists", "effect": effect}
    for key, effect in (("not-ready", "NoExecute"), ("unreachable", "NoExecute"),
                        ("disk-pressure", "NoSchedule"), ("memory-pressure", "NoSchedule"),
                        ("pid-pressure", "NoSchedule"), ("unschedulable", "NoSchedule")))
# ... and a pod of the host's network this one too
HOST_NETWORK_TOLERATION = {"key": "node.kubernetes.io/network-unavailable",
                           "operator": "Exists", "effect": "NoSchedule"}
# The labels the controller gives its pods (CreatePodTemplate) and the annotation the
# API server keeps the template generation in (1 for a DaemonSet it creates).
REVISION_LABEL = "controller-revision-hash"
GENERATION_LABEL = "pod-template-generation"
GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
_MATCHED = ("key", "operator", "value", "effect")      # Toleration.MatchToleration
_POSITIVE_INT64 = re.compile(r"[1-9][0-9]{0,17}")


def _add_or_update(tolerations: list[Any], toleration: dict[str, str]) -> list[Any]:
    """AddOrUpdateTolerationInPodSpec: TOLERATIONS with TOLERATION replacing those that
    match it (same key, operator, value and effect), or appended when none does."""
    out: list[Any] = []
    replaced = False
    for t in tolerations:
        if isinstance(t, dict) and all((t.get(f) or "") == (toleration.get(f) or "")
                                       for f in _MATCHED):
            if t == toleration:
                return tolerations
            out.append(dict(toleration))
            replaced = True
        else:
            out.append(t)
    return out if replaced else out + [dict(toleration)]


def with_daemon_tolerations(spec: object) -> object:
    """The pod spec SPEC with the tolerations the controller adds to every daemon pod
    (a copy; SPEC as it is when it is not a mapping with a list of tolerations, for the
    pod spec's reader to refuse)."""
    if not isinstance(spec, dict):
        return spec
    tolerations = spec.get("tolerations")
    if tolerations is None:
        tolerations = []
    if not isinstance(tolerations, list):
        return spec
    added = list(DAEMON_TOLERATIONS)
    if spec.get("hostNetwork") is True:
        added.append(HOST_NETWORK_TOLERATION)
    for toleration in added:
        tolerations = _add_or_update(tolerations, toleration)
    return dict(spec, tolerations=tolerations)


def runs_on(node: Node, info: PodSpecInfo) -> bool:
    """NodeShouldRunDaemonPod: does the controller run a pod of INFO (the template's pod
    spec with the daemon tolerations) on NODE?"""
    if info.node_name and info.node_name != node.name:
        return False
    if any(node.labels.get(k) != v for k, v in info.node_selector.items()):
        return False
    if info.required_node is not None and not info.required_node.matches(node.labels,
                                                                          node.name):
        return False
    return all(tolerates(info.tolerations, t) for t in node.taints
               if t.effect in ("NoSchedule", "NoExecute"))


def nodes_to_run(info: PodSpecInfo, nodes: Iterable[Node]) -> list[Node]:
    """The NODES (in their order) the controller runs a pod of INFO on."""
    return [node for node in nodes if runs_on(node, info)]


def pinned(spec: Mapping[str, Any], node_name: str) -> dict[str, Any]:
    """ReplaceDaemonSetPodNodeNameNodeAffinity: the pod spec SPEC (a copy) whose required
    node affinity is the one term ``matchFields metadata.name In [NODE_NAME]``, its
    preferred terms kept."""
    pin = {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {}
    return dict(spec, affinity=dict(affinity, nodeAffinity=dict(
        node_affinity, requiredDuringSchedulingIgnoredDuringExecution=pin)))


def generation(meta: Mapping[str, Any]) -> str:
    """The template generation of the DaemonSet of metadata META: its annotation's when
    that is a positive integer, else 1 (what the API server gives a new DaemonSet)."""
    annotations = meta.get("annotations")
    value = annotations.get(GENERATION_ANNOTATION) if isinstance(annotations, dict) else None
    return value if isinstance(value, str) and _POSITIVE_INT64.fullmatch(value) else "1"
