"""kubectl invocations as argument lists, and parsing of what kubectl prints.

Labels are applied in ONE call for all nodes, with server-side apply of
partial Node objects under our own field manager: idempotent, overwriting,
and it prints the resulting nodes, so the labels are read back in the same
round trip.
"""
import json
from typing import Any
from collections.abc import Iterable, Mapping

from tacker_hwaffinity.constants import FIELD_MANAGER, HOST_UNKNOWN_TAINT
from tacker_hwaffinity.labeling.nodes import NodeObjectError, kube_node
from tacker_hwaffinity.labeling.plan import KubeNode


class KubectlOutputError(Exception):
    """kubectl printed something that is not what was asked for."""


def get_nodes() -> list[str]:
    return ["kubectl", "get", "nodes", "-o", "json"]


def apply_labels(desired: Mapping[str, Mapping[str, str]]) -> tuple[list[str], str]:
    """(argv, stdin) that set DESIRED {node: {key: value}} on every node at once."""
    items = [{"apiVersion": "v1", "kind": "Node",
              "metadata": {"name": name, "labels": dict(labels)}}
             for name, labels in sorted(desired.items())]
    doc = {"apiVersion": "v1", "kind": "List", "items": items}
    argv = ["kubectl", "apply", "--server-side", "--force-conflicts",
            "--field-manager=" + FIELD_MANAGER, "-o", "json", "-f", "-"]
    return argv, json.dumps(doc, sort_keys=True)


def lift_host_unknown(nodes: Iterable[str]) -> list[str]:
    """Remove the host-unknown taint from NODES (each must carry it) in one call."""
    return ["kubectl", "taint", "nodes"] + sorted(nodes) + [HOST_UNKNOWN_TAINT + ":NoSchedule-"]


def cordon(nodes: Iterable[str]) -> list[str]:
    return ["kubectl", "cordon"] + sorted(nodes)


def drain(nodes: str | Iterable[str], timeout: int, delete_emptydir_data: bool = True,
          force: bool = False) -> list[str]:
    """Drain NODES (a name or names) in one kubectl call, through the eviction
    API (PodDisruptionBudgets honoured), giving up after TIMEOUT seconds."""
    nodes = [nodes] if isinstance(nodes, str) else sorted(nodes)
    argv = ["kubectl", "drain"] + nodes + ["--ignore-daemonsets", "--timeout=%ds" % timeout]
    if delete_emptydir_data:
        argv.append("--delete-emptydir-data")
    if force:
        argv.append("--force")
    return argv


def delete_nodes(nodes: Iterable[str]) -> list[str]:
    return ["kubectl", "delete", "node", "--ignore-not-found", "--wait=false"] + sorted(nodes)


def parse_nodes(text: str | bytes) -> list[KubeNode]:
    """Nodes from 'kubectl get nodes -o json' (or apply -o json): [plan.KubeNode]."""
    return parse_node_objects(text)[1]


def parse_node_objects(text: str | bytes) -> tuple[list[Any], list[KubeNode]]:
    """(the Node objects, their plan.KubeNodes) from 'kubectl get nodes -o json' (or
    apply -o json)."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise KubectlOutputError("kubectl did not print JSON: %s" % e)
    if not isinstance(doc, dict):
        raise KubectlOutputError("kubectl printed %s, expected an object" % type(doc).__name__)
    kind = doc.get("kind")
    items = doc.get("items") if isinstance(kind, str) and kind.endswith("List") else [doc]
    if not isinstance(items, list):
        raise KubectlOutputError("kubectl printed a list without items")
    try:
        return items, [kube_node(item) for item in items]
    except NodeObjectError as e:
        raise KubectlOutputError("kubectl printed %s" % e) from None
