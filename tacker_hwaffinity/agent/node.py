"""One node's containers and where the NUMA engine puts them: the agent's decisions, no I/O.

The agent feeds pods as the API server shows them (``sync`` after every list,
``update``/``delete`` per watch event). A container is placed once its ID is
known (the runtime created it), in the order its pod was created and then its
place in the pod spec: the order ``hwaffinity numa plan --existing`` replays.
A container whose pod already records a decision for it (the annotation
``hwaffinity.io/numa``, written by an earlier run of the agent) gets that very
grant back instead, when it still fits: so an agent that restarts changes no
running container's CPUs, whatever happened on the node meanwhile. Anyone who
can write the pod can write that annotation too, so a recorded grant is taken
back only when it is one the engine could make for that container (its QoS
class, CPU request and preference annotations: ``Placer.refusal``); any other
record is placed afresh and ``refused`` says why (the agent's Warning Event).
A container keeps its grant across restarts (a new container ID only moves
the cgroup to write); a deleted pod gives its CPUs back, and the shared sets
of every pool grow again.

One bad object is that object's problem: a pod whose object, annotations or
decision raise anything at all (an InputError, a cap or the time budget of its
affinities exceeded, or a bug) is recorded as that pod's or container's failure
with a reason (``reason``: ``REASONS``), which the caller turns into a log line,
an Event and a count; the other pods are placed as if it were not there.

``targets()`` is what every placed container's cgroup should hold: exclusive
grants keep their CPUs, shared ones follow their pool's shared set (which
shrinks and grows as exclusive CPUs are taken and released, as upstream).
"""
import json
import logging

from tacker_hwaffinity.constants import NUMA_ANNOTATION, TERMINAL_PHASES
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.numa import affinity as affmod
from tacker_hwaffinity.numa.cpuset import format_list, parse_list
from tacker_hwaffinity.numa.config import PlacementConfig
from tacker_hwaffinity.numa.subjects import pod_from_object

ANNOTATION = NUMA_ANNOTATION
# seconds one container's affinities may take to evaluate against the node's containers
AFFINITY_BUDGET = 0.25
# why a pod or container is not pinned (the reason label of the agent's refusal counter)
BAD_POD, BAD_ANNOTATION, OVER_BUDGET = "pod", "annotation", "budget"
NO_ROOM, INTERNAL = "placement", "internal"
REASONS = (BAD_POD, BAD_ANNOTATION, OVER_BUDGET, NO_ROOM, INTERNAL)
MAX_CPUS = 8192        # CPUs a recorded grant may name (far beyond any node)
_RECORD_KEYS = frozenset({"pool", "mems", "exclusiveCpus", "sharedMilliCpu", "cpuType",
                          "error"})


def recorded_grant(text, name):
    """((pool, cpu type, exclusive CPUs, shared milli-CPU), None) of container NAME in
    TEXT, the ``hwaffinity.io/numa`` annotation; (None, why) when it is malformed;
    (None, None) when it records no grant for NAME (none, or an earlier failure)."""
    if not text:
        return None, None
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None, "the annotation is not JSON"
    if not isinstance(doc, dict):
        return None, "the annotation is not a JSON object"
    entry = doc.get(name)
    if entry is None or isinstance(entry, dict) and "pool" not in entry and "error" in entry:
        return None, None
    if not isinstance(entry, dict):
        return None, "[%s]: expected an object" % json.dumps(name)
    unknown = sorted(set(entry) - _RECORD_KEYS)
    if unknown:
        return None, "[%s]: unknown field %s" % (json.dumps(name), json.dumps(unknown[0]))
    pool, cpus = entry.get("pool"), entry.get("exclusiveCpus", "")
    cpu_type, milli = entry.get("cpuType", "normal"), entry.get("sharedMilliCpu", 0)
    for field, value, kind in (("pool", pool, str), ("exclusiveCpus", cpus, str),
                               ("cpuType", cpu_type, str), ("sharedMilliCpu", milli, int)):
        if not isinstance(value, kind) or isinstance(value, bool):
            return None, "[%s].%s: expected %s" % (json.dumps(name), field,
                                                   "an integer" if kind is int else "a string")
    if milli < 0:
        return None, "[%s].sharedMilliCpu: expected at least 0" % json.dumps(name)
    try:
        if _list_size(cpus) > MAX_CPUS:
            raise ValueError("more than %d CPUs" % MAX_CPUS)
        exclusive = parse_list(cpus)
    except ValueError as e:
        return None, "[%s].exclusiveCpus: %s" % (json.dumps(name), e)
    return (pool, cpu_type, exclusive, milli), None


