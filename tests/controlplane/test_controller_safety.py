"""The during-execution controller is safe to run (issue #24, items 2, 3 and 5): real
control plane, real Nova, `hwaffinity controller` as processes.

* a satisfied ``namespaceSelector`` term is left alone for 3x the grace period (and a
  broken one is still enforced, also when a namespace loses the label it was chosen by);
* a pod stuck Terminating on a node that no kubelet serves does not stop enforcement: it
  is waited for its grace period plus the margin, reported by a Warning Event, and the
  next violator is evicted;
* a leader whose Lease was taken while it was in the middle of a tick (held in a Nova
  poll, then frozen past its lease) resumes and does nothing: the new leader evicts,
  exactly once, and relabels.

The controllers are started as tests/controlplane/test_controller_e2e.py starts them
(its ``_start``), against a Nova of their own (two compute hosts, no Heat): the workers
are found by ``--worker-metadata``.
"""
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
import uuid

import pytest

from tests import builders

from . import harness
from .test_controller_e2e import _kill, _start, label, osharness

pytestmark = [pytest.mark.controlplane, pytest.mark.openstack]
GRACE = 2
META = ("hwaffinity-test", "safety-" + uuid.uuid4().hex[:6])
SELECT = ["--worker-metadata", "%s=%s" % META]
ANNOTATION = "hwaffinity.io/required-during-execution"
FRONT_RULE = ('{"podAffinity": [{"topologyKey": "kubernetes.io/hostname", "labelSelector": '
              '{"matchLabels": {"app": "db"}}, "namespaceSelector": {"matchLabels": '
              '{"team": "%s"}}}]}')


@pytest.fixture(scope="module")
def cloud():
    """Nova with two compute hosts, for this module alone."""
    yield from osharness.own_cloud(2)


@pytest.fixture
def controller(cloud, control_plane, tmp_path):
    """start(name, *flags, auth_url=None) -> (process, log path); stopped afterwards."""
    started = []

    def start(name, *flags, auth_url=None):
        proc, log = _start(cloud, control_plane, tmp_path, name, *flags, select=SELECT,
                           auth_url=auth_url)
        started.append(proc)
        return proc, log
    yield start
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGCONT)      # a test may have left it stopped
        _kill(proc)


def _pod(namespace, name, node, labels, rule=None, grace=0):
    return builders.pod(name, labels, ns=namespace, on=node,
                        annotations={ANNOTATION: rule} if rule else {},
                        terminationGracePeriodSeconds=grace,
                        containers=[builders.container()])


def _create(cp, *pods):
    for pod in pods:
        cp.admin.create("/api/v1/namespaces/%s/pods" % pod["metadata"]["namespace"], pod)


def _alive(cp, namespace, name):
    """The pod exists and is not being deleted."""
    status, pod = cp.admin.request("GET", "/api/v1/namespaces/%s/pods/%s" % (namespace, name),
                                   ok=(200, 404))
    return status == 200 and not pod["metadata"].get("deletionTimestamp")


def _evicted(cp, namespace, name):
    return cp.events(namespace, "EvictedDuringExecution", name)


def _wait_started(log):
    harness.wait_until(lambda: "is now the leader" in log.read_text(), 60,
                       what="the controller leading")


def _own_node(cp, name):
    """A node of this test (the fake kubelet keeps it Ready)."""
    cp.add_node(name, {"kubernetes.io/hostname": name})
    return name


@pytest.fixture
def nodes(control_plane):
    made = []

    def make(name):
        made.append(name)
        return name
    yield make
    for name in made:
        control_plane.delete_node(name)


def test_a_satisfied_namespace_selector_term_is_left_alone(
        control_plane, controller, namespace, nodes):
    """front follows the app=db pods of the namespaces labelled team=<t>. Its db runs on
    its node in another namespace, which has that label: the term holds and front stays
    for 3x the grace. front2, the same with a label no namespace has, is evicted after
    the grace (the controller is enforcing meanwhile); and once db's namespace loses the
    label (a watch event), front is evicted too."""
    cp = control_plane
    team = "data-" + uuid.uuid4().hex[:6]
    other = cp.create_namespace("t-" + uuid.uuid4().hex[:10])
    try:
        cp.admin.patch("/api/v1/namespaces/" + other, {"metadata": {"labels": {"team": team}}})
        node = nodes(_own_node(cp, "sf-ns-" + uuid.uuid4().hex[:6]))
        proc, log = controller("sf-ns", "--lease-name", "sf-ns", "--grace", str(GRACE),
                               "--poll-interval", "600")
        _wait_started(log)
        _create(cp, _pod(other, "db", node, {"app": "db"}))
        harness.wait_until(lambda: _alive(cp, other, "db"), 30, what="db created")
        t0 = time.monotonic()
        _create(cp, _pod(namespace, "front", node, {"app": "front"}, FRONT_RULE % team),
                _pod(namespace, "front2", node, {"app": "front"}, FRONT_RULE % "nobody"))
        harness.wait_until(lambda: _evicted(cp, namespace, "front2"), 30,
                           what="front2 evicted after the grace")
        left = t0 + 3 * GRACE - time.monotonic()
        if left > 0:
            time.sleep(left)                # the condition is time itself: 3x the grace
        assert _alive(cp, namespace, "front") and not _evicted(cp, namespace, "front")
        assert "front2" in log.read_text() and proc.poll() is None
        cp.admin.patch("/api/v1/namespaces/" + other, {"metadata": {"labels": {"team": None}}})
        harness.wait_until(lambda: _evicted(cp, namespace, "front"), 30,
                           what="front evicted once its namespace term is broken")
        assert "Traceback" not in log.read_text()
    finally:
        cp.delete_namespace(other)


