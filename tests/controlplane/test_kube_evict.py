"""Evictions (kube.evict) against the real kube-apiserver 1.20: a Running pod
evicted and its graceful deletion completed by the fake kubelet,
PodDisruptionBudgets that block and refuse, a missing or replaced pod, dry
runs, and the errors that are not decisions.

Budgets are judged only once kube-controller-manager's disruption controller
has processed them (status.observedGeneration), so every test waits for
that; in 1.20 it never does for a maxUnavailable budget over pods without a
controller, which is why the blocking budget here covers a ReplicaSet's pod.
"""
import json
import time

import pytest
from kubernetes.client.exceptions import ApiException

from tacker_hwaffinity.kube import client as kube_client
from tacker_hwaffinity.kube import evict as kube_evict
from tacker_hwaffinity.kube.client import KubeError
from tacker_hwaffinity.kube.evict import Eviction, evict

from . import harness
from . import workloads as w

pytestmark = pytest.mark.controlplane
PDBS = "/apis/policy/v1beta1/namespaces/%s/poddisruptionbudgets"
VIOLATES = "Cannot evict pod as it would violate the pod's disruption budget."


@pytest.fixture
def conn(control_plane):
    c = kube_client.connect(control_plane.kubeconfig)
    yield c
    c.close()


@pytest.fixture
def node(host_nodes):
    return sorted(host_nodes)[0]


def pod_path(namespace, name):
    return "/api/v1/namespaces/%s/pods/%s" % (namespace, name)


def get_pod(cp, namespace, name):
    status, pod = cp.admin.request("GET", pod_path(namespace, name), ok=(200, 404))
    return pod if status == 200 else None


def ready(pod):
    return pod is not None and pod["status"].get("phase") == "Running" and any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", []))


def running_pod(cp, namespace, name, node, labels=None):
    """A pod bound to NODE, once the fake kubelet reports it Running and Ready."""
    pod = w.pod(name, namespace, labels or {"app": name})
    pod["spec"]["nodeName"] = node
    cp.admin.create("/api/v1/namespaces/%s/pods" % namespace, pod)
    return harness.wait_until(lambda: ready(get_pod(cp, namespace, name)) and
                              get_pod(cp, namespace, name), 30, what="pod %s Ready" % name)


def budget(cp, namespace, name, labels, **spec):
    """A policy/v1beta1 PodDisruptionBudget, once the disruption controller processed it."""
    cp.admin.create(PDBS % namespace, {
        "apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": dict(spec, selector={"matchLabels": dict(labels)})})

    def processed():
        pdb = cp.admin.get(PDBS % namespace + "/" + name)
        return pdb.get("status", {}).get("observedGeneration") == pdb["metadata"]["generation"] \
            and pdb
    return harness.wait_until(processed, 30, what="PodDisruptionBudget %s processed" % name)


def still_there(cp, namespace, pod):
    now = get_pod(cp, namespace, pod["metadata"]["name"])
    return (now is not None and now["metadata"]["uid"] == pod["metadata"]["uid"]
            and not now["metadata"].get("deletionTimestamp"))


def wait_gone(cp, namespace, pod, timeout=30):
    def gone():
        now = get_pod(cp, namespace, pod["metadata"]["name"])
        return now is None or now["metadata"]["uid"] != pod["metadata"]["uid"]
    harness.wait_until(gone, timeout, what="pod %s to be deleted" % pod["metadata"]["name"])


def test_a_running_pod_is_evicted_and_its_deletion_completes(control_plane, namespace, node,
                                                             conn):
    pod = running_pod(control_plane, namespace, "victim", node)
    result = evict(conn, namespace, "victim")
    assert result == Eviction("evicted", "pod %s/victim evicted" % namespace, None)
    deleting = get_pod(control_plane, namespace, "victim")
    assert deleting is None or deleting["metadata"].get("deletionTimestamp")
    wait_gone(control_plane, namespace, pod)          # the fake kubelet confirmed it
    assert kube_evict._v1beta1_only.get(conn)         # 1.20: v1 was refused once, then skipped


