"""``hwaffinity controller`` as a component of ``kube.component``: its configuration,
its caches and leader election, and its main loop (the leader's ticks and its Nova
notification listener).

``ControllerDaemon.start`` composes the parts in order: the clients (OpenStack, the
API server), the caches (informers), the election (a Lease), the tick
(``controller.runner.Controller`` with its exposure gauges and rebalancing) and its
threads. The OpenStack and oslo.messaging libraries are imported by ``openstack`` on
first use, so importing this module needs neither."""
import dataclasses
import functools
import logging
import threading
import typing

from tacker_hwaffinity.audit import owners as owner_kinds
from tacker_hwaffinity.audit import pdb
from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL
from tacker_hwaffinity.controller import runner
from tacker_hwaffinity.controller.exposure import Exposure, ExposureMetrics
from tacker_hwaffinity.controller.rebalance import RebalanceInputs, RebalanceMetrics
from tacker_hwaffinity.openstack.workers import WorkerSelector
from tacker_hwaffinity.kube import client as kube_client
from tacker_hwaffinity.kube import leader
from tacker_hwaffinity.kube.component import Address, Context, Refused, Started
from tacker_hwaffinity.kube.informer import Informer, InformerMetrics
from tacker_hwaffinity.labeling.params import HwParams
from tacker_hwaffinity.openstack import access_from_environment
from tacker_hwaffinity.openstack.api import OpenStack
from tacker_hwaffinity.openstack.auth import session
from tacker_hwaffinity.openstack.notifications import NotificationListener
from tacker_hwaffinity.openstack.servers import ServerPoll

TICK_S = 1.0        # how often the main loop looks at the lease and ticks the controller

# What the controller reads of Nodes and Pods (controller.runner, kube.events): its
# informers keep these keys of these fields, nothing else (objects.pruning);
# tests/kube/test_projection.py checks the readers against them.
NODE_FIELDS = {"metadata": ("name", "namespace", "uid", "labels", "resourceVersion"),
               "spec": ("providerID", "taints"), "status": ("addresses", "conditions")}
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


@dataclasses.dataclass(frozen=True)
class Lease:
    """The leader election's Lease and its duration (seconds)."""

    namespace: str
    name: str
    identity: str
    duration: float


SelectWorkers = typing.Callable[
    [OpenStack, typing.Callable[[], typing.List[typing.Any]], typing.Optional[str]],
    WorkerSelector]
"""Makes the worker selector (``openstack.workers``), given the OpenStack client, the
node cache's ``list`` and the credentials' region."""


@dataclasses.dataclass(frozen=True)
class ControllerConfig:
    """The controller's configuration, built once from its flags (``cli/controller.py``
    says what each is)."""

    hw: HwParams
    """The ``hwaffinity`` parameters (labeling.params: label_keys, host_source, ...)."""
    select_workers: SelectWorkers
    metrics_address: Address
    lease: Lease
    poll_interval: float
    grace: float
    eviction_interval: float
    termination_margin: float
    max_termination_wait: float
    """The most of an evicted pod's grace period the next eviction in its namespace
    waits for (``controller.runner``)."""
    dry_run: bool
    rebalance: int
    """Rebalancing evictions a Nova poll may make (0: no rebalancing)."""
    host_id_labels: typing.Tuple[str, ...]
    """Label keys kept equal to each worker's Nova hostId (empty: none)."""
    nova_scope: str                             # auto, all-projects or project
    notifications_url: typing.Optional[str]     # None: Nova polls only
    exposure_max_workloads: int
    os_cloud: typing.Optional[str]              # None: the OS_* environment
    kubeconfig: typing.Optional[str]            # None: the in-cluster service account
    context: typing.Optional[str]
    log_level: str


@dataclasses.dataclass(frozen=True)
class Clients:
    """What the controller talks to: the OpenStack credentials (``openstack.auth``),
    the client made of them and their region, and the API server."""

    access: typing.Mapping[str, typing.Any]
    openstack: OpenStack
    region: typing.Optional[str]
    conn: kube_client.Connection


@dataclasses.dataclass(frozen=True)
class Caches:
    """The controller's informers: NODES, PODS and NAMESPACES (readiness waits for
    them), and what only the exposure gauges read: the pods' OWNERS (desired counts)
    and the PodDisruptionBudgets (PDBS; optional: policy/v1 is served from 1.21)."""

    nodes: Informer
    pods: Informer
    namespaces: Informer
    owners: typing.Tuple[Informer, ...]
    pdbs: Informer

    def awaited(self) -> typing.Tuple[Informer, ...]:
        """The caches readiness and the ticks wait for."""
        return (self.nodes, self.pods, self.namespaces)


