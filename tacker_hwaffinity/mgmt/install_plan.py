"""What installing Kubernetes on the VNF's VMs means, as data (no I/O).

The package's ``install_k8s.sh`` (doc/packages.md) does one node; this
module decides which node gets which role, the exact argument list of each
run, and reads the script's machine-readable lines back:

* the first master (members sorted by name, as Heat lists them) runs
  ``--role init`` with the control-plane endpoint; when a new cluster is
  not being made, a master already in the cluster runs ``refresh-join``
  instead, for a fresh bootstrap token;
* the other masters ``join-control-plane``, one after the other (etcd adds
  one member at a time);
* the workers ``join-worker``, several at a time.

Every value reaches the remote shell as one quoted argument (``ssh.command``);
the join file travels on stdin, never on a command line.
"""
import dataclasses
import json

from tacker_hwaffinity.errors import InputError

INIT, JOIN_MASTER, JOIN_WORKER, REFRESH = ("init", "join-control-plane", "join-worker",
                                           "refresh-join")
SCRIPT_NAME = "install_k8s.sh"
JOIN_NAME = "join.env"
DEFAULT_SCRIPT = "Scripts/install_k8s.sh"
LINE_TAGS = ("HWAFFINITY_JOIN", "HWAFFINITY_RESULT", "HWAFFINITY_ERROR")
EXIT_UNPACK = 125   # the driver's unpacking snippet failed (mktemp, tar, cd)


@dataclasses.dataclass(frozen=True)
class Node:
    """One VM to install: its role, where SSH reaches it, its Kubernetes address."""
    server_id: str
    name: str
    role: str
    ssh_host: str
    node_ip: str
    master: bool


@dataclasses.dataclass
class Plan:
    endpoint: str          # HOST:PORT every node joins
    vip: str               # the VIP control-plane nodes hold (keepalived), or None
    first: Node            # runs init (new cluster) or refresh-join
    new_cluster: bool
    masters: list          # join-control-plane, in order
    workers: list          # join-worker

    def all_nodes(self):
        """Every node the script runs on, the first one included."""
        return [self.first] + self.masters + self.workers


def node_addresses(server, network=None):
    """(Kubernetes address, SSH address) of a Nova server (``/servers/detail``
    JSON): the first fixed IPv4 address (on NETWORK when given), and the
    floating address on the same network when there is one. None when the
    server has no such address."""
    nets = server.get("addresses") or {}
    names = [network] if network else sorted(nets)
    for name in names:
        entries = [a for a in nets.get(name) or () if a.get("version", 4) == 4]
        fixed = [a["addr"] for a in entries if a.get("OS-EXT-IPS:type", "fixed") == "fixed"]
        floating = [a["addr"] for a in entries if a.get("OS-EXT-IPS:type") == "floating"]
        if fixed:
            return fixed[0], (floating[0] if floating else fixed[0])
    return None


def with_port(endpoint, port=6443):
    return endpoint if ":" in endpoint else "%s:%d" % (endpoint, port)


def make_plan(masters, workers, servers, opts, vip=None, installed_master=None):
    """The Plan for MASTERS and WORKERS (``plan.Worker``, in order) whose Nova
    JSON is in SERVERS ({id: server}). OPTS: the ``install`` parameters.
    VIP: the address of the cluster's VIP port, when the VNF has one.
    INSTALLED_MASTER: a master of a cluster that exists (server id); it runs
    refresh-join and every master or worker given joins. Raises InputError
    naming the server and the field when an address is missing."""
    if not masters and installed_master is None:
        raise InputError("installing needs the masters: set k8s_cluster_installation_param."
                         "master_node.aspect_id (v1) or vdu_id (v2)",
                         field="hwaffinity_param.install")

    def node(w, role, master):
        found = node_addresses(servers.get(w.server_id) or {}, opts.get("network"))
        if found is None:
            raise InputError("server %s (%s) has no fixed IPv4 address%s" % (
                w.name, w.server_id, " on network %r" % opts["network"]
                if opts.get("network") else ""), field="hwaffinity_param.install.network")
        return Node(w.server_id, w.name, role, found[1], found[0], master)

    if installed_master is not None:
        first = node(installed_master, REFRESH, True)
        rest = [m for m in masters if m.server_id != installed_master.server_id]
    else:
        first, rest = node(masters[0], INIT, True), masters[1:]
    endpoint = opts.get("control_plane_endpoint") or vip or first.node_ip
    return Plan(with_port(endpoint), vip, first, installed_master is None,
                [node(m, JOIN_MASTER, True) for m in rest],
                [node(w, JOIN_WORKER, False) for w in workers])


def script_argv(node, plan, opts, dry_run=False, join_file=None):
    """The arguments of ``install_k8s.sh`` for NODE (without the program)."""
    argv = ["--role", node.role]
    if node.role != REFRESH:
        argv += ["--node-ip", node.node_ip]
    if node.role == INIT:
        argv += ["--control-plane-endpoint", plan.endpoint]
        for opt, key in (("--pod-cidr", "pod_cidr"), ("--service-cidr", "service_cidr")):
            if opts.get(key):
                argv += [opt, opts[key]]
        if opts.get("flannel_version"):
            argv += ["--flannel-version", opts["flannel_version"]]
    if node.role in (INIT, REFRESH) and opts.get("token_ttl"):
        argv += ["--token-ttl", opts["token_ttl"]]
    if node.master and node.role != REFRESH and plan.vip:
        argv += ["--vip", plan.vip]
    if node.role != REFRESH:
        argv += ["--kubernetes-minor", opts["kubernetes_minor"]]
    if join_file and node.role in (JOIN_MASTER, JOIN_WORKER):
        argv += ["--join-file", join_file]
    if dry_run:
        argv.append("--dry-run")
    return argv


def parse_output(stdout, stderr=""):
    """{tag: JSON object} of the script's HWAFFINITY_* lines (the last of each
    tag); a line whose JSON does not parse is kept as {"unparsed": text}."""
    found = {}
    for line in (stdout + "\n" + stderr).splitlines():
        tag, _, rest = line.strip().partition(" ")
        if tag in LINE_TAGS:
            try:
                value = json.loads(rest)
            except ValueError:
                value = {"unparsed": rest[:200]}
            found[tag] = value if isinstance(value, dict) else {"unparsed": rest[:200]}
    return found


def failure(node, status, stdout, stderr):
    """One line saying why the script failed on NODE (secret-free: the script
    redacts its log tail; only the first stderr line is kept otherwise)."""
    err = parse_output(stdout, stderr).get("HWAFFINITY_ERROR")
    where = "%s (%s, %s)" % (node.name, node.ssh_host, node.role)
    if err and "step" in err:
        return "%s: step %s failed (exit %s); log %s on the node" % (
            where, err.get("step"), err.get("exit_code"), err.get("log", "?"))
    first = next((ln.strip() for ln in stderr.splitlines() if ln.strip()), "no message")
    if status == 2:
        return "%s: refused (exit 2, nothing changed): %s" % (where, first[:300])
    if status == EXIT_UNPACK:
        return "%s: could not unpack the script in a private temporary directory " \
               "(mktemp, tar): %s" % (where, first[:300])
    return "%s: exit %d: %s" % (where, status, first[:300])
