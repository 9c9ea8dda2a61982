"""The NRI agent's writer to the API server: annotations and Events, from a thread of
its own, so that nothing on a container's start path waits for the API server."""
import threading

from tacker_hwaffinity.agent.node import ANNOTATION
from tacker_hwaffinity.kube.client import KubeError


class Recorder:
    """Writes annotations and Events to the API server from its own thread, newest
    value per pod, retrying with backoff (1 s doubling to 30 s) while it fails."""

    def __init__(self, api_, metrics, log, dry_run=False):
        self.api, self.metrics, self.log, self.dry_run = api_, metrics, log, dry_run
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._annotations = {}      # uid -> (pod ref obj, value)
        self._events = []           # (pod ref obj, reason, message)
        self._written = {}          # uid -> value last written
        self.backoff = 1.0

    def annotate(self, ref, value):
        with self._lock:
            uid = ref["metadata"]["uid"]
            if self._written.get(uid) != value:
                self._annotations[uid] = (ref, value)
                self._wake.set()

    def event(self, ref, reason, message):
        with self._lock:
            self._events.append((ref, reason, message))
            self._wake.set()

    def forget(self, uid):
        with self._lock:
            self._annotations.pop(uid, None)
            self._written.pop(uid, None)

    def pending(self):
        with self._lock:
            return len(self._annotations) + len(self._events)

    def run(self, stop):
        while not stop.is_set():
            self._wake.wait(1.0)
            self._wake.clear()
            if self.flush():
                self.backoff = 1.0
            else:
                stop.wait(self.backoff)
                self.backoff = min(30.0, self.backoff * 2)

    def flush(self):
        """Write what is queued; False when the API server refused or was unreachable."""
        with self._lock:
            todo, self._annotations = self._annotations, {}
            evs, self._events = self._events, []
        ok = True
        for uid, (ref, value) in sorted(todo.items()):
            meta = ref["metadata"]
            if self.dry_run:
                self.log.info("pod %s/%s: %s=%s (dry run)", meta["namespace"], meta["name"],
                              ANNOTATION, value)
                continue
            try:
                self.api.annotate(ref, ANNOTATION, value)
            except KubeError as e:
                ok = False
                self.metrics.failures.labels("annotation").inc()
                self.log.warning("pod %s/%s: annotation not recorded yet (%s)",
                                 meta["namespace"], meta["name"], e)
                with self._lock:
                    self._annotations.setdefault(uid, (ref, value))
                continue
            with self._lock:
                self._written[uid] = value
        for i, (ref, reason, message) in enumerate(evs):
            if self.dry_run:
                continue
            try:
                self.api.event(ref, reason, message)
            except KubeError as e:
                ok = False
                self.metrics.failures.labels("event").inc()
                self.log.warning("event %s not recorded yet (%s)", reason, e)
                with self._lock:
                    self._events[:0] = evs[i:]
                break
        return ok
