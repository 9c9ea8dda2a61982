"""``hwaffinity controller``: labels follow the worker VMs; RequiredDuringExecution holds.

Runs in the cluster (a Deployment of 2 replicas, ``deploy/controller/``): leader
election on a Lease; the leader polls Nova (one call per interval) and relabels the
nodes whose VMs settled on another compute host, and evicts, through the Eviction API,
pods that break their ``hwaffinity.io/required-during-execution`` rules.
"""
import argparse
import json
import os
import socket
import typing

from tacker_hwaffinity import extras
from tacker_hwaffinity.cli.common import worker_metadata
from tacker_hwaffinity.constants import OPENSTACK_HOST_ID_LABEL, SCS_HOST_ID_LABEL
from tacker_hwaffinity.errors import InputError

DEFAULT_PORT = 9465

# The controller's own modules are imported in the functions that use them, not here:
# ``hwaffinity --help`` imports every command's module, and these would add to it
# (measured over the rest of --help: openstack.workers ~50 ms, labeling.params ~35 ms,
# kube.component ~20 ms, controller.daemon, which brings the Kubernetes client, ~200 ms).
if typing.TYPE_CHECKING:
    from tacker_hwaffinity.controller.daemon import ControllerConfig, SelectWorkers
    from tacker_hwaffinity.labeling.params import HwParams


