"""The during-execution controller's tick: Nova polls and cluster events in, labels and
evictions out. ``Controller`` composes one module per job: ``controller.hostlabels``
(labels follow the VMs), ``controller.enforcement`` (RequiredDuringExecution),
``controller.exposure`` (the gauges), ``controller.events`` (Events, once each, and
failures on one object) and ``controller.term`` (side effects only while leading).

Every replica keeps the node and pod caches (``kube.informer``); only the leader
(``kube.leader``, a Lease) acts. Each tick the leader:

1. polls Nova (one call: ``openstack.servers.ServerPoll``) when the interval has passed,
   or at once when a Nova notification says a worker may have moved
   (``openstack.notifications``), but never within ``MIN_POLL_GAP_S`` of the last poll
   (any project's ``instance.create.end`` asks for one, and each poll is followed by the
   exposure audit of every pod: a tenant creating a VM a second must not make every tick
   a poll and an audit),
   lets ``controller.hosts.HostTracker`` decide which workers settled on a new host,
   plans their labels with the MgmtDriver's own planner (``labeling.plan``) and applies
   them (``kube.labels``, the MgmtDriver's field manager), with an Event on the node;
2. evaluates the RequiredDuringExecution rules (``controller.rules``) of the running pods,
   lets affinity violations wait out their grace, and evicts the first violator in the
   seed's order through the Eviction API (``kube.evict``), the namespaces taking turns:
   one eviction in flight per namespace, at most one per ``eviction_interval`` in all;
   a PodDisruptionBudget that forbids it is an Event on the pod and a retry later, after
   the others' turn. The rules are evaluated as the scheduler
   evaluates them, with the namespaces' labels (a third cache) for ``namespaceSelector``;
3. after a poll (not every tick; also in a dry run), sets the exposure gauges
   (``controller.exposure``: ``hwaffinity audit``'s figures) on the hosts Nova reports:
   per workload, what one host failing takes, and per worker node whether its host
   label is stale;
4. with ``--rebalance``, after a poll: evicts the fewest replicas that restore the
   workloads' own anti-affinity or topology spread on the host key, only where the
   replacement has a place that keeps it (``controller.rebalance``).

An evicted pod is waited for (the next eviction in its namespace waits until it has
left the cache; the other namespaces do not wait) at most its grace period
(``deletionGracePeriodSeconds``, else the pod's ``terminationGracePeriodSeconds``, else
the API server's default of 30 s) but never more than ``Settings.max_termination_wait``
(default 600 s, as cluster-autoscaler's ``--max-graceful-termination-sec``: the grace
period is the pod owner's to set, the wait is ours), plus
``Settings.termination_margin`` (default 30 s: time for a healthy kubelet to kill the
containers and delete the pod object, and for the watch to bring the deletion), counted
from the eviction. A pod still there by then (stuck Terminating on a NotReady node, a
finalizer nobody removes, a process that ignores SIGTERM under a long grace period) gets
a Warning Event ``EvictionStuck`` and is not waited for, nor picked again: the next
violator in its namespace is evicted.

Every side effect (a relabel, an eviction, an Event) is done only if ``leading()``
confirms the lease right before it (``kube.leader.LeaderElector.confirm``); otherwise
the tick is abandoned (what it did not relabel is relabelled from Nova's next answer).
``stand_down()`` (the elector's ``on_stopped``, before it releases the Lease) returns
once no side effect is in flight, and ends the term: the tick still running does no
more, and the next term starts afresh (every worker relabelled, affinity grace counted
again).

Nova unreachable or failing: the labels stay as they are, the error is logged once per
poll and counted, and the next interval tries again.
"""
import logging
import threading
import time

from prometheus_client import Counter, Gauge, Histogram

from tacker_hwaffinity.controller.enforcement import Enforcement
from tacker_hwaffinity.controller.events import EventLog, Failures
from tacker_hwaffinity.controller.hostlabels import HostLabels
from tacker_hwaffinity.controller.rebalance import Rebalancer
from tacker_hwaffinity.controller.term import NotLeading, Term

TERMINATION_MARGIN_S = 30.0
MAX_TERMINATION_WAIT_S = 600.0      # cluster-autoscaler's --max-graceful-termination-sec
MIN_POLL_GAP_S = 5.0                # Nova polls, however many notifications ask for one


