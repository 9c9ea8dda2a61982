"""``hwaffinity agent`` as a component of ``kube.component``: its configuration, the
checks that can refuse it, and its two modes' threads (``doc/agent.md``)."""
import dataclasses
import gc
import logging
import os
import stat
import threading
import typing

from tacker_hwaffinity.agent import cgroupfs, preflight
from tacker_hwaffinity.agent.checkpoint import CHECKPOINT, Checkpoint
from tacker_hwaffinity.agent.node import NodeState
from tacker_hwaffinity.agent.nri_agent import NriAgent
from tacker_hwaffinity.agent.nri_session import NriSession
from tacker_hwaffinity.agent.recorder import QueuedPodApi, Recorder
from tacker_hwaffinity.agent.runner import Agent, Metrics, PodApi, PodsByUid, pod_uid
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.kube import client as kube_client
from tacker_hwaffinity.kube.component import Address, Context, Refused, Started
from tacker_hwaffinity.kube.informer import Informer, InformerMetrics
from tacker_hwaffinity.numa.config import PlacementConfig
from tacker_hwaffinity.numa.cpuset import format_list
from tacker_hwaffinity.numa.topology import Machine

# What the agent reads of a Pod (agent.node, numa.subjects.pod_from_object, objects.qos,
# agent.runner, kube.events): the informer keeps these keys of these fields, nothing
# else (objects.pruning); tests/kube/test_projection.py checks the readers against it.
POD_FIELDS = {
    "metadata": ("name", "namespace", "uid", "labels", "annotations", "creationTimestamp",
                 "deletionTimestamp", "resourceVersion"),
    "spec": ("nodeName", ("containers", ("name", "resources")),
             ("initContainers", ("name", "resources")), "overhead"),
    "status": ("phase", "qosClass", ("containerStatuses", ("name", "containerID"))),
}


@dataclasses.dataclass(frozen=True)
class AgentConfig:
    """The agent's configuration, built once from its flags (``cli/agent.py`` says
    what each is)."""

    node: str
    metrics_address: Address
    load_machine: typing.Callable[[typing.Optional[str]], Machine]
    """The machine from sysfs, given the reserved CPUs' text."""
    mode: str                           # auto, nri or cgroupfs
    nri_socket: str
    nri_index: str                      # two digits
    state_dir: str
    cgroup_root: str
    kubelet_root: str
    kubelet_config: typing.Optional[str]        # None: KUBELET_ROOT/config.yaml
    cpu_manager_state: typing.Optional[str]     # None: KUBELET_ROOT/cpu_manager_state
    reserved_cpus: typing.Optional[str]         # None: the kubelet's reservedSystemCPUs
    cpu_map: typing.Optional[str]               # the CPU map's file
    resync: float                               # seconds between full reconciles
    dry_run: bool
    kubeconfig: typing.Optional[str]            # None: the in-cluster service account
    context: typing.Optional[str]
    log_level: str
    placement: PlacementConfig = PlacementConfig()


@dataclasses.dataclass(frozen=True)
class Prepared:
    """What the checks found: the mode, the machine, the cgroup layout (None in nri
    mode: no cgroup is written) and the CPU and memory-node maps (None: identity)."""

    mode: str
    machine: Machine
    layout: typing.Optional[cgroupfs.Layout]
    cpu_map: typing.Optional[dict] = None
    mem_map: typing.Optional[dict] = None


class ModeChoice(typing.NamedTuple):
    """The mode the agent runs in, and why (for the start line)."""

    mode: str
    why: str


@dataclasses.dataclass(frozen=True)
class ModeStarted:
    """What a mode's start gives: its readiness ((ok, message), once no worker died)
    and what it does, for the start line."""

    ready: typing.Callable[[], typing.Tuple[bool, str]]
    what: str


def choose_mode(config: AgentConfig) -> ModeChoice:
    """The configured mode, or auto's choice by whether the runtime's NRI socket exists."""
    if config.mode != "auto":
        return ModeChoice(config.mode, "--mode %s" % config.mode)
    try:
        is_socket = stat.S_ISSOCK(os.stat(config.nri_socket).st_mode)
    except OSError:
        is_socket = False
    if is_socket:
        return ModeChoice("nri", "the runtime's NRI socket %s exists" % config.nri_socket)
    return ModeChoice("cgroupfs", "no NRI socket at %s (enable NRI in the runtime for nri "
                                  "mode)" % config.nri_socket)


def _layout(config: AgentConfig, mode: str) -> typing.Optional[cgroupfs.Layout]:
    """The cgroup layout of cgroupfs MODE, writable (None in nri mode, whose checkpoint
    directory is made instead); preflight.Refused when it cannot be written."""
    if mode == "cgroupfs":
        try:
            layout = cgroupfs.detect(config.cgroup_root)
            if not config.dry_run:
                layout.check_writable()
        except cgroupfs.LayoutError as e:
            raise preflight.Refused(str(e))
        return layout
    if not config.dry_run:
        try:
            os.makedirs(config.state_dir, exist_ok=True)
        except OSError as e:
            raise preflight.Refused("--state-dir %s: %s" % (config.state_dir, e.strerror or e))
    return None


def _cpu_maps(config: AgentConfig) -> typing.Tuple[typing.Optional[dict], typing.Optional[dict]]:
    """The CPU and memory-node maps of ``--cpu-map`` ((None, None): identity)."""
    if not config.cpu_map:
        return None, None
    try:
        return preflight.read_cpu_map(config.cpu_map)
    except (OSError, ValueError) as e:
        raise InputError("cannot read the CPU map: %s" % e, source=config.cpu_map)


