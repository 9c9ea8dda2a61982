"""The cluster-side use cases against the real control plane, through the
real kubectl: over SSH to a real sshd (the driver's default) and locally
with a kubeconfig. Node InternalIPs play the workers' addresses."""
import json
import logging
import uuid

import pytest

from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL, HOST_UNKNOWN_TAINT
from tacker_hwaffinity.labeling import params as parameters
from tacker_hwaffinity.labeling.plan import Worker
from tacker_hwaffinity.mgmt import kubectl_runner as kube, reconcile
from tacker_hwaffinity.ssh import SSHSession
from tests.builders import container, pod

pytestmark = [pytest.mark.controlplane, pytest.mark.ssh]
LOG = logging.getLogger("test.mgmt")


def _hw(ssh_params=None, **extra):
    block = dict(extra)
    if ssh_params:
        block["ssh"] = ssh_params
    return parameters.parse({"hwaffinity_param": block})["hwaffinity"]


class Fleet:
    """Fresh nodes with unique names and InternalIPs, removed afterwards."""

    def __init__(self, cp):
        self.cp, self.names, self.tag = cp, [], uuid.uuid4().hex[:6]

    def add(self, count, labels=None, taints=()):
        base = len(self.names)
        out = []
        for i in range(base, base + count):
            name = "w%s-%d" % (self.tag, i)
            addr = "10.77.%d.%d" % (int(self.tag[:2], 16), i + 1)
            self.cp.add_node(name, labels, address=addr, wait=False, taints=taints)
            self.names.append(name)
            out.append((name, addr))
        return out

    def labels(self, name):
        return self.cp.admin.get("/api/v1/nodes/" + name)["metadata"].get("labels") or {}

    def node(self, name):
        return self.cp.admin.get("/api/v1/nodes/" + name)

    def cleanup(self):
        for n in self.names:
            self.cp.delete_node(n)


@pytest.fixture
def fleet(control_plane):
    f = Fleet(control_plane)
    yield f
    f.cleanup()


@pytest.fixture
def over_ssh(ssh_params):
    session = SSHSession.from_params(_hw(ssh_params).ssh)
    runner = kube.SshKubectl(session.connect(), ssh_params["kubectl"],
                             ssh_params["kubeconfig_path"])
    yield runner
    runner.close()


def _workers(nodes, hosts):
    return [Worker("vm-%d" % i, "srv-%d" % i, [addr], host=h, host_id="hid-" + h)
            for i, ((_, addr), h) in enumerate(zip(nodes, hosts))]


def test_labels_every_worker_in_one_apply_over_one_connection(fleet, over_ssh, ssh_params):
    nodes = fleet.add(3)
    workers = _workers(nodes, ["compute-1", "compute-2", "compute-3"])
    hw = _hw(ssh_params)
    p = reconcile.relabel(over_ssh, workers, hw, LOG)
    assert [fleet.labels(n)[DEFAULT_HOST_LABEL] for n, _ in nodes] == \
        ["compute-1", "compute-2", "compute-3"]
    assert [r["node"] for r in p.mapping()] == [n for n, _ in nodes]
    stats = over_ssh.session.stats
    assert (stats.connections, stats.commands) == (1, 2)  # get nodes + one apply
    reconcile.relabel(over_ssh, workers, hw, LOG)  # idempotent: nothing to apply
    assert (stats.connections, stats.commands) == (1, 3)


def test_a_changed_host_is_overwritten_whoever_set_it(fleet, over_ssh, ssh_params,
                                                      control_plane):
    (name, addr), = fleet.add(1)
    control_plane.label_node(name, {DEFAULT_HOST_LABEL: "old-host"})  # e.g. kubectl label
    reconcile.relabel(over_ssh, [Worker("vm", "srv", [addr], host="new-host")],
                      _hw(ssh_params), LOG)
    assert fleet.labels(name)[DEFAULT_HOST_LABEL] == "new-host"


def test_extra_keys_zone_and_sanitised_values(fleet, over_ssh, ssh_params):
    (name, addr), = fleet.add(1)
    long_host = "rack7.compute-" + "x" * 70 + ".example.org"
    hw = _hw(ssh_params, label_keys=["CIS-node", "topology.openstack.org/host"],
             zone_label_key="topology.kubernetes.io/zone")
    reconcile.relabel(over_ssh, [Worker("vm", "srv", [addr], host=long_host, zone="az 1")],
                      hw, LOG)
    labels = fleet.labels(name)
    assert labels["CIS-node"] == labels["topology.openstack.org/host"]
    assert len(labels["CIS-node"]) <= 63 and labels["CIS-node"].startswith("rack7.compute-x")
    assert labels["topology.kubernetes.io/zone"].startswith("az-1-")


