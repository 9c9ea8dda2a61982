"""The node agent's loop: pod events in, cgroup writes, annotations and Events out.

Decisions are ``agent.node.NodeState``'s; the cgroup files are written through
``agent.cgroupfs.Writer`` (only where a container's target differs from what
was last applied, and then read back); the Kubernetes side goes through the
shared adapter (``kube.informer``, ``kube.events``). Events arrive on the
informer's thread and the periodic full reconcile on another: one lock makes
them take turns.

The daemon hands the API writes to ``agent.recorder.Recorder`` (through
``QueuedPodApi``), so the lock is never held across an API call and one pod's slow or
refused patch delays no other pod's cgroup writes.

Faults: an API error in a patch or an Event is logged and retried (by the
recorder, or at the next reconcile with an API that raises) and the decision
stands; a container whose cgroup vanished between decision and write gives its
grant back (a restart with a new ID places it again); a cgroup write the kernel
refuses is an Event on the pod and the container keeps what it had. A grant
recorded in the pod's annotation that the engine would not make for the container
(anyone who can write the pod can write the annotation) is a Warning Event, and
the container is placed afresh.
"""
import logging
import threading
import time

from prometheus_client import Counter, Gauge, Histogram

from tacker_hwaffinity.agent import cgroupfs
from tacker_hwaffinity.agent.node import ANNOTATION
from tacker_hwaffinity.kube import events
from tacker_hwaffinity.kube.client import KubeError
from tacker_hwaffinity.numa.cpuset import format_list

COMPONENT = "hwaffinity-agent"
REASON_PLACEMENT = "NUMAPlacementFailed"
REASON_WRITE = "CPUSetWriteFailed"
REASON_RESTORE = "NUMAGrantNotRestored"     # a recorded grant the engine would not make


class Metrics:
    """The agent's Prometheus metrics, in REGISTRY."""

    def __init__(self, registry):
        self.registry = registry
        self.decisions = Counter("hwaffinity_agent_decisions", "Containers placed or refused",
                                 ["result"], registry=registry)
        self.failures = Counter("hwaffinity_agent_failures", "Failures by kind", ["kind"],
                                registry=registry)
        self.reconcile = Histogram("hwaffinity_agent_reconcile_seconds",
                                   "One reconcile pass (targets, writes, annotations)",
                                   registry=registry,
                                   buckets=(.001, .002, .005, .01, .02, .05, .1, .5, 1, 5))
        self.decision = Histogram("hwaffinity_agent_decision_seconds",
                                  "From a pod event to its cgroup writes read back",
                                  registry=registry,
                                  buckets=(.001, .002, .005, .01, .02, .05, .1, .5, 1, 5))
        self.cpus = Gauge("hwaffinity_agent_pool_cpus", "CPUs per pool: exclusive or shared",
                          ["pool", "kind"], registry=registry)
        self.containers = Gauge("hwaffinity_agent_containers", "Containers placed",
                                registry=registry)
        self.refused = Counter("hwaffinity_agent_refused",
                               "Containers (or pods) left unpinned, by reason: pod, "
                               "annotation (a cap or a decoding error), budget (affinities "
                               "over their time), placement, request (NRI), internal",
                               ["reason"], registry=registry)


class PodApi:
    """What the agent writes to the API server: one annotation patch, Events."""

    def __init__(self, conn):
        self.conn = conn

    def annotate(self, obj, key, value):
        meta = obj["metadata"]
        return events.patch_annotations(self.conn, meta["namespace"], meta["name"],
                                        {key: value})

    def event(self, obj, reason, message):
        events.record_event(self.conn, obj, "Warning", reason, message, COMPONENT)


class PodsByUid:
    """The node's pods by uid. Given an informer (``indexers={"uid": ...}``), a view of
    its store, which it keeps before the agent hears of a change (``put``/``drop``/
    ``replace`` do nothing then): the pods are held once. Without, its own map."""

    def __init__(self, informer=None):
        self.informer = informer
        self._own = {}

    def get(self, uid):
        if self.informer is not None:
            return self.informer.by("uid", uid)
        return self._own.get(uid)

    def uids(self):
        return self.informer.keys("uid") if self.informer is not None else list(self._own)

    def replace(self, objects):
        if self.informer is None:
            self._own = {pod_uid(o): o for o in objects if pod_uid(o)}

    def put(self, uid, obj):
        if self.informer is None and uid:
            self._own[uid] = obj

    def drop(self, uid):
        if self.informer is None:
            self._own.pop(uid, None)


