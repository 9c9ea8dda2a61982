"""The during-execution controller end to end: real Nova (three fake compute hosts), the
real control plane with the real kube-scheduler, and `hwaffinity controller` as a process.

Three worker VMs of a Heat stack (found by --stack/--aspect, as the MgmtDriver finds
them), one per host; three Kubernetes nodes whose InternalIPs are the VMs' addresses.
A Deployment of two replicas keeps them on different hosts at scheduling time (required
anti-affinity on CIS-node) and while running (the same term in
hwaffinity.io/required-during-execution). Live-migrating one worker's VM onto the other's
host must relabel its node within two poll intervals, evict exactly the replica on the
node that moved, and the real scheduler places its replacement on the third host.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
import uuid

import pytest

from . import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "openstack"))
import osharness
import rabbit

pytestmark = [pytest.mark.controlplane, pytest.mark.openstack]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POLL = 2
RULE = ('{"podAntiAffinity": [{"topologyKey": "CIS-node", '
        '"labelSelector": {"matchLabels": {"app": "rde"}}}]}')


@pytest.fixture(scope="module")
def broker():
    """A private RabbitMQ that carries Nova's versioned notifications."""
    with rabbit.running() as broker:
        yield broker


@pytest.fixture(scope="module")
def cloud(request, broker):
    """Nova (publishing its versioned notifications on the broker) and Heat."""
    with osharness.heat_clouds(request) as start:
        yield start(3, notifications_url=broker.url)


@pytest.fixture(scope="module")
def stack_owner():
    """The harness user whose project owns the stack (test_controller_member: "member")."""
    return "admin"


@pytest.fixture(scope="module")
def stack(cloud, stack_owner):
    """VNF-A's worker tier as Tacker lays it out in Heat (tests/mgmt/templates): an
    AutoScalingGroup ``worker_instance`` of three members, each a port and a server;
    the controller finds them as the MgmtDriver does (--stack, --aspect). Soft
    anti-affinity: a hard group would make Nova refuse the live migrations below."""
    heat = cloud.heat(stack_owner)
    created = heat.stacks.create(
        stack_name="e2e-" + uuid.uuid4().hex[:8], template=_template("k8s_workers.yaml"),
        files={"worker_member.yaml": _template("worker_member.yaml")},
        parameters={"image": cloud.image, "network": cloud.network,
                    "policy": "soft-anti-affinity", "worker_count": 3})
    stack_id = created["stack"]["id"]
    done = osharness.wait_stack(heat, stack_id, timeout=240)
    assert done.stack_status == "CREATE_COMPLETE", done.stack_status_reason
    yield stack_id
    heat.stacks.delete(stack_id)


def _template(name):
    with open(os.path.join(ROOT, "tests", "mgmt", "templates", name)) as f:
        return f.read()


@pytest.fixture(scope="module")
def workers(cloud, control_plane, stack, stack_owner):
    """{node name: (server id, host)}: the stack's VMs, one per compute host, a node per
    VM (its InternalIP the VM's port address)."""
    ids = sorted(r.physical_resource_id for r in cloud.heat(stack_owner).resources.list(
        stack, nested_depth=2) if r.resource_type == "OS::Nova::Server")
    assert len(ids) == 3
    out = {}
    for i, (sid, host) in enumerate(zip(ids, sorted(cloud.hosts)[:3])):
        server = cloud.server(sid)
        ip = next(a["addr"] for nets in server["addresses"].values() for a in nets)
        name = "e2e-w%d" % i
        control_plane.add_node(name, {"kubernetes.io/hostname": name}, address=ip)
        out[name] = (sid, host)
    _reset(cloud, out)
    yield out
    for name in out:
        control_plane.delete_node(name)


def _selection(stack):
    return ["--stack", stack, "--aspect", "worker_instance"]


def _reset(cloud, workers):
    """Every worker VM back on its own host (an earlier test may have moved it)."""
    for node, (sid, host) in sorted(workers.items()):
        if cloud.server(sid).get("OS-EXT-SRV-ATTR:host") != host:
            cloud.live_migrate(sid, host=host)


