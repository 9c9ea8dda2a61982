"""``hwaffinity controller`` as a component of ``kube.component``: its configuration,
its caches and leader election, and its main loop (the leader's ticks and its Nova
notification listener)."""
import dataclasses
import typing

from tacker_hwaffinity.kube.component import Address, Refused, Started

TICK_S = 1.0        # how often the main loop looks at the lease and ticks the controller

# What the controller reads of Nodes and Pods (controller.runner, kube.events): its
# informers keep these keys of these fields, nothing else (objects.pruning);
# tests/kube/test_projection.py checks the readers against them.
NODE_FIELDS = {"metadata": ("name", "namespace", "uid", "labels", "resourceVersion"),
               "spec": ("providerID",), "status": ("addresses",)}
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


@dataclasses.dataclass(frozen=True)
class ControllerConfig:
    """The controller's configuration, built once from its flags (``cli/controller.py``
    says what each is)."""

    hw: dict
    """The ``hwaffinity`` parameters (labeling.params: label_keys, host_source, ...)."""
    select_workers: typing.Callable[[typing.Any, typing.Any, typing.Optional[str]], typing.Any]
    """The worker selector (controller.workers), given the OpenStack client, the node
    cache's ``list`` and the credentials' region."""
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


def _read_by_list(*_event):
    """The event handler of an informer whose cache is read through list() only."""


def _exposure_caches(conn, log, counted):
    """Informers of what only the exposure gauges read: the pods' owners (desired
    counts) and the PodDisruptionBudgets (optional: policy/v1 is served from 1.21);
    COUNTED: their kube.informer.InformerMetrics."""
    from tacker_hwaffinity.audit import owners, pdb
    from tacker_hwaffinity.kube.informer import Informer
    apps, batch, policy = conn.apps(), conn.batch(), conn.policy()
    kw = dict(log=log, fields=owners.FIELDS, metrics=counted)
    ignore = _read_by_list
    return [
        Informer(conn, apps.list_replica_set_for_all_namespaces, "ReplicaSet", "replicasets",
                 ignore, **kw),
        Informer(conn, apps.list_deployment_for_all_namespaces, "Deployment", "deployments",
                 ignore, **kw),
        Informer(conn, apps.list_stateful_set_for_all_namespaces, "StatefulSet",
                 "statefulsets", ignore, **kw),
        Informer(conn, apps.list_daemon_set_for_all_namespaces, "DaemonSet", "daemonsets",
                 ignore, **kw),
        Informer(conn, batch.list_job_for_all_namespaces, "Job", "jobs", ignore, **kw),
    ], Informer(conn, policy.list_pod_disruption_budget_for_all_namespaces,
                "PodDisruptionBudget", "poddisruptionbudgets", ignore, log=log,
                fields=pdb.FIELDS, optional=True, metrics=counted)