def set_gauges(metrics, state):
    """The containers and pool gauges of METRICS from a NodeState (both modes)."""
    placer = state.placer
    metrics.containers.set(len(state.placed))
    for pool in placer.pools:
        metrics.cpus.labels(pool.name, "exclusive").set(len(pool.cpus & placer.used))
        metrics.cpus.labels(pool.name, "shared").set(len(pool.sharable - placer.used))


def pod_uid(obj):
    """The informer index key the agent reads its pods by."""
    return (obj.get("metadata") or {}).get("uid")


class Agent:
    """API: a PodApi (or anything with its two methods: the daemon passes a
    ``recorder.QueuedPodApi``; tests and benchmarks pass a recorder)."""

    def __init__(self, api, node, state, layout, writer, metrics, log=None, dry_run=False,
                 pods=None):
        self.api, self.node, self.state = api, node, state
        self.layout, self.writer, self.metrics = layout, writer, metrics
        self.log = log or logging.getLogger("hwaffinity.agent")
        self.dry_run = dry_run
        self.pods = pods if pods is not None else PodsByUid()   # the node's pods, by uid
        self.recorded = {}      # pod uid -> annotation written, until the watch shows it
        self.applied = {}       # container key -> (container id, cpus, mems) written
        self.readback = {}      # container key -> (cpus, mems) read back after the write
        self.reported = set()   # (pod uid, container, message) already sent as an Event
        self._lock = threading.Lock()

    # -- informer callbacks ---------------------------------------------
    def on_sync(self, objects):
        """The full list of the node's pods (start, or a relist after a broken watch)."""
        with self._lock:
            t0 = time.monotonic()
            self.pods.replace(objects)
            # Events already sent about pods that are gone: forgotten with the pods
            live = set(self.pods.uids())
            self.reported = {r for r in self.reported if r[0] in live}
            self.recorded = {u: v for u, v in self.recorded.items() if u in live}
            changed = self.state.sync(objects)
            self._reconcile(changed, full=True)
            self.metrics.decision.observe(time.monotonic() - t0)

    def on_event(self, event_type, obj):
        with self._lock:
            t0 = time.monotonic()
            uid = obj["metadata"].get("uid")
            if event_type == "DELETED":
                self.pods.drop(uid)
                self.reported = {r for r in self.reported if r[0] != uid}
                self.recorded.pop(uid, None)
                changed = self.state.delete(obj)
            else:
                self.pods.put(uid, obj)
                changed = self.state.update(obj)
            if changed:
                self._reconcile(changed)
                self.metrics.decision.observe(time.monotonic() - t0)

    def resync(self):
        """A full reconcile: every container's cgroup re-read and corrected."""
        with self._lock:
            self._reconcile(full=True)

    # -- reconcile -------------------------------------------------------
    def _reconcile(self, changed=(), full=False):
        """Write the targets that differ from what was applied (FULL: re-read every
        container's cgroup), then the annotations and Events of the CHANGED pods."""
        with self.metrics.reconcile.time():
            changed = set(changed)
            changed |= self._write(full)
            for uid in sorted(changed | (set(self.pods.uids()) if full else set())):
                try:
                    self._report(uid)
                except Exception:
                    self.metrics.failures.labels("internal").inc()
                    self.log.exception("pod %s: not reported", self._ref(uid))
            self._gauges()

    def _write(self, full):
        targets = self.state.targets()
        for key in [k for k in self.applied if k not in targets]:
            del self.applied[key]
            self.readback.pop(key, None)
        vanished, moved = set(), 0
        if full:
            self.writer.forget_levels()
        for key, t in sorted(targets.items()):
            want = (t.container_id, t.cpus, t.mems)
            if not full and self.applied.get(key) == want:
                continue
            last = self.applied.get(key)
            known = None if full or last is None or last[0] != t.container_id \
                else self.readback.get(key)
            try:
                path = self.layout.container_dir(t.pod_uid, t.qos, t.container_id, t.runtime)
                result = self.writer.apply(path, t.cpus, t.mems, known=known)
            except cgroupfs.Vanished as e:
                self.log.info("container %s of pod %s: %s; its grant is "
                              "released", key[1], self._ref(key[0]), e)
                self.metrics.failures.labels("vanished").inc()
                self.state.vanished(key)
                self.applied.pop(key, None)
                self.readback.pop(key, None)
                vanished.add(key[0])
                continue
            except (cgroupfs.WriteError, ValueError) as e:   # refused, or not mappable
                self.metrics.failures.labels("write").inc()
                self._event(key[0], key[1], REASON_WRITE, str(e))
                continue
            except Exception as e:
                self.metrics.failures.labels("internal").inc()
                self.log.exception("container %s of pod %s: cgroup not written",
                                   key[1], self._ref(key[0]))
                self._event(key[0], key[1], REASON_WRITE, "internal error: %s: %s"
                            % (type(e).__name__, e))
                continue
            self.applied[key] = want
            self.readback[key] = result.after
            if result.changed and last is not None and last[0] == t.container_id:
                moved += 1       # a shared set that followed its pool: summarised below
                if self.log.isEnabledFor(logging.DEBUG):
                    self.log.debug("%s/%s: cpus %s mems %s", self._ref(key[0]), key[1],
                                   format_list(t.cpus), format_list(t.mems))
            elif result.changed:
                self.log.info("%s %s/%s: cpus %s mems %s", "would write" if self.dry_run
                              else "wrote", self._ref(key[0]), key[1], format_list(t.cpus),
                              format_list(t.mems))
        if moved:
            self.log.info("%s the cpusets of %d container(s) whose shared pool changed",
                          "would update" if self.dry_run else "updated", moved)
        return vanished

    def _report(self, uid):
        obj = self.pods.get(uid)
        if obj is None:
            return
        for name, message in self.state.refused(uid):
            self._event(uid, name, REASON_RESTORE, message)
        for name, message in self.state.failures(uid):
            if self._event(uid, name, REASON_PLACEMENT, message):
                self.metrics.refused.labels(self.state.reason(uid, name)).inc()
        value = self.state.annotation(uid)
        current = (obj["metadata"].get("annotations") or {}).get(ANNOTATION)
        written = self.recorded.get(uid, current)   # ours, while the watch has not shown it
        if written == current:
            self.recorded.pop(uid, None)
        if value is None or value == written:
            return
        decisions = self.state.decisions(uid)
        placed = sum(1 for d in decisions.values() if "error" not in d)
        self.metrics.decisions.labels("placed").inc(placed)
        self.metrics.decisions.labels("failed").inc(len(decisions) - placed)
        if self.dry_run:
            self.log.info("pod %s: %s=%s (dry run: not recorded)", self._ref(uid), ANNOTATION,
                          value)
            return
        try:
            self.api.annotate(obj, ANNOTATION, value)
        except KubeError as e:
            self.metrics.failures.labels("annotation").inc()
            self.log.warning("pod %s: annotation not recorded (%s); retried at the next "
                             "reconcile", self._ref(uid), e)
            return
        self.recorded[uid] = value

    def _event(self, uid, container, reason, message):
        """Log and send the Event once; True the first time."""
        text = ("container %s: %s" % (container, message)) if container else message
        if (uid, container, text) in self.reported:
            return False
        self.log.warning("pod %s: %s", self._ref(uid), text)
        obj = self.pods.get(uid)
        if obj is None or self.dry_run:
            self.reported.add((uid, container, text))
            return True
        try:
            self.api.event(obj, reason, text)
        except KubeError as e:
            self.metrics.failures.labels("event").inc()
            self.log.warning("pod %s: event not recorded (%s)", self._ref(uid), e)
            return True
        self.reported.add((uid, container, text))
        return True

    def _gauges(self):
        set_gauges(self.metrics, self.state)

    def _ref(self, uid):
        obj = self.pods.get(uid)
        if obj is None:
            return uid
        return "%s/%s" % (obj["metadata"].get("namespace"), obj["metadata"].get("name"))