def _list_size(text):
    """How many CPUs the kernel list TEXT names at most, counted before expanding it
    (so that a forged ``0-65536,0-65536,...`` costs nothing)."""
    total = 0
    for item in text.split(","):
        lo, sep, hi = item.strip().partition("-")
        if lo.isdigit() and (not sep or hi.isdigit()):
            total += max(0, int(hi if sep else lo) - int(lo)) + 1
    return total


class Target:
    """What one container's cgroup should hold."""

    __slots__ = ("key", "pod_uid", "qos", "container_id", "runtime", "cpus", "mems")

    def __init__(self, key, pod_uid, qos, container_id, runtime, cpus, mems):
        self.key, self.pod_uid, self.qos = key, pod_uid, qos
        self.container_id, self.runtime = container_id, runtime
        self.cpus, self.mems = frozenset(cpus), frozenset(mems)


def _order_key(obj):
    meta = obj.get("metadata") or {}
    return (meta.get("creationTimestamp") or "", meta.get("namespace") or "",
            meta.get("name") or "")


def _uid(obj):
    return (obj.get("metadata") or {}).get("uid")


def _running(obj):
    return (obj.get("status") or {}).get("phase") not in TERMINAL_PHASES \
        and not (obj.get("metadata") or {}).get("deletionTimestamp")


_LOG = logging.getLogger("hwaffinity.agent")


