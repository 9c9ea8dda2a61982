"""The controller's Events, each sent once per object, and its failures on one object:
logged, counted and, where the object is known, a Warning Event on it.

Each Event is an API request made inside the tick, so a namespace gets at most
``EVENTS_PER_NAMESPACE_PER_TICK`` a tick: a tenant whose thousand new pods each earn
one (a bad annotation) delays the tick's evictions by that many requests, not a
thousand; the rest are sent at the next ticks (one about a pod gone by then is dropped,
as client-go's recorder drops what its spam filter holds back)."""
from tacker_hwaffinity.kube import events
from tacker_hwaffinity.kube.client import KubeError

COMPONENT = "hwaffinity-controller"
REPORTED_PER_OBJECT = 16    # Events remembered (not sent again) per object
EVENTS_PER_NAMESPACE_PER_TICK = 10


class EventLog:
    """Records Events about objects while TERM (``controller.term.Term``) confirms the
    lease; none in a dry run (SETTINGS.dry_run), where they are only remembered."""

    def __init__(self, conn, settings, term, log):
        self.conn, self.s, self.term, self.log = conn, settings, term, log
        self.reported = {}      # object uid -> {(reason, message): None}, oldest first
        self.sent = {}          # namespace ("" for a node) -> Events sent this tick

    def new_tick(self):
        """Each namespace may send EVENTS_PER_NAMESPACE_PER_TICK Events again."""
        self.sent.clear()

    def record(self, obj, kind, reason, message):
        """One Event about OBJ, unless this one was sent already (per object, the last
        REPORTED_PER_OBJECT are remembered, and forgotten when the object goes)."""
        uid, key = obj["metadata"].get("uid"), (reason, message)
        seen = self.reported.get(uid)
        if seen is not None and key in seen:
            return
        if self.s.dry_run:
            self._remember(uid, key)
            return
        namespace = obj["metadata"].get("namespace") or ""
        if self.sent.get(namespace, 0) >= EVENTS_PER_NAMESPACE_PER_TICK:
            self.log.debug("event %s about %s held for the next tick: namespace %r sent "
                           "%d this tick", reason, obj["metadata"].get("name"), namespace,
                           EVENTS_PER_NAMESPACE_PER_TICK)
            return
        self.sent[namespace] = self.sent.get(namespace, 0) + 1
        try:
            with self.term.acting("recording %s about %s" % (reason,
                                                             obj["metadata"].get("name"))):
                events.record_event(self.conn, obj, kind, reason, message, COMPONENT)
        except KubeError as e:
            self.log.warning("event not recorded: %s", e)
        self._remember(uid, key)

    def forget(self, live):
        """Drop what is remembered about the objects whose uid is not in LIVE."""
        for uid in [u for u in self.reported if u not in live]:
            del self.reported[uid]

    def _remember(self, uid, key):
        seen = self.reported.setdefault(uid, {})
        seen[key] = None
        while len(seen) > REPORTED_PER_OBJECT:
            del seen[next(iter(seen))]


class Failures:
    """A tick's failure on one object (or a bug that cut the tick short): logged,
    counted in COUNTER (labels kind, reason: the exception's type), and a Warning
    Event on the object when there is one (EVENTS: an EventLog)."""

    def __init__(self, counter, log, events_):
        self.counter, self.log, self.events = counter, log, events_

    def __call__(self, kind, what, e, obj=None):
        """Work on WHAT (of KIND; OBJ: its object, for an Event) raised E; the tick
        goes on with the next object."""
        self.counter.labels(kind, type(e).__name__).inc()
        self.log.error("%s: skipped, %s: %s", what, type(e).__name__, e,
                       exc_info=not isinstance(e, (KeyError, TypeError, ValueError)))
        if obj is not None:
            self.events.record(obj, "Warning", "HwaffinityControllerError",
                               "%s skipped this %s: %s: %s" % (COMPONENT, kind,
                                                               type(e).__name__, e))


def meta_of(obj):
    """OBJ's metadata, {} when OBJ is malformed (to name it in a failure)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return meta if isinstance(meta, dict) else {}
