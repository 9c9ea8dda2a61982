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
   an Event on the pod and a retry later.

Nova unreachable or failing: the labels stay as they are, the error is logged once per
poll and counted, and the next interval tries again.
"""
import logging
import threading
import time

from tacker_hwaffinity.controller import rules as rulesmod
from tacker_hwaffinity.controller.hosts import HostTracker
from tacker_hwaffinity.kube import evict as evictmod
from tacker_hwaffinity.kube import events, labels
from tacker_hwaffinity.kube.client import KubeError
from tacker_hwaffinity.labeling import plan as planning

COMPONENT = "hwaffinity-controller"


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


class Settings:
    """WORKERS: which servers are workers (``controller.workers``)."""

    def __init__(self, hw, workers, poll_interval=30.0, grace=60.0,
                 eviction_interval=10.0, dry_run=False, host_id_label=None):
        self.hw, self.workers = hw, workers
        self.poll_interval, self.grace = poll_interval, grace
        self.eviction_interval, self.dry_run = eviction_interval, dry_run
        self.host_id_label = host_id_label


class Controller:
    def __init__(self, conn, poll, settings, nodes, pods, metrics, log=None,
                 clock=time.monotonic):
        self.conn, self.poll_nova, self.s = conn, poll, settings
        self.nodes, self.pods = nodes, pods          # informers (caches)
        self.metrics, self.clock = metrics, clock
        self.log = log or logging.getLogger("hwaffinity.controller")
        self.tracker = None
        self.workers = {}           # server id -> ServerState (worker servers only)
        self.forgiveness = rulesmod.Forgiveness(settings.grace, clock)
        self.next_poll = 0.0
        self.last_eviction = -1e9
        self.in_flight = None       # (namespace, name, uid) evicted and not gone yet
        self.blocked_until = {}     # pod key -> clock time before which not to retry
        self.reported = set()
        self.moved_nodes = set()
        self._parsed = {}           # (uid, annotation text) -> Rules or InputError
        self.lock = threading.Lock()

    # -- one tick of the leader ------------------------------------------------
    def tick(self):
        with self.lock:
            if self.clock() >= self.next_poll:
                self.next_poll = self.clock() + self.s.poll_interval
                self._poll()
            self._enforce()

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
            have_hosts = all(s.host for s in states if s.status != "DELETED")
            source = self.s.hw["host_source"]
            if source == "auto":
                source = "host" if have_hosts else "hostId"
            self.tracker = HostTracker(source)
        for st in states:
            if st.status == "DELETED":
                self.workers.pop(st.id, None)
            else:
                self.workers[st.id] = st
        moves = self.tracker.update(states)
        if first:
            self.log.info("Nova: %d worker server(s), hosts by %s", len(self.workers),
                          self.tracker.source)
            self._relabel(list(self.workers.values()), {})
        elif moves:
            moved = {m.server_id: m for m in moves}
            self.moved_nodes = set()    # the pods of these nodes go first (eviction_order)
            self._relabel([self.workers[i] for i in moved if i in self.workers], moved)

    def _relabel(self, servers, moves):
        if not servers:
            return
        hw = dict(self.s.hw, host_source=self.tracker.source)
        workers = [planning.Worker(s.name, s.id, list(s.addresses), s.host, s.host_id)
                   for s in servers]
        kube_nodes = [planning.KubeNode(n["metadata"]["name"], _internal_ips(n),
                                        n["metadata"].get("labels") or {})
                      for n in self.nodes.list()]
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
                labels.apply_node_labels(self.conn, node, wanted, uid=obj["metadata"]["uid"])
            except KubeError as e:
                self.log.warning("node %s not relabelled: %s", node, e)
                continue
            self.metrics.relabels.inc()
            a = by_node[node]
            move = moves.get(a.worker.server_id)
            text = ("worker %s (server %s) %s: labels %s" % (
                a.worker.name, a.worker.server_id,
                "moved from host %s to %s" % (move.old, move.new) if move else
                "is on host %s" % a.host,
                ", ".join("%s=%s" % kv for kv in sorted(wanted.items()))))
            self.log.info("node %s: %s", node, text)
            if move:
                self.moved_nodes.add(node)
            self._event(obj, "Normal", "HostLabelChanged", text)

    # -- RequiredDuringExecution ------------------------------------------------
    def cluster(self):
        nodes = {n["metadata"]["name"]: n["metadata"].get("labels") or {}
                 for n in self.nodes.list()}
        running = []
        for obj in self.pods.list():
            meta, spec = obj["metadata"], obj.get("spec") or {}
            if not spec.get("nodeName") or meta.get("deletionTimestamp") \
                    or (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            rules = self._rules(obj)
            running.append(rulesmod.RunningPod(
                meta.get("namespace") or "default", meta["name"], meta.get("labels") or {},
                spec["nodeName"], rules, meta.get("creationTimestamp") or "",
                spec.get("priority") or 0, meta.get("uid")))
        return rulesmod.Cluster(nodes, running)

    def _rules(self, obj):
        meta = obj["metadata"]
        text = (meta.get("annotations") or {}).get(rulesmod.ANNOTATION)
        if not text:
            return None
        key = (meta.get("uid"), text)
        got = self._parsed.get(key)
        if got is None:
            try:
                got = rulesmod.Rules.parse(text)
            except Exception as e:  # noqa: BLE001 - InputError with the field
                got = e
            self._parsed[key] = got
        if isinstance(got, Exception):
            self._event(obj, "Warning", "RequiredDuringExecutionInvalid", str(got))
            return None
        return got

    def _enforce(self):
        cluster = self.cluster()
        violations = cluster.violations()
        self.metrics.violations.set(len(violations))
        due = self.forgiveness.due(violations)
        if self.in_flight is not None:
            ns, name, uid = self.in_flight
            pod = self.pods.get(ns, name)
            if pod is not None and pod["metadata"].get("uid") == uid:
                return                      # the last eviction is still going on
            self.in_flight = None
        if not due or self.clock() - self.last_eviction < self.s.eviction_interval:
            return
        now = self.clock()
        for v in rulesmod.eviction_order(due, self.moved_nodes):
            if self.blocked_until.get(v.pod.key, 0) > now:
                continue
            self._evict(v)
            return

    def _evict(self, v):
        pod = self.pods.get(v.pod.namespace, v.pod.name)
        text = "evicted by %s: %s" % (COMPONENT, v.message())
        if self.s.dry_run:
            self.log.info("would evict pod %s: %s", v.pod.key, v.message())
            self.blocked_until[v.pod.key] = self.clock() + self.s.poll_interval
            return
        try:
            result = evictmod.evict(self.conn, v.pod.namespace, v.pod.name, uid=v.pod.uid)
        except KubeError as e:
            self.metrics.evictions.labels("error").inc()
            self.log.warning("pod %s not evicted: %s", v.pod.key, e)
            self.blocked_until[v.pod.key] = self.clock() + self.s.eviction_interval
            return
        self.metrics.evictions.labels(result.outcome).inc()
        self.last_eviction = self.clock()
        if result.outcome == "evicted":
            self.in_flight = (v.pod.namespace, v.pod.name, v.pod.uid)
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
        key = (obj["metadata"].get("uid"), reason, message)
        if key in self.reported:
            return
        self.reported.add(key)
        if self.s.dry_run:
            return
        try:
            events.record_event(self.conn, obj, kind, reason, message, COMPONENT)
        except KubeError as e:
            self.log.warning("event not recorded: %s", e)


def _internal_ips(node):
    return [a.get("address") for a in (node.get("status") or {}).get("addresses") or []
            if a.get("type") == "InternalIP" and a.get("address")]
