"""``hwaffinity controller``: labels follow the worker VMs; RequiredDuringExecution holds.

Runs in the cluster (a Deployment of 2 replicas, ``deploy/controller/``): leader
election on a Lease; the leader polls Nova (one call per interval) and relabels the
nodes whose VMs settled on another compute host, and evicts, through the Eviction API,
pods that break their ``hwaffinity.io/required-during-execution`` rules.
"""
import json
import logging
import os
import signal
import socket
import sys
import threading

from tacker_hwaffinity.errors import InputError

DEFAULT_PORT = 9465

# What the controller reads of Nodes and Pods (controller.runner, kube.events): its
# informers keep these keys of these fields, nothing else (objects.pruning);
# tests/unit/test_kube_projection.py checks the readers against them.
NODE_FIELDS = {"metadata": ("name", "namespace", "uid", "labels", "resourceVersion"),
               "spec": (), "status": ("addresses",)}
POD_FIELDS = {
    "metadata": ("name", "namespace", "uid", "labels", "annotations", "creationTimestamp",
                 "deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion",
                 "ownerReferences"),    # the workload, for the exposure gauges
    # the exposure gauges run hwaffinity audit's core: the intent on the host key
    "spec": ("nodeName", "priority", "terminationGracePeriodSeconds", "affinity",
             "topologySpreadConstraints"),
    "status": ("phase",),
}
# ... and of Namespaces: their labels, for the rules' namespaceSelector (controller.rules).
NAMESPACE_FIELDS = {"metadata": ("name", "uid", "labels", "resourceVersion"), "spec": (),
                    "status": ()}


def register(sub):
    p = sub.add_parser("controller", help="keep host labels true and RequiredDuringExecution "
                                          "rules enforced (in-cluster controller)",
                       description=__doc__.splitlines()[0])
    p.add_argument("--kubeconfig", help="kubeconfig (default: the in-cluster service account)")
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--os-cloud", help="clouds.yaml entry (default: the OS_* environment)")
    p.add_argument("--worker-metadata", action="append", default=[], metavar="KEY=VALUE",
                   help="Nova server metadata that marks the cluster's worker VMs "
                        "(repeatable; all given must match)")
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
    p.add_argument("--poll-interval", type=float, default=30.0, metavar="SECONDS")
    p.add_argument("--nova-scope", choices=("auto", "all-projects", "project"), default="auto",
                   help="which Nova servers a poll lists: all-projects (all_tenants=1, which "
                        "Nova's default policy gives to admin only), project (the servers "
                        "of the credentials' project), or auto (default): all projects as "
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
                   help="the next eviction waits for the pod evicted last at most its grace "
                        "period plus this; a pod still there then (stuck Terminating on a "
                        "NotReady node) gets a Warning Event and is not waited for")
    p.add_argument("--host-id-label", metavar="KEY",
                   help="also keep this label true with the server's hostId (e.g. "
                        "topology.openstack.org/host-id)")
    p.add_argument("--lease-namespace",
                   default=os.environ.get("POD_NAMESPACE", "hwaffinity-system"))
    p.add_argument("--lease-name", default="hwaffinity-controller")
    p.add_argument("--identity", default=os.environ.get("POD_NAME") or socket.gethostname())
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
    p.add_argument("--dry-run", action="store_true",
                   help="report (logs, gauges); relabel and evict nothing")
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING"))
    p.set_defaults(func=run)


def _metadata(items):
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError("expected KEY=VALUE, got %r" % item, field="--worker-metadata")
        out[key] = value
    return out


def _workers(args):
    """A function of the OpenStack client giving the worker selector (flags checked now)."""
    from tacker_hwaffinity.controller import workers
    metadata = _metadata(args.worker_metadata)
    if args.stack:
        if metadata:
            raise InputError("give either --worker-metadata or --stack, not both",
                             field="--stack")
        if not args.aspect and not args.vdu:
            raise InputError("name the workers of the stack with --aspect and/or --vdu",
                             field="--stack")
        return lambda openstack: workers.StackWorkers(
            openstack, args.stack, args.aspect, args.vdu, refresh_interval=args.stack_refresh)
    if args.aspect or args.vdu:
        raise InputError("--aspect and --vdu need --stack", field="--aspect")
    if not metadata:
        raise InputError("say which servers are the workers: --worker-metadata KEY=VALUE "
                         "or --stack ID with --aspect/--vdu", field="--worker-metadata")
    return lambda openstack: workers.MetadataWorkers(metadata)


def _params(text):
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


def _exposure_caches(conn, log, counted):
    """Informers of what only the exposure gauges read: the pods' owners (desired
    counts) and the PodDisruptionBudgets (optional: policy/v1 is served from 1.21);
    COUNTED: their kube.informer.InformerMetrics."""
    from tacker_hwaffinity.audit import owners, pdb
    from tacker_hwaffinity.kube.informer import Informer
    apps, batch, policy = conn.apps(), conn.batch(), conn.policy()
    kw = dict(log=log, fields=owners.FIELDS, metrics=counted)
    none = lambda *a: None   # noqa: E731 - read through list() only
    return [
        Informer(conn, apps.list_replica_set_for_all_namespaces, "ReplicaSet", "replicasets",
                 none, **kw),
        Informer(conn, apps.list_deployment_for_all_namespaces, "Deployment", "deployments",
                 none, **kw),
        Informer(conn, apps.list_stateful_set_for_all_namespaces, "StatefulSet",
                 "statefulsets", none, **kw),
        Informer(conn, apps.list_daemon_set_for_all_namespaces, "DaemonSet", "daemonsets",
                 none, **kw),
        Informer(conn, batch.list_job_for_all_namespaces, "Job", "jobs", none, **kw),
    ], Informer(conn, policy.list_pod_disruption_budget_for_all_namespaces,
                "PodDisruptionBudget", "poddisruptionbudgets", none, log=log,
                fields=pdb.FIELDS, optional=True, metrics=counted)


