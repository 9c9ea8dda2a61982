"""Proofs that the control-plane harness is a real, working Kubernetes."""
import datetime
import json
import os

import pytest

from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL

from . import harness
from . import workloads as w

pytestmark = pytest.mark.controlplane

# A bound, not a figure: start-up is bounded (the fixture gives up at 90 s).
# The figure (idle: 7.6-10.6 s) is measured by benchmarks/bench_controlplane.py.
STARTUP_BOUND_S = 60.0
RSS_LIMIT_BYTES = 1024 ** 3


def test_startup_time_and_memory(control_plane, host_nodes):
    rss = control_plane.rss_bytes()
    per = control_plane.rss_by_component()
    print("\ncontrol-plane start-up: %.1f s; resident memory: %.0f MiB (%s)" % (
        control_plane.startup_seconds, rss / 2 ** 20,
        ", ".join("%s %.0f MiB" % (k, v / 2 ** 20) for k, v in per.items())))
    assert set(per) == {"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"}
    assert all(v > 0 for v in per.values()), per
    assert 0 < control_plane.startup_seconds < STARTUP_BOUND_S, (
        "start-up %.1f s, bound %.0f s (load average %.1f on %d cores)"
        % (control_plane.startup_seconds, STARTUP_BOUND_S, os.getloadavg()[0],
           os.cpu_count() or 1))
    assert rss < RSS_LIMIT_BYTES


def test_components_report_version_and_health(control_plane):
    version = control_plane.admin.get("/version")
    assert version["gitVersion"] == "v" + harness.KUBE_VERSION
    status, body = control_plane.admin.request("GET", "/readyz", ok=None)
    assert status == 200
    for comp in control_plane.components:
        assert comp.alive(), comp.name
        # every listener is on loopback
    assert control_plane.server.startswith("https://127.0.0.1:")
    assert control_plane.etcd_url.startswith("http://127.0.0.1:")


def test_admin_kubeconfig_works_with_kubectl(control_plane, host_nodes):
    out = control_plane.kubectl("get", "nodes", "-o", "json")
    names = {n["metadata"]["name"] for n in json.loads(out)["items"]}
    assert set(host_nodes) <= names


def test_snapshot_reader_is_read_only(control_plane, namespace):
    reader = harness.KubeClient(control_plane.server, control_plane.pki.ca_crt,
                                token=control_plane._reader_token)
    assert reader.get("/api/v1/nodes")["kind"] == "NodeList"
    status, _ = reader.request("POST", "/api/v1/namespaces/%s/pods" % namespace,
                               w.pod("x", namespace, {"a": "b"}), ok=None)
    assert status == 403
    status, _ = reader.request("GET", "/api/v1/namespaces/%s/secrets" % namespace, ok=None)
    assert status == 403


def test_nodes_are_ready_and_untainted(control_plane, host_nodes):
    for name, value in host_nodes.items():
        node = control_plane.admin.get("/api/v1/nodes/" + name)
        assert node["metadata"]["labels"][DEFAULT_HOST_LABEL] == value
        assert not node["spec"].get("taints")
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True"
        assert node["status"]["allocatable"]["cpu"] == "4"
        assert all(a["address"].startswith("127.") or a["type"] == "Hostname"
                   for a in node["status"]["addresses"])


def test_node_identity_is_least_privilege(control_plane, host_nodes):
    """The fake kubelet acts as system:node:<name>: NodeRestriction forbids it
    to touch another node."""
    crt, key = control_plane.pki.issue("probe-node", "/O=system:nodes/CN=system:node:worker-1")
    node1 = harness.KubeClient(control_plane.server, control_plane.pki.ca_crt, crt, key)
    status, _ = node1.request("PATCH", "/api/v1/nodes/worker-2",
                              {"metadata": {"labels": {"x": "y"}}}, ok=None,
                              content_type="application/merge-patch+json")
    assert status == 403


def test_required_anti_affinity_pods(control_plane, host_nodes, namespace):
    aff = w.affinity("anti", "required", DEFAULT_HOST_LABEL, {"app": "spread"})
    results = []
    for i in range(4):
        results.append(w.create_and_wait(
            control_plane, w.pod("spread-%d" % i, namespace, {"app": "spread"}, aff=aff)))
    bound = [r.split(":", 1)[1] for r in results if r.startswith("bound:")]
    assert len(bound) == 3, results
    assert sorted(host_nodes[n] for n in bound) == ["host-a", "host-b", "host-c"]
    assert results[3] == "unschedulable"
    events = harness.wait_until(
        lambda: control_plane.events(namespace, "FailedScheduling", "spread-3"), 20,
        what="FailedScheduling event")
    assert "anti-affinity" in events[0]["message"] or "affinity" in events[0]["message"]
    # The fake kubelet moves bound pods to Running.
    harness.wait_until(lambda: all(
        p["status"].get("phase") == "Running"
        for p in control_plane.pods(namespace) if p["spec"].get("nodeName")), 20,
        what="bound pods Running")