def register(sub: typing.Any) -> None:
    p = sub.add_parser("controller", help="keep host labels true and RequiredDuringExecution "
                                          "rules enforced (in-cluster controller)",
                       description="The in-cluster controller (a Deployment of 2 "
                                   "replicas, one leading through a Lease). The leader "
                                   "polls Nova (one request a poll; with "
                                   "--notifications-url it also hears Nova's "
                                   "notifications), relabels the nodes whose worker VMs "
                                   "settled on another compute host, and evicts, through "
                                   "the Eviction API, pods that break their "
                                   "hwaffinity.io/required-during-execution rules for "
                                   "longer than --grace. It reads OpenStack credentials "
                                   "(clouds.yaml or the OS_* variables) and the cluster "
                                   "(a kubeconfig or its service account); serves /metrics "
                                   "and the probes. It runs until SIGTERM or SIGINT. Exit "
                                   "0: stopped; 2: bad flags, or it cannot start (one line "
                                   "on stderr).")
    p.add_argument("--kubeconfig", help="kubeconfig (default: the in-cluster service account)")
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--os-cloud", help="clouds.yaml entry (default: the OS_* environment)")
    p.add_argument("--worker-metadata", action="append", default=[], metavar="KEY=VALUE",
                   help="Nova server metadata that marks the cluster's worker VMs "
                        "(repeatable; all given must match)")
    p.add_argument("--cluster-nodes", action="store_true",
                   help="the workers are every Nova server that is a node of this cluster: "
                        "the node's spec.providerID names it (openstack:///SERVER_ID or "
                        "openstack://REGION/SERVER_ID, as openstack-cloud-controller-manager "
                        "sets it on Cluster API OpenStack, Magnum or Kubespray clusters), "
                        "else its InternalIP is the server's address; no Heat stack or "
                        "metadata needed")
    p.add_argument("--stack", metavar="ID",
                   help="the workers are the servers of this Heat stack (the VNF's), "
                        "found as the MgmtDriver finds them: give --aspect and/or --vdu")
    p.add_argument("--aspect", action="append", default=[], metavar="ASPECT_ID",
                   help="with --stack: the scaling aspect (AutoScalingGroup) of the workers "
                        "(repeatable)")
    p.add_argument("--vdu", action="append", default=[], metavar="NAME",
                   help="with --stack: a worker VDU that is not scaled (repeatable)")
    p.add_argument("--stack-refresh", type=float, default=60.0, metavar="SECONDS",
                   help="with --stack: re-read the stack at most this often, when a poll "
                        "shows a server not known yet")
    p.add_argument("--params", metavar="JSON",
                   help="hwaffinity_param as for the MgmtDriver (label_keys, host_source, "
                        "zone_label_key), JSON text or @FILE")
    p.add_argument("--poll-interval", type=float, default=30.0, metavar="SECONDS",
                   help="how often Nova's servers are listed (one request a poll)")
    p.add_argument("--nova-scope", choices=("auto", "all-projects", "project"), default="auto",
                   help="which Nova servers a poll lists: all-projects (all_tenants=1, which "
                        "Nova's default policy gives to admin only), project (the servers "
                        "of the credentials' project), or auto: all projects as "
                        "long as Nova allows it, else the project's, decided from Nova's "
                        "answer to the first poll")
    p.add_argument("--notifications-url", metavar="TRANSPORT_URL",
                   help="also listen to Nova's versioned notifications on this message bus "
                        "(oslo.messaging URL, e.g. rabbit://user:pass@host:5672/; default "
                        "$NOVA_NOTIFICATIONS_URL, so that the password stays out of the "
                        "process list): a move is then relabelled within seconds")
    p.add_argument("--grace", type=float, default=60.0, metavar="SECONDS",
                   help="how long affinity may stay violated before its pod is evicted")
    p.add_argument("--eviction-interval", type=float, default=10.0, metavar="SECONDS",
                   help="at most one eviction per this many seconds")
    p.add_argument("--termination-margin", type=float, default=30.0, metavar="SECONDS",
                   help="the next eviction in a namespace waits for the pod evicted last "
                        "there at most its grace period (capped by --max-termination-wait) "
                        "plus this; a pod still there then (stuck Terminating on a NotReady "
                        "node) gets a Warning Event and is not waited for")
    p.add_argument("--max-termination-wait", type=float, default=600.0, metavar="SECONDS",
                   help="the most of an evicted pod's grace period (its owner's to set) "
                        "that is waited for, as cluster-autoscaler's "
                        "--max-graceful-termination-sec; other namespaces never wait")
    p.add_argument("--openstack-host-id-label", action="store_true",
                   help="also keep %s true: the server's Nova hostId, as "
                        "openstack-cloud-controller-manager sets it when a node registers "
                        "(and never again)" % OPENSTACK_HOST_ID_LABEL)
    p.add_argument("--scs-host-id-label", action="store_true",
                   help="also keep %s true (SCS standard scs-0214): the server's Nova "
                        "hostId" % SCS_HOST_ID_LABEL)
    p.add_argument("--host-id-label", action="append", default=[], metavar="KEY",
                   help="also keep label KEY true with the server's Nova hostId "
                        "(repeatable; the two flags above name the standard keys)")
    p.add_argument("--lease-namespace", metavar="NAMESPACE",
                   default=os.environ.get("POD_NAMESPACE", "hwaffinity-system"),
                   help="namespace of the leader election Lease ($POD_NAMESPACE when set)")
    p.add_argument("--lease-name", default="hwaffinity-controller", metavar="NAME",
                   help="name of the leader election Lease")
    p.add_argument("--identity", default=os.environ.get("POD_NAME") or socket.gethostname(),
                   metavar="ID", help="this replica's name in the Lease ($POD_NAME, else "
                                      "the host name)")
    p.add_argument("--lease-duration", type=float, default=15.0, metavar="SECONDS",
                   help="leader election: lease duration (renew deadline and retry period "
                        "follow client-go's 15/10/2 proportions)")
    p.add_argument("--metrics-address", default="127.0.0.1:%d" % DEFAULT_PORT,
                   metavar="HOST:PORT",
                   help="where /metrics and the probes (/healthz, /readyz, /livez) are "
                        "served; loopback unless given (the Deployment passes "
                        "0.0.0.0:%d for the kubelet's probes and Prometheus)" % DEFAULT_PORT)
    p.add_argument("--exposure-max-workloads", type=int, default=500, metavar="N",
                   help="export the exposure gauges of at most N workloads (the worst; "
                        "four series each), counting the others in "
                        "hwaffinity_exposure_workloads_dropped")
    p.add_argument("--rebalance", action="store_true",
                   help="after each Nova poll, evict the fewest replicas that restore "
                        "their own anti-affinity or topology spread on the host key, "
                        "only where the scheduler would place the replacement so that it "
                        "holds, never past a PodDisruptionBudget (descheduler's Events "
                        "and metric); try it with --dry-run first")
    p.add_argument("--rebalance-max-evictions", type=int, default=1, metavar="N",
                   help="with --rebalance: at most N evictions a Nova poll")
    p.add_argument("--dry-run", action="store_true",
                   help="report (logs, gauges); relabel and evict nothing (with "
                        "--rebalance the API server decides each eviction without doing "
                        "it)")
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING"),
                   help="the least severe log record written (stderr, one line each)")
    p.set_defaults(func=run)


