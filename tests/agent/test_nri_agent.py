"""The agent in NRI mode over a real unix socket, the runtime's side played by
tests/agent/nri_runtime.py (the wire format of containerd/nri; containerd itself in
tests/realnode)."""
import json
import logging
import os
import threading
import time

import pytest

from tacker_hwaffinity.agent.checkpoint import CHECKPOINT, Checkpoint
from tacker_hwaffinity.agent.node import ANNOTATION, NodeState
from tacker_hwaffinity.agent.nri_agent import EVENTS, REASON_FORGED, NriAgent
from tacker_hwaffinity.agent.nri_session import NriSession
from tacker_hwaffinity.agent.recorder import Recorder
from tacker_hwaffinity.agent.runner import Metrics
from tacker_hwaffinity.kube.client import KubeError
from tacker_hwaffinity.nri import api
from tacker_hwaffinity.numa.cpuset import parse_list

from numa import accounting

from .nri_runtime import Runtime, container, sandbox
from .podobjects import anti, pull
from .test_agent_node import server

LOG = logging.getLogger("test.nri")


class ApiRecord:
    """What the agent sends to the API server; DOWN makes every call fail."""

    def __init__(self):
        self.annotations, self.events, self.down = {}, [], False

    def annotate(self, obj, key, value):
        if self.down:
            raise KubeError("connection refused")
        self.annotations[obj["metadata"]["uid"]] = json.loads(value)

    def event(self, obj, reason, message):
        if self.down:
            raise KubeError("connection refused")
        self.events.append((obj["metadata"]["uid"], reason, message))


