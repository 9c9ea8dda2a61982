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
    p.add_argument("--notifications-url", metavar="TRANSPORT_URL",
                   default=os.environ.get("NOVA_NOTIFICATIONS_URL"),
                   help="also listen to Nova's versioned notifications on this message bus "
                        "(oslo.messaging URL, e.g. rabbit://user:pass@host:5672/; default "
                        "$NOVA_NOTIFICATIONS_URL, so that the password stays out of the "
                        "process list): a move is then relabelled within seconds")
    p.add_argument("--grace", type=float, default=60.0, metavar="SECONDS",
                   help="how long affinity may stay violated before its pod is evicted")
    p.add_argument("--eviction-interval", type=float, default=10.0, metavar="SECONDS",
                   help="at most one eviction per this many seconds")
    p.add_argument("--host-id-label", metavar="KEY",
                   help="also keep this label true with the server's hostId (e.g. "
                        "topology.openstack.org/host-id)")
    p.add_argument("--lease-namespace", default=os.environ.get("POD_NAMESPACE", "kube-system"))
    p.add_argument("--lease-name", default="hwaffinity-controller")
    p.add_argument("--identity", default=os.environ.get("POD_NAME") or socket.gethostname())
    p.add_argument("--lease-duration", type=float, default=15.0, metavar="SECONDS",
                   help="leader election: lease duration (renew deadline and retry period "
                        "follow client-go's 15/10/2 proportions)")
    p.add_argument("--metrics-address", default="0.0.0.0:%d" % DEFAULT_PORT,
                   metavar="HOST:PORT")
    p.add_argument("--dry-run", action="store_true", help="report; relabel and evict nothing")
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


def run(args):
    from prometheus_client import CollectorRegistry

    from tacker_hwaffinity.cli.agent import _address
    from tacker_hwaffinity.controller.runner import Controller, Metrics, Settings
    from tacker_hwaffinity.kube import client as kube_client
    from tacker_hwaffinity.kube.informer import Informer
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
    openstack = OpenStack(session(access_from_environment(args.os_cloud)))
    settings = Settings(hw, select(openstack),
                        args.poll_interval, args.grace, args.eviction_interval, args.dry_run,
                        args.host_id_label)
    try:
        conn = kube_client.connect(args.kubeconfig, args.context)
    except kube_client.KubeError as e:
        sys.stderr.write("hwaffinity controller: %s\n" % e)
        return 2
    poll = ServerPoll(openstack)
    core = conn.core()
    registry = CollectorRegistry()
    stop = threading.Event()
    nodes = Informer(conn, core.list_node, "Node", "nodes", lambda *a: None, log=log)
    pods = Informer(conn, core.list_pod_for_all_namespaces, "Pod", "pods", lambda *a: None,
                    log=log)
    controller = Controller(conn, poll, settings, nodes, pods, Metrics(registry), log=log)
    elector = LeaderElector(conn, args.lease_namespace, args.lease_name, args.identity,
                            lease_duration=args.lease_duration,
                            renew_deadline=args.lease_duration * 2 / 3,
                            retry_period=args.lease_duration * 2 / 15, log=log)
    threads = [threading.Thread(target=i.run, args=(stop,), daemon=True, name=n)
               for i, n in ((nodes, "nodes"), (pods, "pods"), (elector, "leader"))]
    for t in threads:
        t.start()

    def health():
        if not (nodes.synced.is_set() and pods.synced.is_set()):
            return False, "caches not synced yet"
        return True, "leader" if elector.is_leader.is_set() else "standby"
    server = HealthServer(port, host=host, registry=registry, health=health).start()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    log.info("controller %s: workers are %s; Nova every %.0f s, grace %.0f s%s "
             "(metrics on %s:%d)", args.identity, settings.workers.describe(),
             args.poll_interval, args.grace,
             ", dry run" if args.dry_run else "", host, server.port)
    listener = None
    if args.notifications_url:
        from tacker_hwaffinity.openstack.notifications import NotificationListener
        listener = NotificationListener(args.notifications_url, controller.notified, log=log)
    try:
        while not stop.wait(1.0):
            leading = elector.is_leader.is_set()
            if listener is not None and leading and not listener.running:
                listener.start()                    # only the leader listens
            elif listener is not None and not leading and listener.running:
                listener.stop()
            if leading and nodes.synced.is_set() and pods.synced.is_set():
                controller.tick()
    finally:
        if listener is not None:
            listener.stop()
        server.stop()
        for t in threads:
            t.join(10)
        conn.close()
    return 0