def test_a_worker_without_node_fails_after_the_others_are_labelled(fleet, over_ssh,
                                                                   ssh_params):
    nodes = fleet.add(2)
    workers = _workers(nodes, ["c1", "c2"]) + [Worker("lost", "srv-x", ["10.99.0.1"],
                                                      host="c3")]
    with pytest.raises(reconcile.HookFailed) as e:
        reconcile.relabel(over_ssh, workers, _hw(ssh_params), LOG)
    assert "lost (server srv-x): no Kubernetes node has an InternalIP among 10.99.0.1" \
        in str(e.value)
    assert [fleet.labels(n)[DEFAULT_HOST_LABEL] for n, _ in nodes] == ["c1", "c2"]


class _Clock:
    """Time that passes only when slept (the joins happen in ``on_sleep``)."""

    def __init__(self, on_sleep=lambda: None):
        self.now, self.sleeps, self.on_sleep = 0.0, [], on_sleep

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds
        self.on_sleep()


def test_a_worker_that_joins_during_the_wait_is_labelled(fleet, over_ssh, ssh_params):
    (name, addr), = fleet.add(1)
    late = "10.78.%d.9" % int(fleet.tag[:2], 16)
    workers = [Worker("vm-0", "srv-0", [addr], host="c1"),
               Worker("vm-1", "srv-1", [late], host="c2")]
    joined = []

    def kubelet_registers():  # on the second poll, as a booting VM's kubelet would
        if len(clock.sleeps) == 2:
            fleet.cp.add_node("late-" + fleet.tag, address=late, wait=False)
            fleet.names.append("late-" + fleet.tag)
            joined.append(clock.now)
    clock = _Clock(kubelet_registers)
    stats = over_ssh.session.stats
    nodes = reconcile.wait_joined(over_ssh, workers, 30, LOG, poll=2, clock=clock,
                                  sleep=clock.sleep)
    assert joined == [4.0] and clock.sleeps == [2, 2]    # it stopped at the first full read
    assert stats.commands == 3                          # one read, then one per poll
    reconcile.relabel(over_ssh, workers, _hw(ssh_params), LOG, nodes=nodes)
    assert fleet.labels("late-" + fleet.tag)[DEFAULT_HOST_LABEL] == "c2"
    assert fleet.labels(name)[DEFAULT_HOST_LABEL] == "c1"


def test_the_wait_is_bounded_and_the_plan_then_names_the_missing_worker(
        fleet, over_ssh, ssh_params, caplog):
    (_, addr), = fleet.add(1)
    workers = [Worker("vm-0", "srv-0", [addr], host="c1"),
               Worker("never", "srv-9", ["10.99.0.9"], host="c2")]
    clock = _Clock()
    with caplog.at_level(logging.INFO, "test.mgmt"):
        nodes = reconcile.wait_joined(over_ssh, workers, 5, LOG, poll=2, clock=clock,
                                      sleep=clock.sleep)
    assert clock.sleeps == [2, 2, 1] and clock.now == 5  # never past the timeout
    assert "waiting up to 5 s for worker(s) never to join" in caplog.text
    assert "never still without a node after 5 s" in caplog.text
    with pytest.raises(reconcile.HookFailed) as e:
        reconcile.relabel(over_ssh, workers, _hw(ssh_params), LOG, nodes=nodes)
    assert "never (server srv-9): no Kubernetes node has an InternalIP among 10.99.0.9" \
        in str(e.value) and "join_timeout" in str(e.value)


def test_no_wait_when_every_worker_has_a_node_or_the_timeout_is_zero(fleet, over_ssh):
    (_, addr), = fleet.add(1)
    clock = _Clock()
    reconcile.wait_joined(over_ssh, [Worker("vm", "srv", [addr], host="c1")], 30, LOG,
                          clock=clock, sleep=clock.sleep)
    reconcile.wait_joined(over_ssh, [Worker("x", "srv-x", ["10.99.0.8"], host="c1")], 0, LOG,
                          clock=clock, sleep=clock.sleep)
    assert clock.sleeps == []


def test_colocated_workers_warn_or_fail(fleet, over_ssh, ssh_params, caplog):
    nodes = fleet.add(2)
    workers = _workers(nodes, ["same", "same"])
    caplog.set_level(logging.WARNING)
    reconcile.relabel(over_ssh, workers, _hw(ssh_params), LOG)
    assert "workers vm-0, vm-1 share compute host same" in caplog.text
    with pytest.raises(reconcile.HookFailed, match="share compute host same"):
        reconcile.relabel(over_ssh, workers, _hw(ssh_params, on_colocation="fail"), LOG)
    assert [fleet.labels(n)[DEFAULT_HOST_LABEL] for n, _ in nodes] == ["same", "same"]


def _pod(ns, name, node, labels):
    return pod(name, labels, ns=ns, on=node, terminationGracePeriodSeconds=0,
               containers=[container(image="busybox")])


def _wait_running(cp, ns, count):
    from controlplane.harness import wait_until
    wait_until(lambda: sum(p.get("status", {}).get("phase") == "Running"
                           for p in cp.pods(ns)) == count, 30, what="pods running")