class CheckedAgent(NriAgent):
    """NriAgent that runs the accounting's invariant pass (tests/numa/accounting.py)
    on its NodeState after every NRI call; PROBLEMS: what it found, by call."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.problems = []

    def _checked(self, call, result):
        with self.lock:
            self.problems += [(call, p) for p in accounting.problems(self.state.placer)]
        return result

    def synchronize(self, *a):
        return self._checked("Synchronize", super().synchronize(*a))

    def create_container(self, *a):
        return self._checked("CreateContainer", super().create_container(*a))

    def update_container(self, *a):
        return self._checked("UpdateContainer", super().update_container(*a))

    def stop_container(self, *a):
        return self._checked("StopContainer", super().stop_container(*a))

    def state_change(self, *a):
        return self._checked("StateChange", super().state_change(*a))


class Node:
    """One agent (NriAgent + NriSession) connected to one fake runtime; closing it
    checks that the accounting held after every call."""

    def __init__(self, tmp_path, runtime, api_=None, machine=None):
        from prometheus_client import CollectorRegistry
        self.tmp_path, self.runtime = tmp_path, runtime
        self.api = api_ or ApiRecord()
        self.metrics = Metrics(CollectorRegistry())
        self.machine = machine or server()
        self.recorder = Recorder(self.api, self.metrics, LOG)
        self.agent = CheckedAgent(lambda: NodeState(self.machine),
                              Checkpoint(str(tmp_path / CHECKPOINT)), self.recorder,
                              self.metrics, log=LOG)
        self.stop = threading.Event()
        session = NriSession(self.agent, runtime.path, "90", LOG, retry=(0.05, 0.2))
        self.threads = [threading.Thread(target=session.run, args=(self.stop,), daemon=True),
            threading.Thread(target=self.agent.run_updates, args=(self.stop,), daemon=True),
            threading.Thread(target=self.recorder.run, args=(self.stop,), daemon=True)]
        for t in self.threads:
            t.start()

    def close(self):
        self.stop.set()
        for t in self.threads:
            t.join(5)
        assert self.agent.problems == []


@pytest.fixture
def runtime(tmp_path):
    rt = Runtime(str(tmp_path / "nri.sock"))
    yield rt
    rt.close()


@pytest.fixture
def node(tmp_path, runtime):
    n = Node(tmp_path, runtime)
    runtime.accept()
    yield n
    n.close()


def cpus_of(adjust_or_update):
    return parse_list(adjust_or_update["linux"]["resources"]["cpu"]["cpus"])


def mems_of(adjust_or_update):
    return parse_list(adjust_or_update["linux"]["resources"]["cpu"]["mems"])


def test_registers_subscribes_and_pins_a_guaranteed_container_at_creation(node, runtime):
    assert runtime.registration == {"plugin_name": "hwaffinity", "plugin_idx": "90"}
    events, updates = runtime.start()
    assert events == EVENTS and updates == []
    pod = sandbox("cnf", "u1", "guaranteed")
    reply = runtime.create(pod, container(pod, "c", "c1", milli=2000, limit_milli=2000,
                                          memory=1 << 30))
    cpus = cpus_of(reply["adjust"])
    assert len(cpus) == 2 and not cpus & {0}              # exclusive, not the reserved CPU
    m = node.machine
    assert {m.cpus[c].node for c in cpus} <= set(mems_of(reply["adjust"]))
    assert reply.get("update", []) == []
    deadline = time.monotonic() + 5
    while "u1" not in node.api.annotations and time.monotonic() < deadline:
        time.sleep(0.02)
    assert node.api.annotations["u1"]["c"]["exclusiveCpus"]


def test_shared_pool_changes_reach_the_other_containers_as_updates(node, runtime):
    runtime.start()
    web = sandbox("web", "u1", "burstable")
    first = runtime.create(web, container(web, "c", "w1", milli=500))
    shared = cpus_of(first["adjust"])
    cnf = sandbox("cnf", "u2", "guaranteed")
    second = runtime.create(cnf, container(cnf, "c", "g1", milli=4000, limit_milli=4000,
                                           memory=1 << 30))
    taken = cpus_of(second["adjust"])
    if taken & shared:        # the exclusive CPUs came out of web's shared set
        upd = {u["container_id"]: u for u in second["update"]}
        assert cpus_of(upd["w1"]) == shared - taken
    # stopping the exclusive container gives its CPUs back to the shared set
    stopped = runtime.call("StopContainer", {"pod": cnf, "container": container(
        cnf, "c", "g1", milli=4000, limit_milli=4000)})
    if taken & shared:
        assert cpus_of({u["container_id"]: u for u in stopped["update"]}["w1"]) == shared


def test_affinity_and_anti_affinity_annotations_from_the_sandbox(node, runtime):
    runtime.start()
    a = sandbox("a", "ua", "guaranteed")
    b = sandbox("b", "ub", "guaranteed", annotations=pull("a", 5))
    x = sandbox("x", "ux", "guaranteed", annotations=anti("a", 5))
    spec = dict(milli=2000, limit_milli=2000, memory=1 << 30)
    ra = runtime.create(a, container(a, "c", "ca", **spec))["adjust"]
    rb = runtime.create(b, container(b, "c", "cb", **spec))["adjust"]
    rx = runtime.create(x, container(x, "c", "cx", **spec))["adjust"]
    m = node.machine
    assert mems_of(ra) == mems_of(rb)
    assert {m.cpus[c].socket for c in cpus_of(ra)} != {m.cpus[c].socket for c in cpus_of(rx)}


def test_removal_sends_the_grown_pool_with_update_containers(node, runtime):
    runtime.start()
    web = sandbox("web", "u1", "burstable")
    shared = cpus_of(runtime.create(web, container(web, "c", "w1", milli=500))["adjust"])
    cnf = sandbox("cnf", "u2", "guaranteed")
    c = container(cnf, "c", "g1", milli=4000, limit_milli=4000, memory=1 << 30)
    taken = cpus_of(runtime.create(cnf, c)["adjust"])
    runtime.call("StateChange", {"event": api.REMOVE_CONTAINER, "pod": cnf, "container": c})
    if taken & shared:
        assert runtime.updated.wait(5)
        upd = runtime.updates[-1]["update"][0]
        assert upd["container_id"] == "w1" and cpus_of(upd) == shared
        assert upd["ignore_failure"] is True


def test_resize_places_again_and_the_update_carries_the_new_cpuset(node, runtime):
    runtime.start()
    pod = sandbox("cnf", "u1", "guaranteed")
    c = container(pod, "c", "c1", milli=2000, limit_milli=2000, memory=1 << 30)
    before = cpus_of(runtime.create(pod, c)["adjust"])
    bigger = container(pod, "c", "c1", milli=4000, limit_milli=4000, memory=1 << 30)
    reply = runtime.call("UpdateContainer", {"pod": pod, "container": c,
                                             "linux_resources": bigger["linux"]["resources"]})
    own = {u["container_id"]: u for u in reply["update"]}["c1"]
    assert len(cpus_of(own)) == 4 and len(before) == 2


def test_an_agent_restart_changes_nothing(tmp_path, runtime):
    first = Node(tmp_path, runtime)
    runtime.accept()
    runtime.start()
    pods, live, given = [], [], {}
    for i in range(6):
        p = sandbox("p%d" % i, "u%d" % i, "guaranteed" if i % 2 else "burstable")
        c = container(p, "c", "c%d" % i, milli=2000 if i % 2 else 300,
                      limit_milli=2000 if i % 2 else 0, memory=1 << 30)
        adj = runtime.create(p, c)["adjust"]["linux"]["resources"]["cpu"]
        given[c["id"]] = adj
        pods.append(p)
        live.append((p, c))
    first.close()
    runtime.drop()
    second = Node(tmp_path, runtime)
    runtime.accept()
    containers = []
    for p, c in live:           # what the runtime reports: the cpusets it applied
        cpu = c["linux"]["resources"]["cpu"]
        cpu["cpus"], cpu["mems"] = given[c["id"]]["cpus"], given[c["id"]]["mems"]
        c["state"] = api.CONTAINER_RUNNING
        containers.append(c)
    _, updates = runtime.start(pods, containers)
    # exclusive grants come back as they were; a burstable container's shared set is
    # corrected only where a later exclusive grant shrank its pool after it was given
    wanted = second.agent._wanted()
    assert {u["container_id"] for u in updates} <= {"c0", "c2", "c4"}
    for cid in ("c1", "c3", "c5"):
        assert wanted[cid] == (given[cid]["cpus"], given[cid]["mems"])
    for u in updates:
        assert u["linux"]["resources"]["cpu"]["cpus"] == wanted[u["container_id"]][0]
    second.close()


def test_a_forged_record_is_ignored_and_reported(node, runtime):
    runtime.start()
    forged = {"c": {"pool": "socket0", "exclusiveCpus": "1-55", "cpuType": "normal",
                    "mems": "0"}}
    pod = sandbox("thief", "u1", "besteffort", annotations={ANNOTATION: json.dumps(forged)})
    adj = runtime.create(pod, container(pod, "c", "c1"))["adjust"]
    assert cpus_of(adj) != parse_list("1-55")        # a pool's shared set, not the record
    assert node.agent.state.decisions("u1")["c"].get("exclusiveCpus") is None
    deadline = time.monotonic() + 5
    while not node.api.events and time.monotonic() < deadline:
        time.sleep(0.02)
    assert node.api.events and node.api.events[0][1] == REASON_FORGED


def failed_annotations(node):
    """How many times NODE's recorder failed to write an annotation."""
    return node.metrics.registry.get_sample_value("hwaffinity_agent_failures_total",
                                                  {"kind": "annotation"}) or 0


