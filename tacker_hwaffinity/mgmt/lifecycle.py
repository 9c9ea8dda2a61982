"""The hooks, the same for Tacker's v1 driver, its v2 script and the CLI.

A ``Job`` says what Tacker asked (the hook, the parameters, the VIM, the
stack or the VNFC servers, the scale/heal targets); ``run`` finds the
workers (Heat and Nova: a constant number of reads), opens ONE connection to
the cluster (SSH to a master, or a kubeconfig), does the hook's work through
``mgmt.reconcile`` and returns the report stored in the VNF instance
metadata. Every hook is idempotent: a retry re-reads the truth and converges.
"""
import dataclasses
import datetime
import logging
import typing

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.labeling import inventory, provider_id
from tacker_hwaffinity.labeling import plan as planning
from tacker_hwaffinity.labeling.params import Parsed
from tacker_hwaffinity.labeling.plan import KubeNode, LabelPlan, Worker
from tacker_hwaffinity.mgmt import install as cluster_install
from tacker_hwaffinity.mgmt import kubectl_runner as kube_access
from tacker_hwaffinity.mgmt import reconcile
from tacker_hwaffinity.mgmt.reconcile import HookFailed

if typing.TYPE_CHECKING:      # imported where it is first used (Context.openstack)
    from tacker_hwaffinity.mgmt.respread import Respread
    from tacker_hwaffinity.openstack import OpenStack
    from tacker_hwaffinity.openstack.workers import WorkerSelector

LOG = logging.getLogger("tacker_hwaffinity.mgmt")
ACTIVE = ("instantiate_end", "scale_start", "scale_end", "heal_start", "heal_end")
NOTHING = {
    "instantiate_start": "the workers do not exist yet",
    "terminate_start": "the whole cluster goes; its nodes need no labels",
    "terminate_end": "the cluster is gone",
    "change_external_connectivity_start": "external connectivity does not move VMs",
    "change_external_connectivity_end": "external connectivity does not move VMs",
    "modify_information_start": "VNF information does not move VMs",
    "modify_information_end": "VNF information does not move VMs",
}


SelectWorkers = typing.Callable[[typing.Callable[[], typing.List[typing.Any]],
                                 typing.Optional[str]], "WorkerSelector"]
"""Makes the WorkerSelector (``openstack.workers``: by server metadata, or every server
that is a node of the cluster), for a cluster without a Heat stack, given a callable that
returns the cluster's Node objects and the credentials' region (None: unknown)."""


@dataclasses.dataclass
class Job:
    """What Tacker (or ``hwaffinity relabel``) asks of one hook."""

    hook: str
    params: Parsed
    access: typing.Optional[typing.Dict[str, typing.Any]] = None
    """OpenStack credentials (openstack.auth)."""
    stack_id: typing.Optional[str] = None       # v1: the VNF's top stack
    worker_servers: typing.Optional[typing.List[str]] = None   # v2: the worker VNFCs' servers
    master_vnfcs: typing.Optional[typing.List[typing.Tuple[str, typing.Optional[str]]]] = None
    """v2: (server id, VNFC stack id) of the masters."""
    removed_members: typing.Collection[str] = ()    # v1 scale-in: AutoScalingGroup members
    target_servers: typing.Collection[str] = ()     # heal / v2 scale-in: server ids
    full_heal: bool = False           # heal of the whole VNF (no VNFC given)
    kubeconfig: typing.Optional[str] = None         # a Kubernetes VIM, as kubeconfig text
    scale_in: bool = True             # scale_start/scale_end: the request's type
    package_dir: typing.Union[str, typing.Callable[[], str], None] = None
    """The VNF package directory, or a callable giving it."""
    record: typing.Optional[typing.Dict[str, typing.Any]] = None
    """Added to the report (v2 heal_start: healed VNFCs' stacks)."""
    select_workers: typing.Optional[SelectWorkers] = None
    """``hwaffinity relabel`` without a stack: which servers are workers (None: the
    stack's, or the VNFC servers)."""


