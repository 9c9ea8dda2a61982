"""Which node is a worker's, when kubectl shows nodes that share an InternalIP:
the MgmtDriver's drain, delete and uncordon refuse to guess, as the label plan
does. A recorded kubectl stands in for the cluster (no control plane needed)."""
import json
import logging

import pytest

from tacker_hwaffinity.labeling import params as parameters
from tacker_hwaffinity.labeling.plan import Worker
from tacker_hwaffinity.mgmt import reconcile

LOG = logging.getLogger("test.mgmt")


class RecordedKubectl:
    """A kubectl runner that answers 'get nodes' with NODES and records every call."""

    where = "recorded kubectl"

    def __init__(self, nodes):
        self.nodes, self.calls = nodes, []

    def run(self, argv, stdin=None, timeout=None):
        self.calls.append(argv)
        if argv[:3] == ["kubectl", "get", "nodes"]:
            items = [{"metadata": {"name": name, "labels": {}},
                      "status": {"addresses": [{"type": "InternalIP", "address": ip}]}}
                     for name, ip in self.nodes]
            return 0, json.dumps({"kind": "List", "items": items}), ""
        return 0, "", ""

    def acted(self):
        """The kubectl verbs run besides reading the nodes."""
        return [argv[1] for argv in self.calls if argv[1] != "get"]


def _hw():
    return parameters.parse({"hwaffinity_param": {}})["hwaffinity"]


SHARED = [("old-node", "10.0.0.5"), ("new-node", "10.0.0.5"), ("other", "10.0.0.6")]


@pytest.mark.parametrize("delete", [True, False], ids=["scale-in", "heal"])
def test_evict_refuses_a_worker_whose_address_two_nodes_share(delete):
    kube = RecordedKubectl(SHARED)
    workers = [Worker("vm-0", "srv-0", ["10.0.0.5"]), Worker("vm-1", "srv-1", ["10.0.0.6"])]
    with pytest.raises(reconcile.HookFailed) as failed:
        reconcile.evict(kube, workers, _hw(), LOG, delete=delete)
    assert "10.0.0.5" in str(failed.value)
    assert "new-node, old-node" in str(failed.value)
    assert "vm-0" in str(failed.value)
    assert kube.acted() == []           # neither node (nor the unambiguous one) touched


def test_uncordon_refuses_a_worker_whose_address_two_nodes_share():
    kube = RecordedKubectl(SHARED)
    with pytest.raises(reconcile.HookFailed, match="match several nodes: new-node, old-node"):
        reconcile.uncordon(kube, [Worker("vm-0", "srv-0", ["10.0.0.5"])], LOG)
    assert kube.acted() == []


def test_evict_acts_on_the_one_node_of_each_worker():
    kube = RecordedKubectl(SHARED)
    names = reconcile.evict(kube, [Worker("vm-1", "srv-1", ["10.0.0.6"])], _hw(), LOG,
                            delete=True)
    assert names == ["other"]
    assert kube.acted() == ["cordon", "drain", "delete"]
