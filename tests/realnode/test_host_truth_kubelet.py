"""Host truth before scheduling on a real kubelet (issue #55, item 1): a kubelet started
with ``--register-with-taints=hwaffinity.io/host-unknown:NoSchedule`` (what
install_k8s.sh's join configuration makes kubeadm pass) creates its Node tainted; a pod
that only this node can take stays Pending, kube-scheduler naming the taint; the
MgmtDriver's relabel (``mgmt.reconcile.relabel``, through the real kubectl and a
kubeconfig, the worker matched by the node's InternalIP) labels the node with the host
Nova gave and lifts the taint; then the pod is bound and runs.
"""
import logging
import time

import pytest

from controlplane import harness
from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL, HOST_UNKNOWN_TAINT
from tacker_hwaffinity.labeling import params
from tacker_hwaffinity.labeling.plan import Worker
from tacker_hwaffinity.mgmt import kubectl_runner, reconcile

from . import kubenode
from .images import image_ref

pytestmark = pytest.mark.realnode
NODE = "realnode-ht"
HOST = "compute-7"


@pytest.fixture(scope="module")
def tainted_node():
    """A control plane and one real node whose kubelet registers with the taint."""
    with kubenode.cluster_of_one(NODE, register_with_taints=[
            HOST_UNKNOWN_TAINT + ":NoSchedule"]) as (cp, _node, _seconds):
        yield cp


def _pod(cp):
    return cp.admin.get("/api/v1/namespaces/default/pods/ht-pod")


def test_the_node_takes_pods_only_once_the_mgmtdriver_has_labelled_it(tainted_node):
    cp = tainted_node
    node = cp.admin.get("/api/v1/nodes/" + NODE)
    assert [t["key"] for t in node["spec"]["taints"]] == [HOST_UNKNOWN_TAINT]
    cp.admin.create("/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ht-pod"},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": NODE},
                 "containers": [{"name": "c", "image": image_ref("pause"),
                                 "imagePullPolicy": "Never"}]}})

    def pending_on_the_taint():
        for cond in (_pod(cp).get("status") or {}).get("conditions") or ():
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                return HOST_UNKNOWN_TAINT in (cond.get("message") or "")
        return False
    harness.wait_until(pending_on_the_taint, 30, what="the pod Pending on the taint")
    with open(cp.kubeconfig) as f:
        kube = kubectl_runner.LocalKubectl(f.read(), kubectl=harness.find_binaries()["kubectl"])
    try:
        t0 = time.monotonic()
        reconcile.relabel(kube, [Worker("vm-1", "srv-1", [kubenode.NODE_IP], host=HOST,
                                        host_id="hid-1")],
                          params.parse({})["hwaffinity"], logging.getLogger("test.realnode"))
        lifted_in = time.monotonic() - t0
    finally:
        kube.close()
    node = cp.admin.get("/api/v1/nodes/" + NODE)
    assert node["metadata"]["labels"][DEFAULT_HOST_LABEL] == HOST
    assert not node["spec"].get("taints")
    harness.wait_until(lambda: (_pod(cp).get("status") or {}).get("phase") == "Running", 60,
                       what="the pod Running on %s" % NODE)
    assert _pod(cp)["spec"]["nodeName"] == NODE
    print("relabel and lift through kubectl: %.2f s" % lifted_in)
