"""The node agent as an NRI plugin: the runtime asks, the engine decides, the runtime applies.

The runtime calls the plugin (``nri.plugin``) in order; each call is answered
from ``agent.node.NodeState`` (the same decision core as the cgroupfs mode),
with pods and containers built from the NRI messages (``agent.nri_subjects``):

* ``Synchronize`` (registration, and every reconnect): a fresh NodeState takes
  the live containers in, each given back the grant the agent's checkpoint
  records for it (so a restart changes nothing); updates go to containers whose
  cpuset differs from the decision;
* ``CreateContainer``: the container's cpuset and memory nodes are in the
  adjustment, so it starts pinned; the containers whose shared pool shrank are
  in the response's updates; init containers and sidecars alike;
* ``UpdateContainer``: new resources (an in-place resize) are placed again;
  the container's own cpuset rides in the update so a runtime update never
  undoes it;
* ``StopContainer``: the grant is released (an init container's CPUs go back to
  the pool); the checkpoint keeps it, so a restarted container gets it back;
  ``RemoveContainer``/``RemovePodSandbox`` (state changes, answered at once):
  the grown pools are sent with ``UpdateContainers`` from another thread; updates
  waiting there are merged per container (the newest cpuset wins), so however many
  removals come while the runtime is slow to answer, at most one update per
  container waits.

One container is one container's problem: a request that names no container id,
a pod whose annotations ask more than the caps, affinities that take longer than
their budget, or any exception while one container is handled, leaves that
container unpinned (it runs as the kubelet asked), logs it, counts it in
``hwaffinity_agent_refused_total`` by reason and, where the pod is known, sends an
Event; the other containers of the batch are answered, and so are later requests.
The requests are answered one at a time, under one lock: each namespace has a share
of that time (``TimeShare``), and a namespace that spent it has its containers left
unpinned at once (reason ``budget``), so that however many costly containers one
namespace starts together, another's answer comes well within the runtime's timeout.

No cgroup file is written in this mode, and nothing on a container's start path
waits for the API server: the ``hwaffinity.io/numa`` annotation and Events are
queued for ``agent.recorder.Recorder``, which retries with backoff while the server
is down. The grants are kept in ``agent.checkpoint.Checkpoint``.
"""
import contextlib
import json
import logging
import threading
import time

from tacker_hwaffinity.agent import nri_subjects
from tacker_hwaffinity.agent.cgroupfs import map_ids
from tacker_hwaffinity.agent.node import ANNOTATION, INTERNAL, OVER_BUDGET
from tacker_hwaffinity.agent.runner import REASON_PLACEMENT, REASON_RESTORE, set_gauges
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.nri import api, wire
from tacker_hwaffinity.numa.cpuset import format_list
from tacker_hwaffinity.numa.request import RESERVED

EVENTS = api.event_mask(api.CREATE_CONTAINER, api.UPDATE_CONTAINER, api.STOP_CONTAINER,
                        api.REMOVE_CONTAINER, api.REMOVE_POD_SANDBOX)
REASON_FORGED = "NUMAGrantIgnored"
BAD_REQUEST = "request"         # refusal reason: a message the agent cannot act on
REPORTED_PER_POD = 64           # Events remembered per pod, so as to send each once
# Seconds a Synchronize may spend placing containers its checkpoint has no grant for:
# half of containerd's 2 s request timeout, so that one grant's own budget
# (node.AFFINITY_BUDGET) past it still answers in time. The rest stay unpinned.
SYNC_BUDGET = 1.0
# Each namespace's share of the request worker: past SHARE_FREE_S seconds per container
# (an ordinary decision takes a few ms), it may spend SHARE_S at once and SHARE_RATE_S a
# second; so that however many costly containers one namespace starts at once, another's
# wait behind them stays far below containerd's 2 s request timeout.
SHARE_S, SHARE_RATE_S, SHARE_FREE_S = 0.25, 0.125, 0.05
_LIVE = (api.CONTAINER_CREATED, api.CONTAINER_RUNNING, api.CONTAINER_PAUSED)


class OverShare(Exception):
    """A namespace spent its share of the agent's time: its container is not placed."""