@pytest.fixture
def controller(cloud, control_plane, stack, workers, tmp_path):
    _reset(cloud, workers)
    env = osharness.cli_env(cloud)
    log = open(tmp_path / "controller.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tacker_hwaffinity.cli.main", "controller",
         "--kubeconfig", control_plane.kubeconfig] + _selection(stack) + [
         "--poll-interval", str(POLL), "--grace", "5", "--eviction-interval", "1",
         "--lease-namespace", "default", "--lease-name", "e2e-controller",
         "--metrics-address", "127.0.0.1:0"],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT, start_new_session=True)
    for node, (_, host) in workers.items():       # its first poll labels every worker
        harness.wait_until(lambda n=node, h=host: label(control_plane, n) == h, 60,
                           what="node %s labelled %s" % (node, host))
    yield proc, tmp_path / "controller.log"
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    log.close()


def _deployment(namespace, names, rde=True):
    """Deployment ``rde``: two replicas kept on different hosts by required anti-affinity
    on CIS-node, on the nodes NAMES only; RDE: the same term while running, in the
    hwaffinity.io/required-during-execution annotation."""
    only_ours = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                               "values": names}]}]}}
    apart = {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "CIS-node", "labelSelector": {"matchLabels": {"app": "rde"}}}]}
    annotations = {"hwaffinity.io/required-during-execution": RULE} if rde else {}
    template = {"metadata": {"labels": {"app": "rde"}, "annotations": annotations},
                "spec": {"affinity": {"nodeAffinity": only_ours, "podAntiAffinity": apart},
                         "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "c", "image": "x"}]}}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "rde", "namespace": namespace},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "rde"}},
                     "template": template}}


def _placed(cp, namespace):
    """{pod name: node} of the running, not terminating pods."""
    pods = [p for p in cp.pods(namespace) if not p["metadata"].get("deletionTimestamp")]
    return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods
            if p["spec"].get("nodeName") and p["status"].get("phase") == "Running"}


def label(cp, node):
    return cp.admin.get("/api/v1/nodes/" + node)["metadata"]["labels"].get("CIS-node")


def test_a_live_migration_relabels_and_evicts_the_replica_on_the_moved_node(
        cloud, control_plane, workers, controller, namespace):
    cp = control_plane
    proc, log = controller
    names = sorted(workers)
    deploy = _deployment(namespace, names)
    cp.admin.create("/apis/apps/v1/namespaces/%s/deployments" % namespace, deploy)

    def placed():
        return _placed(cp, namespace)
    harness.wait_until(lambda: len(placed()) == 2, 60, what="two replicas running")
    before = placed()
    moving_node = sorted(before.values())[0]
    staying_node = sorted(before.values())[1]
    third = (set(names) - set(before.values())).pop()
    victim = next(p for p, n in before.items() if n == moving_node)
    target_host = workers[staying_node][1]
    cloud.live_migrate(workers[moving_node][0], host=target_host)
    harness.wait_until(lambda: label(cp, moving_node) == target_host, 4 * POLL + 10,
                       what="node %s relabelled %s" % (moving_node, target_host))
    harness.wait_until(lambda: victim not in placed(), 30, what="%s evicted" % victim)
    harness.wait_until(lambda: third in placed().values(), 60,
                       what="a replacement on %s" % third)
    after = placed()
    survivor = next(p for p, n in before.items() if n == staying_node)
    assert survivor in after and after[survivor] == staying_node     # exactly one evicted
    # Events are recorded after the eviction and the label patch return: wait for them
    events = harness.wait_until(
        lambda: cp.events(namespace, "EvictedDuringExecution", victim), 30,
        what="the EvictedDuringExecution Event")
    assert "anti-affinity" in events[0]["message"]
    harness.wait_until(lambda: any("to %s" % target_host in e["message"] for e in cp.admin.get(
        "/api/v1/namespaces/kube-system/events", fieldSelector=(
            "involvedObject.kind=Node,reason=HostLabelChanged,involvedObject.name="
            + moving_node))["items"]), 30, what="the HostLabelChanged Event")
    assert proc.poll() is None