def test_a_pod_stuck_terminating_does_not_stop_enforcement(
        control_plane, controller, namespace, nodes):
    """x-new and x-old clash (anti-affinity) on a node no kubelet serves; y-new and y-old
    (of a higher priority: evicted later) on a live node. x-new goes first (lowest
    priority, newest) and stays Terminating for ever; after its grace (1 s) + the margin
    (3 s) it gets an EvictionStuck Event and y-new is evicted. x-new is never evicted
    again, and x-old (no longer in conflict with a pod being deleted) stays."""
    cp = control_plane
    dead = nodes("sf-dead-" + uuid.uuid4().hex[:6])
    cp.admin.create("/api/v1/nodes", harness.node_object(
        dead, {"kubernetes.io/hostname": dead}, "127.3.0.1", "4", "8Gi", "110"))
    live = nodes(_own_node(cp, "sf-live-" + uuid.uuid4().hex[:6]))
    high = "sf-high-" + uuid.uuid4().hex[:6]
    cp.admin.create("/apis/scheduling.k8s.io/v1/priorityclasses", {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": high}, "value": 1000})
    proc, log = controller("sf-stuck", "--lease-name", "sf-stuck", "--grace", str(GRACE),
                           "--poll-interval", "600", "--termination-margin", "3")
    _wait_started(log)

    def rule(group):
        return ('{"podAntiAffinity": [{"topologyKey": "kubernetes.io/hostname", '
                '"labelSelector": {"matchLabels": {"g": "%s"}}}]}' % group)
    ys = [_pod(namespace, n, live, {"g": "y"}, rule("y")) for n in ("y-old", "y-new")]
    for y in ys:
        y["spec"]["priorityClassName"] = high
    try:
        _create(cp, _pod(namespace, "x-old", dead, {"g": "x"}, rule("x"), grace=1),
                _pod(namespace, "x-new", dead, {"g": "x"}, rule("x"), grace=1), *ys)
        harness.wait_until(lambda: _evicted(cp, namespace, "x-new"), 30, what="x-new evicted")
        stuck = harness.wait_until(lambda: cp.events(namespace, "EvictionStuck", "x-new"), 60,
                                   what="an EvictionStuck event on x-new")
        assert stuck[0]["type"] == "Warning"
        assert "grace period 1 s + 3 s" in stuck[0]["message"], stuck[0]["message"]
        harness.wait_until(lambda: _evicted(cp, namespace, "y-new"), 30,
                           what="y-new evicted after the stuck one")
        pod = cp.admin.get("/api/v1/namespaces/%s/pods/x-new" % namespace)
        assert pod["metadata"].get("deletionTimestamp")      # still stuck Terminating
        assert len(_evicted(cp, namespace, "x-new")) == 1
        assert _alive(cp, namespace, "x-old") and not _evicted(cp, namespace, "x-old")
        assert _alive(cp, namespace, "y-old")
        assert proc.poll() is None and "Traceback" not in log.read_text()
    finally:
        for name in ("x-new", "x-old"):     # nobody else will: no kubelet
            cp.admin.delete("/api/v1/namespaces/%s/pods/%s" % (namespace, name),
                            {"kind": "DeleteOptions", "apiVersion": "v1",
                             "gracePeriodSeconds": 0}, ok=(200, 202, 404))
        cp.admin.request("DELETE", "/apis/scheduling.k8s.io/v1/priorityclasses/" + high,
                         ok=(200, 202, 404))


# -- a leader that lost its Lease mid-tick ---------------------------------------------

class NovaGate:
    """tests/controlplane/novagate.py in front of the cloud (Keystone and Nova: the fake
    Keystone's catalog names the address it was asked on, so a controller given
    :attr:`auth_url` polls Nova through it too). After :meth:`hold`, the next
    ``/servers/detail`` request waits, not yet forwarded, until :meth:`release`."""

    def __init__(self, cloud):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(os.path.dirname(__file__), "novagate.py"),
             str(cloud.info["port"])], stdout=subprocess.PIPE, text=True,
            start_new_session=True)
        self.port = int(self.proc.stdout.readline().split()[1])
        self.auth_url = "http://127.0.0.1:%d/identity/v3" % self.port

    def _control(self, verb):
        req = urllib.request.Request("http://127.0.0.1:%d/-/%s" % (self.port, verb),
                                     data=b"" if verb != "held" else None)
        with urllib.request.urlopen(req, timeout=10) as r:
            return int(r.read())

    def hold(self):
        self._control("hold")

    def release(self):
        self._control("release")

    @property
    def held(self):
        return self._control("held")

    def close(self):
        self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def gate(cloud):
    g = NovaGate(cloud)
    yield g
    g.close()


