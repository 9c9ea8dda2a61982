"""``hwaffinity relabel``: the driver's reconciliation, outside Tacker.

Live migration (or anything that moves a worker VM behind Tacker's back)
leaves the compute-host labels stale. This command reads the workers from Nova
(OpenStack credentials from clouds.yaml / ``OS_*``): a Tacker VNF's from its Heat
stack (``--stack``), or, for any cluster on OpenStack, chosen as the controller
chooses them (``--cluster-nodes``, ``--worker-metadata``: ``openstack.workers``);
the nodes from Kubernetes (a kubeconfig, or kubectl on a master over SSH); and
sets every label that differs, exactly as the driver's ``instantiate_end`` does.
A node whose providerID names a server Nova does not list is named. ``--dry-run``
reads and prints the changes without applying them.

Exit status: 0 labels correct (or, with --dry-run, plan printed and every
worker resolvable); 1 some workers could not be handled, or some nodes have no
server in Nova (listed); 2 bad input.
"""
import argparse
import logging
import os
import sys
import typing

import yaml

from tacker_hwaffinity import extras
from tacker_hwaffinity.cli import output
from tacker_hwaffinity.cli.common import worker_metadata
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.redaction import yaml_error

PASSWORD_ENV = "HWAFFINITY_SSH_PASSWORD"

# The driver's modules are imported in run(), not here: after the extra is checked (its
# OpenStack and SSH libraries), and because ``hwaffinity --help`` imports every command's
# module: mgmt.lifecycle would add ~700 ms to it, labeling.params and openstack ~35 and
# ~20 ms (measured over the rest of --help).
if typing.TYPE_CHECKING:
    from tacker_hwaffinity.labeling.params import Parsed
    from tacker_hwaffinity.mgmt.lifecycle import Relabelled, SelectWorkers

# the ways of choosing the workers; exactly one is given
WAYS = "--cluster-nodes, --worker-metadata KEY=VALUE or --stack NAME_OR_ID"


def register(subparsers: typing.Any) -> None:
    p = subparsers.add_parser(
        "relabel", help="set the compute-host labels of a cluster's Kubernetes workers",
        description="Reconcile the compute-host node labels of the Kubernetes workers of "
                    "a cluster on OpenStack, as the MgmtDriver's instantiate_end does: "
                    "read the workers from Nova (credentials from clouds.yaml or the OS_* "
                    "variables), chosen one way: every server that is a node of the "
                    "cluster (--cluster-nodes), the servers with given metadata "
                    "(--worker-metadata), or a Tacker VNF's Heat stack (--stack); read the "
                    "nodes from Kubernetes (a kubeconfig, or kubectl on a master over "
                    "SSH), and set every label that differs. A node whose spec.providerID "
                    "names a server Nova does not list is named. Run it after live "
                    "migration, by hand or on a schedule. Exit 0: labels correct (with "
                    "--dry-run: the changes printed, every worker resolvable); 1: some "
                    "workers could not be handled, or some nodes have no server in Nova "
                    "(listed); 2: bad input.")
    p.add_argument("--cluster-nodes", action="store_true",
                   help="the workers are every server that is a node of the cluster (its "
                        "spec.providerID names it, else its InternalIP is the server's): "
                        "any cluster on OpenStack, no Heat stack or metadata needed")
    p.add_argument("--worker-metadata", action="append", default=[], metavar="KEY=VALUE",
                   help="the workers are the servers whose metadata has KEY=VALUE "
                        "(repeatable: every pair)")
    p.add_argument("--stack", metavar="NAME_OR_ID",
                   help="the workers are those of this Heat stack (a Tacker VNF's), named "
                        "by --worker-aspect/--worker-vdu or --params")
    p.add_argument("--os-cloud", metavar="NAME",
                   help="cloud in clouds.yaml (default: $OS_CLOUD, else the OS_* variables)")
    p.add_argument("--params", metavar="FILE",
                   help="YAML/JSON with the instantiate request's additionalParams "
                        "(hwaffinity_param and/or k8s_cluster_installation_param)")
    p.add_argument("--worker-aspect", metavar="ID",
                   help="with --stack: AutoScalingGroup (scaling aspect) of the workers")
    p.add_argument("--worker-vdu", action="append", default=[], metavar="NAME",
                   help="with --stack: a top-stack server that is a worker (repeatable)")
    p.add_argument("--label-key", action="append", default=[], metavar="KEY",
                   help="label key to set (repeatable; default CIS-node)")
    p.add_argument("--host-source", choices=("auto", "host", "hostId"),
                   help="what names a compute host: Nova's host (admin), its hostId (any "
                        "user), or auto: host when Nova shows it (default: the --params "
                        "file's, else auto)")
    p.add_argument("--on-colocation", choices=("warn", "fail", "respread"),  # params.ON_COLOCATION
                   help="two workers on one compute host: warn, fail (exit 1; the labels "
                        "are set either way), or respread: live-migrate all but one, Nova's "
                        "scheduler choosing the host, then label (default: the --params "
                        "file's, else warn)")
    p.add_argument("--kubeconfig", metavar="FILE", help="reach Kubernetes with this kubeconfig")
    p.add_argument("--ssh-host", metavar="HOST", help="a master to run kubectl on over SSH")
    p.add_argument("--ssh-port", type=int, metavar="PORT",
                   help="the master's SSH port (default 22)")
    p.add_argument("--ssh-user", metavar="USER", help="the SSH user on the master")
    p.add_argument("--ssh-key", metavar="FILE", help="private key file (password: $%s)"
                   % PASSWORD_ENV)
    p.add_argument("--known-hosts", metavar="FILE", help="known_hosts file of the master")
    p.add_argument("--insecure-ignore-host-key", action="store_true",
                   help="accept any SSH host key (not recommended)")
    p.add_argument("--dry-run", action="store_true", help="print the changes, apply nothing")
    output.add_output_arg(p, (output.TEXT, output.JSON, output.YAML))
    p.set_defaults(func=run)


