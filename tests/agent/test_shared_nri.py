"""What every container of the node shares in NRI mode (doc/security.md): the plugin's one
request worker and the agent's lock, the updates sent from a thread of their own, the
checkpoint journal, the multiplexer's write lock, the agent's memory of what it sent.
Each test holds one as long as a pod creator (or a runtime that stops reading) can and
shows the others proceed in time, or the memory stays bounded."""
import logging
import socket
import threading
import time

import pytest
from hypothesis import given, strategies as st
from prometheus_client import CollectorRegistry

from tacker_hwaffinity.agent import node as nodemod
from tacker_hwaffinity.agent import nri_agent
from tacker_hwaffinity.agent.checkpoint import CHECKPOINT, COMPACT_LINES, Checkpoint
from tacker_hwaffinity.agent.node import NodeState
from tacker_hwaffinity.agent.nri_agent import NriAgent
from tacker_hwaffinity.agent.recorder import Recorder
from tacker_hwaffinity.agent.runner import Metrics
from tacker_hwaffinity.nri import api, ttrpc, wire
from tacker_hwaffinity.nri.mux import SEND_STALL_S, Mux, MuxError

from . import hostile
from .nri_runtime import container, sandbox
from .podobjects import CR
from .test_agent_node import server
from .test_nri_agent import ApiRecord, node, runtime  # noqa: F401 - fixtures

LOG = logging.getLogger("test.shared.nri")
GUARANTEED = {"milli": 2000, "limit_milli": 2000, "memory": 1 << 30}
CONTAINERD_TIMEOUT_S = 2.0      # containerd drops a plugin that takes longer to answer


def refused(metrics, reason):
    return metrics.refused.labels(reason)._value.get()


def bystanders(runtime, n):  # noqa: F811 - the fixture's value
    """N burstable containers with long pod names: what every affinity is evaluated on."""
    for i in range(n):
        p = sandbox(hostile.LONG_NAME[:-3] + "%03d" % i, "by%d" % i, namespace="others")
        runtime.create(p, container(p, "c", "by%d" % i, milli=100))


# -- the request worker and the agent's lock -----------------------------------------

def test_a_burst_of_the_costliest_containers_delays_another_namespace_in_time(
        node, runtime):  # noqa: F811
    """One namespace creates many pods at once, each carrying the costliest affinities
    the caps admit: the runtime's requests queue behind the one worker. Its namespace's
    share of the agent's time runs out, the rest of them are left unpinned at once, and
    a pod of another namespace is answered well within containerd's timeout."""
    runtime.start()
    bystanders(runtime, 100)
    text = hostile.worst_admitted_annotations()["joint-keys"]
    replies, threads = {}, []
    for i in range(12):
        p = sandbox("hostile-%d" % i, "h%d" % i, namespace="tenant",
                    annotations={CR + "affinity": text})
        c = container(p, "c", "h%d" % i, milli=100)
        threads.append(threading.Thread(
            target=lambda p=p, c=c: replies.setdefault(p["uid"], runtime.create(p, c)),
            daemon=True))
    before = sent(runtime)
    for t in threads:
        t.start()
    in_flight(runtime, before, 12)      # the burst went out before the other pod
    other = sandbox("web", "good", "guaranteed", namespace="web")
    t0 = time.monotonic()
    reply = runtime.create(other, container(other, "c", "g1", **GUARANTEED))
    took = time.monotonic() - t0
    for t in threads:
        t.join(10)
    assert "adjust" in reply
    assert took < CONTAINERD_TIMEOUT_S / 2, \
        "another namespace's container was answered in %.2f s" % took
    assert len(replies) == 12           # every request answered


def sent(rt):
    """How many requests the runtime RT has sent (stream ids are odd, one a request)."""
    with rt._lock:
        return rt._next // 2


def in_flight(rt, since, n, timeout=10.0):
    """Wait until the runtime RT has sent N requests since it had sent SINCE."""
    deadline = time.monotonic() + timeout
    while sent(rt) - since < n:
        assert time.monotonic() < deadline, "%d requests never went out" % n
        time.sleep(0.001)