@dataclasses.dataclass
class Inventory:
    workers: typing.List[Worker]
    refs: typing.List[inventory.ServerRef]      # same order
    masters: typing.List[Worker]
    master_refs: typing.List[inventory.ServerRef]
    servers: typing.Optional[typing.Dict[str, typing.Any]] = None   # Nova server JSON by id


class Context:
    """What one run talks to, made on first use (injectable for tests)."""

    def __init__(self, job, openstack=None, connect_ssh=None):
        self.job, self._openstack, self._connect_ssh = job, openstack, connect_ssh

    @property
    def openstack(self):
        if self._openstack is None:
            from tacker_hwaffinity.openstack import OpenStack, session
            if not self.job.access:
                raise InputError("no OpenStack VIM is given (vimConnectionInfo)")
            o = self.job.params["hwaffinity"].openstack
            self._openstack = OpenStack(session(self.job.access, timeout=o.timeout),
                                        region_name=self.job.access.get("region_name"),
                                        retries=o.retries)
        return self._openstack


def discover(ctx):
    """The workers (and masters) with their addresses and hosts."""
    job, os_ = ctx.job, ctx.openstack
    worker, master, hw = job.params["worker"], job.params["master"], job.params["hwaffinity"]
    problems = []
    if job.worker_servers is not None:  # v2: VNFC server ids are given
        refs = [inventory.ServerRef(s, s, None, s) for s in job.worker_servers]
        mrefs = [inventory.ServerRef(s, s, st, s) for s, st in job.master_vnfcs or ()]
    else:
        if not job.stack_id:
            raise InputError("the VNF instance has no Heat stack (instantiated_vnf_info."
                             "instance_id)")
        resources = os_.stack_resources(job.stack_id)
        refs, mrefs = _refs(resources, worker, hw.worker_vdus, "worker_node", problems), []
        if master.get("aspect_id"):
            mrefs = _refs(resources, master, [], "master_node", problems)
        elif master.get("vdu_id"):  # a master VDU that is not scaled (one top-stack server)
            mrefs = _refs(resources, master, [master["vdu_id"]], "master_node", problems,
                          "k8s_cluster_installation_param.master_node.vdu_id")
    if problems:  # the parameters name what the stack does not have: bad input
        raise InputError("; ".join(problems))
    servers = os_.servers()
    workers, missing = inventory.workers(servers, refs)
    masters, _ = inventory.workers(servers, mrefs)
    if missing:
        raise HookFailed("Nova does not list the server(s) %s of the stack's workers"
                         % ", ".join(r.server_id for r in missing))
    return Inventory(workers, [r for r in refs if r not in missing], masters, mrefs,
                     {s.get("id"): s for s in servers})


def _refs(resources, node, vdus, role, problems, vdu_field="hwaffinity_param.worker_vdus"):
    refs = []
    if node.get("aspect_id"):
        found = inventory.members(resources, node["aspect_id"])
        if isinstance(found, str):
            problems.append("k8s_cluster_installation_param.%s.aspect_id: %s" % (role, found))
        else:
            refs.extend(found)
    found, absent = inventory.vdu_servers(resources, vdus)
    refs.extend(found)
    if absent:
        problems.append("%s: the stack has no server %s" % (vdu_field, ", ".join(absent)))
    if not node.get("aspect_id") and not vdus:
        problems.append("name the workers: k8s_cluster_installation_param.%s.aspect_id "
                        "(scaled) or hwaffinity_param.worker_vdus (not scaled)" % role)
    return refs


def open_cluster(ctx, inv):
    """One kubectl runner: a kubeconfig (parameter or Kubernetes VIM) or SSH."""
    hw, job = ctx.job.params["hwaffinity"], ctx.job
    kubeconfig = hw.kubeconfig or job.kubeconfig
    if kubeconfig:
        return kube_access.LocalKubectl(kubeconfig, timeout=hw.ssh["command_timeout"])
    return kube_access.SshKubectl(*_ssh(ctx, inv), kubeconfig_path=hw.ssh.get(
        "kubeconfig_path"))


