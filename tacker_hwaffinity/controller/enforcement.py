"""RequiredDuringExecution enforced: the running pods' rules evaluated on the caches
(``controller.rules``), affinity violations given their grace, and the first violator
in the seed's order evicted through the Eviction API (``kube.evict``), at most one per
``eviction_interval``.

No tenant's object holds what the others share (doc/security.md):

* one eviction in flight per namespace, not per cluster: the next eviction in a
  namespace waits for its pod evicted last, at most ``min(its grace period,
  max_termination_wait) + termination_margin`` (both ours: the pod's
  ``terminationGracePeriodSeconds`` is its owner's to set); the other namespaces go on
  meanwhile, and a pod whose eviction was accepted no longer counts against anyone's
  rules (it is being deleted, whether or not the watch has brought that yet);
* the namespaces take turns: the one whose last eviction attempt is the oldest goes
  first, and in it the seed's order holds (the pods of a moved node first: a pod a
  budget blocks is retried, not passed over for its replica elsewhere), so a violator a
  PodDisruptionBudget blocks forever, or a workload whose replacements violate again,
  cannot keep the other namespaces from their turn."""
import typing

from tacker_hwaffinity.constants import TERMINAL_PHASES
from tacker_hwaffinity.controller import rules as rulesmod
from tacker_hwaffinity.controller.events import COMPONENT, meta_of
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.kube import evict as evictmod
from tacker_hwaffinity.kube.client import KubeError

DEFAULT_GRACE_S = 30        # the API server's default terminationGracePeriodSeconds
NEVER = float("-inf")       # the last attempt in a namespace never tried


class CacheSnapshot(typing.NamedTuple):
    """The rules' view of the caches (CLUSTER) and what is in them: the UIDS of the
    nodes and pods, and the pods' KEYS (``namespace/name``)."""

    cluster: rulesmod.Cluster
    uids: typing.Set[typing.Optional[str]]
    keys: typing.Set[str]


class InFlight:
    """The last eviction: the pod, and the clock time the API server accepted it."""

    __slots__ = ("namespace", "name", "uid", "key", "since")

    def __init__(self, pod, since):
        self.namespace, self.name, self.uid = pod.namespace, pod.name, pod.uid
        self.key, self.since = pod.key, since


class AnnotationRules:
    """The pods' RequiredDuringExecution annotations, each parsed once per text. An
    InputError is the pod's: a Warning Event ``RequiredDuringExecutionInvalid``; any
    other exception is a bug (FAILED: ``controller.events.Failures``, once per text),
    not the pod's fault. Either way the pod is judged without rules."""

    def __init__(self, events, failed):
        self.events, self.failed = events, failed
        self.parsed = {}        # pod uid -> (annotation text, Rules, InputError or None)

    def of(self, obj):
        """The Rules of pod OBJ, None when it has none or they cannot be read."""
        meta = obj["metadata"]
        text = (meta.get("annotations") or {}).get(rulesmod.ANNOTATION)
        if not text:
            return None
        uid = meta.get("uid")
        got = self.parsed.get(uid)
        if got is None or got[0] != text:
            try:
                got = (text, rulesmod.parse(text), None)
            except InputError as e:
                got = (text, None, e)
            except Exception as e:  # noqa: BLE001 - a parser bug: that pod's rules only
                self.failed("pod", "the %s annotation of pod %s/%s (a bug)" % (
                    rulesmod.ANNOTATION, meta.get("namespace"), meta.get("name")), e)
                got = (text, None, None)
            self.parsed[uid] = got
        if got[2] is not None:
            self.events.record(obj, "Warning", "RequiredDuringExecutionInvalid", str(got[2]))
        return got[1]

    def forget(self, live):
        """Drop the pods whose uid is not in LIVE."""
        for uid in [u for u in self.parsed if u not in live]:
            del self.parsed[uid]