def test_a_pdb_holds_the_eviction_back_until_it_allows_it(
        cloud, control_plane, workers, controller, namespace):
    cp = control_plane
    names = sorted(workers)
    hosts = {n: label(cp, n) for n in names}
    pdb = {"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "rde", "namespace": namespace},
           "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "rde"}}}}
    cp.admin.create("/apis/policy/v1beta1/namespaces/%s/poddisruptionbudgets" % namespace, pdb)
    deploy = _deployment(namespace, names)
    cp.admin.create("/apis/apps/v1/namespaces/%s/deployments" % namespace, deploy)
    harness.wait_until(lambda: len(_placed(cp, namespace)) == 2, 60, what="two replicas")
    harness.wait_until(lambda: cp.admin.get(
        "/apis/policy/v1beta1/namespaces/%s/poddisruptionbudgets/rde" % namespace)
        .get("status", {}).get("observedGeneration"), 30, what="the PDB processed")
    before = _placed(cp, namespace)
    a, b = sorted(before.values())
    cloud.live_migrate(workers[a][0], host=hosts[b])
    harness.wait_until(lambda: label(cp, a) == hosts[b], 4 * POLL + 10, what="relabelled")
    victim = next(p for p, n in before.items() if n == a)
    harness.wait_until(lambda: cp.events(namespace, "EvictionBlocked", victim), 30,
                       what="an EvictionBlocked event")
    assert _placed(cp, namespace) == before          # nothing evicted
    cp.admin.delete("/apis/policy/v1beta1/namespaces/%s/poddisruptionbudgets/rde" % namespace)
    harness.wait_until(lambda: victim not in _placed(cp, namespace), 60,
                       what="the eviction once the PDB is gone")


def _rebalancing(cloud, cp, stack, workers, tmp_path, name):
    """A `--rebalance` controller NAME (its own Lease) that has labelled every worker:
    (process, log path)."""
    proc, log = _start(cloud, cp, tmp_path, name, "--rebalance", "--lease-name", "e2e-" + name,
                       select=_selection(stack))
    for node, (_, host) in workers.items():
        harness.wait_until(lambda n=node, h=host: label(cp, n) == h, 60,
                           what="node %s labelled %s" % (node, host))
    return proc, log


def _colocate(cloud, cp, workers, namespace):
    """Two replicas running on two workers, then the first worker's VM live-migrated onto
    the second's host; (before {pod: node}, moved node, staying node, free node), once
    the moved node carries its new host label."""
    names = sorted(workers)
    harness.wait_until(lambda: len(_placed(cp, namespace)) == 2, 60, what="two replicas")
    before = _placed(cp, namespace)
    moved, staying = sorted(before.values())
    free = (set(names) - set(before.values())).pop()
    host = label(cp, staying)
    cloud.live_migrate(workers[moved][0], host=host)
    harness.wait_until(lambda: label(cp, moved) == host, 4 * POLL + 10,
                       what="node %s relabelled %s" % (moved, host))
    return before, moved, staying, free


def _intent_met(cloud, cp, namespace):
    """intentMet of Deployment rde in `hwaffinity audit --openstack -o json`."""
    p = subprocess.run(
        [sys.executable, "-m", "tacker_hwaffinity.cli.main", "audit", "--kubeconfig",
         cp.kubeconfig, "--openstack", "--max-loss", "100%", "-o", "json", "-n", namespace],
        capture_output=True, text=True, env=osharness.cli_env(cloud), cwd=ROOT, timeout=120)
    assert p.returncode in (0, 1), p.stderr
    (w,) = [w for w in json.loads(p.stdout)["workloads"] if w["name"] == "rde"]
    return w["intentMet"]


def test_rebalance_moves_one_replica_of_a_plain_anti_affine_deployment(
        cloud, control_plane, stack, workers, namespace, tmp_path):
    """--rebalance: the Deployment declares only the standard required anti-affinity (no
    RequiredDuringExecution annotation); a live migration co-locates its replicas; the
    labels follow, one replica is evicted with descheduler's Event, its replacement lands
    on the free host, and `hwaffinity audit` finds the intent met again."""
    cp = control_plane
    _reset(cloud, workers)
    proc, log = _rebalancing(cloud, cp, stack, workers, tmp_path, "rebalance")
    try:
        cp.admin.create("/apis/apps/v1/namespaces/%s/deployments" % namespace,
                        _deployment(namespace, sorted(workers), rde=False))
        before, moved, staying, free = _colocate(cloud, cp, workers, namespace)
        harness.wait_until(lambda: free in _placed(cp, namespace).values(), 60,
                           what="a replica moved to the free node %s" % free)
        after = _placed(cp, namespace)
        assert len(after) == 2 and len(set(before) & set(after)) == 1    # exactly one moved
        (victim,) = set(before) - set(after)
        events = harness.wait_until(lambda: cp.events(
            namespace, "RemovePodsViolatingInterPodAntiAffinity", victim), 30,
            what="the eviction's Event")
        assert events[0]["type"] == "Normal"
        assert events[0]["message"].startswith(
            "pod eviction from %s node by hwaffinity-controller: " % before[victim])
        assert _intent_met(cloud, cp, namespace) is True
        assert "rebalance: evicted pod %s/%s" % (namespace, victim) in log.read_text()
        assert proc.poll() is None
    finally:
        _kill(proc)


def test_rebalance_moves_nothing_past_a_pdb_and_says_why(
        cloud, control_plane, stack, workers, namespace, tmp_path):
    cp = control_plane
    _reset(cloud, workers)
    pdb = {"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "rde", "namespace": namespace},
           "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "rde"}}}}
    cp.admin.create("/apis/policy/v1beta1/namespaces/%s/poddisruptionbudgets" % namespace, pdb)
    proc, log = _rebalancing(cloud, cp, stack, workers, tmp_path, "rebalance-pdb")
    try:
        cp.admin.create("/apis/apps/v1/namespaces/%s/deployments" % namespace,
                        _deployment(namespace, sorted(workers), rde=False))
        before, moved, staying, free = _colocate(cloud, cp, workers, namespace)
        events = harness.wait_until(lambda: [
            e for p in before for e in cp.events(namespace, "EvictionFailed", p)], 30,
            what="an EvictionFailed Event")
        assert events[0]["type"] == "Warning"
        # the controller reads policy/v1 budgets (1.21+) and would not attempt it; this
        # 1.20 control plane serves policy/v1beta1 only, so the API server refuses it
        assert re.search(r"by hwaffinity-controller (not attempted: PodDisruptionBudget "
                         r"%s/rde: 2 healthy, 2 required|failed: Cannot evict pod as it "
                         r"would violate the pod's disruption budget\. The disruption "
                         r"budget rde needs 2 healthy pods)" % namespace,
                         events[0]["message"]), events[0]["message"]
        # three more polls (each counts the held replica again): still nothing moved
        harness.wait_until(lambda: _held_back(log) >= 3, 10 * POLL + 10,
                           what="three rebalancing runs that evicted nothing")
        assert _placed(cp, namespace) == before
        assert _intent_met(cloud, cp, namespace) is False
    finally:
        _kill(proc)


def _held_back(log):
    """hwaffinity_rebalance_pods_evicted_total of the results not-attempted and blocked,
    summed."""
    port = re.search(r"metrics on [^\s:]+:(\d+)", log.read_text()).group(1)
    with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=5) as r:
        text = r.read().decode()
    return sum(float(v) for v in re.findall(
        r'^hwaffinity_rebalance_pods_evicted_total\{[^}]*result="(?:not-attempted|blocked)"'
        r'[^}]*\} (\S+)$',
        text, re.M))


def _start(cloud, control_plane, tmp_path, name, *extra, select, auth_url=None, user="admin"):
    """Another controller process (for the tests below), with the OpenStack credentials of
    the harness USER; returns (proc, log path)."""
    env = osharness.cli_env(cloud, user, auth_url)
    path = tmp_path / ("%s.log" % name)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tacker_hwaffinity.cli.main", "controller",
         "--kubeconfig", control_plane.kubeconfig] + list(select) + [
         "--poll-interval", str(POLL), "--grace", "5", "--eviction-interval", "1",
         "--lease-namespace", "default", "--identity", name,
         "--metrics-address", "127.0.0.1:0"] + list(extra),
        stdout=open(path, "wb"), stderr=subprocess.STDOUT, env=env, cwd=ROOT,
        start_new_session=True)
    return proc, path