def _read(path: str, field: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise InputError("cannot read: %s" % (e.strerror or e), source=path, field=field)


def _params_file(path: str) -> typing.Dict[str, typing.Any]:
    """The additionalParams object of the --params file at ``path`` (``{}`` if empty)."""
    try:
        params = yaml.safe_load(_read(path, "--params")) or {}
    except yaml.YAMLError as e:     # its text may quote a password or a key
        raise InputError("not valid YAML (%s)" % yaml_error(e), source=path) from None
    if not isinstance(params, dict):
        raise InputError("expected an object (additionalParams)", source=path)
    return params


def _hwaffinity_flags(args: argparse.Namespace,
                      hw: typing.Dict[str, typing.Any]) -> typing.Dict[str, typing.Any]:
    """``hw`` (hwaffinity_param) with the worker, label, host and kubeconfig flags set."""
    for flag, key in ((args.worker_vdu, "worker_vdus"), (args.label_key, "label_keys")):
        if flag:
            hw[key] = list(flag)
    for flag, key in ((args.host_source, "host_source"), (args.on_colocation, "on_colocation")):
        if flag:
            hw[key] = flag
    if args.kubeconfig:
        hw["kubeconfig"] = _read(args.kubeconfig, "--kubeconfig")
    return hw


def _ssh_flags(args: argparse.Namespace, env: typing.Mapping[str, str],
               ssh: typing.Dict[str, typing.Any]) -> typing.Dict[str, typing.Any]:
    """``ssh`` (hwaffinity_param's ssh) with the --ssh-* flags and the password set."""
    for flag, key in ((args.ssh_host, "host"), (args.ssh_port, "port"),
                      (args.ssh_user, "username")):
        if flag is not None:
            ssh[key] = flag
    if args.ssh_key:
        ssh["private_key"] = _read(args.ssh_key, "--ssh-key")
    if args.known_hosts:
        ssh["known_hosts"] = _read(args.known_hosts, "--known-hosts")
    if args.insecure_ignore_host_key:
        ssh["insecure_ignore_host_key"] = True
    if env.get(PASSWORD_ENV):
        ssh["password"] = env[PASSWORD_ENV]
    return ssh


def additional_params(args: argparse.Namespace,
                      env: typing.Optional[typing.Mapping[str, str]] = None
                      ) -> typing.Dict[str, typing.Any]:
    """The additionalParams the arguments describe (the --params file, then flags)."""
    env = os.environ if env is None else env
    params = _params_file(args.params) if args.params else {}
    hw = dict(params.get("hwaffinity_param") or {})
    ref = dict(params.get("k8s_cluster_installation_param") or {})
    if args.worker_aspect:
        ref["worker_node"] = dict(ref.get("worker_node") or {}, aspect_id=args.worker_aspect)
    hw = _hwaffinity_flags(args, hw)
    ssh = _ssh_flags(args, env, dict(hw.get("ssh") or {}))
    if ssh:
        hw["ssh"] = ssh
    params = dict(params, hwaffinity_param=hw)
    if ref:
        params["k8s_cluster_installation_param"] = ref
    return params


def check_ways(args: argparse.Namespace) -> None:
    """InputError unless exactly one way of choosing the workers is given (each
    --worker-metadata a KEY=VALUE), and the stack's own flags only with --stack."""
    given = [flag for flag, on in (("--cluster-nodes", args.cluster_nodes),
                                   ("--worker-metadata", args.worker_metadata),
                                   ("--stack", args.stack)) if on]
    if not given:
        raise InputError("say which servers are the workers: give one of %s" % WAYS)
    if len(given) > 1:
        raise InputError("give one of %s, not %s" % (WAYS, " and ".join(given)),
                         field=given[1])
    if not args.stack and (args.worker_aspect or args.worker_vdu):
        raise InputError("--worker-aspect and --worker-vdu name a stack's workers: they "
                         "need --stack", field="--worker-aspect" if args.worker_aspect
                         else "--worker-vdu")
    worker_metadata(args.worker_metadata)


def check_without_stack(parsed: "Parsed") -> None:
    """InputError when the --params of a run without --stack name a stack's workers, or
    no way to reach the cluster (no stack to find a master in)."""
    hw = parsed["hwaffinity"]
    if parsed["worker"].get("aspect_id") or hw.worker_vdus:
        raise InputError("names a stack's workers (k8s_cluster_installation_param."
                         "worker_node.aspect_id, hwaffinity_param.worker_vdus): they need "
                         "--stack", field="--params")
    if not hw.kubeconfig and not hw.ssh.get("host"):
        raise InputError("without --stack there is no master to find: reach the cluster "
                         "with --kubeconfig or --ssh-host", field="--kubeconfig")


def select_workers(args: argparse.Namespace) -> typing.Optional["SelectWorkers"]:
    """The controller's worker selector the flags name, made from the cluster's Node
    objects and the region (None: the workers are the stack's)."""
    if args.stack:
        return None
    # lazy: see the module's head
    from tacker_hwaffinity.openstack import workers
    if args.cluster_nodes:
        return workers.ClusterNodeWorkers
    metadata = worker_metadata(args.worker_metadata)
    return lambda _node_objects, _region: workers.MetadataWorkers(metadata)


def run(args: argparse.Namespace) -> int:
    check_ways(args)
    extras.require("relabel")       # before the credentials are read
    # lazy: see the module's head
    from tacker_hwaffinity.labeling import params as parameters
    from tacker_hwaffinity.mgmt import lifecycle
    from tacker_hwaffinity.openstack import access_from_environment
    parsed = parameters.parse(additional_params(args), where="--params")
    if not args.stack:
        check_without_stack(parsed)
    job = lifecycle.Job("relabel", parsed, access=access_from_environment(args.os_cloud),
                        stack_id=args.stack, select_workers=select_workers(args))
    log = logging.getLogger("tacker_hwaffinity.relabel")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.WARNING)
    try:
        done = lifecycle.relabel(job, args.dry_run, log)
    except Exception as e:
        if isinstance(e, (InputError, ModuleNotFoundError)):
            raise                   # cli.main: exit 2; a missing extra is named there
        sys.stderr.write("hwaffinity relabel: error: %s\n" % lifecycle.reason(e))
        return 1
    plan, changes = done.plan, done.plan.changes()
    if args.output in output.STRUCTURED:
        output.dump(output.document("Relabel", {
            "dryRun": args.dry_run, "hostSource": plan.source, "workers": plan.mapping(),
            "changes": changes, "warnings": plan.warnings, "errors": done.errors,
            "respread": done.respread.report() if done.respread else None}),
            args.output)
    else:
        _text(done, changes, args.dry_run)
    return 1 if done.errors else 0


def _text(done: "Relabelled", changes: typing.Mapping[str, typing.Mapping[str, str]],
          dry_run: bool) -> None:
    out, plan = sys.stdout, done.plan
    for move in done.respread.moves if done.respread else ():
        out.write("respread: worker %s (server %s) %s\n" % (
            move["worker"], move["server"], "moved from %s to %s" % (move["from"], move["to"])
            if move["to"] != move["from"] else "stays on %s: no other host" % move["from"]))
    for row in plan.mapping():
        change = changes.get(row["node"]) if row["node"] else None
        if row["error"]:
            state = "error"
        elif change:
            state = ("would set " if dry_run else "set ") + ",".join(
                "%s=%s" % kv for kv in sorted(change.items()))
        else:
            state = "ok"
        out.write("%-24s %-36s %-28s %-24s %s\n" % (row["worker"], row["server"],
                                                    row["host"] or "-", row["node"] or "-",
                                                    state))
    for w in plan.warnings:
        out.write("warning: %s\n" % w)
    for e in done.errors:
        out.write("error: %s\n" % e)
    out.write("%d worker(s), %d node(s) %s\n" % (
        len(plan.assignments), len(changes), "to change (dry run)" if dry_run else "changed"))
