"""The cgroupfs agent's lock is shared by every pod of the node (the informer's events and
the periodic reconcile take turns under it): no API call is made under it, so one pod
whose annotation patch the API server is slow to answer delays no other pod's cgroup
write (doc/security.md). The agent is built as the daemon builds it
(``AgentDaemon._start_cgroupfs``); the API server is a Kubernetes client's two calls."""
import json
import logging
import threading
import time

from prometheus_client import CollectorRegistry

from tacker_hwaffinity.agent.daemon import AgentConfig, AgentDaemon, Prepared
from tacker_hwaffinity.agent.node import ANNOTATION
from tacker_hwaffinity.agent.runner import Metrics
from tacker_hwaffinity.kube.component import Address, Context
from tacker_hwaffinity.numa.cpuset import parse_list

from .podobjects import pod_object
from .test_agent_node import server
from .test_agent_runner import make_dirs, make_layout, read

LOG = logging.getLogger("test.shared.cgroupfs")
HOLD_S = 20.0           # the longest the slow pod's patch is held: past every bound below


class _Response:
    def __init__(self, doc):
        self.data = json.dumps(doc).encode()


class CoreApi:
    """``CoreV1Api``'s calls the agent makes: SLOW pods' patches are answered only when
    RELEASE is set (at most HOLD_S), like an API server stuck on them."""

    def __init__(self, slow):
        self.slow = set(slow)
        self.release, self.holding = threading.Event(), threading.Event()
        self.patched = {}

    def list_pod_for_all_namespaces(self, **_kw):    # the informer's; never run here
        raise AssertionError("not listed in this test")

    def patch_namespaced_pod(self, name, namespace, body, **_kw):
        if name in self.slow:
            self.holding.set()
            self.release.wait(HOLD_S)
        self.patched[name] = body["metadata"]["annotations"][ANNOTATION]
        return _Response({"metadata": {"name": name, "namespace": namespace}})

    def create_namespaced_event(self, namespace, body, **_kw):
        return _Response(body)


class Conn:
    where = "fake API server"

    def __init__(self, core):
        self._core = core

    def core(self):
        return self._core

    def timeout(self):
        return (5, 60)


class Workers:
    """The supervisor's side the agent uses: starts the recorder, keeps the others."""

    def __init__(self):
        self.stop = threading.Event()
        self.started = {}

    def start(self, name, target, *args):
        self.started[name] = args
        if name == "recorder":
            threading.Thread(target=target, args=args, daemon=True).start()


def build_agent(tree, core):
    config = AgentConfig(
        node="n1", metrics_address=Address("127.0.0.1", 0, "--metrics"),
        load_machine=lambda _reserved: server(), mode="cgroupfs", nri_socket="",
        nri_index="90", state_dir="", cgroup_root="", kubelet_root="", kubelet_config=None,
        cpu_manager_state=None, reserved_cpus=None, cpu_map=None, resync=60.0,
        dry_run=False, kubeconfig=None, context=None, log_level="info")
    registry = CollectorRegistry()
    workers = Workers()
    AgentDaemon(config)._start_cgroupfs(Prepared("cgroupfs", server(), tree), Conn(core),
                                        Metrics(registry), Context(LOG, registry, workers))
    agent = workers.started["resync"][0]
    agent.pods.informer = None      # its own map of pods stands in for the informer's store
    return agent, workers


def test_a_pod_whose_patch_is_held_delays_no_other_pods_cgroup_write(tmp_path):
    tree = make_layout(tmp_path)
    core = CoreApi(slow={"held"})
    agent, workers = build_agent(tree, core)
    held, other = pod_object("held"), pod_object("other")
    make_dirs(tree, held)
    other_dir = make_dirs(tree, other)
    agent.on_sync([])
    try:
        first = threading.Thread(target=agent.on_event, args=("ADDED", held), daemon=True)
        first.start()
        assert core.holding.wait(5)          # the held pod's patch is being answered
        t0 = time.monotonic()
        second = threading.Thread(target=agent.on_event, args=("ADDED", other), daemon=True)
        second.start()
        second.join(HOLD_S)
        took = time.monotonic() - t0
        assert took < 1.0, "the other pod's event waited %.1f s for the held patch" % took
        decision = json.loads(agent.state.annotation(other["metadata"]["uid"]))["c"]
        assert read(other_dir)[0] == parse_list(decision["exclusiveCpus"])
        deadline = time.monotonic() + 5
        while "other" not in core.patched and time.monotonic() < deadline:
            time.sleep(0.005)
        assert "other" in core.patched and "held" not in core.patched
    finally:
        core.release.set()
        workers.stop.set()


def test_the_recorder_keeps_nothing_of_the_pods_the_agent_annotated(tmp_path):
    """The agent sees what is written (the pods' annotations): the recorder between them
    keeps no table by pod uid that would grow with every pod the node ever ran."""
    tree = make_layout(tmp_path)
    core = CoreApi(slow=())
    agent, workers = build_agent(tree, core)
    agent.on_sync([])
    pods = [pod_object("p%d" % i, cpu="100m", qos="Burstable") for i in range(30)]
    try:
        for p in pods:
            make_dirs(tree, p)
            agent.on_event("ADDED", p)
        deadline = time.monotonic() + 5
        while len(core.patched) < 30 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert len(core.patched) == 30
        for p in pods:
            agent.on_event("DELETED", p)
        recorder = agent.api.recorder
        assert recorder.pending() == 0 and recorder._written == {}
    finally:
        workers.stop.set()