class TimeShare:
    """Each namespace's share of the agent's time, a token bucket: a request's cost past
    FREE seconds is charged to its namespace, which may spend CAPACITY seconds at once
    and RATE seconds a second; ``check`` raises OverShare while it is spent. Only the
    namespaces that spent lately are kept (a whole share is forgotten)."""

    def __init__(self, capacity=SHARE_S, rate=SHARE_RATE_S, free=SHARE_FREE_S,
                 clock=time.monotonic):
        self.capacity, self.rate, self.free, self.clock = capacity, rate, free, clock
        self._left = {}         # namespace -> (seconds left, when)

    def __len__(self):
        return len(self._left)

    def check(self, namespace):
        if self.left(namespace) <= 0:
            raise OverShare("namespace %s spent its share of the agent's time (%.2f s at "
                            "once, %.3f s a second)" % (namespace, self.capacity, self.rate))

    def charge(self, namespace, seconds):
        if seconds > self.free:
            self._left[namespace] = (self.left(namespace) - (seconds - self.free),
                                     self.clock())
            if len(self._left) > 64:
                for ns in list(self._left):
                    self.left(ns)       # forgets the whole ones

    def left(self, namespace):
        """The seconds NAMESPACE may spend now."""
        left, when = self._left.get(namespace, (self.capacity, None))
        if when is not None:
            left = min(self.capacity, left + (self.clock() - when) * self.rate)
        if left >= self.capacity:
            self._left.pop(namespace, None)
        return left


def _ref(pod):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid}}