@pytest.fixture
def worker(cloud, control_plane):
    """(node name, server id, host): a worker VM of this test's cluster (the metadata
    the controllers select), and a node whose InternalIP is its address."""
    nova = cloud.nova("admin", version="2.68")
    server = nova.servers.create("sf-w-" + uuid.uuid4().hex[:6], image=cloud.image,
                                 flavor="1", nics=[{"net-id": cloud.network_id}],
                                 meta=dict([META]))
    server = osharness.wait_server(nova, server.id, timeout=90)
    assert server.status == "ACTIVE", server.to_dict().get("fault")
    info = cloud.server(server.id)
    ip = next(a["addr"] for nets in info["addresses"].values() for a in nets)
    node = "sf-w-" + uuid.uuid4().hex[:6]
    control_plane.add_node(node, {"kubernetes.io/hostname": node}, address=ip)
    yield node, server.id, info["OS-EXT-SRV-ATTR:host"]
    control_plane.delete_node(node)
    nova.servers.delete(server.id)


def _violations(log):
    """The violations gauge of the controller whose log is LOG."""
    address = re.search(r"metrics on (127\.0\.0\.1:\d+)\)", log.read_text()).group(1)
    with urllib.request.urlopen("http://%s/metrics" % address, timeout=5) as r:
        text = r.read().decode()
    return float(re.search(r"^hwaffinity_controller_violations (\S+)$", text, re.M).group(1))


def _holder(cp, name):
    status, lease = cp.admin.request(
        "GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/" + name, ok=(200, 404))
    return (lease.get("spec") or {}).get("holderIdentity") if status == 200 else None


@pytest.mark.parametrize("end", ["SIGSTOP", "SIGTERM"])
def test_a_leader_whose_lease_was_taken_mid_tick_does_nothing(
        cloud, control_plane, controller, gate, worker, namespace, end):
    """A leads and polls Nova through the gate; front (affinity, nothing to follow) is
    seen broken by A. A's next poll is held in the gate (A is mid-tick); the worker VM
    moves; A is either frozen (SIGSTOP) past its lease, or told to stop (SIGTERM: it
    releases the Lease); B takes the Lease and relabels. A's grace for front has run out
    by the time its tick goes on with Nova's answer (the move): it must neither relabel
    nor evict. B evicts front, once, after its own grace."""
    cp = control_plane
    node, server_id, host = worker
    grace = 8
    lease = "sf-ha-" + uuid.uuid4().hex[:6]
    flags = ("--lease-name", lease, "--lease-duration", "4", "--grace", str(grace))
    a, log_a = controller("sf-a", *flags, auth_url=gate.auth_url)
    harness.wait_until(lambda: "is now the leader" in log_a.read_text()
                       and label(cp, node) == host, 60, what="A leading, the worker labelled")
    b, log_b = controller("sf-b", *flags)
    harness.wait_until(lambda: "controller sf-b: workers are" in log_b.read_text(), 60,
                       what="B started")
    _create(cp, _pod(namespace, "front", node, {"app": "front"},
                     '{"podAffinity": [{"topologyKey": "kubernetes.io/hostname", '
                     '"labelSelector": {"matchLabels": {"app": "db"}}}]}'))
    harness.wait_until(lambda: _violations(log_a) == 1, 30, what="A sees front broken")
    seen = time.monotonic()
    gate.hold()
    harness.wait_until(lambda: gate.held, 30, what="A's next Nova poll held")
    target = next(h for h in cloud.hosts if h != host)
    try:
        cloud.live_migrate(server_id, host=target)
        os.killpg(a.pid, getattr(signal, end))
        harness.wait_until(lambda: _holder(cp, lease) == "sf-b", 60, what="B holding the Lease")
        harness.wait_until(lambda: label(cp, node) == target, 30, what="B relabelling")
        left = seen + grace + 1 - time.monotonic()
        if left > 0:
            time.sleep(left)    # the condition is time itself: A's grace runs out, front stays
        assert _alive(cp, namespace, "front") and not _evicted(cp, namespace, "front")
    finally:
        gate.release()
        os.killpg(a.pid, signal.SIGCONT)
    harness.wait_until(lambda: re.search("tick abandoned|evicted by", log_a.read_text()), 30,
                       what="A's tick going on")
    harness.wait_until(lambda: _evicted(cp, namespace, "front"), 30, what="front evicted")
    text_a, text_b = log_a.read_text(), log_b.read_text()
    assert "evicted by" not in text_a and "moved from host" not in text_a
    assert "tick abandoned" in text_a
    assert text_b.count("front: evicted by") == 1
    assert len(_evicted(cp, namespace, "front")) == 1
    assert _holder(cp, lease) == "sf-b"
    if end == "SIGTERM":
        assert a.wait(30) == 0 and "released it" in text_a
    else:
        assert a.poll() is None