def _kill(proc, sig=signal.SIGTERM):
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def _metrics(log):
    """The controller's /metrics samples {name: value} (unlabelled ones), found through
    the port its start-up line names."""
    port = re.search(r"metrics on [^\s:]+:(\d+)", log.read_text()).group(1)
    with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=5) as r:
        text = r.read().decode()
    return {k: float(v) for k, v in re.findall(r"^(\w+) (\S+)$", text, re.M)}


def test_affinity_broken_briefly_is_forgiven_and_for_longer_is_not(
        control_plane, workers, controller, namespace):
    cp = control_plane
    _, log = controller
    cp.wait_quiet()     # no other test's pod left to count among the violations
    node = sorted(workers)[1]
    rule = ('{"podAffinity": [{"topologyKey": "CIS-node", '
            '"labelSelector": {"matchLabels": {"app": "db"}}}]}')

    def bare(name, labels, annotations=None):
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace, "labels": labels,
                             "annotations": annotations or {}},
                "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "c", "image": "x"}]}}
    path = "/api/v1/namespaces/%s/pods" % namespace
    cp.admin.create(path, bare("db", {"app": "db"}))
    cp.admin.create(path, bare("front", {"app": "front"},
                               {"hwaffinity.io/required-during-execution": rule}))
    harness.wait_until(lambda: {"db", "front"} <= set(_placed(cp, namespace)), 30,
                       what="db and front running")
    violations = "hwaffinity_controller_violations"
    harness.wait_until(lambda: _metrics(log)[violations] == 0, 30, what="front satisfied")
    cp.admin.delete(path + "/db")                     # db restarted: back within the grace
    harness.wait_until(lambda: "db" not in [p["metadata"]["name"] for p in cp.pods(namespace)],
                       20, what="db gone")
    harness.wait_until(lambda: _metrics(log)[violations] >= 1, 30,
                       what="the controller seeing front's affinity broken")
    grace_over = time.monotonic() + 5                 # --grace 5, from no later than now
    cp.admin.create(path, bare("db", {"app": "db"}))
    harness.wait_until(lambda: _metrics(log)[violations] == 0, 30,
                       what="the controller seeing it healed")
    # then ticks past the end of the grace: two Nova polls (each in a tick, before its
    # enforcement) ending after it, and one more, so that a whole tick ran after it
    polls = "hwaffinity_controller_poll_seconds_count"
    at_grace = harness.wait_until(lambda: time.monotonic() >= grace_over
                                  and _metrics(log)[polls], 30, what="the grace over")
    harness.wait_until(lambda: _metrics(log)[polls] >= at_grace + 3, 6 * POLL + 10,
                       what="three more Nova polls")
    assert "front" in _placed(cp, namespace)
    assert not cp.events(namespace, "EvictedDuringExecution", "front")
    cp.admin.delete(path + "/db")                     # db gone for good
    harness.wait_until(lambda: "front" not in _placed(cp, namespace), 30,
                       what="front evicted once the grace ran out")
    # the controller records the Event after the eviction returns: wait for it
    harness.wait_until(lambda: cp.events(namespace, "EvictedDuringExecution", "front"), 30,
                       what="the EvictedDuringExecution Event")
    (event,) = cp.events(namespace, "EvictedDuringExecution", "front")
    assert "affinity term podAffinity[0]" in event["message"]