def _read_by_list(*_event: typing.Any) -> None:
    """The event handler of an informer whose cache is read through list() only."""


def _clients(config: ControllerConfig) -> Clients:
    """The OpenStack client of CONFIG's credentials and the API server's connection;
    Refused when the API server cannot be reached."""
    access = access_from_environment(config.os_cloud)
    openstack = OpenStack(session(access))
    try:
        conn = kube_client.connect(config.kubeconfig, config.context)
    except kube_client.KubeError as e:
        raise Refused(str(e))
    return Clients(access, openstack, access.get("region_name"), conn)


def _caches(conn: kube_client.Connection, log: logging.Logger,
            counted: InformerMetrics) -> Caches:
    """The informers (not started); COUNTED: their kube.informer.InformerMetrics."""
    core, apps, batch = conn.core(), conn.apps(), conn.batch()
    kw: dict[str, typing.Any] = {"log": log, "metrics": counted}
    owned = owner_kinds.FIELDS
    # each list call is handed to Informer itself: tests/test_rbac_matches_code.py reads
    # them there to check that the role grants exactly list and watch of each
    return Caches(
        nodes=Informer(conn, core.list_node, "Node", "nodes", _read_by_list,
                       fields=NODE_FIELDS, **kw),
        pods=Informer(conn, core.list_pod_for_all_namespaces, "Pod", "pods", _read_by_list,
                      fields=POD_FIELDS, **kw),
        namespaces=Informer(conn, core.list_namespace, "Namespace", "namespaces",
                            _read_by_list, fields=NAMESPACE_FIELDS, **kw),
        owners=(
            Informer(conn, apps.list_replica_set_for_all_namespaces, "ReplicaSet",
                     "replicasets", _read_by_list, fields=owned, **kw),
            Informer(conn, apps.list_deployment_for_all_namespaces, "Deployment",
                     "deployments", _read_by_list, fields=owned, **kw),
            Informer(conn, apps.list_stateful_set_for_all_namespaces, "StatefulSet",
                     "statefulsets", _read_by_list, fields=owned, **kw),
            Informer(conn, apps.list_daemon_set_for_all_namespaces, "DaemonSet",
                     "daemonsets", _read_by_list, fields=owned, **kw),
            Informer(conn, batch.list_job_for_all_namespaces, "Job", "jobs", _read_by_list,
                     fields=owned, **kw)),
        pdbs=Informer(conn, conn.policy().list_pod_disruption_budget_for_all_namespaces,
                      "PodDisruptionBudget", "poddisruptionbudgets", _read_by_list,
                      fields=pdb.FIELDS, optional=True, **kw))


def _election(conn: kube_client.Connection, lease: Lease, log: logging.Logger,
              on_stopped: typing.Callable[[], None]) -> leader.LeaderElector:
    """The leader election on LEASE, with client-go's 15/10/2 proportions; ON_STOPPED
    waits for a side effect in flight before the Lease is released (the controller
    confirms the Lease right before each side effect)."""
    return leader.LeaderElector(conn, lease.namespace, lease.name, lease.identity,
                                lease_duration=lease.duration,
                                renew_deadline=lease.duration * 2 / 3,
                                retry_period=lease.duration * 2 / 15,
                                on_stopped=on_stopped, log=log)


def _rebalance(config: ControllerConfig, key: str, caches: Caches,
               registry: typing.Any) -> typing.Optional[RebalanceInputs]:
    """What rebalancing on the host label KEY works with (None: no rebalancing)."""
    if not config.rebalance:
        return None
    return RebalanceInputs(key=key, limit=config.rebalance, owners=caches.owners,
                           pdbs=caches.pdbs, metrics=RebalanceMetrics(registry))


def _settings(config: ControllerConfig, clients: Clients, nodes: Informer) -> runner.Settings:
    """The tick's settings, its worker selector reading the node cache NODES."""
    return runner.Settings(
        config.hw, config.select_workers(clients.openstack, nodes.list, clients.region),
        config.poll_interval, config.grace, config.eviction_interval, config.dry_run,
        config.host_id_labels, termination_margin=config.termination_margin,
        region=clients.region, max_termination_wait=config.max_termination_wait)