def test_a_namespace_past_its_share_is_refused_until_it_has_earned_time_again():
    now = [0.0]
    share = nri_agent.TimeShare(clock=lambda: now[0])
    share.charge("tenant", share.free + share.capacity)     # one costly burst
    with pytest.raises(nri_agent.OverShare):
        share.check("tenant")
    share.check("web")                                       # others are not charged
    now[0] += 0.01 / share.rate
    share.check("tenant")


def test_one_costly_container_holds_the_worker_for_its_budget_at_most(
        node, runtime):  # noqa: F811
    runtime.start()
    bystanders(runtime, 100)
    text = hostile.worst_admitted_annotations()["joint-keys"]
    p = sandbox("hostile", "h", namespace="tenant", annotations={CR + "affinity": text})
    hold = threading.Thread(target=runtime.create,
                            args=(p, container(p, "c", "h", milli=100)), daemon=True)
    before = sent(runtime)
    hold.start()
    in_flight(runtime, before, 1)
    other = sandbox("web", "good", "guaranteed", namespace="web")
    t0 = time.monotonic()
    reply = runtime.create(other, container(other, "c", "g1", **GUARANTEED))
    took = time.monotonic() - t0
    hold.join(10)
    assert "adjust" in reply
    assert took < nodemod.AFFINITY_BUDGET + 0.25, "answered in %.2f s" % took


def test_a_namespaces_share_is_kept_only_while_it_is_spent():
    """The table is keyed by namespace names pod creators choose: a namespace whose
    share is whole again is forgotten, so the table holds those that spent lately."""
    now = [0.0]
    share = nri_agent.TimeShare(clock=lambda: now[0])
    for i in range(10000):
        share.charge("ns-%d" % i, 0.3)
        now[0] += 0.3
    assert len(share) <= 64 + 1 + share.capacity / share.rate / 0.3


# -- reading the runtime's requests ---------------------------------------------------
# What a pod's creator writes rides in every request about its pod: the pod's labels and
# annotations in the sandbox, the container's args and env (which the agent does not read,
# but must step over). The API server takes a pod of about 1.5 MB.
ARGS = 350000           # one-character args: 1 MB on the wire, 1.4 MB of pod JSON


def _length(n):
    out = bytearray()
    wire._put_varint(out, n)
    return bytes(out)


def _sub(number, body):
    return bytes([number << 3 | 2]) + _length(len(body)) + body


def container_bytes(pod, name, cid, args=0, **resources):
    """A Container message, with ARGS one-character args (field 7) as containerd sends."""
    return api.Container.encode(container(pod, name, cid, **resources)) + b"\x3a\x01a" * args


def call_raw(runtime, method, payload, timeout=10.0):  # noqa: F811 - the fixture's value
    """Runtime.call with a payload built by hand: (seconds to the answer, answer)."""
    request, response = api.PLUGIN_METHODS[method]
    done, slot = threading.Event(), None
    with runtime._lock:
        sid = runtime._next
        runtime._next += 2
        slot = runtime._pending[sid] = [done, None]
    t0 = time.monotonic()
    runtime.mux.send(1, ttrpc.request_frame(sid, api.PLUGIN_SERVICE, method, payload))
    assert done.wait(timeout), "no answer to %s in %.0f s" % (method, timeout)
    took = time.monotonic() - t0
    code, _text, body = slot[1]
    assert code == ttrpc.OK
    return took, response.decode(body)


def test_a_container_with_the_most_args_a_pod_holds_is_refused_at_once(
        node, runtime):  # noqa: F811
    runtime.start()
    p = sandbox("hostile", "h", namespace="tenant")
    payload = _sub(1, api.PodSandbox.encode(p)) + \
        _sub(2, container_bytes(p, "c", "h1", args=ARGS, milli=100))
    took, answer = call_raw(runtime, "CreateContainer", payload)
    assert took < 0.25, "a request of %d args held the worker %.2f s" % (ARGS, took)
    assert "adjust" not in answer           # unpinned: that container's error
    other = sandbox("web", "good", "guaranteed", namespace="web")
    assert "adjust" in runtime.create(other, container(other, "c", "g1", **GUARANTEED))