def test_nova_failing_keeps_the_labels(cloud, control_plane, stack, workers, tmp_path):
    cp = control_plane
    _reset(cloud, workers)
    before = {n: label(cp, n) for n in workers}
    proc, log = _start(cloud, cp, tmp_path, "nova-down", "--lease-name", "nova-down",
                       auth_url="http://127.0.0.1:9/v3", select=_selection(stack))
    try:
        harness.wait_until(lambda: "Nova poll failed" in log.read_text(), 60,
                           what="a failed poll reported")
        assert proc.poll() is None and "Traceback" not in log.read_text()
        assert {n: label(cp, n) for n in workers} == before
    finally:
        _kill(proc)


def test_the_standby_takes_over_when_the_leader_dies_and_acts_once(
        cloud, control_plane, stack, workers, tmp_path):
    cp = control_plane
    _reset(cloud, workers)
    args = ("--lease-name", "e2e-ha", "--lease-duration", "6")
    a, log_a = _start(cloud, cp, tmp_path, "ha-a", *args, select=_selection(stack))
    b, log_b = _start(cloud, cp, tmp_path, "ha-b", *args, select=_selection(stack))
    logs = {"ha-a": (a, log_a), "ha-b": (b, log_b)}
    try:
        def leader():
            found = [n for n, (_, p) in logs.items() if "is now the leader" in p.read_text()]
            return found[0] if len(found) == 1 else None
        harness.wait_until(leader, 60, what="one leader")
        first = leader()
        _kill(logs[first][0], signal.SIGKILL)          # crash: no release
        other = "ha-b" if first == "ha-a" else "ha-a"
        harness.wait_until(lambda: "worker server(s)" in logs[other][1].read_text(), 30,
                           what="%s takes over and polls Nova" % other)
        node = sorted(workers)[2]
        target = next(h for h in cloud.hosts if h != label(cp, node))
        cloud.live_migrate(workers[node][0], host=target)
        harness.wait_until(lambda: label(cp, node) == target, 4 * POLL + 15,
                           what="%s relabelled by the new leader" % node)
        harness.wait_until(lambda: "moved from host" in logs[other][1].read_text(), 10,
                           what="the move logged (after the label is patched)")
        text = logs[other][1].read_text()
        assert text.count("moved from host") == 1
        assert "moved from host" not in logs[first][1].read_text()
    finally:
        for proc, _ in logs.values():
            _kill(proc)


