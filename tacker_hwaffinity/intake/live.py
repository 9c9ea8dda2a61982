"""The objects of a live API server, pruned while they are read; connection problems
are bad input (one line, exit 2) like a bad file."""
from typing import Literal

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.kube import client, cluster
from tacker_hwaffinity.objects import pruning
from tacker_hwaffinity.objects.pruning import KeptFields
from tacker_hwaffinity.objects.yamlio import Loaded

_LISTS = {"plan": cluster.LISTS, "audit": cluster.AUDIT_LISTS}


def read_live(kubeconfig: str, context: str | None, kept: KeptFields,
              lists: Literal["plan", "audit"] = "plan"
              ) -> tuple[list[Loaded], list[str]]:
    """[(object, source)] and notes from the API server, pruned to KEPT; LISTS: what to
    list: what ``plan`` reads (``kube.cluster.LISTS``) or ``audit`` (``AUDIT_LISTS``)."""
    try:
        conn = client.connect(kubeconfig, context)
        try:
            return cluster.read_cluster(conn, pruning.pruner(kept), lists=_LISTS[lists])
        finally:
            conn.close()
    except client.KubeError as e:
        raise InputError(str(e), field="--kubeconfig")


def context_namespace(kubeconfig: str, context: str | None) -> str | None:
    """The namespace the kubeconfig's context names (``kube.client.context_namespace``);
    a kubeconfig that cannot be read is bad input."""
    try:
        return client.context_namespace(kubeconfig, context)
    except client.KubeError as e:
        raise InputError(str(e), field="--kubeconfig")