class NodeState:
    """Placement of the containers of the pods bound to one node. AFFINITY_BUDGET: the
    seconds one container's affinities may take (None: no limit); CONFIG: the
    ``numa.config.PlacementConfig`` (``hwaffinity numa plan``'s too)."""

    def __init__(self, machine, affinity_budget=AFFINITY_BUDGET, config=PlacementConfig()):
        self.placer = config.placer(machine, affinity_budget)
        self.pods = {}          # pod uid -> numa.subjects.Pod (the first view with IDs)
        self.placed = {}        # (pod uid, container name) -> numa.subjects.Container
        self.ids = {}           # (pod uid, container name) -> (container id, runtime)
        self.errors = {}        # (pod uid, container name) -> message
        self.pod_errors = {}    # pod uid -> message (the pod object itself is unusable)
        self.warnings = {}      # (pod uid, container name) -> why its recorded grant was refused
        self.reasons = {}       # (pod uid, container name or "") -> REASONS entry of its error

    # -- events -------------------------------------------------------
    def sync(self, objects):
        """The full list of pods on the node: forget the pods that are gone, then take
        in the others in creation order. Returns the pod uids whose decisions changed."""
        live = [o for o in objects if _uid(o) and _running(o)]
        keep = {_uid(o) for o in live}
        changed = set()
        for uid in [u for u in self.pods if u not in keep]:
            changed |= self._forget(uid)
        for uid in [u for u in self.pod_errors if u not in keep]:
            self.pod_errors.pop(uid)
            self.reasons.pop((uid, ""), None)
        for obj in sorted(live, key=_order_key):
            changed |= self.update(obj)
        return changed

    def update(self, obj):
        """A pod was added or changed. Returns the pod uids whose decisions changed.
        Whatever goes wrong with the pod is its failure (``failures``), never raised."""
        uid = _uid(obj)
        if not uid or not isinstance(uid, str):
            return set()
        try:
            return self._update(uid, obj)
        except Exception as e:  # noqa: BLE001 - one pod's bug is that pod's failure
            _LOG.exception("pod %s: not placed: internal error", uid)
            self._pod_error(uid, "internal error: %s: %s" % (type(e).__name__, e), INTERNAL)
            return {uid}

    def _update(self, uid, obj):
        if not _running(obj):
            return self._forget(uid)
        try:
            pod = pod_from_object(obj)
        except InputError as e:
            self._pod_error(uid, str(e), BAD_POD)
            return {uid}
        self.pod_errors.pop(uid, None)
        self.reasons.pop((uid, ""), None)
        known = self.pods.get(uid)
        if known is None:
            known = self.pods[uid] = pod
        changed = set()
        ready = [c for c in pod.containers if c.id]
        for c in ready:
            key = (uid, c.name)
            ident = (c.id, c.runtime or "containerd")
            if key in self.placed or key in self.errors:
                if self.ids.get(key) != ident:   # restarted: same grant, new cgroup
                    self.ids[key] = ident
                    changed.add(uid)
                continue
            self.ids[key] = ident
            self._place(known, c.name, key)
            changed.add(uid)
        return changed

    def delete(self, obj):
        uid = _uid(obj)
        return self._forget(uid) if uid else set()

    def forget(self, uid):
        """NRI: pod UID's sandbox is gone: its grants are released."""
        return self._forget(uid)

    def admit(self, pod, container):
        """NRI: CONTAINER (a subject, its ID set) of POD (a subject) is being created.
        Placed, or given its grant back when it restarts (same pod and name, new ID) or
        its pod's record (``pod.annotations[ANNOTATION]``, which in NRI mode comes from
        the agent's own checkpoint) holds one. Returns the (pod uid, name) key."""
        known = self.pods.setdefault(pod.uid, pod)
        if known is not pod:
            known.annotations = pod.annotations     # the freshest record
        mine = next((c for c in known.containers if c.name == container.name), None)
        if mine is None:
            container.pod = known
            known.containers.append(container)
        else:       # a restart, or a resize: the new resources, the same subject
            mine.id, mine.runtime = container.id, container.runtime
            for attr in ("cpu_request", "cpu_limit", "mem_request", "mem_limit"):
                setattr(mine, attr, getattr(container, attr))
        key = (pod.uid, container.name)
        self.ids[key] = (container.id, container.runtime or "containerd")
        if key not in self.placed and key not in self.errors:
            self._place(known, container.name, key)
        return key

    def replace(self, key):
        """NRI: the container of KEY changed its resources (an in-place resize): its
        grant is released and it is placed again (its recorded grant is not used)."""
        container = self.placed.pop(key, None)
        self.errors.pop(key, None)
        self.reasons.pop(key, None)
        if container is not None:
            self.placer.release(container)
        pod = self.pods.get(key[0])
        if pod is not None:
            saved = pod.annotations.pop(ANNOTATION, None)
            try:
                self._place(pod, key[1], key)
            finally:
                if saved is not None:
                    pod.annotations[ANNOTATION] = saved

    def remove(self, key):
        """NRI: the container of KEY is gone (stopped for good or removed): its grant is
        released and the pod forgotten with its last container."""
        self.vanished(key)
        pod = self.pods.get(key[0])
        if pod is not None:
            pod.containers = [c for c in pod.containers if c.name != key[1]]
            if not pod.containers:
                self._forget(key[0])

    def vanished(self, key):
        """The container's cgroup was gone when written: release its grant; a new
        container ID (a restart) places it again."""
        container = self.placed.pop(key, None)
        self.ids.pop(key, None)
        self.errors.pop(key, None)
        self.reasons.pop(key, None)
        self.warnings.pop(key, None)
        if container is not None:
            self.placer.release(container)

    # -- internals ----------------------------------------------------
    def _pod_error(self, uid, message, reason):
        self.pod_errors[uid] = message
        self.reasons[(uid, "")] = reason

    def _fail(self, key, message, reason):
        self.errors[key] = message
        self.reasons[key] = reason

    def _place(self, pod, name, key):
        """Place container NAME of POD; whatever goes wrong is its failure (``errors``)."""
        container = next((c for c in pod.containers if c.name == name), None)
        if container is None:
            return
        try:
            self._decide(pod, container, key)
        except affmod.OverBudget as e:
            self._fail(key, str(e), OVER_BUDGET)
        except InputError as e:
            self._fail(key, "bad annotation: %s" % e, BAD_ANNOTATION)
        except Exception as e:  # noqa: BLE001 - one container's bug is its failure
            _LOG.exception("container %s of pod %s: not placed: internal error", name,
                           pod.ref)
            self.placer.release(container)
            self._fail(key, "internal error: %s: %s" % (type(e).__name__, e), INTERNAL)

    def _decide(self, pod, container, key):
        affs = affmod.pod_affinities(pod).get(container.name, [])
        self.placer.set_affinities(container, affs)
        if self._restore(pod, container, key):
            return
        decision = self.placer.place(container)
        if decision.error:
            self._fail(key, decision.error, NO_ROOM)
        else:
            self.placed[key] = container

    def _restore(self, pod, container, key):
        """Take back the grant the pod's annotation records for CONTAINER, if it is one
        the engine could make for it and it fits. The annotation is on the pod: anyone
        who can write the pod can forge it, so a record that is not taken back (other
        than none at all, or an earlier failure) is noted in ``warnings`` and the
        container is placed afresh."""
        recorded, why = recorded_grant(pod.annotations.get(ANNOTATION), container.name)
        if recorded is not None:
            try:
                decision = self.placer.restore(container, *recorded)
            except InputError:
                return False        # a bad preference annotation: place() reports it
            if decision.error is None:
                self.placed[key] = container
                return True
            why = decision.error
        if why:
            self.warnings[key] = "the grant recorded in %s was not restored: %s; placed " \
                "afresh" % (ANNOTATION, why)
        return False

    def _forget(self, uid):
        pod = self.pods.pop(uid, None)
        self.pod_errors.pop(uid, None)
        self.reasons.pop((uid, ""), None)
        if pod is None:
            return set()
        for c in pod.containers:
            key = (uid, c.name)
            self.errors.pop(key, None)
            self.reasons.pop(key, None)
            self.warnings.pop(key, None)
            self.ids.pop(key, None)
            container = self.placed.pop(key, None)
            if container is not None:
                self.placer.release(container)
        return {uid}

    # -- results ------------------------------------------------------
    def refused(self, uid):
        """[(container name, message)] of one pod's containers whose recorded grant was
        not taken back (they were placed afresh)."""
        pod = self.pods.get(uid)
        if pod is None:
            return []
        return [(c.name, self.warnings[(uid, c.name)]) for c in pod.containers
                if (uid, c.name) in self.warnings]

    def targets(self):
        """{(pod uid, container name): Target} for every placed container."""
        out = {}
        for key, container in self.placed.items():
            grant = self.placer.grants[container]
            cid, runtime = self.ids[key]
            out[key] = Target(key, key[0], self.pods[key[0]].qosclass, cid, runtime,
                              self.placer.cpuset(grant), self.placer.memset(grant))
        return out

    def decisions(self, uid):
        """{container name: decision} of one pod, as the annotation records it."""
        pod = self.pods.get(uid)
        if pod is None:
            return {}
        out = {}
        for c in pod.containers:
            key = (uid, c.name)
            if key in self.errors:
                out[c.name] = {"error": self.errors[key]}
            elif key in self.placed:
                g = self.placer.grants[self.placed[key]]
                entry = {"pool": g.pool.name, "mems": format_list(self.placer.memset(g))}
                if g.exclusive:
                    entry["exclusiveCpus"] = format_list(g.exclusive)
                if g.portion:
                    entry["sharedMilliCpu"] = g.portion
                entry["cpuType"] = g.cpu_type
                out[c.name] = entry
        return out

    def annotation(self, uid):
        """The value of the pod's ``hwaffinity.io/numa`` annotation (None: nothing to say)."""
        d = self.decisions(uid)
        return json.dumps(d, sort_keys=True, separators=(",", ":")) if d else None

    def reason(self, uid, name=""):
        """The REASONS entry of the failure of container NAME of pod UID ("": the pod's)."""
        return self.reasons.get((uid, name), INTERNAL)

    def failures(self, uid):
        """[(container name, message)] of one pod's containers the engine could not place."""
        if uid in self.pod_errors:
            return [("", self.pod_errors[uid])]
        pod = self.pods.get(uid)
        if pod is None:
            return []
        return [(c.name, self.errors[(uid, c.name)]) for c in pod.containers
                if (uid, c.name) in self.errors]