def test_a_nova_notification_relabels_long_before_the_next_poll(
        cloud, broker, control_plane, stack, workers, tmp_path):
    """Polling every 10 minutes, the move is seen within seconds: the leader listens to
    Nova's versioned notifications (URL from the environment, never logged whole)."""
    cp = control_plane
    _reset(cloud, workers)
    os.environ["NOVA_NOTIFICATIONS_URL"] = broker.url
    try:
        proc, log = _start(cloud, cp, tmp_path, "notified", "--lease-name", "notified",
                           "--poll-interval", "600", select=_selection(stack))
    finally:
        del os.environ["NOVA_NOTIFICATIONS_URL"]
    try:
        harness.wait_until(lambda: "Nova notifications: listening on" in log.read_text()
                           and "worker server(s)" in log.read_text(), 60,
                           what="the leader polled once and listens")
        for node, (_, host) in workers.items():     # its first poll's labels are written
            harness.wait_until(lambda n=node, h=host: label(cp, n) == h, 30,
                               what="node %s labelled %s" % (node, host))
        node = sorted(workers)[0]
        target = next(h for h in sorted(cloud.hosts) if h != label(cp, node))
        t0 = time.monotonic()
        cloud.live_migrate(workers[node][0], host=target)
        harness.wait_until(lambda: label(cp, node) == target, 20,
                           what="%s relabelled after the notification" % node)
        took = time.monotonic() - t0
        print("relabelled %.1f s after the live migration was asked for" % took)
        # the controller logs the move after it patched the label: wait for the line too
        harness.wait_until(lambda: "moved from host" in log.read_text(), 10,
                           what="the move logged")
        text = log.read_text()
        assert took < 20 and text.count("moved from host") == 1
        assert "rabbit://guest:***@127.0.0.1" in text and "guest:guest" not in text
        address = re.search(r"metrics on (127\.0\.0\.1:\d+)\)", text).group(1)
        with urllib.request.urlopen("http://%s/metrics" % address, timeout=5) as r:
            metrics = r.read().decode()
        assert 'hwaffinity_controller_notifications_total{event=' \
               '"instance.live_migration_post_dest.end"}' in metrics
    finally:
        _kill(proc)