def _workers(args: argparse.Namespace) -> "SelectWorkers":
    """A function of the OpenStack client, the node cache's ``list`` and the region giving
    the worker selector (flags checked now)."""
    # lazy: see the module's head
    from tacker_hwaffinity.openstack import workers
    metadata = worker_metadata(args.worker_metadata)
    if args.cluster_nodes:
        if metadata or args.stack or args.aspect or args.vdu:
            raise InputError("give one of --cluster-nodes, --worker-metadata or --stack",
                             field="--cluster-nodes")
        return lambda _openstack, node_objects, region: workers.ClusterNodeWorkers(
            node_objects, region)
    if args.stack:
        if metadata:
            raise InputError("give either --worker-metadata or --stack, not both",
                             field="--stack")
        if not args.aspect and not args.vdu:
            raise InputError("name the workers of the stack with --aspect and/or --vdu",
                             field="--stack")
        return lambda openstack, _nodes, _region: workers.StackWorkers(
            openstack, args.stack, args.aspect, args.vdu, refresh_interval=args.stack_refresh)
    if args.aspect or args.vdu:
        raise InputError("--aspect and --vdu need --stack", field="--aspect")
    if not metadata:
        raise InputError("say which servers are the workers: --cluster-nodes, "
                         "--worker-metadata KEY=VALUE or --stack ID with --aspect/--vdu",
                         field="--worker-metadata")
    return lambda _openstack, _nodes, _region: workers.MetadataWorkers(metadata)


def host_id_labels(args: argparse.Namespace) -> typing.Tuple[str, ...]:
    """The label keys the flags ask to keep equal to Nova's hostId, each once, in the
    order given (the standard ones first)."""
    keys = [OPENSTACK_HOST_ID_LABEL] if args.openstack_host_id_label else []
    keys += [SCS_HOST_ID_LABEL] if args.scs_host_id_label else []
    for key in args.host_id_label:
        if not key:
            raise InputError("an empty label key", field="--host-id-label")
        keys.append(key)
    return tuple(dict.fromkeys(keys))


def _params(text: typing.Optional[str]) -> "HwParams":
    # lazy: see the module's head
    from tacker_hwaffinity.labeling import params as parameters
    raw = {}
    if text:
        if text.startswith("@"):
            with open(text[1:]) as f:
                text = f.read()
        try:
            raw = json.loads(text)
        except ValueError as e:
            raise InputError("not JSON: %s" % e, field="--params")
    return parameters.parse({"hwaffinity_param": raw}, where="--params")["hwaffinity"]


def config(args: argparse.Namespace) -> "ControllerConfig":
    """The controller.daemon.ControllerConfig of the parsed ARGS (flags checked now)."""
    # lazy: see the module's head
    from tacker_hwaffinity.controller.daemon import ControllerConfig, Lease
    from tacker_hwaffinity.kube.component import parse_address
    address = parse_address(args.metrics_address, "--metrics-address")
    select = _workers(args)
    hw = _params(args.params)
    id_keys = host_id_labels(args)
    both = sorted(set(id_keys) & set(hw.label_keys))
    if both:
        raise InputError("%s: a host label of --params label_keys (the compute host) and "
                         "a host-id label (Nova's hostId) at once; give it once"
                         % ", ".join(both), field="--host-id-label")
    if args.exposure_max_workloads < 0:
        raise InputError("must be 0 or more, got %d" % args.exposure_max_workloads,
                         field="--exposure-max-workloads")
    if args.rebalance_max_evictions < 1:
        raise InputError("must be 1 or more, got %d" % args.rebalance_max_evictions,
                         field="--rebalance-max-evictions")
    for flag in ("termination_margin", "max_termination_wait"):
        value = getattr(args, flag)
        if not 0 <= value < float("inf"):
            raise InputError("must be 0 or more seconds, and finite, got %r" % value,
                             field="--" + flag.replace("_", "-"))
    return ControllerConfig(
        hw=hw, select_workers=select, metrics_address=address,
        lease=Lease(args.lease_namespace, args.lease_name, args.identity, args.lease_duration),
        poll_interval=args.poll_interval, grace=args.grace,
        eviction_interval=args.eviction_interval, termination_margin=args.termination_margin,
        max_termination_wait=args.max_termination_wait,
        dry_run=args.dry_run, host_id_labels=id_keys, nova_scope=args.nova_scope,
        rebalance=args.rebalance_max_evictions if args.rebalance else 0,
        # read here, not as the flag's default: --help must not print the URL's password
        notifications_url=args.notifications_url or os.environ.get("NOVA_NOTIFICATIONS_URL"),
        exposure_max_workloads=args.exposure_max_workloads, os_cloud=args.os_cloud,
        kubeconfig=args.kubeconfig, context=args.context, log_level=args.log_level)


def run(args: argparse.Namespace) -> int:
    extras.require("controller")    # before the credentials are read
    # lazy: see the module's head
    from tacker_hwaffinity.controller.daemon import ControllerDaemon
    from tacker_hwaffinity.kube import component
    return component.run(ControllerDaemon(config(args)))