def _ssh(ctx, inv):
    from tacker_hwaffinity.ssh import ConnectError, SSHSession
    hw, master = ctx.job.params["hwaffinity"], ctx.job.params["master"]
    ssh = hw.ssh
    defaults = {"username": master.get("username"), "password": master.get("password")}
    hosts = [ssh["host"]] if ssh.get("host") else _master_addresses(ctx, inv)
    if not hosts:
        raise HookFailed("no master to reach over SSH: set hwaffinity_param.ssh.host, or "
                         "k8s_cluster_installation_param.master_node.aspect_id/ssh_cp_name")
    failures = []
    for host in hosts:
        session = SSHSession.from_params(ssh, host=host, **defaults)
        try:
            return session.connect(), ssh["kubectl"]
        except ConnectError as e:  # host key and authentication errors are final
            failures.append(str(e))
            session.close()
    raise HookFailed("no master answered over SSH: " + "; ".join(failures))


def _master_addresses(ctx, inv):
    cp = ctx.job.params["master"].get("ssh_cp_name")
    if not cp:
        return [m.addresses[0] for m in inv.masters if m.addresses]
    out = []
    stacks = [r.member_stack for r in inv.master_refs if r.member_stack] or [ctx.job.stack_id]
    for stack in stacks[:2]:  # the first master, and one more to fall back to
        if not stack:
            continue
        attrs = (ctx.openstack.resource(stack, cp).get("attributes") or {})
        ip = attrs.get("floating_ip_address") or next(
            (f.get("ip_address") for f in attrs.get("fixed_ips") or () if f.get("ip_address")),
            None)
        if ip:
            out.append(ip)
    return out


def _targets(job, inv):
    members, servers = set(job.removed_members or ()), set(job.target_servers or ())
    return [w for w, r in zip(inv.workers, inv.refs)
            if r.member in members or w.server_id in servers]


def run(job, log=LOG, openstack=None, connect=None):
    """Do JOB's hook; returns the report (a dict), or raises HookFailed/InputError.
    OPENSTACK (an ``openstack.OpenStack``) and CONNECT (``(ctx, inventory) ->
    kubectl runner``) replace the defaults (benchmarks, tests)."""
    if job.hook not in ACTIVE:
        log.info("%s: nothing to do for node labels (%s)", job.hook,
                 NOTHING.get(job.hook, "not a labelling hook"))
        return None
    if job.hook in ("scale_start", "scale_end") and job.scale_in != (job.hook == "scale_start"):
        log.info("%s of a scale %s: nothing to do for node labels", job.hook,
                 "out" if job.hook == "scale_start" else "in")
        return None
    if job.hook == "heal_start" and job.full_heal:
        log.info("heal_start of the whole VNF: the cluster is rebuilt; nothing to drain")
        return None
    ctx = Context(job, openstack)
    inv = discover(ctx)
    report = {"hook": job.hook, "at": _now()}
    installing = job.params["hwaffinity"].install["enabled"]
    if installing and (job.hook == "instantiate_end" or job.hook == "heal_end" and job.full_heal):
        report["install"] = cluster_install.install(ctx, inv, log)
    kube = (connect or open_cluster)(ctx, inv)
    try:
        if job.hook == "scale_start":
            report["removedNodes"] = reconcile.evict(kube, _targets(job, inv),
                                                     job.params["hwaffinity"], log, delete=True)
        elif job.hook == "heal_start":
            # a VM that gets Kubernetes installed anew joins as a new node (not on a dry run)
            rejoin = installing and not job.params["hwaffinity"].install["dry_run"]
            report["removedNodes" if rejoin else "drainedNodes"] = reconcile.evict(
                kube, _targets(job, inv), job.params["hwaffinity"], log, delete=rejoin)
        else:
            nodes = None
            if installing and job.hook != "instantiate_end" and not job.full_heal:
                healed = set(job.target_servers) if job.hook == "heal_end" else None
                nodes = reconcile.read_nodes(kube)
                report["install"] = cluster_install.join_missing(ctx, inv, nodes, healed, log)
                if report["install"]["nodes"]:
                    nodes = None  # nodes joined: read again
            wait = job.params["hwaffinity"].join_timeout
            if wait:
                nodes = reconcile.wait_joined(kube, inv.workers, wait, log, nodes)
            if nodes is None:
                nodes = reconcile.read_nodes(kube)
            region = (job.access or {}).get("region_name")
            latest = [inv]

            def reread():
                latest[0] = discover(ctx)
                return latest[0].workers
            moved = _respread(ctx, inv.workers, reread, nodes, region, log)
            inv = latest[0]
            # labelled before the healed nodes are uncordoned: until then the cordon keeps
            # pods off a worker whose VM may be on another host now (one read serves both:
            # labelling does not change what is cordoned)
            p = reconcile.relabel(kube, inv.workers, job.params["hwaffinity"], log,
                                  nodes=nodes, region=region)
            if job.hook == "heal_end" and not job.full_heal:
                report["uncordonedNodes"], _ = reconcile.uncordon(kube, _targets(job, inv), log,
                                                                  nodes)
            report.update({"hostSource": p.source, "workers": p.mapping(),
                           "warnings": p.warnings})
            if moved is not None:
                report["respread"] = moved.report()
                if moved.error:
                    raise HookFailed("; ".join([moved.error] + p.warnings))
        report["openstackCalls"] = ctx.openstack.calls
        report.update(job.record or {})
        return report
    finally:
        kube.close()