def prepare(config: AgentConfig, log: logging.Logger) -> Prepared:
    """Everything that can refuse, as :class:`Prepared`. Raises
    agent.preflight.Refused or InputError."""
    state_file = config.cpu_manager_state or os.path.join(config.kubelet_root,
                                                          preflight.CPU_MANAGER_STATE)
    config_file = config.kubelet_config or os.path.join(config.kubelet_root,
                                                        preflight.KUBELET_CONFIG)
    verified, note = preflight.cpu_manager_policy(state_file, config_file)
    (log.info if verified else log.warning)(note)
    mode, why = choose_mode(config)
    layout = _layout(config, mode)
    reserved = config.reserved_cpus
    if reserved is None:
        reserved = preflight.kubelet_reserved_cpus(config.kubelet_root, config_file)
    machine = config.load_machine(reserved)
    cpu_map, mem_map = _cpu_maps(config)
    where = layout.describe() if layout is not None else \
        "NRI plugin %s-hwaffinity on %s, checkpoint in %s" % (
            config.nri_index, config.nri_socket, config.state_dir)
    log.info("node %s: %s, reserved CPUs %s; mode %s (%s); %s", config.node, machine.summary(),
             format_list(machine.reserved) or "none", mode, why, where)
    return Prepared(mode, machine, layout, cpu_map, mem_map)


class AgentDaemon:
    """The agent as a ``kube.component.Component``."""

    name = "agent"

    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        self.log_level = config.log_level
        self.address = config.metrics_address

    def start(self, context: Context) -> Started:
        try:
            prepared = prepare(self.config, context.log)
            conn = kube_client.connect(self.config.kubeconfig, self.config.context)
        except (preflight.Refused, kube_client.KubeError) as e:
            raise Refused("refusing to run: %s" % e)
        metrics = Metrics(context.registry)
        start = self._start_nri if prepared.mode == "nri" else self._start_cgroupfs
        started = start(prepared, conn, metrics, context)
        # what start-up made (the kubernetes client's modules, the machine) goes to the
        # permanent generation: full collections stop walking it, which took 20-30 ms
        # pauses off a container's start path (benchmarks/bench_nri.py)
        gc.freeze()
        return Started(started.ready, lambda port: ["%s (metrics on %s:%d)" % (
            started.what, self.address.host, port)], close=[conn.close])

    def _start_cgroupfs(self, prepared: Prepared, conn: kube_client.Connection,
                        metrics: Metrics, context: Context) -> ModeStarted:
        config, log, workers = self.config, context.log, context.workers
        writer = cgroupfs.Writer(prepared.layout, cpu_map=prepared.cpu_map,
                                 mem_map=prepared.mem_map, dry_run=config.dry_run)
        pods = PodsByUid()       # the agent reads its pods from the informer's store
        # the API writes leave the agent's lock and its informer's thread: the recorder's
        recorder = Recorder(PodApi(conn), metrics, log, dry_run=config.dry_run)
        agent = Agent(QueuedPodApi(recorder), config.node,
                      NodeState(prepared.machine, config=config.placement), prepared.layout,
                      writer, metrics, log=log, dry_run=config.dry_run, pods=pods)
        informer = Informer(conn, conn.core().list_pod_for_all_namespaces, "Pod",
                            "pods on node %s" % config.node, agent.on_event,
                            on_sync=agent.on_sync, field_selector="spec.nodeName=" + config.node,
                            log=log, fields=POD_FIELDS, indexers={"uid": pod_uid},
                            metrics=InformerMetrics(metrics.registry))
        pods.informer = informer

        def ready() -> typing.Tuple[bool, str]:
            if not informer.synced.is_set():     # set once on_sync's full reconcile is applied
                return False, "pods of node %s not listed and reconciled yet (%s)" % (
                    config.node, informer.last_error or "listing")
            return True, "ok"
        workers.start("pod-watch", informer.run, workers.stop)
        workers.start("recorder", recorder.run, workers.stop)
        workers.start("resync", resync, agent, workers.stop, config.resync, informer.synced)
        return ModeStarted(ready, "watching the pods of node %s" % config.node)

    def _start_nri(self, prepared: Prepared, conn: kube_client.Connection, metrics: Metrics,
                   context: Context) -> ModeStarted:
        config, log, workers = self.config, context.log, context.workers
        recorder = Recorder(PodApi(conn), metrics, log, dry_run=config.dry_run)
        checkpoint = Checkpoint(None if config.dry_run
                                else os.path.join(config.state_dir, CHECKPOINT))
        handler = NriAgent(lambda: NodeState(prepared.machine, config=config.placement),
                           checkpoint, recorder, metrics, log=log, cpu_map=prepared.cpu_map,
                           mem_map=prepared.mem_map)
        session = NriSession(handler, config.nri_socket, config.nri_index, log)

        def ready() -> typing.Tuple[bool, str]:
            if handler.plugin is None or not handler.synchronized.is_set():
                return False, "not registered with the runtime yet (%s)" % session.state
            return True, "ok"
        workers.start("nri", session.run, workers.stop)
        workers.start("nri-updates", handler.run_updates, workers.stop)
        workers.start("recorder", recorder.run, workers.stop)
        return ModeStarted(ready, "serving the runtime as NRI plugin %s-hwaffinity"
                           % config.nri_index)


def resync(agent: Agent, stop: threading.Event, interval: float,
           synced: typing.Optional[threading.Event] = None) -> None:
    """Every INTERVAL seconds, a full reconcile (after the first list, SYNCED, is in)."""
    while not stop.wait(interval):
        if synced is None or synced.is_set():
            agent.resync()