class NriAgent:
    """The NRI handler (see ``nri.plugin``). STATE_FACTORY makes an empty NodeState;
    SYNC_BUDGET: seconds a Synchronize may spend on containers with no recorded grant."""

    def __init__(self, state_factory, checkpoint, recorder, metrics, log=None,
                 cpu_map=None, mem_map=None, sync_budget=SYNC_BUDGET):
        self.state_factory = state_factory
        self.sync_budget = sync_budget
        self.state = state_factory()
        self.checkpoint, self.recorder, self.metrics = checkpoint, recorder, metrics
        self.log = log or logging.getLogger("hwaffinity.agent")
        self.cpu_map, self.mem_map = cpu_map, mem_map
        self.records = {}       # pod uid -> {container name: entry}: the checkpoint
        self.sent = {}          # container id -> (cpus, mems) the runtime was given
        self.plugin = None      # set by the caller: asynchronous UpdateContainers
        self.synchronized = threading.Event()
        self.runtime = ("", "")
        self.lock = threading.Lock()
        self.share = TimeShare()    # each namespace's share of the time under the lock
        self._async = {}        # container id -> the update run_updates sends next
        self._async_lock = threading.Lock()
        self._async_ready = threading.Event()
        self._reported = {}     # pod uid -> {(reason, message)} already sent
        self._formatted = {}    # frozenset of ids -> kernel list text

    # -- NRI handler -----------------------------------------------------
    def configure(self, msg):
        self.runtime = (msg.get("runtime_name", ""), msg.get("runtime_version", ""))
        timeout = msg.get("request_timeout", 0)
        self.log.info("configured by %s %s (%s)", *self.runtime,
                      "request timeout %.1f s" % (timeout / 1000.0) if timeout else
                      "its request timeout not told: containerd's default is 2 s")
        return EVENTS

    def synchronize(self, pods, containers):
        t0 = time.monotonic()
        pods, containers = self._readable("pod sandbox", pods), \
            self._readable("container", containers)
        with self.lock:
            self.state = self.state_factory()
            self.records = self.checkpoint.load(self.log)
            self.sent = {}
            sandboxes = {p.get("id"): p for p in pods}
            live = [c for c in containers if c.get("state") in _LIVE
                    and c.get("pod_sandbox_id") in sandboxes]
            uids = {sandboxes[c["pod_sandbox_id"]].get("uid") for c in live}
            self.records = {u: r for u, r in self.records.items() if u in uids}
            # pods removed while the connection was down: forgotten here, not kept
            self._reported = {u: r for u, r in self._reported.items() if u in uids}
            self.recorder.retain(uids)
            # recorded grants first, so that a container placed afresh takes no CPU of theirs
            live.sort(key=lambda c: (
                (c.get("name") not in self.records.get(
                    sandboxes[c["pod_sandbox_id"]].get("uid"), {})), c.get("id", "")))
            late = 0
            for c in live:
                sandbox = sandboxes[c["pod_sandbox_id"]]
                restored = c.get("name") in self.records.get(sandbox.get("uid"), {})
                if not restored and time.monotonic() - t0 > self.sync_budget:
                    late += 1           # left as the kubelet asked: no time to place it
                    self.metrics.refused.labels(OVER_BUDGET).inc()
                    continue
                try:
                    self._admit(sandbox, c)
                    cpu = (((c.get("linux") or {}).get("resources") or {}).get("cpu") or {})
                    self.sent[c["id"]] = (cpu.get("cpus", ""), cpu.get("mems", ""))
                except Exception as e:  # noqa: BLE001 - that container's failure, see _refused
                    self._refused("Synchronize", sandbox, c, e)
            updates = self._updates()
            for uid in self.state.pods:
                self._merge(uid)
            try:
                self.checkpoint.rewrite(self.records)
            except OSError as e:
                self._checkpoint_failed(e)
            for uid in {k[0] for k in list(self.state.placed) + list(self.state.errors)}:
                self._report(uid)
        self.synchronized.set()
        if late:
            self.log.warning("Synchronize: %d container(s) without a recorded grant left "
                             "unpinned: placing took longer than its %.1f s budget",
                             late, self.sync_budget)
        self.log.info("synchronized with the runtime: %d pod(s), %d container(s) in "
                      "%.1f ms; %d cpuset(s) corrected", len(pods), len(live),
                      (time.monotonic() - t0) * 1e3, len(updates))
        return updates

    def create_container(self, pod, container):
        t0 = time.monotonic()
        with self.lock:
            try:
                with self._charged(pod):
                    key = self._admit(pod, container)
            except Exception as e:  # noqa: BLE001 - that container's failure, see _refused
                self._refused("CreateContainer", pod, container, e)
                return None, []
            self.metrics.decisions.labels(
                "placed" if key in self.state.placed else "failed").inc()
            adjust = None
            everything = self._wanted()
            wanted = everything.get(container.get("id"))
            if wanted is not None:
                adjust = {"linux": {"resources": api.cpuset_resources(*wanted)}}
                self.sent[container["id"]] = wanted
            updates = self._updates(everything)
            self._save(key[0])
            self._report(key[0])
        self.metrics.decision.observe(time.monotonic() - t0)
        return adjust, updates

    def update_container(self, pod, container, resources):
        with self.lock:
            try:
                with self._charged(pod):
                    return self._update_container(pod, container, resources)
            except Exception as e:  # noqa: BLE001 - that container's failure, see _refused
                self._refused("UpdateContainer", pod, container, e)
                return []

    def _update_container(self, pod, container, resources):
        uid = pod.get("uid") or pod.get("id")
        key = (uid, container.get("name"))
        known = self.state.pods.get(uid)
        subject = next((c for c in known.containers if c.name == key[1]), None) \
            if known is not None else None
        if subject is None:
            self._admit(pod, container)
        else:
            fresh = nri_subjects.container(known, container, self._runtime(),
                                           resources=resources or None)
            shape = ("cpu_request", "cpu_limit", "mem_request", "mem_limit")
            if any(getattr(fresh, a) != getattr(subject, a) for a in shape):
                for a in shape:
                    setattr(subject, a, getattr(fresh, a))
                self.state.replace(key)
                self.log.info("container %s/%s resized: placed again", pod.get("name"),
                              key[1])
        self.sent.pop(container.get("id"), None)    # its own cpuset rides along
        updates = self._updates()
        self._save(uid)
        self._report(uid)
        return updates

    def stop_container(self, pod, container):
        with self.lock:
            try:
                return self._release(pod, container)
            except Exception as e:  # noqa: BLE001 - that container's failure, see _refused
                self._refused("StopContainer", pod, container, e)
                return []

    def state_change(self, event, pod, container):
        with self.lock:
            try:
                updates = self._state_change(event, pod, container)
            except Exception as e:  # noqa: BLE001 - that container's failure, see _refused
                self._refused("StateChange", pod, container, e)
                return
        if updates:
            with self._async_lock:
                self._async.update((u["container_id"], u) for u in updates)
                self._async_ready.set()

    def _state_change(self, event, pod, container):
        if event == api.REMOVE_CONTAINER:
            updates = self._release(pod, container)
        elif event == api.REMOVE_POD_SANDBOX:
            uid = pod.get("uid") or pod.get("id")
            self.state.forget(uid)
            self.records.pop(uid, None)
            self.recorder.forget(uid)
            self._reported.pop(uid, None)
            updates = self._updates()
            self._save(uid, gone=True)
        else:
            return []
        return updates

    def shutdown(self):
        self.log.info("the runtime is shutting down")

    # -- asynchronous updates --------------------------------------------
    def run_updates(self, stop):
        """Send the updates of state changes (removals) with UpdateContainers: all
        that wait, one call, one update per container."""
        while not stop.is_set():
            if not self._async_ready.wait(0.5):
                continue
            with self._async_lock:
                self._async_ready.clear()
                updates, self._async = [u for _, u in sorted(self._async.items())], {}
            plugin = self.plugin
            if plugin is None:
                continue
            try:
                failed = plugin.update_containers(updates)
            except Exception as e:      # noqa: BLE001 -- the next Synchronize corrects it
                self.log.warning("UpdateContainers failed (%s): the next synchronize "
                                 "corrects it", e)
                continue
            for f in failed:
                self.metrics.failures.labels("update").inc()
                self.log.warning("the runtime could not update container %s",
                                 f.get("container_id"))

    # -- internals ---------------------------------------------------------
    def _readable(self, what, items):
        """ITEMS of a Synchronize but those the wire could not read (``wire.INVALID``:
        over their fields' cap, say): each logged and counted, left as the runtime has
        it (a container of an unreadable sandbox is not live here)."""
        bad = [i for i in items if wire.INVALID in i]
        for item in bad:
            self.metrics.refused.labels(BAD_REQUEST).inc()
            self.log.warning("NRI Synchronize: a %s not read: %s", what, item[wire.INVALID])
        return [i for i in items if wire.INVALID not in i] if bad else items

    def _runtime(self):
        return self.runtime[0] or "containerd"

    def _refused(self, method, sandbox, container, error):
        """Handling CONTAINER of SANDBOX in METHOD raised ERROR: the container is left as
        the kubelet asked; logged, counted by reason, and an Event when the pod is known."""
        reason = OVER_BUDGET if isinstance(error, OverShare) else \
            BAD_REQUEST if isinstance(error, InputError) else INTERNAL
        self.metrics.refused.labels(reason).inc()
        if reason == OVER_BUDGET:
            self._event(nri_subjects.pod(sandbox), REASON_PLACEMENT, "container %s: not "
                        "pinned: %s" % (container.get("name"), error))
            return
        what = "container %s (%s) of pod %s/%s" % (
            container.get("name") or "?", container.get("id") or "no id",
            sandbox.get("namespace") or "?", sandbox.get("name") or "?")
        if reason == BAD_REQUEST:
            self.log.warning("NRI %s: %s: not pinned: %s", method, what, error)
            return
        self.log.exception("NRI %s: %s: not pinned: internal error", method, what)
        pod = self.state.pods.get(sandbox.get("uid") or sandbox.get("id"))
        if pod is not None:
            self._event(pod, REASON_PLACEMENT, "container %s: not pinned: internal error "
                        "(%s: %s)" % (container.get("name"), type(error).__name__, error))

    @contextlib.contextmanager
    def _charged(self, sandbox):
        """Within the share of the agent's time of SANDBOX's namespace (``TimeShare``;
        else OverShare), charged the time it holds the lock."""
        namespace = sandbox.get("namespace") or ""
        self.share.check(namespace)
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.share.charge(namespace, time.monotonic() - t0)

    def _admit(self, sandbox, container):
        uid = sandbox.get("uid") or sandbox.get("id")
        for field, value in (("container.id", container.get("id")),
                             ("container.name", container.get("name")),
                             ("pod.uid", uid)):
            if not value:
                raise InputError("the runtime sent no %s" % field, source="NRI request",
                                 field=field)
        record = self.records.get(uid)
        pod = nri_subjects.pod(sandbox, json.dumps(record, sort_keys=True) if record else None)
        forged = ANNOTATION in (sandbox.get("annotations") or {})
        if forged and (uid, container.get("name")) not in self.state.ids:
            self._event(pod, REASON_FORGED, "container %s: the pod was created with %s; the "
                        "agent's own checkpoint is the record in NRI mode, so it is ignored"
                        % (container.get("name"), ANNOTATION))
        known = self.state.pods.get(uid, pod)
        subject = nri_subjects.container(known, container, self._runtime())
        return self.state.admit(pod, subject)

    def _release(self, sandbox, container):
        uid = sandbox.get("uid") or sandbox.get("id")
        key = (uid, container.get("name"))
        cid = container.get("id")
        self.sent.pop(cid, None)
        if self.state.ids.get(key, (None,))[0] != cid:
            return []           # an older instance: its successor holds the grant
        self.state.remove(key)
        return self._updates()

    def _wanted(self):
        """{container id: (cpus, mems)} of every placed container, as the runtime takes
        them (kernel lists, mapped through the id maps). A pool's shared set is
        formatted once per call, an exclusive set once per grant."""
        placer, ids = self.state.placer, self.state.ids
        shared, out = {}, {}
        for key, c in self.state.placed.items():
            g = placer.grants[c]
            try:
                own = g.exclusive if g.cpu_type != RESERVED else frozenset()
                if own and g.portion <= 0:
                    cpus = self._text(own, self.cpu_map, "CPU")
                else:
                    pool_key = (g.pool.name, g.cpu_type == RESERVED)
                    if pool_key not in shared:
                        shared[pool_key] = placer.shared_cpus(g.pool, g.cpu_type)
                    cpus = self._text(shared[pool_key] | own if own else shared[pool_key],
                                      self.cpu_map, "CPU")
                mems = self._text(placer.memset(g), self.mem_map, "memory node")
            except ValueError as e:
                self.metrics.failures.labels("map").inc()
                self.log.warning("container %s: %s", ids[key][0], e)
                continue
            out[ids[key][0]] = (cpus, mems)
        return out

    def _text(self, ids, mapping, what):
        text = self._formatted.get(ids)
        if text is None:
            mapped = map_ids(ids, mapping, what, "cpu_map" if what == "CPU" else "mem_map")
            if len(self._formatted) > 4096:
                self._formatted.clear()
            text = self._formatted[ids] = format_list(mapped)
        return text

    def _updates(self, wanted=None):
        """ContainerUpdates for the containers whose cpuset differs from what the runtime
        was given (WANTED: ``_wanted()``, if the caller has it)."""
        updates = []
        for cid, want in sorted((wanted if wanted is not None else self._wanted()).items()):
            if self.sent.get(cid) == want:
                continue
            self.sent[cid] = want
            updates.append({"container_id": cid, "ignore_failure": True,
                            "linux": {"resources": api.cpuset_resources(*want)}})
        return updates

    def _merge(self, uid):
        """Take pod UID's decisions into its record; True when the record changed."""
        decided = {k: v for k, v in self.state.decisions(uid).items() if "error" not in v}
        entry = self.records.setdefault(uid, {})
        if all(entry.get(k) == v for k, v in decided.items()):
            return False
        entry.update(decided)
        return True

    def _save(self, uid, gone=False):
        try:
            if gone:
                self.checkpoint.record(uid, None)
            elif self._merge(uid):
                self.checkpoint.record(uid, self.records[uid])
            if self.checkpoint.stale(len(self.records)):
                self.checkpoint.rewrite(self.records)
        except OSError as e:
            self._checkpoint_failed(e)

    def _checkpoint_failed(self, e):
        self.metrics.failures.labels("checkpoint").inc()
        self.log.warning("checkpoint not written (%s): a restart places afresh", e)

    def _report(self, uid):
        pod = self.state.pods.get(uid)
        if pod is None:
            return
        ref = _ref(pod)
        for name, message in self.state.refused(uid):
            self._event(pod, REASON_RESTORE, "container %s: %s" % (name, message))
        for name, message in self.state.failures(uid):
            if self._event(pod, REASON_PLACEMENT, "container %s: %s" % (name, message)
                           if name else message):
                self.metrics.refused.labels(self.state.reason(uid, name)).inc()
        decided = self.state.decisions(uid)
        set_gauges(self.metrics, self.state)
        value = dict(self.records.get(uid) or {})
        value.update(decided)
        if value:
            self.recorder.annotate(ref, json.dumps(value, sort_keys=True,
                                                   separators=(",", ":")))

    def _event(self, pod, reason, message):
        """Log and queue the Event once (a pod's first REPORTED_PER_POD messages are
        remembered, then forgotten together); True when it is new."""
        sent = self._reported.setdefault(pod.uid, set())
        if (reason, message) in sent:
            return False
        if len(sent) >= REPORTED_PER_POD:
            sent.clear()
        sent.add((reason, message))
        self.log.warning("pod %s: %s", pod.ref, message)
        self.recorder.event(_ref(pod), reason, message)
        return True
