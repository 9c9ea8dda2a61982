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
import argparse
import functools
import os
import typing

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.numa.config import add_placement_arguments
from tacker_hwaffinity.numa.config import from_args as placement_config

DEFAULT_PORT = 9464
NRI_SOCKET = "/var/run/nri/nri.sock"

# The agent's modules are imported in the functions that use them, not here:
# ``hwaffinity --help`` imports every command's module, and agent.daemon (the Kubernetes
# client, the NRI plugin) adds ~200 ms over the rest of it, kube.component ~20 ms;
# ``hwaffinity agent``'s parser imports this module alone.
if typing.TYPE_CHECKING:
    from tacker_hwaffinity.agent.daemon import AgentConfig
    from tacker_hwaffinity.numa.topology import Machine


def register(sub: typing.Any) -> None:
    p = sub.add_parser(
        "agent", help="node agent: enforce container NUMA affinity in cgroups",
        description="The node agent (a DaemonSet): places the containers of the pods on "
                    "--node with the NUMA engine that hwaffinity numa plan runs, and "
                    "enforces it. nri mode registers with the container runtime as an NRI "
                    "plugin (containerd 1.7+ with NRI enabled, containerd 2.x, CRI-O "
                    "1.26+) and gives each container its cpuset and memory nodes at "
                    "creation, so it starts pinned; cgroupfs mode watches the pods and "
                    "writes cpuset.cpus and cpuset.mems into their cgroups; auto picks "
                    "nri when the runtime's NRI socket exists. It reads the machine from "
                    "sysfs, the kubelet's configuration and CPU manager state, and the "
                    "node's pods from the API server; records each decision in the pod "
                    "annotation hwaffinity.io/numa and failures as Events; serves "
                    "/metrics and the probes. It runs until SIGTERM or SIGINT. Exit 0: "
                    "stopped; 2: bad flags, or it refuses to start (one line on stderr) "
                    "where it would fight the kubelet or cannot write.")
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
    add_placement_arguments(p)      # the same as `hwaffinity numa plan` takes
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING"),
                   help="the least severe log record written (stderr, one line each)")
    p.set_defaults(func=run)


def config(args: argparse.Namespace) -> "AgentConfig":
    """The agent.daemon.AgentConfig of the parsed ARGS (flags checked now)."""
    # lazy: see the module's head
    from tacker_hwaffinity.agent.daemon import AgentConfig
    from tacker_hwaffinity.kube.component import parse_address
    address = parse_address(args.metrics_address, "--metrics-address")
    if not args.node:
        raise InputError("no node name: give --node or set NODE_NAME", field="--node")
    if not (len(args.nri_index) == 2 and args.nri_index.isdigit()):
        raise InputError("expected two digits, got %r" % args.nri_index, field="--nri-index")
    return AgentConfig(
        node=args.node, metrics_address=address,
        load_machine=functools.partial(_load_machine, args.sysfs_root),
        mode=args.mode, nri_socket=args.nri_socket, nri_index=args.nri_index,
        state_dir=args.state_dir, cgroup_root=args.cgroup_root, kubelet_root=args.kubelet_root,
        kubelet_config=args.kubelet_config, cpu_manager_state=args.cpu_manager_state,
        reserved_cpus=args.reserved_cpus, cpu_map=args.cpu_map, resync=args.resync,
        dry_run=args.dry_run, kubeconfig=args.kubeconfig, context=args.context,
        placement=placement_config(args), log_level=args.log_level)


def _load_machine(sysfs_root: str, reserved_cpus: typing.Optional[str]) -> "Machine":
    """The machine under SYSFS_ROOT with RESERVED_CPUS, as ``hwaffinity numa`` loads it."""
    # lazy: see the module's head
    from tacker_hwaffinity.numa import sysfs
    return sysfs.load(sysfs_root or "/sys", reserved_cpus)


def run(args: argparse.Namespace) -> int:
    # lazy: see the module's head
    from tacker_hwaffinity.agent.daemon import AgentDaemon
    from tacker_hwaffinity.kube import component
    return component.run(AgentDaemon(config(args)))