def test_deployment_spreads_over_hosts(control_plane, host_nodes, namespace):
    labels = {"app": "web"}
    aff = w.affinity("anti", "required", DEFAULT_HOST_LABEL, labels)
    w.create(control_plane, w.deployment("web", namespace, 3, labels, aff=aff))
    pods = w.settle(control_plane, namespace, "app=web", 3)
    counts, pending = w.domains_of(pods, host_nodes)
    assert counts == {"host-a": 1, "host-b": 1, "host-c": 1}
    assert pending == []
    harness.wait_until(lambda: control_plane.admin.get(
        "/apis/apps/v1/namespaces/%s/deployments/web" % namespace)["status"].get(
        "readyReplicas") == 3, 30, what="deployment web ready")
    # One more replica has no host left.
    control_plane.admin.patch("/apis/apps/v1/namespaces/%s/deployments/web/scale" % namespace,
                              {"spec": {"replicas": 4}})
    pods = w.settle(control_plane, namespace, "app=web", 4)
    counts, pending = w.domains_of(pods, host_nodes)
    assert counts == {"host-a": 1, "host-b": 1, "host-c": 1}
    assert len(pending) == 1
    harness.wait_until(lambda: control_plane.events(namespace, "FailedScheduling", pending[0]),
                       20, what="FailedScheduling event for the 4th replica")


def test_node_label_patch_steers_scheduling(control_plane, host_nodes, namespace):
    control_plane.add_node("label-probe", {DEFAULT_HOST_LABEL: "host-z"})
    try:
        control_plane.label_node("label-probe", {DEFAULT_HOST_LABEL: "host-y", "tier": "gold"})
        node = control_plane.admin.get("/api/v1/nodes/label-probe")
        assert node["metadata"]["labels"][DEFAULT_HOST_LABEL] == "host-y"
        assert node["metadata"]["labels"]["tier"] == "gold"
        result = w.create_and_wait(control_plane, w.pod(
            "gold", namespace, {"app": "gold"}, node_selector={"tier": "gold"}))
        assert result == "bound:label-probe"
        control_plane.label_node("label-probe", {"tier": None})
        result = w.create_and_wait(control_plane, w.pod(
            "gold-2", namespace, {"app": "gold"}, node_selector={"tier": "gold"}))
        assert result == "unschedulable"
    finally:
        control_plane.admin.request("DELETE", "/api/v1/namespaces/%s/pods/gold" % namespace,
                                    ok=(200, 202, 404))
        harness.wait_until(lambda: control_plane.admin.request(
            "GET", "/api/v1/namespaces/%s/pods/gold" % namespace, ok=(200, 404))[0] == 404,
            30, what="pod gold gone")
        control_plane.delete_node("label-probe")


def test_eviction_falls_back_to_v1beta1(control_plane, host_nodes, namespace):
    result = w.create_and_wait(control_plane, w.pod("victim", namespace, {"app": "victim"}))
    assert result.startswith("bound:")
    # v1.20 has no policy/v1 Eviction: the helper must fall back.
    version = control_plane.evict(namespace, "victim")
    assert version == "policy/v1beta1"
    # Graceful delete is finished by the fake kubelet: the pod goes away.
    harness.wait_until(lambda: control_plane.admin.request(
        "GET", "/api/v1/namespaces/%s/pods/victim" % namespace, ok=(200, 404))[0] == 404,
        30, what="evicted pod gone")


def test_eviction_respects_pod_disruption_budget(control_plane, host_nodes, namespace):
    result = w.create_and_wait(control_plane, w.pod("guarded", namespace, {"app": "guarded"}))
    assert result.startswith("bound:")
    control_plane.admin.create(
        "/apis/policy/v1beta1/namespaces/%s/poddisruptionbudgets" % namespace, {
            "apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "guarded"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}}})
    harness.wait_until(lambda: control_plane.admin.get(
        "/apis/policy/v1beta1/namespaces/%s/poddisruptionbudgets/guarded" % namespace
    ).get("status", {}).get("currentHealthy") == 1, 30, what="PDB status")
    with pytest.raises(harness.ApiError) as exc:
        control_plane.evict(namespace, "guarded")
    assert exc.value.status == 429
    assert control_plane.admin.get(
        "/api/v1/namespaces/%s/pods/guarded" % namespace)["metadata"].get(
        "deletionTimestamp") is None


def test_fake_kubelet_keeps_leases_fresh(control_plane, host_nodes):
    def renew_times():
        return {n: control_plane.admin.get(
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + n
        )["spec"]["renewTime"] for n in host_nodes}
    before = renew_times()

    def every_lease_renewed():
        now = renew_times()
        return all(now[n] > before[n] for n in host_nodes)
    harness.wait_until(every_lease_renewed, 30, what="every node's Lease renewed")
    assert control_plane.kubelet.is_alive()
    # Ready heartbeats are fresh too (pushed every few seconds).
    for n in host_nodes:
        ready = [c for c in control_plane.admin.get("/api/v1/nodes/" + n)["status"]["conditions"]
                 if c["type"] == "Ready"][0]
        assert ready["status"] == "True"
        beat = datetime.datetime.strptime(ready["lastHeartbeatTime"], "%Y-%m-%dT%H:%M:%SZ")
        age = datetime.datetime.utcnow() - beat
        assert age < datetime.timedelta(seconds=30), (n, ready["lastHeartbeatTime"])