def run(args):
    from prometheus_client import CollectorRegistry

    from tacker_hwaffinity.cli.agent import _address
    from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL
    from tacker_hwaffinity.controller.exposure import Exposure, ExposureMetrics
    from tacker_hwaffinity.controller.runner import Controller, Metrics, Settings
    from tacker_hwaffinity.kube import client as kube_client
    from tacker_hwaffinity.kube.health import Supervisor
    from tacker_hwaffinity.kube.informer import Informer, InformerMetrics
    from tacker_hwaffinity.kube.leader import LeaderElector
    from tacker_hwaffinity.kube.serve import HealthServer
    from tacker_hwaffinity.openstack import access_from_environment
    from tacker_hwaffinity.openstack.api import OpenStack
    from tacker_hwaffinity.openstack.auth import session
    from tacker_hwaffinity.openstack.servers import ServerPoll
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
    log = logging.getLogger("hwaffinity.controller")
    host, port = _address(args.metrics_address)
    select = _workers(args)
    hw = _params(args.params)
    if args.exposure_max_workloads < 0:
        raise InputError("must be 0 or more, got %d" % args.exposure_max_workloads,
                         field="--exposure-max-workloads")
    if not args.termination_margin >= 0:
        raise InputError("must be 0 or more seconds, got %r" % args.termination_margin,
                         field="--termination-margin")
    access = access_from_environment(args.os_cloud)
    openstack = OpenStack(session(access))
    settings = Settings(hw, select(openstack),
                        args.poll_interval, args.grace, args.eviction_interval, args.dry_run,
                        args.host_id_label, termination_margin=args.termination_margin)
    try:
        conn = kube_client.connect(args.kubeconfig, args.context)
    except kube_client.KubeError as e:
        sys.stderr.write("hwaffinity controller: %s\n" % e)
        return 2
    poll = ServerPoll(openstack, scope=args.nova_scope, log=log)
    core = conn.core()
    registry = CollectorRegistry()
    stop = threading.Event()
    counted = InformerMetrics(registry)
    nodes = Informer(conn, core.list_node, "Node", "nodes", lambda *a: None, log=log,
                     fields=NODE_FIELDS, metrics=counted)
    pods = Informer(conn, core.list_pod_for_all_namespaces, "Pod", "pods", lambda *a: None,
                    log=log, fields=POD_FIELDS, metrics=counted)
    namespaces = Informer(conn, core.list_namespace, "Namespace", "namespaces",
                          lambda *a: None, log=log, fields=NAMESPACE_FIELDS, metrics=counted)
    # the elector's on_stopped waits for a side effect in flight before the Lease is
    # released; the controller confirms the Lease right before each side effect
    elector = LeaderElector(conn, args.lease_namespace, args.lease_name, args.identity,
                            lease_duration=args.lease_duration,
                            renew_deadline=args.lease_duration * 2 / 3,
                            retry_period=args.lease_duration * 2 / 15,
                            on_stopped=lambda: controller.stand_down(), log=log)
    owners, pdbs = _exposure_caches(conn, log, counted)
    exposure = Exposure(ExposureMetrics(registry), (hw["label_keys"] or [DEFAULT_HOST_LABEL])[0],
                        args.exposure_max_workloads, log=log, owners=owners, pdbs=pdbs)
    controller = Controller(conn, poll, settings, nodes, pods, Metrics(registry), log=log,
                            namespaces=namespaces, leading=elector.confirm, exposure=exposure)
    caches = (nodes, pods, namespaces)
    workers = Supervisor(stop, log=log)
    for name, worker in (("node-watch", nodes), ("pod-watch", pods),
                         ("namespace-watch", namespaces), ("leader", elector)):
        workers.start(name, worker.run, stop)
    for cache in owners + [pdbs]:       # the gauges' only: readiness does not wait for them
        workers.start("%s-watch" % cache.kind.lower(), cache.run, stop)

    def ready():
        if not all(c.synced.is_set() for c in caches):
            return False, "caches not synced yet"
        return True, "leader" if elector.is_leader.is_set() else "standby"
    server = HealthServer(port, host=host, registry=registry, health=workers.health(ready),
                          live=workers.live).start()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    log.info("controller %s: workers are %s; Nova every %.0f s, grace %.0f s%s "
             "(metrics on %s:%d)", args.identity, settings.workers.describe(),
             args.poll_interval, args.grace,
             ", dry run" if args.dry_run else "", host, server.port)
    log.info("controller %s: OpenStack user %s, project %s; Nova polls list %s "
             "(--nova-scope %s)", args.identity, access["username"], access["project_name"],
             poll.describe(access["project_name"]), args.nova_scope)
    listener = None
    # read here, not as the flag's default: --help must not print the URL's password
    notifications_url = args.notifications_url or os.environ.get("NOVA_NOTIFICATIONS_URL")
    if notifications_url:
        from tacker_hwaffinity.openstack.notifications import NotificationListener
        listener = NotificationListener(notifications_url, controller.notified, log=log)
    try:
        while not stop.wait(1.0):
            leading = elector.is_leader.is_set()
            if listener is not None and leading and not listener.running:
                listener.start()                    # only the leader listens
            elif listener is not None and not leading and listener.running:
                listener.stop()
            if leading and all(c.synced.is_set() for c in caches):
                controller.tick()
    finally:
        if listener is not None:
            listener.stop()
        server.stop()
        workers.join(10)
        conn.close()
    return 0