def test_scale_in_drains_then_deletes_exactly_the_removed_nodes(fleet, over_ssh, ssh_params,
                                                                control_plane, namespace):
    nodes = fleet.add(3)
    workers = _workers(nodes, ["c1", "c2", "c3"])
    for i, (name, _) in enumerate(nodes):
        control_plane.admin.create("/api/v1/namespaces/%s/pods" % namespace,
                                   _pod(namespace, "p%d" % i, name, {"app": "x"}))
    _wait_running(control_plane, namespace, 3)
    hw = _hw(ssh_params, drain={"timeout": 30, "force": True})
    removed = reconcile.evict(over_ssh, workers[1:], hw, LOG, delete=True)
    assert removed == sorted(n for n, _ in nodes[1:])
    existing = {n["metadata"]["name"] for n in control_plane.admin.get("/api/v1/nodes")["items"]}
    assert nodes[0][0] in existing and not existing & set(removed)
    assert [p["metadata"]["name"] for p in control_plane.pods(namespace)] == ["p0"]
    # a retry (the nodes are gone) converges without error
    assert reconcile.evict(over_ssh, workers[1:], hw, LOG, delete=True) == []


def test_drain_honours_a_pod_disruption_budget_and_keeps_the_node(
        fleet, over_ssh, ssh_params, control_plane, namespace):
    (name, addr), = fleet.add(1)
    control_plane.admin.create("/api/v1/namespaces/%s/pods" % namespace,
                               _pod(namespace, "guarded", name, {"app": "db"}))
    _wait_running(control_plane, namespace, 1)
    control_plane.admin.create(
        "/apis/policy/v1beta1/namespaces/%s/poddisruptionbudgets" % namespace,
        {"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
         "metadata": {"name": "db", "namespace": namespace},
         "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}})
    hw = _hw(ssh_params, drain={"timeout": 3, "force": True})
    with pytest.raises(reconcile.HookFailed) as e:
        reconcile.evict(over_ssh, [Worker("vm", "srv", [addr], host="h")], hw, LOG, delete=True)
    assert "kubectl drain %s (timeout 3 s" % name in str(e.value)
    assert "stay cordoned and were not deleted" in str(e.value)
    node = fleet.node(name)
    assert node["spec"].get("unschedulable") is True
    assert [p["metadata"]["name"] for p in control_plane.pods(namespace)] == ["guarded"]


def test_heal_drains_then_uncordons(fleet, over_ssh, ssh_params, control_plane):
    (name, addr), = fleet.add(1)
    worker = Worker("vm", "srv", [addr], host="h1")
    hw = _hw(ssh_params, drain={"timeout": 10})
    assert reconcile.evict(over_ssh, [worker], hw, LOG, delete=False) == [name]
    assert fleet.node(name)["spec"].get("unschedulable") is True
    assert reconcile.uncordon(over_ssh, [worker], LOG) == ([name], [])
    assert not fleet.node(name)["spec"].get("unschedulable")


def test_local_kubectl_with_a_kubeconfig_labels_too(fleet, control_plane):
    from controlplane import harness
    nodes = fleet.add(2)
    with open(control_plane.kubeconfig) as f:
        text = f.read()
    runner = kube.LocalKubectl(text, kubectl=harness.find_binaries()["kubectl"])
    try:
        reconcile.relabel(runner, _workers(nodes, ["h-a", "h-b"]), _hw(), LOG)
        path = runner.path
    finally:
        runner.close()
    assert [fleet.labels(n)[DEFAULT_HOST_LABEL] for n, _ in nodes] == ["h-a", "h-b"]
    import os
    assert not os.path.exists(path)  # the kubeconfig copy is gone


def test_the_host_unknown_taint_is_lifted_once_the_label_is_nova_s(fleet, control_plane):
    """Workers registered with the taint (install_k8s.sh's join): labelled from Nova's
    answer, their taint is lifted and the other taints kept; a node no worker matches
    keeps it. Run twice: the second run has nothing to lift and changes nothing."""
    from controlplane import harness
    unknown = {"key": HOST_UNKNOWN_TAINT, "effect": "NoSchedule"}
    other = {"key": "dedicated", "value": "cnf", "effect": "NoSchedule"}
    nodes = fleet.add(2, taints=[unknown, other])
    (stray, _addr), = fleet.add(1, taints=[unknown])
    with open(control_plane.kubeconfig) as f:
        runner = kube.LocalKubectl(f.read(), kubectl=harness.find_binaries()["kubectl"])
    try:
        for _ in range(2):
            reconcile.relabel(runner, _workers(nodes, ["h-a", "h-b"]), _hw(), LOG)
            assert [fleet.labels(n)[DEFAULT_HOST_LABEL] for n, _ in nodes] == ["h-a", "h-b"]
            assert [fleet.node(n)["spec"]["taints"] for n, _ in nodes] == [[other]] * 2
            assert fleet.node(stray)["spec"]["taints"] == [unknown]
    finally:
        runner.close()


def test_kubeconfig_from_a_kubernetes_vim_is_valid():
    cfg = json.loads(kube.kubeconfig_from_vim("https://10.0.0.1:6443", "tok", "PEM"))
    assert cfg["clusters"][0]["cluster"]["server"] == "https://10.0.0.1:6443"
    assert cfg["users"][0]["user"]["token"] == "tok"
