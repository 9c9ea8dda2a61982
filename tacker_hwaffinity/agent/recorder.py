"""The agent's writer to the API server: annotations and Events, from a thread of its
own, so that nothing on a container's start path (NRI) or under the agent's lock
(cgroupfs) waits for the API server.

Every pod's writes are that pod's: each annotation and each Event has its own retry
time (backoff from ``BACKOFF_S`` doubling to ``MAX_BACKOFF_S``), so one that the
server keeps refusing (a pod whose annotations are full, an Event the server finds
invalid, a namespace being deleted) is retried on its own clock and never stops or
delays the writes behind it. The queue is bounded: at most ``EVENTS_PER_POD`` Events
of one pod and ``MAX_EVENTS`` in all wait (a new one past either bound is dropped and
counted), an Event is given up after ``EVENT_ATTEMPTS`` refusals, and an annotation
of a pod the server no longer has (404) is dropped."""
import collections
import queue
import threading
import time

from tacker_hwaffinity.agent.node import ANNOTATION
from tacker_hwaffinity.kube.client import KubeError

BACKOFF_S, MAX_BACKOFF_S = 1.0, 30.0   # one write's first and longest wait after a refusal
EVENTS_PER_POD = 16         # Events of one pod waiting to be written, at most
MAX_EVENTS = 1024           # Events waiting in all, at most
EVENT_ATTEMPTS = 5          # refusals after which an Event is given up
WRITERS = 4                 # threads writing, each one write at a time
POLL_S = 1.0                # the longest the recorder sleeps with nothing due


class _Write:
    """One queued write: an annotation value, or an Event; its own retry clock."""

    __slots__ = ("ref", "payload", "is_event", "tracked", "due", "attempts")

    def __init__(self, ref, payload, is_event=False, tracked=False):
        self.ref, self.payload, self.is_event = ref, payload, is_event
        self.tracked = tracked      # the caller keeps track of what is written
        self.due, self.attempts = 0.0, 0

    @property
    def uid(self):
        return self.ref["metadata"]["uid"]

    def refused(self, now, first, longest):
        self.attempts += 1
        self.due = now + min(longest, first * 2 ** (self.attempts - 1))