def test_a_synchronize_with_a_pod_over_the_caps_places_the_others_in_time(
        node, runtime):  # noqa: F811
    runtime.call("Configure", {"runtime_name": "fake", "runtime_version": "1",
                               "request_timeout": 2000})
    good = [sandbox("good-%d" % i, "g%d" % i, "guaranteed", namespace="web")
            for i in range(3)]
    hostile = sandbox("hostile", "h", "guaranteed", namespace="tenant")
    running = dict(cpus="0-111", state=api.CONTAINER_RUNNING, **GUARANTEED)
    payload = b"".join(_sub(1, api.PodSandbox.encode(p)) for p in good + [hostile])
    payload += b"".join(_sub(2, container_bytes(p, "c", p["uid"] + "c", **running))
                        for p in good)
    payload += _sub(2, container_bytes(hostile, "c", "hc", args=ARGS, **running))
    took, answer = call_raw(runtime, "Synchronize", payload)
    assert took < 0.5, "Synchronize answered in %.2f s" % took
    assert sorted(u["container_id"] for u in answer["update"]) == ["g0c", "g1c", "g2c"]
    assert refused(node.metrics, "request") == 1


def test_a_pod_over_its_fields_cap_is_named_and_costs_little():
    labels = b"".join(_sub(5, _sub(1, b"%x" % i)) for i in range(60000))
    data = _sub(1, api.PodSandbox.encode(sandbox("p", "u")) + labels)
    t0 = time.process_time()
    try:
        api.CreateContainerRequest.decode(data)
    except wire.WireError as e:
        assert "PodSandbox: more than %d fields" % api.MAX_SANDBOX_FIELDS in str(e)
    else:
        raise AssertionError("60000 labels were read")
    assert time.process_time() - t0 < 0.05


@given(st.dictionaries(st.text(max_size=200), st.text(max_size=200), max_size=8))
def test_the_inline_map_reader_reads_what_the_encoder_wrote(labels):
    """Short entries take the inline path, entries of 128 bytes or more the general one."""
    data = api.PodSandbox.encode({"id": "s", "labels": labels, "annotations": labels})
    got = api.PodSandbox.decode(data)
    assert got.get("labels", {}) == labels and got.get("annotations", {}) == labels


# -- updates sent from their own thread ---------------------------------------------

class HeldRuntime:
    """The runtime's UpdateContainers as the agent calls it: the first call is answered
    only when RELEASE is set (a runtime busy elsewhere); CALLS: the updates of each."""

    def __init__(self):
        self.calls, self.release, self.holding = [], threading.Event(), threading.Event()

    def update_containers(self, updates):
        self.calls.append(list(updates))
        if len(self.calls) == 1:
            self.holding.set()
            self.release.wait(10)
        return []


def nri_agent_alone(checkpoint=None):
    metrics = Metrics(CollectorRegistry())
    agent = NriAgent(lambda: NodeState(server()), checkpoint or Checkpoint(None),
                     Recorder(ApiRecord(), metrics, LOG), metrics, log=LOG)
    agent.synchronize([], [])
    return agent


def test_removals_while_the_runtime_is_slow_queue_one_update_per_container():
    agent = nri_agent_alone()
    for i in range(20):
        p = sandbox("shared-%d" % i, "s%d" % i, namespace="others")
        agent.create_container(p, container(p, "c", "s%d" % i, milli=100))
    exclusive = []
    for i in range(10):
        p = sandbox("excl-%d" % i, "e%d" % i, "guaranteed", namespace="tenant")
        agent.create_container(p, container(p, "c", "e%d" % i, **GUARANTEED))
        exclusive.append(p)
    runtime_ = HeldRuntime()
    agent.plugin = runtime_
    stop = threading.Event()
    threading.Thread(target=agent.run_updates, args=(stop,), daemon=True).start()
    try:
        agent.state_change(api.REMOVE_POD_SANDBOX, exclusive[0], {})
        assert runtime_.holding.wait(5)
        for p in exclusive[1:]:
            agent.state_change(api.REMOVE_POD_SANDBOX, p, {})
        runtime_.release.set()
        deadline = time.monotonic() + 5
        while len(runtime_.calls) < 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.6)     # a third call would come within run_updates' 0.5 s poll
    finally:
        stop.set()
    assert len(runtime_.calls) == 2, "%d UpdateContainers calls, of %s updates" % (
        len(runtime_.calls), [len(c) for c in runtime_.calls])
    last = {u["container_id"]: u["linux"]["resources"]["cpu"]["cpus"]
            for u in runtime_.calls[-1]}
    assert len(last) == len(runtime_.calls[-1]) <= 20
    with agent.lock:
        wanted = agent._wanted()
    assert all(wanted[cid][0] == cpus for cid, cpus in last.items())


