"""``hwaffinity agent``: the node agent (a DaemonSet): container NUMA affinity, enforced.

Places the containers of the pods on ``--node`` with the NUMA engine. Two
modes: ``nri`` registers with the container runtime as an NRI plugin
(containerd 1.7+ with NRI enabled, containerd 2.x, CRI-O 1.26+) and returns each
container's cpuset and memory nodes at creation, so it starts pinned;
``cgroupfs`` watches the pods and writes ``cpuset.cpus``/``cpuset.mems`` into
their cgroups (runtimes without NRI). ``auto`` (the default) picks ``nri`` when
the runtime's NRI socket exists. Either way each decision is recorded in the pod
annotation ``hwaffinity.io/numa`` and failures as Events; ``/metrics`` and
``/healthz`` are served. Refuses to start, with one line and exit 2, where it
would fight the kubelet or cannot write.
"""
import gc
import logging
import os
import signal
import sys
import threading

from tacker_hwaffinity.errors import InputError

DEFAULT_PORT = 9464
NRI_SOCKET = "/var/run/nri/nri.sock"

# What the agent reads of a Pod (agent.node, numa.subjects.pod_from_object, objects.qos,
# agent.runner, kube.events): the informer keeps these keys of these fields, nothing
# else (objects.pruning); tests/unit/test_kube_projection.py checks the readers against it.
POD_FIELDS = {
    "metadata": ("name", "namespace", "uid", "labels", "annotations", "creationTimestamp",
                 "deletionTimestamp", "resourceVersion"),
    "spec": ("nodeName", ("containers", ("name", "resources")),
             ("initContainers", ("name", "resources")), "overhead"),
    "status": ("phase", "qosClass", ("containerStatuses", ("name", "containerID"))),
}


def register(sub):
    p = sub.add_parser("agent", help="node agent: enforce container NUMA affinity in cgroups",
                       description=__doc__.splitlines()[0])
    p.add_argument("--node", default=os.environ.get("NODE_NAME"),
                   help="this node's name (default: $NODE_NAME, from the downward API)")
    p.add_argument("--kubeconfig", help="kubeconfig (default: the in-cluster service account)")
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--mode", choices=("auto", "nri", "cgroupfs"), default="auto",
                   help="nri: an NRI plugin of the runtime; cgroupfs: write the cgroups; "
                        "auto: nri when --nri-socket exists (default: %(default)s)")
    p.add_argument("--nri-socket", default=NRI_SOCKET, metavar="PATH",
                   help="the runtime's NRI socket (default: %(default)s)")
    p.add_argument("--nri-index", default="90", metavar="NN",
                   help="the plugin's two-digit index: its place among the runtime's NRI "
                        "plugins (default: %(default)s)")
    p.add_argument("--state-dir", default="/var/lib/hwaffinity", metavar="DIR",
                   help="nri mode: where the agent keeps its grant checkpoint (a hostPath, "
                        "so a restarted agent changes nothing; default: %(default)s)")
    p.add_argument("--sysfs-root", default="/sys", help="sysfs to read the machine from")
    p.add_argument("--cgroup-root", default="/sys/fs/cgroup", help="cgroup file system root")
    p.add_argument("--kubelet-root", default="/var/lib/kubelet",
                   help="kubelet state directory: the default place of the two files below")
    p.add_argument("--kubelet-config", metavar="FILE",
                   help="the kubelet's configuration (reservedSystemCPUs, cpuManagerPolicy; "
                        "default KUBELET_ROOT/config.yaml); missing or empty: not used")
    p.add_argument("--cpu-manager-state", metavar="FILE",
                   help="the kubelet's CPU manager checkpoint (default "
                        "KUBELET_ROOT/cpu_manager_state); missing or empty: the policy "
                        "comes from --kubelet-config, and the start line says so")
    p.add_argument("--reserved-cpus", metavar="LIST",
                   help="CPUs of the reserved class (default: the kubelet's "
                        "reservedSystemCPUs from --kubelet-config, if any)")
    p.add_argument("--metrics-address", default="127.0.0.1:%d" % DEFAULT_PORT,
                   metavar="HOST:PORT",
                   help="where /metrics and the probes (/healthz, /readyz, /livez) are "
                        "served; loopback unless given (the DaemonSet passes "
                        "0.0.0.0:%d for the kubelet's probes and Prometheus)" % DEFAULT_PORT)
    p.add_argument("--resync", type=float, default=60.0, metavar="SECONDS",
                   help="full reconcile interval: cgroups re-read and corrected")
    p.add_argument("--dry-run", action="store_true",
                   help="log the decisions; write no cgroup, annotation or Event")
    p.add_argument("--cpu-map", metavar="FILE",
                   help="testing/emulation: map the recorded topology's CPU and memory-node "
                        "ids to this machine's (JSON {\"cpus\": {LIST: ID}, \"mems\": ...})")
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING"))
    p.set_defaults(func=run)