def _tick(config: ControllerConfig, settings: runner.Settings, poll: ServerPoll,
          conn: kube_client.Connection, caches: Caches, elector: leader.LeaderElector,
          context: Context) -> runner.Controller:
    """The leader's tick: host labels, enforcement, the exposure gauges, rebalancing."""
    log, registry = context.log, context.registry
    exposure = Exposure(ExposureMetrics(registry),
                        (config.hw.label_keys or (DEFAULT_HOST_LABEL,))[0],
                        config.exposure_max_workloads, log=log, owners=caches.owners,
                        pdbs=caches.pdbs, keep_engine=bool(config.rebalance))
    rebalance = _rebalance(config, exposure.key, caches, registry)
    # the metric families are registered (and served on /metrics) in this order:
    # the informers', the exposure gauges', rebalancing's, the tick's
    return runner.Controller(conn, poll, settings, caches.nodes, caches.pods,
                             runner.Metrics(registry), log=log, namespaces=caches.namespaces,
                             leading=elector.confirm, exposure=exposure, rebalance=rebalance)


def _start_threads(workers: typing.Any, caches: Caches, elector: leader.LeaderElector) -> None:
    """The caches' watches and the election, on the supervisor WORKERS."""
    for name, worker in (("node-watch", caches.nodes), ("pod-watch", caches.pods),
                         ("namespace-watch", caches.namespaces), ("leader", elector)):
        workers.start(name, worker.run, workers.stop)
    for cache in caches.owners + (caches.pdbs,):   # the gauges' only: readiness does not wait
        workers.start("%s-watch" % cache.kind.lower(), cache.run, workers.stop)


class ControllerDaemon:
    """The controller as a ``kube.component.Component``."""

    name = "controller"

    def __init__(self, config: ControllerConfig) -> None:
        self.config = config
        self.log_level = config.log_level
        self.address = config.metrics_address

    def start(self, context: Context) -> Started:
        config, log = self.config, context.log
        clients = _clients(config)
        caches = _caches(clients.conn, log, InformerMetrics(context.registry))
        elector = _election(clients.conn, config.lease, log, lambda: controller.stand_down())
        settings = _settings(config, clients, caches.nodes)
        poll = ServerPoll(clients.openstack, scope=config.nova_scope, log=log)
        controller = _tick(config, settings, poll, clients.conn, caches, elector, context)
        _start_threads(context.workers, caches, elector)
        awaited = caches.awaited()

        def ready() -> typing.Tuple[bool, str]:
            if not all(c.synced.is_set() for c in awaited):
                return False, "caches not synced yet"
            return True, "leader" if elector.is_leader.is_set() else "standby"
        loop = MainLoop(controller, elector, awaited, config.notifications_url, log)
        return Started(ready, functools.partial(self._start_lines, clients.access,
                                                settings.workers, poll),
                       main=loop.run, close=[clients.conn.close])

    def _start_lines(self, access: typing.Mapping[str, typing.Any], workers: WorkerSelector,
                     poll: ServerPoll, port: int) -> typing.List[str]:
        config, lease = self.config, self.config.lease
        return [
            "controller %s: workers are %s; Nova every %.0f s, grace %.0f s%s%s "
            "(metrics on %s:%d)" % (lease.identity, workers.describe(),
                                    config.poll_interval, config.grace,
                                    "; hostId kept in %s" % ", ".join(config.host_id_labels)
                                    if config.host_id_labels else "",
                                    (", rebalancing at most %d eviction(s) a poll"
                                     % config.rebalance if config.rebalance else "")
                                    + (", dry run" if config.dry_run else ""),
                                    self.address.host, port),
            "controller %s: OpenStack user %s, project %s; Nova polls list %s "
            "(--nova-scope %s)" % (lease.identity, access["username"], access["project_name"],
                                   poll.describe(access["project_name"]), config.nova_scope)]


class MainLoop:
    """The controller's main thread: while ELECTOR leads and the CACHES are synced,
    a tick of CONTROLLER every second; the Nova notification listener on
    NOTIFICATIONS_URL (None: none) runs only on the leader."""

    def __init__(self, controller: runner.Controller, elector: leader.LeaderElector,
                 caches: typing.Sequence[Informer], notifications_url: typing.Optional[str],
                 log: logging.Logger) -> None:
        self.controller, self.elector, self.caches = controller, elector, caches
        self.listener = None
        if notifications_url:
            self.listener = NotificationListener(notifications_url, controller.notified,
                                                 log=log)

    def run(self, stop: threading.Event) -> None:
        """Until STOP is set."""
        listener = self.listener
        try:
            while not stop.wait(TICK_S):
                leading = self.elector.is_leader.is_set()
                if listener is not None and leading and not listener.running:
                    listener.start()                    # only the leader listens
                elif listener is not None and not leading and listener.running:
                    listener.stop()
                if leading and all(c.synced.is_set() for c in self.caches):
                    self.controller.tick()
        finally:
            if listener is not None:
                listener.stop()