# -- the checkpoint journal ---------------------------------------------------------

def test_the_checkpoint_journal_stays_bounded_however_often_a_pod_is_resized(tmp_path):
    path = tmp_path / CHECKPOINT
    agent = nri_agent_alone(Checkpoint(str(path)))
    p = sandbox("resized", "r", "guaranteed", namespace="tenant")
    c = container(p, "c", "r1", **GUARANTEED)
    agent.create_container(p, c)
    for i in range(3 * COMPACT_LINES):
        milli = 1000 * (1 + i % 4)
        res = container(p, "c", "r1", milli=milli, limit_milli=milli,
                        memory=1 << 30)["linux"]["resources"]
        agent.update_container(p, c, res)
    lines = path.read_text().count("\n")
    assert lines <= COMPACT_LINES + 2, "%d lines for one pod" % lines
    assert Checkpoint(str(path)).load(LOG) == agent.records


# -- what the agent remembers of pods ----------------------------------------------

def test_a_resynchronization_forgets_the_pods_removed_while_disconnected():
    agent = nri_agent_alone()
    for i in range(50):
        p = sandbox("gone-%d" % i, "g%d" % i, "guaranteed", namespace="tenant",
                    annotations={nodemod.ANNOTATION: "forged"})
        agent.create_container(p, container(p, "c", "g%d" % i, **GUARANTEED))
    stop = threading.Event()
    threading.Thread(target=agent.recorder.run, args=(stop,), daemon=True).start()
    deadline = time.monotonic() + 5
    while agent.recorder.pending() and time.monotonic() < deadline:
        time.sleep(0.005)
    stop.set()
    assert len(agent._reported) == 50 and len(agent.recorder._written) == 50
    agent.synchronize([], [])          # the runtime's view after a reconnect: none left
    assert agent._reported == {} and agent.recorder._written == {}


def test_a_pods_remembered_events_are_bounded():
    agent = nri_agent_alone()
    p = sandbox("noisy", "n", "guaranteed", namespace="tenant")
    pod = nri_agent.nri_subjects.pod(p)
    for i in range(10 * nri_agent.REPORTED_PER_POD):
        agent._event(pod, "NUMAPlacementFailed", "message %d" % i)
    assert len(agent._reported["n"]) <= nri_agent.REPORTED_PER_POD


def test_the_formatted_cpuset_cache_is_bounded():
    agent = nri_agent_alone()
    for i in range(10000):
        agent._text(frozenset({i % 112, (i // 112) % 112, 7 + i % 3}), None, "CPU")
    assert len(agent._formatted) <= 4097


# -- the multiplexer's write lock -------------------------------------------------

def test_a_runtime_that_stops_reading_holds_the_write_lock_for_twice_the_stall_at_most():
    ours, theirs = socket.socketpair()
    closed = []
    mux = Mux(ours, {}, closed.append)
    mux.start()
    errors = []

    def write_until_refused():
        try:
            while True:
                mux.send(1, b"x" * (1 << 20))
        except MuxError as e:
            errors.append(e)
    writer = threading.Thread(target=write_until_refused, daemon=True)
    t0 = time.monotonic()
    writer.start()
    writer.join(2 * SEND_STALL_S + 5)
    took = time.monotonic() - t0
    try:
        assert errors, "a write still held the lock after %.1f s" % took
        assert took < 2 * SEND_STALL_S + 1.0
        t1 = time.monotonic()
        try:
            mux.send(2, b"next")                # the lock is free: refused at once
        except MuxError:
            pass
        assert time.monotonic() - t1 < 0.1
    finally:
        mux.close()
        theirs.close()