def _address(text, field="--metrics-address"):
    host, _, port = text.rpartition(":")
    try:
        return host or "0.0.0.0", int(port)
    except ValueError:
        raise InputError("expected HOST:PORT, got %r" % text, field=field)


def choose_mode(args):
    """(mode, why) from --mode and whether the runtime's NRI socket exists."""
    import stat
    if args.mode != "auto":
        return args.mode, "--mode %s" % args.mode
    try:
        is_socket = stat.S_ISSOCK(os.stat(args.nri_socket).st_mode)
    except OSError:
        is_socket = False
    if is_socket:
        return "nri", "the runtime's NRI socket %s exists" % args.nri_socket
    return "cgroupfs", "no NRI socket at %s (enable NRI in the runtime for nri mode)" \
        % args.nri_socket


def prepare(args, log):
    """Everything that can refuse: (mode, machine, layout, cpu maps); LAYOUT is None in
    nri mode (no cgroup is written). Raises Refused/InputError."""
    from tacker_hwaffinity.agent import cgroupfs, preflight
    from tacker_hwaffinity.cli.numa import load_machine
    from tacker_hwaffinity.numa.cpuset import format_list
    if not args.node:
        raise InputError("no node name: give --node or set NODE_NAME", field="--node")
    if not (len(args.nri_index) == 2 and args.nri_index.isdigit()):
        raise InputError("expected two digits, got %r" % args.nri_index, field="--nri-index")
    state_file = args.cpu_manager_state or os.path.join(args.kubelet_root,
                                                        preflight.CPU_MANAGER_STATE)
    config_file = args.kubelet_config or os.path.join(args.kubelet_root,
                                                      preflight.KUBELET_CONFIG)
    verified, note = preflight.cpu_manager_policy(state_file, config_file)
    (log.info if verified else log.warning)(note)
    mode, why = choose_mode(args)
    layout = None
    if mode == "cgroupfs":
        try:
            layout = cgroupfs.detect(args.cgroup_root)
            if not args.dry_run:
                layout.check_writable()
        except cgroupfs.LayoutError as e:
            raise preflight.Refused(str(e))
    elif not args.dry_run:
        try:
            os.makedirs(args.state_dir, exist_ok=True)
        except OSError as e:
            raise preflight.Refused("--state-dir %s: %s" % (args.state_dir, e.strerror or e))
    args.machine = None
    if args.reserved_cpus is None:
        args.reserved_cpus = preflight.kubelet_reserved_cpus(args.kubelet_root, config_file)
    machine = load_machine(args)
    cpu_map = mem_map = None
    if args.cpu_map:
        try:
            cpu_map, mem_map = preflight.read_cpu_map(args.cpu_map)
        except (OSError, ValueError) as e:
            raise InputError("cannot read the CPU map: %s" % e, source=args.cpu_map)
    where = layout.describe() if layout is not None else \
        "NRI plugin %s-hwaffinity on %s, checkpoint in %s" % (args.nri_index, args.nri_socket,
                                                              args.state_dir)
    log.info("node %s: %s, reserved CPUs %s; mode %s (%s); %s", args.node, machine.summary(),
             format_list(machine.reserved) or "none", mode, why, where)
    return mode, machine, layout, cpu_map, mem_map


def run(args):
    from prometheus_client import CollectorRegistry

    from tacker_hwaffinity.agent import preflight
    from tacker_hwaffinity.agent.runner import Metrics
    from tacker_hwaffinity.kube import client as kube_client
    from tacker_hwaffinity.kube.health import Supervisor
    from tacker_hwaffinity.kube.serve import HealthServer
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("hwaffinity.agent")
    # the informer says once why a call failed; urllib3's own retry warning would repeat it
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
    host, port = _address(args.metrics_address)
    try:
        mode, machine, layout, cpu_map, mem_map = prepare(args, log)
        conn = kube_client.connect(args.kubeconfig, args.context)
    except (preflight.Refused, kube_client.KubeError) as e:
        sys.stderr.write("hwaffinity agent: refusing to run: %s\n" % e)
        return 2
    registry = CollectorRegistry()
    metrics = Metrics(registry)
    stop = threading.Event()
    workers = Supervisor(stop, log=log)
    start = _start_nri if mode == "nri" else _start_cgroupfs
    ready, what = start(args, machine, layout, cpu_map, mem_map, conn, metrics, workers, stop,
                        log)
    # what start-up made (the kubernetes client's modules, the machine) goes to the permanent
    # generation: full collections stop walking it, which took 20-30 ms pauses off a
    # container's start path (benchmarks/bench_nri.py)
    gc.freeze()
    server = HealthServer(port, host=host, registry=registry, health=workers.health(ready),
                          live=workers.live)
    server.start()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    log.info("%s (metrics on %s:%d)", what, host, server.port)
    try:
        stop.wait()
    finally:
        server.stop()
        workers.join(10)
        conn.close()
    return 0