def test_api_server_down_never_delays_a_start_and_is_retried(tmp_path, runtime):
    api_ = ApiRecord()
    api_.down = True
    n = Node(tmp_path, runtime, api_=api_)
    runtime.accept()
    runtime.start()
    pod = sandbox("cnf", "u1", "guaranteed")
    t0 = time.monotonic()
    runtime.create(pod, container(pod, "c", "c1", milli=2000, limit_milli=2000,
                                  memory=1 << 30))
    assert time.monotonic() - t0 < 0.5

    def refused_and_queued_again():
        return failed_annotations(n) >= 1 and n.recorder.pending() == 1
    deadline = time.monotonic() + 5
    while not refused_and_queued_again() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert refused_and_queued_again() and api_.annotations == {}
    api_.down = False
    n.recorder.backoff = 0.01
    deadline = time.monotonic() + 5
    while "u1" not in api_.annotations and time.monotonic() < deadline:
        n.recorder.flush()
        time.sleep(0.05)
    assert "u1" in api_.annotations
    n.close()


def test_a_dropped_connection_reconnects_and_resynchronizes(node, runtime):
    runtime.start()
    pod = sandbox("cnf", "u1", "guaranteed")
    c = container(pod, "c", "c1", milli=2000, limit_milli=2000, memory=1 << 30)
    adj = runtime.create(pod, c)["adjust"]["linux"]["resources"]["cpu"]
    runtime.drop()                  # as containerd does after a request timeout
    runtime.accept()
    c["state"] = api.CONTAINER_RUNNING
    c["linux"]["resources"]["cpu"].update(adj)
    _, updates = runtime.start([pod], [c])
    assert updates == []
    assert node.agent.synchronized.is_set()