def _respread(ctx: Context, workers: typing.List[Worker],
              reread: typing.Callable[[], typing.List[Worker]], nodes: typing.List[KubeNode],
              region: typing.Optional[str], log: logging.Logger,
              dry_run: bool = False) -> typing.Optional["Respread"]:
    """``on_colocation: respread``: the moves of ``mgmt.respread`` for WORKERS (None: not
    asked for, or a dry run, which only logs what it would move). A worker whose node
    carries its host label already is the one kept on a shared host, unless heal_end
    healed it: its node, drained and cordoned, keeps the label of the server it had, and
    moving it carries no pods."""
    hw = ctx.job.params["hwaffinity"]
    if hw.on_colocation != "respread":
        return None
    from tacker_hwaffinity.labeling import colocation
    from tacker_hwaffinity.mgmt import respread
    source = planning.choose_source(workers, hw.host_source)
    index = planning.NodeIndex(nodes, region)
    healed = set(ctx.job.target_servers or ()) if ctx.job.hook == "heal_end" else set()
    settled = set()
    for w in workers:
        if w.server_id in healed:
            continue
        node, _ = planning.node_of(w, index)
        if node is not None and not node.host_unknown and any(
                k in node.labels for k in hw.label_keys):
            settled.add(w.server_id)
    if dry_run:
        for w in respread.candidates(workers, source, settled):
            log.info("respread (dry run): would ask Nova to move worker %s (server %s) off "
                     "host %s", w.name, w.server_id, colocation.host_of(w, source))
        return None
    return respread.converge(ctx.openstack, workers, reread, source, settled,
                             hw.respread_timeout, log)


@dataclasses.dataclass
class Relabelled:
    """What ``hwaffinity relabel`` found and did."""

    plan: LabelPlan
    serverless: typing.List[str]
    """One message per node whose providerID names a server Nova does not list."""
    respread: typing.Optional["Respread"] = None
    """The moves of ``on_colocation: respread`` (None: not asked for, or a dry run)."""

    @property
    def errors(self) -> typing.List[str]:
        """The workers not handled, then the nodes without a server, then a respread that
        stopped short (exit 1 when any)."""
        return self.plan.errors + self.serverless + (
            [self.respread.error] if self.respread and self.respread.error else [])