class Metrics:
    def __init__(self, registry):
        self.relabels = Counter("hwaffinity_controller_relabels", "Node label changes applied",
                                registry=registry)
        self.evictions = Counter("hwaffinity_controller_evictions",
                                 "Eviction attempts by outcome", ["outcome"], registry=registry)
        self.violations = Gauge("hwaffinity_controller_violations",
                                "RequiredDuringExecution violations seen (due or waiting)",
                                registry=registry)
        self.poll = Histogram("hwaffinity_controller_poll_seconds", "One Nova poll",
                              registry=registry)
        self.poll_errors = Counter("hwaffinity_controller_poll_errors", "Nova polls that failed",
                                   registry=registry)
        self.notifications = Counter("hwaffinity_controller_notifications",
                                     "Nova notifications that prompted a poll", ["event"],
                                     registry=registry)
        self.stuck = Counter("hwaffinity_controller_evictions_stuck",
                             "Evicted pods still there after their grace period and the "
                             "margin (not waited for any longer)", registry=registry)
        self.object_errors = Counter(
            "hwaffinity_controller_object_errors", "Objects a tick failed on and went past "
            "(a pod, a node), exposure gauges not updated (exposure) and ticks cut short by "
            "a bug (tick), by kind and reason (the exception's type)", ["kind", "reason"],
            registry=registry)
        self.nodes_host_unknown = Gauge(
            "hwaffinity_controller_nodes_host_unknown", "Nodes that keep the host-unknown "
            "taint after the last Nova poll, by why their host is not known "
            "(controller.hosttruth)", ["reason"], registry=registry)
        self.abandoned = Counter("hwaffinity_controller_ticks_abandoned",
                                 "Ticks abandoned before a side effect: the lease was not "
                                 "confirmed", registry=registry)


class Settings:
    """WORKERS: which servers are workers (``openstack.workers``). TERMINATION_MARGIN:
    seconds an evicted pod may take beyond its grace period to go, MAX_TERMINATION_WAIT:
    the most of that grace period waited for (module docstring).
    REGION: the OpenStack credentials' region (None: unknown; ``labeling.plan.NodeIndex``).
    HOST_ID_LABELS: the label keys kept equal to each worker's Nova hostId beside the
    host labels (``controller.hostlabels``)."""

    def __init__(self, hw, workers, poll_interval=30.0, grace=60.0,
                 eviction_interval=10.0, dry_run=False, host_id_labels=(),
                 termination_margin=TERMINATION_MARGIN_S, region=None,
                 max_termination_wait=MAX_TERMINATION_WAIT_S):
        self.hw, self.workers, self.region = hw, workers, region
        self.poll_interval, self.grace = poll_interval, grace
        self.eviction_interval, self.dry_run = eviction_interval, dry_run
        self.host_id_labels = tuple(host_id_labels)
        self.termination_margin = termination_margin
        self.max_termination_wait = max_termination_wait


