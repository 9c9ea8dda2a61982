"""The during-execution controller's loop: Nova polls and cluster events in, labels and
evictions out.

Every replica keeps the node and pod caches (``kube.informer``); only the leader
(``kube.leader``, a Lease) acts. Each tick the leader:

1. polls Nova (one call: ``openstack.servers.ServerPoll``) when the interval has passed,
   or at once when a Nova notification says a worker may have moved
   (``openstack.notifications``),
   lets ``controller.hosts.HostTracker`` decide which workers settled on a new host,
   plans their labels with the MgmtDriver's own planner (``labeling.plan``) and applies
   them (``kube.labels``, the MgmtDriver's field manager), with an Event on the node;
2. evaluates the RequiredDuringExecution rules (``controller.rules``) of the running pods,
   lets affinity violations wait out their grace, and evicts the first violator in the
   seed's order through the Eviction API (``kube.evict``): one eviction in flight at a
   time, at most one per ``eviction_interval``; a PodDisruptionBudget that forbids it is
   an Event on the pod and a retry later. The rules are evaluated as the scheduler
   evaluates them, with the namespaces' labels (a third cache) for ``namespaceSelector``;
3. after a poll (not every tick; also in a dry run), sets the exposure gauges
   (``controller.exposure``: ``hwaffinity audit``'s figures) on the hosts Nova reports:
   per workload, what one host failing takes, and per worker node whether its host
   label is stale.

An evicted pod is waited for (the next eviction waits until it has left the cache) at
most its grace period (``deletionGracePeriodSeconds``, else the pod's
``terminationGracePeriodSeconds``, else the API server's default of 30 s) plus
``Settings.termination_margin`` (default 30 s: time for a healthy kubelet to kill the
containers and delete the pod object, and for the watch to bring the deletion), counted
from the eviction. A pod still there by then (stuck Terminating on a NotReady node, a
finalizer nobody removes) gets a Warning Event ``EvictionStuck`` and is not waited for,
nor picked again: the next violator is evicted.

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
import contextlib
import logging
import threading
import time

from tacker_hwaffinity.constants import TERMINAL_PHASES
from tacker_hwaffinity.controller import rules as rulesmod
from tacker_hwaffinity.controller.hosts import SETTLED, HostTracker
from tacker_hwaffinity.kube import evict as evictmod
from tacker_hwaffinity.kube import events, labels
from tacker_hwaffinity.kube.client import KubeError
from tacker_hwaffinity.labeling import plan as planning

COMPONENT = "hwaffinity-controller"
DEFAULT_GRACE_S = 30        # the API server's default terminationGracePeriodSeconds
TERMINATION_MARGIN_S = 30.0
REPORTED_PER_OBJECT = 16    # Events remembered (not sent again) per object


class NotLeading(Exception):
    """The lease was not confirmed before a side effect: the tick is abandoned."""


class Metrics:
    def __init__(self, registry):
        from prometheus_client import Counter, Gauge, Histogram
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
            "(a pod, a node), and ticks cut short by a bug (tick), by kind and reason (the "
            "exception's type)", ["kind", "reason"], registry=registry)
        self.abandoned = Counter("hwaffinity_controller_ticks_abandoned",
                                 "Ticks abandoned before a side effect: the lease was not "
                                 "confirmed", registry=registry)


class Settings:
    """WORKERS: which servers are workers (``controller.workers``). TERMINATION_MARGIN:
    seconds an evicted pod may take beyond its grace period to go (module docstring)."""

    def __init__(self, hw, workers, poll_interval=30.0, grace=60.0,
                 eviction_interval=10.0, dry_run=False, host_id_label=None,
                 termination_margin=TERMINATION_MARGIN_S):
        self.hw, self.workers = hw, workers
        self.poll_interval, self.grace = poll_interval, grace
        self.eviction_interval, self.dry_run = eviction_interval, dry_run
        self.host_id_label = host_id_label
        self.termination_margin = termination_margin


class InFlight:
    """The last eviction: the pod, and the clock time the API server accepted it."""

    __slots__ = ("namespace", "name", "uid", "key", "since")

    def __init__(self, pod, since):
        self.namespace, self.name, self.uid = pod.namespace, pod.name, pod.uid
        self.key, self.since = pod.key, since


class Controller:
    """NODES, PODS, NAMESPACES: informers (caches; NAMESPACES None: no namespace has
    labels). LEADING: confirms the lease right before each side effect (None: no
    election, this is the only instance)."""

    def __init__(self, conn, poll, settings, nodes, pods, metrics, log=None,
                 clock=time.monotonic, namespaces=None, leading=None, exposure=None):
        self.conn, self.poll_nova, self.s = conn, poll, settings
        self.exposure = exposure    # controller.exposure.Exposure: gauges, once per poll
        self.nodes, self.pods, self.namespaces = nodes, pods, namespaces
        self.metrics, self.clock, self.leading = metrics, clock, leading
        self.log = log or logging.getLogger("hwaffinity.controller")
        self.tracker = None
        self.workers = {}           # server id -> ServerState (worker servers only)
        self.forgiveness = rulesmod.Forgiveness(settings.grace, clock)
        self.next_poll = 0.0
        self.last_eviction = -1e9
        self.in_flight = None       # InFlight: evicted and not gone yet
        self.blocked_until = {}     # pod key -> clock time before which not to retry
        self.stuck = {}             # uid -> pod key: evicted, never went; not picked again
        self.reported = {}          # object uid -> {(reason, message): None}, oldest first
        self.moved_nodes = set()
        self._parsed = {}           # pod uid -> (annotation text, Rules or InputError)
        self._live = (set(), set())  # (uids, pod keys) of the objects in the caches
        self.resync = False         # relabel every worker at the next poll
        self.stale = False          # the term ended: no side effect until the next tick
        self.lock = threading.Lock()        # one tick at a time
        self.act_lock = threading.Lock()    # held for the length of one side effect

    # -- one tick of the leader ------------------------------------------------
    def tick(self):
        with self.lock:
            if self.stale:
                self._new_term()
            try:
                polled = self.clock() >= self.next_poll
                if polled:
                    self.next_poll = self.clock() + self.s.poll_interval
                    self._poll()
                self._enforce()
                if polled:
                    self._export()
            except NotLeading as e:
                self.resync = True          # a relabel may have been cut short: redo all
                self.next_poll = 0.0
                self.metrics.abandoned.inc()
                self.log.warning("the lease is not confirmed: %s not done, tick abandoned", e)
            except Exception as e:  # noqa: BLE001 - a bug ends this tick, never the loop
                self.resync = True
                self._failed("tick", "this tick", e)

    def _failed(self, kind, what, e, obj=None):
        """Tick work on WHAT (of KIND; OBJ: its object, for an Event) raised E: logged,
        counted, a Warning Event on OBJ; the tick goes on with the next object."""
        self.metrics.object_errors.labels(kind, type(e).__name__).inc()
        self.log.error("%s: skipped, %s: %s", what, type(e).__name__, e,
                       exc_info=not isinstance(e, (KeyError, TypeError, ValueError)))
        if obj is not None:
            self._event(obj, "Warning", "HwaffinityControllerError",
                        "%s skipped this %s: %s: %s" % (COMPONENT, kind, type(e).__name__, e))

    def stand_down(self):
        """The term ended (the elector's ``on_stopped``, before a release): return once
        no side effect is in flight; the tick still running, if any (a slow Nova poll),
        does no more (``leading()`` says no, and the term is marked stale)."""
        with self.act_lock:
            self.stale = True
            if self.exposure is not None:
                self.exposure.clear()       # a standby exports no exposure gauges

    def _new_term(self):
        """What the last term knew may be out of date: relabel every worker from Nova's
        next answer, and count the affinity grace again."""
        self.stale = False
        self.resync = True
        self.next_poll = 0.0
        self.forgiveness = rulesmod.Forgiveness(self.s.grace, self.clock)

    @contextlib.contextmanager
    def _acting(self, what):
        """Do WHAT (one side effect, the body) only if the lease is confirmed now."""
        with self.act_lock:
            if self.stale or (self.leading is not None and not self.leading()):
                raise NotLeading(what)
            yield

    def notified(self, event_type, server_id):
        """A Nova notification (``openstack.notifications``): poll at the next tick
        when it concerns a worker, or may add one."""
        if server_id in self.workers or event_type == "instance.create.end" \
                or self.tracker is None:
            self.metrics.notifications.labels(event_type).inc()
            self.next_poll = 0.0

    # -- labels follow the VMs --------------------------------------------------
    def _poll(self):
        t0 = time.monotonic()
        try:
            states = self.poll_nova.poll()
        except Exception as e:  # noqa: BLE001 - OpenStackError and transport errors
            self.metrics.poll_errors.inc()
            self.log.warning("Nova poll failed, labels kept as they are: %s", e)
            return
        finally:
            self.metrics.poll.observe(time.monotonic() - t0)
        chosen = self.s.workers.select(states)
        ids = {s.id for s in chosen}
        states = chosen + [s for s in states if s.id in self.workers and s.id not in ids]
        first = self.tracker is None
        if first:
            live = [s for s in states if s.status != "DELETED"]
            if not live and self.s.hw["host_source"] == "auto":
                return      # no worker yet: host or hostId is decided on the first ones
            self.tracker = HostTracker(planning.choose_source(live, self.s.hw["host_source"]))
        for st in states:
            if st.status == "DELETED":
                self.workers.pop(st.id, None)
            else:
                self.workers[st.id] = st
        moves = self.tracker.update(states)
        moved = {m.server_id: m for m in moves}
        if moves:
            self.moved_nodes = set()    # the pods of these nodes go first (eviction_order)
        if first or self.resync:
            if first:
                self.log.info("Nova: %d worker server(s), hosts by %s", len(self.workers),
                              self.tracker.source)
            self._relabel(list(self.workers.values()), moved)
            self.resync = False         # not reached when the tick was abandoned
        elif moves:
            self._relabel([self.workers[i] for i in moved if i in self.workers], moved)

    def _relabel(self, servers, moves):
        if not servers:
            return
        hw = dict(self.s.hw, host_source=self.tracker.source)
        workers = [planning.Worker(s.name, s.id, list(s.addresses), s.host, s.host_id)
                   for s in servers]
        kube_nodes = self._kube_nodes()
        p = planning.plan(workers, kube_nodes, hw)
        for err in p.errors:
            self.log.warning("%s", err)
        by_node = {a.node.name: a for a in p.assignments if a.node is not None}
        desired = p.desired()
        if self.s.host_id_label:
            for node, a in by_node.items():
                if a.worker.host_id and node in desired:
                    desired[node] = dict(desired[node], **{self.s.host_id_label: a.worker.host_id})
        for node, wanted in sorted(desired.items()):
            obj = self.nodes.get(None, node)
            if obj is None:
                continue
            current = obj["metadata"].get("labels") or {}
            if all(current.get(k) == v for k, v in wanted.items()):
                continue
            old = {k: current.get(k) for k in wanted}
            if self.s.dry_run:
                self.log.info("would label node %s %s (was %s)", node, wanted, old)
                continue
            try:
                with self._acting("relabelling node %s" % node):
                    labels.apply_node_labels(self.conn, node, wanted,
                                             uid=obj["metadata"]["uid"])
            except KubeError as e:
                self.log.warning("node %s not relabelled: %s", node, e)
                continue
            self.metrics.relabels.inc()
            a = by_node[node]
            move = moves.get(a.worker.server_id)
            text = ("worker %s (server %s) %s: labels %s" % (
                a.worker.name, a.worker.server_id,
                "moved from host %s to %s" % (move.old, move.new) if move and move.old else
                "settled on host %s after a move" % move.new if move else
                "is on host %s" % a.host,
                ", ".join("%s=%s" % kv for kv in sorted(wanted.items()))))
            self.log.info("node %s: %s", node, text)
            self.moved_nodes.add(node)  # moved, or found on another host (a new term)
            self._event(obj, "Normal", "HostLabelChanged", text)

    def _kube_nodes(self):
        """The planner's KubeNodes of the node cache; a node that cannot be read is
        skipped (``_failed``)."""
        out = []
        for n in self.nodes.list():
            try:
                out.append(planning.KubeNode(n["metadata"]["name"], _internal_ips(n),
                                             n["metadata"].get("labels") or {}))
            except Exception as e:  # noqa: BLE001 - one node's problem, not the tick's
                self._failed("node", "node %s" % _meta(n).get("name"), e)
        return out

    # -- exposure gauges (controller.exposure), once per poll --------------------
    def _export(self):
        """Set the exposure gauges on Nova's hosts (no side effect: also in a dry run)."""
        if self.exposure is None or self.stale:
            return
        try:
            nova_hosts, stale = self._nova_hosts()
            namespaces = self.namespaces.list() if self.namespaces is not None else ()
            self.exposure.update(self.nodes.list(), self.pods.list(), nova_hosts, stale,
                                 namespaces)
        except Exception as e:  # noqa: BLE001 - the gauges never stop the controller
            self.log.warning("exposure gauges not updated: %s", e)

    def _nova_hosts(self):
        """({node: the host label value Nova's answer gives it}, {node: label stale?}) for
        the worker nodes matched to a server, as ``_relabel`` matches them."""
        if self.tracker is None or not self.workers:
            return {}, {}
        hw = dict(self.s.hw, host_source=self.tracker.source)
        workers = [planning.Worker(s.name, s.id, list(s.addresses), s.host, s.host_id)
                   for s in self.workers.values()]
        kube_nodes = self._kube_nodes()
        p = planning.plan(workers, kube_nodes, hw)
        key = self.exposure.key
        hosts, stale = {}, {}
        for a in p.assignments:
            if a.node is None or a.error or key not in a.labels:
                continue
            state = self.workers[a.worker.server_id]
            if state.status not in SETTLED or state.task_state:
                continue        # moving: not judged until it settles
            hosts[a.node.name] = a.labels[key]
            stale[a.node.name] = a.node.labels.get(key) != a.labels[key]
        return hosts, stale

    # -- RequiredDuringExecution ------------------------------------------------
    def cluster(self):
        """The rules' view of the caches; a node, namespace or pod that cannot be read
        is skipped (``_failed``)."""
        node_objs = self.nodes.list()
        nodes = self._labels_by_name("node", node_objs)
        namespaces = self._labels_by_name(
            "namespace", self.namespaces.list() if self.namespaces is not None else ())
        uids = {_meta(n).get("uid") for n in node_objs}
        keys, running = set(), []
        for obj in self.pods.list():
            meta = _meta(obj)
            uids.add(meta.get("uid"))
            try:
                keys.add("%s/%s" % (meta.get("namespace") or "default", meta["name"]))
                pod = self._running_pod(obj)
            except Exception as e:  # noqa: BLE001 - one pod's problem, not the tick's
                self._failed("pod", "pod %s/%s" % (meta.get("namespace"), meta.get("name")),
                             e, obj if meta.get("name") else None)
                continue
            if pod is not None:
                running.append(pod)
        self._live = (uids, keys)
        return rulesmod.Cluster(nodes, running, namespaces)

    def _labels_by_name(self, kind, objs):
        out = {}
        for obj in objs:
            try:
                meta = obj["metadata"]
                out[meta["name"]] = dict(meta.get("labels") or {})
            except Exception as e:  # noqa: BLE001 - one object's problem, not the tick's
                self._failed(kind, "%s %s" % (kind, _meta(obj).get("name")), e)
        return out

    def _running_pod(self, obj):
        """The rules' RunningPod of pod OBJ, or None when it is not running on a node."""
        meta, spec = obj["metadata"], obj.get("spec") or {}
        if not spec.get("nodeName") or meta.get("deletionTimestamp") \
                or (obj.get("status") or {}).get("phase") in TERMINAL_PHASES:
            return None
        return rulesmod.RunningPod(
            meta.get("namespace") or "default", meta["name"], meta.get("labels") or {},
            spec["nodeName"], self._rules(obj), meta.get("creationTimestamp") or "",
            spec.get("priority") or 0, meta.get("uid"))

    def _rules(self, obj):
        meta = obj["metadata"]
        text = (meta.get("annotations") or {}).get(rulesmod.ANNOTATION)
        if not text:
            return None
        uid = meta.get("uid")
        got = self._parsed.get(uid)
        if got is None or got[0] != text:
            try:
                got = (text, rulesmod.Rules.parse(text))
            except Exception as e:  # noqa: BLE001 - InputError with the field
                got = (text, e)
            self._parsed[uid] = got
        if isinstance(got[1], Exception):
            self._event(obj, "Warning", "RequiredDuringExecutionInvalid", str(got[1]))
            return None
        return got[1]

    def _forget_gone(self):
        """Drop what is remembered about pods (and nodes) no longer in the caches, and
        retry times that have passed: nothing grows with the pods that came and went."""
        uids, keys = self._live
        now = self.clock()
        for memo in (self.reported, self._parsed, self.stuck):
            for uid in [u for u in memo if u not in uids]:
                del memo[uid]
        for key in [k for k, t in self.blocked_until.items() if k not in keys or t <= now]:
            del self.blocked_until[key]

    def _enforce(self):
        cluster = self.cluster()
        self._forget_gone()
        violations = cluster.violations()
        self.metrics.violations.set(len(violations))
        due = self.forgiveness.due(violations)
        if self.in_flight is not None and self._waiting():
            return                          # the last eviction is still going on
        if not due or self.clock() - self.last_eviction < self.s.eviction_interval:
            return
        now = self.clock()
        for v in rulesmod.eviction_order(due, self.moved_nodes):
            if self.blocked_until.get(v.pod.key, 0) > now or v.pod.uid in self.stuck:
                continue
            self._evict(v)
            return

    def _waiting(self):
        """True while the pod evicted last is still there, for at most its grace period
        plus the margin since the eviction; then a Warning Event, and False."""
        f = self.in_flight
        pod = self.pods.get(f.namespace, f.name)
        if pod is None or pod["metadata"].get("uid") != f.uid:
            self.in_flight = None           # gone (or another pod of that name)
            return False
        grace = grace_seconds(pod)
        waited = self.clock() - f.since
        if waited <= grace + self.s.termination_margin:
            return True
        self.in_flight = None
        self.stuck[f.uid] = f.key
        self.metrics.stuck.inc()
        text = ("evicted %.0f s ago and still not gone (grace period %d s + %.0f s): its node "
                "may be down; %s goes on with the next violator and does not evict it again"
                % (waited, grace, self.s.termination_margin, COMPONENT))
        self.log.warning("pod %s: %s", f.key, text)
        self._event(pod, "Warning", "EvictionStuck", text)
        return False

    def _evict(self, v):
        pod = self.pods.get(v.pod.namespace, v.pod.name)
        text = "evicted by %s: %s" % (COMPONENT, v.message())
        if self.s.dry_run:
            self.log.info("would evict pod %s: %s", v.pod.key, v.message())
            self.blocked_until[v.pod.key] = self.clock() + self.s.poll_interval
            return
        try:
            with self._acting("evicting pod %s" % v.pod.key):
                result = evictmod.evict(self.conn, v.pod.namespace, v.pod.name, uid=v.pod.uid)
        except KubeError as e:
            self.metrics.evictions.labels("error").inc()
            self.log.warning("pod %s not evicted: %s", v.pod.key, e)
            self.blocked_until[v.pod.key] = self.clock() + self.s.eviction_interval
            return
        self.metrics.evictions.labels(result.outcome).inc()
        self.last_eviction = self.clock()
        if result.outcome == "evicted":
            self.in_flight = InFlight(v.pod, self.last_eviction)
            self.log.info("pod %s: %s", v.pod.key, text)
            if pod is not None:
                self._event(pod, "Normal", "EvictedDuringExecution", text)
        elif result.outcome == "blocked":
            wait = result.retry_after or self.s.eviction_interval
            self.blocked_until[v.pod.key] = self.clock() + wait
            if pod is not None:
                self._event(pod, "Warning", "EvictionBlocked",
                            "%s; %s; retried in %d s" % (v.message(), result.message, wait))
        else:
            self.blocked_until[v.pod.key] = self.clock() + self.s.poll_interval
            self.log.warning("pod %s: eviction %s: %s", v.pod.key, result.outcome,
                             result.message)

    def _event(self, obj, kind, reason, message):
        """One Event about OBJ, unless this one was sent already (per object, the last
        REPORTED_PER_OBJECT are remembered, and forgotten when the object goes)."""
        uid, key = obj["metadata"].get("uid"), (reason, message)
        seen = self.reported.get(uid)
        if seen is not None and key in seen:
            return
        if self.s.dry_run:
            self._remember(uid, key)
            return
        try:
            with self._acting("recording %s about %s" % (reason, obj["metadata"].get("name"))):
                events.record_event(self.conn, obj, kind, reason, message, COMPONENT)
        except KubeError as e:
            self.log.warning("event not recorded: %s", e)
        self._remember(uid, key)

    def _remember(self, uid, key):
        seen = self.reported.setdefault(uid, {})
        seen[key] = None
        while len(seen) > REPORTED_PER_OBJECT:
            del seen[next(iter(seen))]


def grace_seconds(pod):
    """How long POD may take to stop once deleted: ``deletionGracePeriodSeconds`` (set
    by the deletion), else ``spec.terminationGracePeriodSeconds``, else 30 s."""
    for value in ((pod.get("metadata") or {}).get("deletionGracePeriodSeconds"),
                  (pod.get("spec") or {}).get("terminationGracePeriodSeconds")):
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return DEFAULT_GRACE_S


def _meta(obj):
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return meta if isinstance(meta, dict) else {}


def _internal_ips(node):
    return [a.get("address") for a in (node.get("status") or {}).get("addresses") or []
            if a.get("type") == "InternalIP" and a.get("address")]