class ControllerDaemon:
    """The controller as a ``kube.component.Component``."""

    name = "controller"

    def __init__(self, config):
        self.config = config
        self.log_level = config.log_level
        self.address = config.metrics_address

    def start(self, context):
        from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL
        from tacker_hwaffinity.controller import runner
        from tacker_hwaffinity.controller.exposure import Exposure, ExposureMetrics
        from tacker_hwaffinity.kube import client as kube_client
        from tacker_hwaffinity.kube import leader
        from tacker_hwaffinity.kube.informer import Informer, InformerMetrics
        from tacker_hwaffinity.openstack import access_from_environment
        from tacker_hwaffinity.openstack.api import OpenStack
        from tacker_hwaffinity.openstack.auth import session
        from tacker_hwaffinity.openstack.servers import ServerPoll
        config, log, registry, workers = (self.config, context.log, context.registry,
                                          context.workers)
        access = access_from_environment(config.os_cloud)
        openstack = OpenStack(session(access))
        region = access.get("region_name")
        try:
            conn = kube_client.connect(config.kubeconfig, config.context)
        except kube_client.KubeError as e:
            raise Refused(str(e))
        poll = ServerPoll(openstack, scope=config.nova_scope, log=log)
        core = conn.core()
        counted = InformerMetrics(registry)
        nodes = Informer(conn, core.list_node, "Node", "nodes", _read_by_list, log=log,
                         fields=NODE_FIELDS, metrics=counted)
        settings = runner.Settings(config.hw, config.select_workers(openstack, nodes.list, region),
                                   config.poll_interval, config.grace,
                                   config.eviction_interval, config.dry_run,
                                   config.host_id_labels,
                                   termination_margin=config.termination_margin, region=region,
                                   max_termination_wait=config.max_termination_wait)
        pods = Informer(conn, core.list_pod_for_all_namespaces, "Pod", "pods",
                        _read_by_list, log=log, fields=POD_FIELDS, metrics=counted)
        namespaces = Informer(conn, core.list_namespace, "Namespace", "namespaces",
                              _read_by_list, log=log, fields=NAMESPACE_FIELDS,
                              metrics=counted)
        lease = config.lease
        # the elector's on_stopped waits for a side effect in flight before the Lease is
        # released; the controller confirms the Lease right before each side effect
        elector = leader.LeaderElector(conn, lease.namespace, lease.name, lease.identity,
                                       lease_duration=lease.duration,
                                       renew_deadline=lease.duration * 2 / 3,
                                       retry_period=lease.duration * 2 / 15,
                                       on_stopped=lambda: controller.stand_down(), log=log)
        owners, pdbs = _exposure_caches(conn, log, counted)
        exposure = Exposure(ExposureMetrics(registry),
                            (config.hw["label_keys"] or [DEFAULT_HOST_LABEL])[0],
                            config.exposure_max_workloads, log=log, owners=owners, pdbs=pdbs,
                            keep_engine=bool(config.rebalance))
        rebalance = None
        if config.rebalance:
            from tacker_hwaffinity.controller.rebalance import RebalanceMetrics
            rebalance = (exposure.key, config.rebalance, owners, pdbs,
                         RebalanceMetrics(registry))
        controller = runner.Controller(conn, poll, settings, nodes, pods,
                                       runner.Metrics(registry), log=log,
                                       namespaces=namespaces, leading=elector.confirm,
                                       exposure=exposure, rebalance=rebalance)
        caches = (nodes, pods, namespaces)
        for name, worker in (("node-watch", nodes), ("pod-watch", pods),
                             ("namespace-watch", namespaces), ("leader", elector)):
            workers.start(name, worker.run, workers.stop)
        for cache in owners + [pdbs]:       # the gauges' only: readiness does not wait for them
            workers.start("%s-watch" % cache.kind.lower(), cache.run, workers.stop)

        def ready():
            if not all(c.synced.is_set() for c in caches):
                return False, "caches not synced yet"
            return True, "leader" if elector.is_leader.is_set() else "standby"

        def start_lines(port):
            return [
                "controller %s: workers are %s; Nova every %.0f s, grace %.0f s%s%s "
                "(metrics on %s:%d)" % (lease.identity, settings.workers.describe(),
                                        config.poll_interval, config.grace,
                                        "; hostId kept in %s" % ", ".join(
                                            config.host_id_labels)
                                        if config.host_id_labels else "",
                                        (", rebalancing at most %d eviction(s) a poll"
                                         % config.rebalance if config.rebalance else "")
                                        + (", dry run" if config.dry_run else ""),
                                        self.address.host, port),
                "controller %s: OpenStack user %s, project %s; Nova polls list %s "
                "(--nova-scope %s)" % (lease.identity, access["username"],
                                       access["project_name"],
                                       poll.describe(access["project_name"]),
                                       config.nova_scope)]
        loop = MainLoop(controller, elector, caches, config.notifications_url, log)
        return Started(ready, start_lines, main=loop.run, close=[conn.close])


class MainLoop:
    """The controller's main thread: while ELECTOR leads and the CACHES are synced,
    a tick of CONTROLLER every second; the Nova notification listener on
    NOTIFICATIONS_URL (None: none) runs only on the leader."""

    def __init__(self, controller, elector, caches, notifications_url, log):
        self.controller, self.elector, self.caches = controller, elector, caches
        self.listener = None
        if notifications_url:
            from tacker_hwaffinity.openstack.notifications import NotificationListener
            self.listener = NotificationListener(notifications_url, controller.notified,
                                                 log=log)

    def run(self, stop):
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