class Controller:
    """NODES, PODS, NAMESPACES: informers (caches; NAMESPACES None: no namespace has
    labels). LEADING: confirms the lease right before each side effect (None: no
    election, this is the only instance). EXPOSURE: ``controller.exposure.Exposure``
    (None: no gauges). REBALANCE: ``controller.rebalance.RebalanceInputs`` (None: no
    rebalancing)."""

    def __init__(self, conn, poll, settings, nodes, pods, metrics, log=None,
                 clock=time.monotonic, namespaces=None, leading=None, exposure=None,
                 rebalance=None):
        self.s, self.metrics, self.clock = settings, metrics, clock
        self.nodes, self.pods, self.namespaces = nodes, pods, namespaces
        self.exposure = exposure
        self.log = log or logging.getLogger("hwaffinity.controller")
        self.term = Term(leading)
        self.events = EventLog(conn, settings, self.term, self.log)
        self.failed = Failures(metrics.object_errors, self.log, self.events)
        parts = (metrics, self.term, self.events, self.failed, self.log)
        self.hosts = HostLabels(conn, poll, settings, nodes, *parts)
        self.enforcement = Enforcement(conn, settings, nodes, pods, *parts, clock)
        self.rebalancer = None
        if rebalance is not None:
            self.rebalancer = Rebalancer(conn, settings, rebalance, self.term, self.events,
                                         self.log)
        self.next_poll = 0.0
        self.last_poll = float("-inf")
        self.lock = threading.Lock()        # one tick at a time

    def tick(self):
        """One tick of the leader: poll Nova when due, enforce, export after a poll."""
        with self.lock:
            if self.term.stale:
                self._new_term()
            self.events.new_tick()
            try:
                now = self.clock()
                polled = now >= max(self.next_poll, self.last_poll + min(
                    MIN_POLL_GAP_S, self.s.poll_interval))
                if polled:
                    self.last_poll, self.next_poll = now, now + self.s.poll_interval
                    self.hosts.poll()
                self.enforcement.enforce(self._namespace_objs(), self.hosts.moved_nodes)
                if polled:
                    self._after_poll()
            except NotLeading as e:
                self.hosts.resync = True    # a relabel may have been cut short: redo all
                self.next_poll = 0.0
                self.metrics.abandoned.inc()
                self.log.warning("the lease is not confirmed: %s not done, tick abandoned", e)
            except Exception as e:  # noqa: BLE001 - a bug ends this tick, never the loop
                self.hosts.resync = True
                self.failed("tick", "this tick", e)

    def stand_down(self):
        """The term ended (the elector's ``on_stopped``, before a release): return once
        no side effect is in flight; the tick still running, if any (a slow Nova poll),
        does no more (``leading()`` says no, and the term is marked stale)."""
        # a standby exports no exposure gauges
        self.term.end(self.exposure.clear if self.exposure is not None else None)

    def _new_term(self):
        """What the last term knew may be out of date: relabel every worker from Nova's
        next answer, and count the affinity grace again."""
        self.term.begin()
        self.hosts.resync = True
        self.next_poll, self.last_poll = 0.0, float("-inf")
        self.enforcement.new_term()

    def notified(self, event_type, server_id):
        """A Nova notification (``openstack.notifications``): poll at the next tick
        (``MIN_POLL_GAP_S`` after the last poll at the soonest) when it concerns a
        worker, or may add one."""
        if self.hosts.concerns(event_type, server_id):
            self.metrics.notifications.labels(event_type).inc()
            self.next_poll = 0.0

    def _namespace_objs(self):
        return self.namespaces.list() if self.namespaces is not None else ()

    def _after_poll(self):
        """The exposure gauges, then rebalancing, on one listing of the caches and on
        Nova's hosts; rebalancing plans on the audit the gauges were set from."""
        if self.term.stale or (self.exposure is None and self.rebalancer is None):
            return
        try:
            node_objs, pod_objs, namespace_objs = (self.nodes.list(), self.pods.list(),
                                                   self._namespace_objs())
            key = (self.exposure or self.rebalancer).key
            nova_hosts, stale = self.hosts.nova_hosts(key)
        except Exception as e:
            self.metrics.object_errors.labels("exposure", type(e).__name__).inc()
            self.log.warning("exposure gauges not updated: %s", e, exc_info=True)
            return
        report = self._export(node_objs, pod_objs, namespace_objs, nova_hosts, stale)
        if self.rebalancer is None:
            return
        try:
            self.rebalancer.run(node_objs, pod_objs, namespace_objs, nova_hosts, report)
        except NotLeading:
            raise
        except Exception as e:
            self.metrics.object_errors.labels("rebalance", type(e).__name__).inc()
            self.log.warning("rebalance not done: %s", e, exc_info=True)

    def _export(self, node_objs, pod_objs, namespace_objs, nova_hosts, stale):
        """Set the exposure gauges (no side effect: also in a dry run); their audit
        Report, or None (no gauges, or a failure: logged and counted, the tick goes on)."""
        if self.exposure is None:
            return None
        try:
            self.exposure.update(node_objs, pod_objs, nova_hosts, stale, namespace_objs)
        except Exception as e:
            self.metrics.object_errors.labels("exposure", type(e).__name__).inc()
            self.log.warning("exposure gauges not updated: %s", e, exc_info=True)
            return None
        return self.exposure.take_report()
