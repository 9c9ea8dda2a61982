"""What the kube adapters share, held as long as one party can hold it: the leader Lease
(a holder that writes a lease duration of its own and stops renewing), an Event's
request (an API server that never answers; a message a tenant chose), and the health
answers (a worker thread stuck for good)."""
import copy
import socket
import threading
import time

import pytest

from tacker_hwaffinity.kube import events
from tacker_hwaffinity.kube.client import Connection, KubeError
from tacker_hwaffinity.kube.health import Supervisor
from tacker_hwaffinity.kube.leader import ACQUIRED, HELD, LeaderElector

FAR_FUTURE = "2999-01-01T00:00:00.000000Z"


class LeaseStore:
    """One Lease, as the API server keeps it: GET, POST, and a PUT refused (409) unless
    it carries the resourceVersion last written."""

    def __init__(self, spec):
        self.lease = {"metadata": {"name": "l", "namespace": "ns", "resourceVersion": "1"},
                      "spec": spec}

    def send(self, method, path, body, timeout, verb):
        if method == "GET":
            return copy.deepcopy(self.lease)
        version = self.lease["metadata"]["resourceVersion"]
        if body["metadata"].get("resourceVersion") != version:
            raise KubeError("conflict", 409)
        self.lease = copy.deepcopy(body)
        self.lease["metadata"]["resourceVersion"] = str(int(version) + 1)
        return copy.deepcopy(self.lease)


def test_a_lease_holder_is_outlasted_by_our_duration_not_by_what_it_wrote(monkeypatch):
    store = LeaseStore({"holderIdentity": "squatter", "leaseDurationSeconds": 10 ** 9,
                        "acquireTime": FAR_FUTURE, "renewTime": FAR_FUTURE,
                        "leaseTransitions": 7})
    now = [1000.0]
    elector = LeaderElector(object(), "ns", "l", "controller-0", lease_duration=15,
                            renew_deadline=10, retry_period=2, clock=lambda: now[0])
    monkeypatch.setattr(elector, "_send", store.send)
    assert elector._try(10) == HELD
    now[0] += 14.9                      # the squatter wrote nothing since: still ours to wait
    assert elector._try(10) == HELD
    now[0] += 0.2                       # our lease_duration after we saw it, by our clock
    assert elector._try(10) == ACQUIRED
    assert store.lease["spec"]["holderIdentity"] == "controller-0"
    assert store.lease["spec"]["leaseDurationSeconds"] == 15
    assert store.lease["spec"]["leaseTransitions"] == 8


def test_a_holder_that_keeps_renewing_keeps_it_and_a_stale_write_does_not_restart_the_wait(
        monkeypatch):
    store = LeaseStore({"holderIdentity": "other", "leaseDurationSeconds": 15,
                        "renewTime": FAR_FUTURE})
    now = [0.0]
    elector = LeaderElector(object(), "ns", "l", "me", lease_duration=15, renew_deadline=10,
                            retry_period=2, clock=lambda: now[0])
    monkeypatch.setattr(elector, "_send", store.send)
    assert elector._try(10) == HELD
    for second in range(1, 40):         # a live holder renews: each renewal is a new spec
        now[0] = float(second)
        store.lease["spec"]["renewTime"] = "2026-01-01T00:00:%02d.000000Z" % second
        assert elector._try(10) == HELD
    now[0] += 15.1                      # it stops: ours after lease_duration
    assert elector._try(10) == ACQUIRED


class ShortTimeouts(Connection):
    """A connection whose requests wait TIMEOUT seconds at most (ours)."""

    def __init__(self, server, timeout):
        from kubernetes import client
        configuration = client.Configuration()
        configuration.host = server
        configuration.retries = 0
        Connection.__init__(self, client.ApiClient(configuration), server)
        self._timeout = timeout

    def timeout(self):
        return self._timeout


@pytest.fixture
def silent_server():
    """A loopback port that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held, stop = [], threading.Event()

    def accept():
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % listener.getsockname()[1]
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    listener.close()


def test_an_event_waits_for_the_api_server_our_timeout_at_most(silent_server):
    conn = ShortTimeouts(silent_server, (0.5, 0.5))
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "tenant", "uid": "u"}}
    with pytest.raises(KubeError):      # the client's first request sets up its models
        events.record_event(conn, pod, "Warning", "Refused", "x", "hwaffinity-test")
    started = time.monotonic()
    with pytest.raises(KubeError, match="unreachable while trying to create events"):
        events.record_event(conn, pod, "Warning", "Refused", "x", "hwaffinity-test")
    assert time.monotonic() - started < 0.5 + 1.0           # the read timeout (ours)


def test_an_events_message_and_reason_are_cut_to_the_servers_limits(monkeypatch):
    sent = []
    monkeypatch.setattr(events, "_call", lambda conn, verb, what, method, ns, body:
                        sent.append(body) or body)
    pod = {"metadata": {"name": "p", "namespace": "tenant"}}
    tenant_text = "\u00e9" * (1 << 20)            # a tenant's annotation, quoted back
    events.record_event(Connection(None, "https://api.test"), pod, "Warning",
                        "R" * 1000, tenant_text, "hwaffinity-test")
    body, = sent
    assert len(body["message"].encode("utf-8")) <= events.MESSAGE_LIMIT
    assert body["message"] == "\u00e9" * (events.MESSAGE_LIMIT // 2)
    assert len(body["reason"]) == len(body["action"]) == events.NAME_LIMIT


def test_a_stuck_worker_neither_flips_nor_blocks_the_health_answers():
    stop = threading.Event()
    workers = Supervisor(stop)
    stuck_lock, release = threading.Lock(), threading.Event()

    def stuck():                        # holds a lock of its own, for good
        with stuck_lock:
            release.wait()
    workers.start("stuck", stuck)
    workers.start("dies", lambda: 1 / 0)
    workers.threads["dies"].join(5)
    health = workers.health(lambda: (True, "ok"))
    started = time.monotonic()
    for _ in range(100):
        assert health() == (False, "worker thread dies died: ZeroDivisionError: "
                                   "division by zero")
        assert workers.live()[0] is False
    assert time.monotonic() - started < 0.5
    assert workers.threads["stuck"].is_alive()
    release.set()
    stop.set()
    workers.join(5)
    assert not workers.threads["stuck"].is_alive()


def test_a_stuck_worker_alone_leaves_the_component_live_and_ready():
    stop = threading.Event()
    workers = Supervisor(stop)
    release = threading.Event()
    workers.start("stuck", release.wait)
    started = time.monotonic()
    assert workers.health(lambda: (True, "ok"))() == (True, "ok")
    assert workers.live() == (True, "ok")
    assert time.monotonic() - started < 0.1
    stop.set()
    release.set()
    workers.join(5)