def test_checkpoint_journal_replays_compacts_and_reports_a_broken_one(tmp_path, caplog):
    path = tmp_path / "cp.json"
    cp = Checkpoint(str(path))
    cp.record("u", {"c": {"pool": "p"}})
    cp.record("v", {"c": {"pool": "q"}})
    cp.record("u", {"c": {"pool": "r"}})
    cp.record("v", None)
    assert cp.load(LOG) == {"u": {"c": {"pool": "r"}}}
    cp.rewrite(cp.load(LOG))
    assert path.read_text().count("\n") == 1 and not os.path.exists(str(path) + ".tmp")
    with open(path, "a") as f:
        f.write('{"uid": 5}\n')
    with caplog.at_level(logging.WARNING):
        assert cp.load(LOG) == {"u": {"c": {"pool": "r"}}}     # what came before the break
    assert "unreadable" in caplog.text and "line 2" in caplog.text


def test_a_handler_failure_never_fails_the_container(node, runtime, monkeypatch):
    runtime.start()

    def broken(*a):
        raise RuntimeError("engine bug")
    monkeypatch.setattr(node.agent, "create_container", broken)
    pod = sandbox("cnf", "u1", "guaranteed")
    reply = runtime.create(pod, container(pod, "c", "c1", milli=2000, limit_milli=2000))
    assert reply == {}          # no adjustment: the container runs as the kubelet asked
    monkeypatch.setattr(node.agent, "synchronize", broken)
    with pytest.raises(Exception, match="status 2: RuntimeError: engine bug"):
        runtime.call("Synchronize", {})     # not a container request: the runtime is told


@pytest.mark.parametrize("parent,qos", [
    ("/kubepods/pod1", "Guaranteed"), ("/kubepods/burstable/pod1", "Burstable"),
    ("/kubepods/besteffort/pod1", "BestEffort"), ("kubepods-pod1.slice", "Guaranteed"),
    ("kubepods-burstable-pod1.slice", "Burstable"),
    ("kubepods-besteffort-pod1.slice", "BestEffort"),
    ("/custom/kubepods/pod_1", "Guaranteed"), ("", "BestEffort")])
def test_qos_class_from_the_kubelets_cgroup_parent_under_both_drivers(parent, qos):
    from tacker_hwaffinity.agent import nri_subjects
    assert nri_subjects.qos_class({"linux": {"cgroup_parent": parent}}) == qos


def test_requests_come_back_exactly_from_the_kubelets_shares_and_quota():
    from tacker_hwaffinity.agent import nri_subjects
    for milli in (3, 99, 100, 250, 1000, 1500, 64000):     # 2 shares: none (MinShares)
        assert nri_subjects.shares_to_milli(milli * 1024 // 1000) == milli
    pod = nri_subjects.pod(sandbox("p", "u", "guaranteed"))
    c = nri_subjects.container(pod, container(sandbox("p", "u"), "c", "x", milli=1500,
                                              limit_milli=1500, memory=5 << 20))
    assert (c.cpu_request, c.cpu_limit, c.mem_request, c.mem_limit) == (1500, 1500, 5 << 20,
                                                                       5 << 20)