class Recorder:
    """Writes annotations (newest value per pod) and Events to API_ (``annotate(ref,
    key, value)``, ``event(ref, reason, message)``) from WRITERS threads, one write
    per pod at a time: a write the server is slow to answer (bounded by the API
    client's timeout, ``kube.client``) holds one writer and its own pod, no other."""

    def __init__(self, api_, metrics, log, dry_run=False, backoff=BACKOFF_S,
                 max_backoff=MAX_BACKOFF_S, writers=WRITERS, clock=time.monotonic):
        self.api, self.metrics, self.log, self.dry_run = api_, metrics, log, dry_run
        self.backoff, self.max_backoff = backoff, max_backoff
        self.writers, self.clock = writers, clock
        self._ready = queue.Queue()     # writes handed to the writer threads
        self._busy = set()              # uids with a write handed over, not done
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._annotations = {}      # uid -> _Write(payload: value)
        self._events = collections.deque()     # _Write(payload: (reason, message))
        self._per_pod = collections.Counter()  # uid -> its Events in _events
        self._dropping = set()      # uids whose dropped Events were logged
        self._written = {}          # uid -> value last written

    def annotate(self, ref, value, tracked=False):
        """Queue VALUE as pod REF's annotation (replacing one not written yet): nothing
        when it is the value last written. TRACKED: the caller keeps track of what is
        written (the cgroupfs agent, which sees the pod's annotations): VALUE is queued
        whatever was written before, and not remembered."""
        with self._lock:
            uid = ref["metadata"]["uid"]
            if tracked or self._written.get(uid) != value:
                self._annotations[uid] = _Write(ref, value, tracked=tracked)
                self._wake.set()

    def event(self, ref, reason, message):
        """Queue an Event about pod REF; dropped (and counted) past the queue's bounds."""
        with self._lock:
            uid = ref["metadata"]["uid"]
            if self._per_pod[uid] >= EVENTS_PER_POD or len(self._events) >= MAX_EVENTS:
                self.metrics.failures.labels("event-dropped").inc()
                if uid not in self._dropping:   # once until one of its Events is written
                    if len(self._dropping) >= MAX_EVENTS:
                        self._dropping.clear()
                    self._dropping.add(uid)
                    self.log.warning("pod %s/%s: Events dropped: too many waiting (%s)",
                                     ref["metadata"].get("namespace"),
                                     ref["metadata"].get("name"), reason)
                return
            self._events.append(_Write(ref, (reason, message), is_event=True))
            self._per_pod[uid] += 1
            self._wake.set()

    def forget(self, uid):
        with self._lock:
            self._annotations.pop(uid, None)
            self._written.pop(uid, None)

    def retain(self, uids):
        """Forget every pod but UIDS (the live ones, after a resynchronization)."""
        with self._lock:
            for table in (self._annotations, self._written):
                for uid in [u for u in table if u not in uids]:
                    del table[uid]

    def pending(self):
        with self._lock:
            return len(self._annotations) + len(self._events)

    def run(self, stop):
        """Hand what is due to WRITERS threads of its own until STOP is set."""
        for i in range(self.writers):
            threading.Thread(target=self._writer, args=(stop,), name="recorder-%d" % i,
                             daemon=True).start()
        while not stop.is_set():
            self._wake.clear()
            wait = self.flush()
            self._wake.wait(POLL_S if wait is None else min(POLL_S, wait))

    def flush(self):
        """Hand the writes that are due to the writer threads, oldest first and one per
        pod at a time; the seconds until the next one is due (None: nothing waits)."""
        now = self.clock()
        with self._lock:
            waiting = list(self._annotations.values()) + list(self._events)
            for w in sorted((w for w in waiting if w.due <= now), key=lambda w: w.due):
                if w.uid not in self._busy:
                    self._busy.add(w.uid)
                    self._ready.put(w)
            later = [w.due for w in waiting if w.uid not in self._busy]
        return max(0.0, min(later) - now) if later else None

    def _writer(self, stop):
        while not stop.is_set():
            try:
                w = self._ready.get(timeout=POLL_S)
            except queue.Empty:
                continue
            try:
                (self._write_event if w.is_event else self._write_annotation)(w)
            except Exception:   # a bug in one write: that write is dropped, the writer goes on
                self.log.exception("pod %s: a write dropped: internal error", w.uid)
                self._discard(w)
            finally:
                with self._lock:
                    self._busy.discard(w.uid)
                self._wake.set()

    def _write_annotation(self, w):
        meta = w.ref["metadata"]
        if self.dry_run:
            self.log.info("pod %s/%s: %s=%s (dry run)", meta["namespace"], meta["name"],
                          ANNOTATION, w.payload)
        else:
            try:
                self.api.annotate(w.ref, ANNOTATION, w.payload)
            except Exception as e:  # noqa: BLE001 - that pod's failure, retried on its clock
                self.metrics.failures.labels("annotation").inc()
                gone = isinstance(e, KubeError) and e.status == 404
                self.log.warning("pod %s/%s: annotation %s (%s)", meta["namespace"],
                                 meta["name"], "dropped: the pod is gone" if gone
                                 else "not recorded yet", e)
                with self._lock:
                    if self._annotations.get(w.uid) is w:
                        if gone:
                            del self._annotations[w.uid]
                        else:
                            w.refused(self.clock(), self.backoff, self.max_backoff)
                return
        with self._lock:
            if w.uid in self._annotations:      # else forgotten while it was written
                if self._annotations[w.uid] is w:
                    del self._annotations[w.uid]
                if not w.tracked:
                    self._written[w.uid] = w.payload

    def _write_event(self, w):
        reason, message = w.payload
        if not self.dry_run:
            try:
                self.api.event(w.ref, reason, message)
            except Exception as e:  # noqa: BLE001 - that Event's failure, retried on its clock
                self.metrics.failures.labels("event").inc()
                with self._lock:
                    w.refused(self.clock(), self.backoff, self.max_backoff)
                    last = w.attempts >= EVENT_ATTEMPTS
                    if last:
                        self._drop_event(w)
                self.log.warning("event %s %s (%s)", reason, "given up after %d attempts"
                                 % w.attempts if last else "not recorded yet", e)
                return
        with self._lock:
            self._drop_event(w)

    def _discard(self, w):
        with self._lock:
            if w.is_event and w in self._events:
                self._drop_event(w)
            elif not w.is_event and self._annotations.get(w.uid) is w:
                del self._annotations[w.uid]

    def _drop_event(self, w):
        self._events.remove(w)
        self._dropping.discard(w.uid)
        self._per_pod[w.uid] -= 1
        if not self._per_pod[w.uid]:
            del self._per_pod[w.uid]


class QueuedPodApi:
    """``runner.PodApi``'s two methods, queued on RECORDER: what the cgroupfs agent
    writes through, so that no API call is made under its lock or on its informer's
    thread. The agent keeps track of what is written (it sees the pod's annotations):
    a value it asks for is written even when it was written before (the pod's writers
    may have changed it since), and the recorder remembers nothing of it."""

    def __init__(self, recorder):
        self.recorder = recorder

    def annotate(self, obj, _key, value):     # _key: always ANNOTATION, the recorder's
        self.recorder.annotate(obj, value, tracked=True)

    def event(self, obj, reason, message):
        self.recorder.event(obj, reason, message)