def test_a_1_20_server_answers_a_v1_eviction_with_400(control_plane, namespace, node):
    """What the fallback to policy/v1beta1 relies on: 400 before the pod is looked up."""
    running_pod(control_plane, namespace, "probe", node)
    for name in ("probe", "no-such-pod"):
        status, body = control_plane.admin.request(
            "POST", pod_path(namespace, name) + "/eviction",
            {"apiVersion": "policy/v1", "kind": "Eviction",
             "metadata": {"name": name, "namespace": namespace},
             "deleteOptions": {"dryRun": ["All"]}}, ok=None)
        assert status == 400 and body["reason"] == "BadRequest"
        assert kube_evict._NOT_SERVED in body["message"]


def test_a_pod_that_does_not_exist_is_gone(control_plane, namespace, conn):
    result = evict(conn, namespace, "no-such-pod")
    assert result.outcome == "gone" and result.retry_after is None
    assert result.message == 'pods "no-such-pod" not found'


def test_a_pod_recreated_under_the_same_name_is_spared(control_plane, namespace, node, conn):
    cp = control_plane
    old = running_pod(cp, namespace, "reborn", node)
    cp.admin.delete(pod_path(namespace, "reborn"),
                    {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
    wait_gone(cp, namespace, old)
    new = running_pod(cp, namespace, "reborn", node)
    result = evict(conn, namespace, "reborn", uid=old["metadata"]["uid"])
    assert result.outcome == "gone", result
    assert "the UID in the precondition (%s) does not match" % old["metadata"]["uid"] \
        in result.message
    assert still_there(cp, namespace, new)
    assert evict(conn, namespace, "reborn", uid=new["metadata"]["uid"]).outcome == "evicted"
    wait_gone(cp, namespace, new)


def test_a_dry_run_decides_without_deleting(control_plane, namespace, node, conn):
    pod = running_pod(control_plane, namespace, "dry", node)
    result = evict(conn, namespace, "dry", dry_run=True)
    assert result == Eviction("evicted", "dry run: pod %s/dry would be evicted" % namespace, None)
    # the condition is time itself: two rounds of the fake kubelet, and the pod stays
    time.sleep(2.5)
    assert still_there(control_plane, namespace, pod)


def test_a_budget_blocks_until_it_is_deleted(control_plane, namespace, node, conn):
    cp = control_plane
    labels = {"app": "guarded"}
    cp.admin.create("/apis/apps/v1/namespaces/%s/replicasets" % namespace, {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "guarded", "namespace": namespace},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": dict(w.pod_spec(), nodeName=node)}}})
    pod = harness.wait_until(lambda: [p for p in cp.pods(namespace, "app=guarded") if ready(p)],
                             30, what="the ReplicaSet's pod Ready")[0]
    name = pod["metadata"]["name"]
    pdb = budget(cp, namespace, "no-disruption", labels, maxUnavailable=0)
    assert pdb["status"]["disruptionsAllowed"] == 0 and pdb["status"]["currentHealthy"] == 1

    for dry_run in (True, False):
        result = evict(conn, namespace, name, dry_run=dry_run)
        assert result == Eviction(
            "blocked", VIOLATES + " The disruption budget no-disruption needs 1 healthy pods "
            "and has 1 currently", None), result           # 1.20 sends no retryAfterSeconds
    assert still_there(cp, namespace, pod)

    cp.admin.delete(PDBS % namespace + "/no-disruption")
    assert evict(conn, namespace, name).outcome == "evicted"
    wait_gone(cp, namespace, pod)


def test_a_budget_not_yet_processed_blocks(control_plane, namespace, node, conn):
    """1.20's disruption controller cannot count a maxUnavailable budget over a pod
    without a controller (event NoControllerRef): it never processes it, and the
    eviction stays blocked as 'still being processed'."""
    cp = control_plane
    pod = running_pod(cp, namespace, "bare", node, {"app": "bare"})
    cp.admin.create(PDBS % namespace, {
        "apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "unprocessed", "namespace": namespace},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "bare"}}}})

    def complaint():
        events = cp.admin.get("/api/v1/namespaces/%s/events" % namespace,
                              fieldSelector="involvedObject.kind=PodDisruptionBudget")["items"]
        return [e for e in events if e["reason"] == "NoControllerRef"]
    harness.wait_until(complaint, 30, what="the disruption controller's NoControllerRef event")
    assert "observedGeneration" not in cp.admin.get(PDBS % namespace + "/unprocessed")["status"]
    result = evict(conn, namespace, "bare")
    assert result == Eviction("blocked", VIOLATES + " The disruption budget unprocessed is still "
                              "being processed by the server.", None), result
    assert still_there(cp, namespace, pod)


def test_two_budgets_over_one_pod_refuse(control_plane, namespace, node, conn):
    cp = control_plane
    pod = running_pod(cp, namespace, "twice", node, {"app": "twice"})
    budget(cp, namespace, "first", {"app": "twice"}, minAvailable=0)
    budget(cp, namespace, "second", {"app": "twice"}, minAvailable=0)   # both would allow it
    result = evict(conn, namespace, "twice")
    assert result == Eviction("refused", "This pod has more than one PodDisruptionBudget, which "
                              "the eviction subresource does not support.", None), result
    assert still_there(cp, namespace, pod)


def test_an_identity_without_rights_gets_a_one_line_error(control_plane, namespace, node):
    running_pod(control_plane, namespace, "kept", node)
    nobody = kube_client.connect(control_plane.user_kubeconfig("evict-nobody"))
    try:
        with pytest.raises(KubeError) as e:
            evict(nobody, namespace, "kept")
    finally:
        nobody.close()
    assert e.value.status == 403
    assert "forbidden to create pods/eviction of pod %s/kept" % namespace in str(e.value)
    assert "\n" not in str(e.value)


def test_an_unreachable_server_raises(control_plane, namespace, conn):
    conn.api_client.configuration.host = "https://127.0.0.1:%d" % harness.free_port()
    with pytest.raises(KubeError) as e:
        evict(conn, namespace, "anything")
    assert e.value.status is None and "unreachable while trying to create" in str(e.value)
    assert "\n" not in str(e.value)


class _Refusing:
    """A connection whose eviction call answers with one Status (the answers a
    test cannot provoke reliably: the disruption controller rewrites budgets)."""
    where = "https://127.0.0.1:6443"

    def __init__(self, status, body):
        self.error = ApiException(status=status, reason="refused")
        self.error.body = json.dumps(body)

    def core(self):
        return self

    def timeout(self):
        return (1, 1)

    def create_namespaced_pod_eviction(self, *args, **kwargs):
        raise self.error


@pytest.mark.parametrize("code, body, outcome", [
    (403, {"kind": "Status", "status": "Failure", "reason": "Forbidden", "code": 403,
           "message": 'poddisruptionbudget.policy "web" is forbidden: pdb disruptions allowed '
                      "is negative",
           "details": {"name": "web", "group": "policy", "kind": "poddisruptionbudget"}},
     "refused"),
    (429, {"kind": "Status", "status": "Failure", "reason": "TooManyRequests", "code": 429,
           "message": VIOLATES, "details": {"retryAfterSeconds": 10, "causes": [
               {"reason": "DisruptionBudget", "message": "The disruption budget web is still "
                                                          "being processed by the server."}]}},
     "blocked"),
    (409, {"kind": "Status", "status": "Failure", "reason": "Conflict", "code": 409,
           "message": 'Operation cannot be fulfilled on poddisruptionbudgets.policy "web": the '
                      "object has been modified",
           "details": {"name": "web", "group": "policy", "kind": "poddisruptionbudgets"}}, None),
    (500, {"kind": "Status", "status": "Failure", "code": 500, "message": "etcdserver: timeout"},
     None),
])
def test_answers_that_no_test_cluster_gives(code, body, outcome):
    conn = _Refusing(code, body)
    if outcome is None:
        with pytest.raises(KubeError) as e:
            evict(conn, "ns", "web-0", uid="u")
        assert e.value.status == code and body["message"] in str(e.value)
        return
    result = evict(conn, "ns", "web-0")
    assert result.outcome == outcome and result.message.startswith(body["message"])
    assert result.retry_after == body["details"].get("retryAfterSeconds")