def _start_cgroupfs(args, machine, layout, cpu_map, mem_map, conn, metrics, workers, stop,
                    log):
    from tacker_hwaffinity.agent import cgroupfs
    from tacker_hwaffinity.agent.node import NodeState
    from tacker_hwaffinity.agent.runner import Agent, PodApi, PodsByUid, pod_uid
    from tacker_hwaffinity.kube.informer import Informer, InformerMetrics
    writer = cgroupfs.Writer(layout, cpu_map=cpu_map, mem_map=mem_map, dry_run=args.dry_run)
    pods = PodsByUid()       # the agent reads its pods from the informer's store
    agent = Agent(PodApi(conn), args.node, NodeState(machine), layout, writer,
                  metrics, log=log, dry_run=args.dry_run, pods=pods)
    informer = Informer(conn, conn.core().list_pod_for_all_namespaces, "Pod",
                        "pods on node %s" % args.node, agent.on_event, on_sync=agent.on_sync,
                        field_selector="spec.nodeName=" + args.node, log=log,
                        fields=POD_FIELDS, indexers={"uid": pod_uid},
                        metrics=InformerMetrics(metrics.registry))
    pods.informer = informer

    def ready():
        if not informer.synced.is_set():     # set once on_sync's full reconcile is applied
            return False, "pods of node %s not listed and reconciled yet (%s)" % (
                args.node, informer.last_error or "listing")
        return True, "ok"
    workers.start("pod-watch", informer.run, stop)
    workers.start("resync", _resync, agent, stop, args.resync, informer.synced)
    return ready, "watching the pods of node %s" % args.node


def _start_nri(args, machine, layout, cpu_map, mem_map, conn, metrics, workers, stop, log):
    from tacker_hwaffinity.agent.node import NodeState
    from tacker_hwaffinity.agent.nri_agent import CHECKPOINT, Checkpoint, NriAgent, Recorder
    from tacker_hwaffinity.agent.runner import PodApi
    recorder = Recorder(PodApi(conn), metrics, log, dry_run=args.dry_run)
    checkpoint = Checkpoint(None if args.dry_run else os.path.join(args.state_dir, CHECKPOINT))
    handler = NriAgent(lambda: NodeState(machine), checkpoint, recorder, metrics, log=log,
                       cpu_map=cpu_map, mem_map=mem_map)
    session = {"state": "connecting to %s" % args.nri_socket}

    def ready():
        if handler.plugin is None or not handler.synchronized.is_set():
            return False, "not registered with the runtime yet (%s)" % session["state"]
        return True, "ok"
    workers.start("nri", nri_session, handler, args.nri_socket, args.nri_index, stop, log,
                  session)
    workers.start("nri-updates", handler.run_updates, stop)
    workers.start("recorder", recorder.run, stop)
    return ready, "serving the runtime as NRI plugin %s-hwaffinity" % args.nri_index


def nri_session(handler, socket_path, index, stop, log, session, retry=(0.5, 10.0)):
    """Connect, register and serve until the runtime drops us; then again, with backoff
    from RETRY[0] to RETRY[1] seconds while it refuses. Each new connection is
    synchronized afresh by the runtime (Synchronize follows registration)."""
    from tacker_hwaffinity.nri.plugin import ConnectError, Plugin
    delay = retry[0]
    while not stop.is_set():
        plugin = Plugin(handler, socket_path, index=index, log=log)
        try:
            plugin.connect()
        except ConnectError as e:
            session["state"] = str(e)
            log.warning("%s; retrying in %.1f s", e, delay)
            stop.wait(delay)
            delay = min(retry[1], delay * 2)
            continue
        delay = retry[0]
        handler.plugin = plugin
        session["state"] = "registered"
        log.info("registered with the runtime as NRI plugin %s-hwaffinity", index)
        plugin.wait(stop)
        handler.plugin = None
        handler.synchronized.clear()
        plugin.close()
        if not stop.is_set():
            session["state"] = "the runtime closed the connection"
            log.warning("the runtime closed the NRI connection%s; reconnecting",
                        " (%s)" % plugin.close_error if plugin.close_error else "")
            stop.wait(retry[0])


def _resync(agent, stop, interval, synced=None):
    """Every INTERVAL seconds, a full reconcile (after the first list, SYNCED, is in)."""
    while not stop.wait(interval):
        if synced is None or synced.is_set():
            agent.resync()