def relabel(job: Job, dry_run: bool = False, log: logging.Logger = LOG,
            openstack: typing.Optional["OpenStack"] = None,
            connect: typing.Optional[typing.Callable[[Context, Inventory], typing.Any]] = None
            ) -> Relabelled:
    """``hwaffinity relabel``: the reconciliation of instantiate_end, outside Tacker
    (e.g. after live migration), for the workers of a stack or those JOB's
    ``select_workers`` chooses among every server Nova lists (one Nova list either
    way). Nodes whose providerID names a server Nova does not list are named, the
    others labelled: after the workers' problems (HookFailed, naming both) or in
    ``Relabelled.serverless``. OPENSTACK and CONNECT replace the defaults, as for
    ``run``."""
    ctx = Context(job, openstack)
    region = (job.access or {}).get("region_name")
    if job.select_workers is None:
        inv = discover(ctx)
        servers = list((inv.servers or {}).values())
    else:
        inv = Inventory([], [], [], [])
        servers = ctx.openstack.servers()
    kube = (connect or open_cluster)(ctx, inv)
    try:
        objects, nodes = reconcile.read_node_objects(kube)
        workers = inv.workers
        if job.select_workers is None:
            def reread():
                return discover(ctx).workers
        else:
            selector = job.select_workers(lambda: objects, region)
            workers = _selected(selector, servers)

            def reread():
                return _selected(selector, ctx.openstack.servers())
        moved = _respread(ctx, workers, reread, nodes, region, log, dry_run)
        if moved is not None:
            workers = moved.workers
        serverless = ["node %s (providerID %s): %s" % (
            n.name, provider_id.text(n.provider), planning.NO_SERVER)
            for n in planning.NodeIndex(nodes, region).serverless(
                s.get("id") or "" for s in servers) if n.provider]
        try:
            plan = reconcile.relabel(kube, workers, job.params["hwaffinity"], log, dry_run,
                                     nodes=nodes, region=region)
        except HookFailed as e:
            also = serverless + ([moved.error] if moved and moved.error else [])
            if also:
                raise HookFailed("%s; also %s" % (e, "; ".join(also))) from None
            raise
        return Relabelled(plan, serverless, moved)
    finally:
        kube.close()


def _selected(selector: "WorkerSelector",
              servers: typing.List[typing.Dict[str, typing.Any]]) -> typing.List[Worker]:
    """The Workers SELECTOR chooses among SERVERS (Nova's JSON), in Nova's order."""
    from tacker_hwaffinity.openstack.servers import ServerState
    chosen = {s.id for s in selector.select([ServerState.from_nova(s) for s in servers])}
    found, _ = inventory.workers(servers, [
        inventory.ServerRef(s["id"], s.get("name") or s["id"], None, s.get("name") or "")
        for s in servers if s["id"] in chosen])
    return found


EXPECTED = ("InputError", "HookFailed", "OpenStackError", "KubeAccessError", "SSHError")


def redactor(job):
    """A Redactor knowing every secret of JOB (parameters, VIM password, kubeconfig, and
    each credential of a kubeconfig on its own: a bearer token, a client key)."""
    from tacker_hwaffinity.labeling import params as parameters
    from tacker_hwaffinity.ssh.redact import Redactor
    redact = Redactor()
    for s in parameters.secrets(job.params):
        redact.add_lines(s)
    redact.add((job.access or {}).get("password"))
    redact.add_lines(job.kubeconfig)
    for kubeconfig in (job.kubeconfig, job.params["hwaffinity"].kubeconfig):
        for s in kube_access.kubeconfig_secrets(kubeconfig):
            redact.add_lines(s)
    return redact


def reason(exc: BaseException) -> str:
    """A one-line reason for EXC: our own errors as they are, others named."""
    if any(c.__name__ in EXPECTED for c in type(exc).__mro__):
        return str(exc)
    return "unexpected %s: %s" % (type(exc).__name__, exc)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