class Enforcement:
    """Evicts the violators of RequiredDuringExecution among the pods of PODS on the
    nodes of NODES (informers), through TERM (``controller.term.Term``); Events through
    EVENTS (``controller.events.EventLog``), failures to FAILED (``Failures``)."""

    def __init__(self, conn, settings, nodes, pods, metrics, term, events, failed, log,
                 clock):
        self.conn, self.s, self.nodes, self.pods = conn, settings, nodes, pods
        self.metrics, self.term, self.events, self.failed = metrics, term, events, failed
        self.log, self.clock = log, clock
        self.rules = AnnotationRules(events, failed)
        self.forgiveness = rulesmod.Forgiveness(settings.grace, clock)
        self.last_eviction = -1e9
        self.in_flight = {}         # namespace -> InFlight: evicted and not gone yet
        self.blocked_until = {}     # pod key -> clock time before which not to retry
        self.stuck = {}             # uid -> pod key: evicted, never went; not picked again
        self.served = {}            # namespace -> clock time of its last eviction attempt

    def new_term(self):
        """Count the affinity grace again (what the last term saw may be out of date)."""
        self.forgiveness = rulesmod.Forgiveness(self.s.grace, self.clock)

    def enforce(self, namespace_objs, moved_nodes):
        """Evaluate the rules with the namespaces NAMESPACE_OBJS and evict the first
        violator that is due (the pods of MOVED_NODES first), taking turns (``_queue``);
        none in a namespace whose last eviction is still going on."""
        for namespace in list(self.in_flight):
            self._waiting(namespace)
        snapshot = self.cluster(namespace_objs)
        self._forget_gone(snapshot.uids, snapshot.keys)
        violations = snapshot.cluster.violations()
        self.metrics.violations.set(len(violations))
        due = self.forgiveness.due(violations)
        if not due or self.clock() - self.last_eviction < self.s.eviction_interval:
            return
        now = self.clock()
        for v in self._queue(due, moved_nodes):
            if v.pod.namespace in self.in_flight or v.pod.uid in self.stuck \
                    or self.blocked_until.get(v.pod.key, 0) > now:
                continue
            self._evict(v)
            return

    def _queue(self, due, moved_nodes):
        """The DUE violations in the order to try them: the namespace whose last attempt
        is the oldest first (never tried: before all), in it the seed's order
        (``rules.eviction_order``; the sort is stable)."""
        return sorted(rulesmod.eviction_order(due, moved_nodes),
                      key=lambda v: self.served.get(v.pod.namespace, NEVER))

    def cluster(self, namespace_objs: typing.Iterable[typing.Any]) -> CacheSnapshot:
        """The rules' view of the caches; a node, namespace or pod that cannot be read
        is skipped (``failed``)."""
        node_objs = self.nodes.list()
        nodes = self._labels_by_name("node", node_objs)
        namespaces = self._labels_by_name("namespace", namespace_objs)
        uids = {meta_of(n).get("uid") for n in node_objs}
        keys, running = set(), []
        evicted = {f.uid for f in self.in_flight.values()}
        for obj in self.pods.list():
            meta = meta_of(obj)
            uids.add(meta.get("uid"))
            try:
                keys.add("%s/%s" % (meta.get("namespace") or "default", meta["name"]))
                # being deleted, even before the watch brings its deletionTimestamp
                pod = None if meta.get("uid") in evicted else self._running_pod(obj)
            except Exception as e:  # noqa: BLE001 - one pod's problem, not the tick's
                self.failed("pod", "pod %s/%s" % (meta.get("namespace"), meta.get("name")),
                            e, obj if meta.get("name") else None)
                continue
            if pod is not None:
                running.append(pod)
        return CacheSnapshot(rulesmod.Cluster(nodes, running, namespaces), uids, keys)

    def _labels_by_name(self, kind, objs):
        out = {}
        for obj in objs:
            try:
                meta = obj["metadata"]
                out[meta["name"]] = dict(meta.get("labels") or {})
            except Exception as e:  # noqa: BLE001 - one object's problem, not the tick's
                self.failed(kind, "%s %s" % (kind, meta_of(obj).get("name")), e)
        return out

    def _running_pod(self, obj):
        """The rules' RunningPod of pod OBJ, or None when it is not running on a node."""
        meta, spec = obj["metadata"], obj.get("spec") or {}
        if not spec.get("nodeName") or meta.get("deletionTimestamp") \
                or (obj.get("status") or {}).get("phase") in TERMINAL_PHASES:
            return None
        return rulesmod.RunningPod(
            meta.get("namespace") or "default", meta["name"], meta.get("labels") or {},
            spec["nodeName"], self.rules.of(obj), meta.get("creationTimestamp") or "",
            spec.get("priority") or 0, meta.get("uid"))

    def _forget_gone(self, uids, keys):
        """Drop what is remembered about pods (and nodes) no longer in the caches (UIDS,
        pod KEYS), and retry times that have passed: nothing grows with the pods that
        came and went."""
        now = self.clock()
        self.events.forget(uids)
        self.rules.forget(uids)
        for uid in [u for u in self.stuck if u not in uids]:
            del self.stuck[uid]
        for key in [k for k, t in self.blocked_until.items() if k not in keys or t <= now]:
            del self.blocked_until[key]
        namespaces = {k.partition("/")[0] for k in keys}
        for namespace in [n for n in self.served if n not in namespaces]:
            del self.served[namespace]

    def _waiting(self, namespace):
        """True while the pod evicted last in NAMESPACE is still there, for at most
        ``wait_limit`` since the eviction; then a Warning Event, and False."""
        f = self.in_flight[namespace]
        pod = self.pods.get(f.namespace, f.name)
        if pod is None or pod["metadata"].get("uid") != f.uid:
            del self.in_flight[namespace]   # gone (or another pod of that name)
            return False
        grace = grace_seconds(pod)
        waited = self.clock() - f.since
        if waited <= wait_limit(grace, self.s):
            return True
        del self.in_flight[namespace]
        self.stuck[f.uid] = f.key
        self.metrics.stuck.inc()
        capped = ", capped at %.0f s," % self.s.max_termination_wait \
            if grace > self.s.max_termination_wait else ""
        text = ("evicted %.0f s ago and still not gone (grace period %d s%s + %.0f s): its "
                "node may be down, or it ignores SIGTERM; %s goes on with the next violator "
                "and does not evict it again"
                % (waited, grace, capped, self.s.termination_margin, COMPONENT))
        self.log.warning("pod %s: %s", f.key, text)
        self.events.record(pod, "Warning", "EvictionStuck", text)
        return False

    def _evict(self, v):
        pod = self.pods.get(v.pod.namespace, v.pod.name)
        text = "evicted by %s: %s" % (COMPONENT, v.message())
        self.served[v.pod.namespace] = self.clock()
        if self.s.dry_run:
            self.log.info("would evict pod %s: %s", v.pod.key, v.message())
            self.blocked_until[v.pod.key] = self.clock() + self.s.poll_interval
            return
        try:
            with self.term.acting("evicting pod %s" % v.pod.key):
                result = evictmod.evict(self.conn, v.pod.namespace, v.pod.name, uid=v.pod.uid)
        except KubeError as e:
            self.metrics.evictions.labels("error").inc()
            self.log.warning("pod %s not evicted: %s", v.pod.key, e)
            self.blocked_until[v.pod.key] = self.clock() + self.s.eviction_interval
            return
        self.metrics.evictions.labels(result.outcome).inc()
        self.last_eviction = self.clock()
        if result.outcome == "evicted":
            self.in_flight[v.pod.namespace] = InFlight(v.pod, self.last_eviction)
            self.log.info("pod %s: %s", v.pod.key, text)
            if pod is not None:
                self.events.record(pod, "Normal", "EvictedDuringExecution", text)
        elif result.outcome == "blocked":
            wait = result.retry_after or self.s.eviction_interval
            self.blocked_until[v.pod.key] = self.clock() + wait
            if pod is not None:
                self.events.record(pod, "Warning", "EvictionBlocked",
                                   "%s; %s; retried in %d s" % (v.message(), result.message,
                                                                wait))
        else:
            self.blocked_until[v.pod.key] = self.clock() + self.s.poll_interval
            self.log.warning("pod %s: eviction %s: %s", v.pod.key, result.outcome,
                             result.message)


def wait_limit(grace, settings):
    """How long an evicted pod with GRACE seconds of grace period is waited for: that
    grace, at most SETTINGS.max_termination_wait, plus SETTINGS.termination_margin."""
    return min(grace, settings.max_termination_wait) + settings.termination_margin


def grace_seconds(pod):
    """How long POD may take to stop once deleted: ``deletionGracePeriodSeconds`` (set
    by the deletion), else ``spec.terminationGracePeriodSeconds``, else 30 s."""
    for value in ((pod.get("metadata") or {}).get("deletionGracePeriodSeconds"),
                  (pod.get("spec") or {}).get("terminationGracePeriodSeconds")):
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return DEFAULT_GRACE_S
