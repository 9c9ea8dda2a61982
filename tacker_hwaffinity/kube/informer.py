"""List, then watch, one kind: the one watch loop every in-cluster component
shares, so that none of them writes its own ``while True: watch``.

Objects are the API server's JSON (plain dicts, as :func:`lists.list_json`
returns them), never client models. The watch stream is read raw rather than
through ``kubernetes.watch.Watch``, because that class decodes every event
into a model, silently re-watches once from the same (expired)
resourceVersion on a 410 and loops forever without ``timeout_seconds``; here
the loop's policy is explicit:

- a (re)list replaces the cache and calls ``on_sync(objects)``, so a caller
  can reconcile what changed while no watch was open (deletions included:
  the handler never sees those as DELETED);
- a watch that the server ends normally (``timeout_seconds``) is re-opened
  from the last resourceVersion, which BOOKMARK events keep advancing;
- 410 Gone (an HTTP status or an ERROR event) means the version left the
  server's window: list again, at once, unless the watch that ended so was
  opened from a list of this round (the version was gone as soon as it was
  listed: the backoff first, so that a server behind on its window, or a churn
  that outruns it, cannot make the loop list everything back to back);
- any other failure is logged as one line, counted, and retried after an
  exponential backoff; connection failures re-watch from the same version
  (the server answers 410 if it cannot serve it), an ERROR event relists.
  The backoff grows until a watch brings an event or outlasts
  ``SHORT_WATCH_S``; a list that succeeds does not reset it (an ``on_sync``
  that raises after every list is not listed for again at once).

A list in flight is bounded by the connection's timeouts; ``stop`` ends a
backoff wait at once and a blocked watch read by shutting its socket.

Memory: ``fields`` is a kept-fields table for the kind (``{top-level field:
keys kept}``, :mod:`objects.pruning`'s format, the snapshot loader's pruning),
applied to every object as it arrives (each list item as its page is decoded,
each watch event) before it is stored or handed on, so a cache of 30,000 pods
holds only what the component reads (``metadata.managedFields`` and most of
``status`` are dropped). ``store=False`` keeps no copy at all, for a component
whose handlers build their own index from the stream (the webhook's pod index,
kopf-style): ``get``/``list`` then refuse. ``indexers`` ``{name: key(obj)}`` keep
unique secondary indexes over the store (``by(name, key)``: the agent finds its
pods by uid there), so a component reads the informer instead of a second copy.

One object is that object's problem, as in client-go: a handler that raises for
one object is logged with its traceback and counted
(``hwaffinity_informer_object_errors_total{kind, reason="handler"}``), and the
watch goes on with the next event; so is a watch event whose object is not an
object (``reason="malformed_event"``). A handler that raised for an object after
a restart would raise again: ending the loop would only end the component. An
``on_sync`` that raises is counted (``reason="sync"``) and the list is made again
after the backoff (a component isolates its objects inside ``on_sync``, as the
webhook's pod index does). ``synced`` is set once the first list was stored
*and* ``on_sync`` returned.

``optional=True`` is for a kind an older server may not serve (policy/v1
PodDisruptionBudgets before 1.21): a 404 to the list is said once (info), the
cache stays empty and counts as synced, and the list is tried again every
``backoff_max``, quietly, until the server serves the kind.
"""
import builtins
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from tacker_hwaffinity.objects.jsontypes import JsonObject, JsonValue, Pruner
from tacker_hwaffinity.objects.pruning import pruner
from tacker_hwaffinity.kube.client import CONNECT_TIMEOUT_S, Connection, KubeError
from tacker_hwaffinity.kube.lists import PAGE_SIZE, api_error, list_json

if TYPE_CHECKING:   # imported where used: a component that counts makes one
    from prometheus_client import CollectorRegistry

# handler(event type, object): ADDED, MODIFIED or DELETED
EventHandler = Callable[[str, JsonObject], object]
# on_sync(objects): every object of a list, after it
SyncHandler = Callable[[list[JsonObject]], object]
# an indexer: an object's key in its index, or None to leave it out
IndexKey = Callable[[JsonObject], Hashable | None]
# a cached object's key: (namespace, "" for cluster-scoped kinds; name)
ObjectKey = tuple[str, Any]

WATCH_READ_MARGIN_S = 30   # read timeout beyond timeoutSeconds: a silent dead peer shows up
SHORT_WATCH_S = 1.0        # a watch ended sooner, with no event, is backed off like an error
STOP_POLL_S = 0.25         # how often the stop guard checks that run() has ended

_OBJECT_EVENTS = ("ADDED", "MODIFIED", "DELETED")


class _Gone(Exception):
    """The resourceVersion is too old for the server (410): list again."""


class _WatchError(Exception):
    """An ERROR event other than 410 ended the watch."""


class _Broken(Exception):
    """The connection failed in the middle of an open watch."""


class _SyncFailed(Exception):
    """``on_sync`` raised (logged and counted already): list again after the backoff."""


class InformerMetrics:
    """The informers' counters, registered in REGISTRY (None: counted, not exported);
    one instance serves every informer of a component (labelled by kind)."""

    def __init__(self, registry: "CollectorRegistry | None" = None) -> None:
        from prometheus_client import Counter
        self.object_errors = Counter(
            "hwaffinity_informer_object_errors", "Objects a handler or on_sync failed on, "
            "or watch events that were not objects, by kind and reason", ["kind", "reason"],
            registry=registry)


def _version(obj: JsonObject) -> Any:
    meta = obj.get("metadata")
    return meta.get("resourceVersion") if isinstance(meta, dict) else None


def _key(obj: JsonObject) -> ObjectKey:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    return (meta.get("namespace") or "", meta.get("name"))


class Informer:
    """List then watch one kind through LIST_CALL (a ``CoreV1Api``/``AppsV1Api``
    list method; bind a namespace with ``functools.partial``), calling
    ``handler(event_type, obj)`` for ADDED/MODIFIED/DELETED and
    ``on_sync(objects)`` after every list. KIND names the kind in messages and
    fills ``kind`` where the server leaves it out; WHAT says what is listed
    ("pods on node n1"). LOG is a ``logging.Logger``.

    Callbacks run on the thread of :meth:`run`, one at a time, after the cache
    was updated; an exception in one is logged with its traceback and counted
    in METRICS (an :class:`InformerMetrics`), and the loop goes on. FIELDS prunes every
    object before it is stored or handed on; STORE False keeps no cache (see
    the module docstring). ``synced``, ``relists`` (lists after the first),
    ``errors``, ``last_error`` and ``last_event_time`` (``time.monotonic()``
    of the last list, event or bookmark) are for health checks and metrics.
    """

    def __init__(self, conn: Connection, list_call: Callable[..., Any], kind: str, what: str,
                 handler: EventHandler, on_sync: SyncHandler | None = None,
                 field_selector: str | None = None, label_selector: str | None = None,
                 timeout_seconds: int = 300, backoff_initial: float = 0.5,
                 backoff_max: float = 30.0, log: logging.Logger | None = None,
                 fields: Mapping[str, Any] | None = None, store: bool = True,
                 optional: bool = False, indexers: Mapping[str, IndexKey] | None = None,
                 metrics: InformerMetrics | None = None) -> None:
        self.conn = conn
        self.list_call = list_call
        self.kind = kind
        self.what = what
        self.handler = handler
        self.on_sync = on_sync
        self.selectors = {k: v for k, v in (("field_selector", field_selector),
                                            ("label_selector", label_selector)) if v}
        self.timeout_seconds = int(timeout_seconds)
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.log = log or logging.getLogger(__name__)
        self.metrics = metrics or InformerMetrics()
        self.synced = threading.Event()
        self.relists = 0
        self.errors = 0
        self.last_error: str | None = None
        self.last_event_time: float | None = None
        self.resource_version: str | None = None
        self._prune: Pruner | None = pruner({kind: fields}) if fields else None
        self.store = store
        self.optional = optional
        self.served = True          # False while an optional kind gets 404
        self._cache: dict[ObjectKey, JsonObject] = {}
        self._indexers = dict(indexers or {})
        self._indexes: dict[str, dict[Hashable, JsonObject]] = {
            name: {} for name in self._indexers}
        self._lock = threading.Lock()
        self._response: Any = None     # the open watch's (urllib3's HTTPResponse)
        self._delay = backoff_initial

    # -- the cache -----------------------------------------------------------
    def _stored(self) -> None:
        if not self.store:
            raise RuntimeError("the %s informer keeps no store (store=False)" % self.kind)

    def get(self, namespace: str | None, name: str) -> JsonObject | None:
        """The cached object, or None (NAMESPACE None or "" for cluster-scoped kinds)."""
        self._stored()
        with self._lock:
            return self._cache.get((namespace or "", name))

    def list(self) -> list[JsonObject]:
        """Every cached object (a new list; the objects themselves are shared)."""
        self._stored()
        with self._lock:
            return list(self._cache.values())

    def by(self, index: str, key: Hashable) -> JsonObject | None:
        """The cached object whose INDEX (an ``indexers`` name) value is KEY, or None."""
        self._stored()
        with self._lock:
            return self._indexes[index].get(key)

    def keys(self, index: str) -> builtins.list[Hashable]:  # list: the method above
        """Every key of INDEX (a new list)."""
        self._stored()
        with self._lock:
            return list(self._indexes[index])

    def _reindex(self, old: JsonObject | None, new: JsonObject | None) -> None:
        """Move one object's index entries from OLD to NEW (either None). Under _lock."""
        for name, key_of in self._indexers.items():
            idx = self._indexes[name]
            if old is not None:
                k = key_of(old)
                if k is not None and idx.get(k) is old:
                    del idx[k]
            if new is not None:
                k = key_of(new)
                if k is not None:
                    idx[k] = new

    # -- the loop --------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """List and watch until STOP (a ``threading.Event``) is set."""
        done = threading.Event()
        guard = threading.Thread(target=self._guard, args=(stop, done), daemon=True,
                                 name="informer-stop-%s" % self.kind)
        guard.start()
        try:
            while not stop.is_set():
                relist = self._round(stop)
                if relist:
                    self.resource_version = None
        finally:
            done.set()

    def _round(self, stop: threading.Event) -> bool:
        """One list (when needed) and one watch; True when the next round must list."""
        started = time.monotonic()
        listed = self.resource_version is None
        try:
            if listed:
                self._list()
            if stop.is_set():
                return False
            if self._watch(stop) == 0 and time.monotonic() - started < SHORT_WATCH_S:
                self._sleep(stop)          # the server closes watches at once: do not spin
            else:
                self._delay = self.backoff_initial
            return False
        except _Gone as e:
            if stop.is_set():
                return True
            self.log.info("%s informer: resourceVersion %s expired (%s); listing %s again%s",
                          self.kind, self.resource_version, e, self.what,
                          " in %.1fs" % self._delay if listed else "")
            if listed:              # gone as soon as listed: back off, do not list again
                self._sleep(stop)   # back to back
            return True
        except KubeError as e:
            if not (self.optional and e.status == 404 and self.resource_version is None):
                return self._failed(e, stop)
            if self.served:
                self.served = False
                self.log.info("%s informer: the API server does not serve %s; read as none, "
                              "asked again every %.0fs", self.kind, self.what, self.backoff_max)
            self.synced.set()
            stop.wait(self.backoff_max)
            return True
        except Exception as e:  # noqa: BLE001 - every failure is retried, see below
            return self._failed(e, stop)

    def _failed(self, e: Exception, stop: threading.Event) -> bool:
        """Count and log failure E, back off; True when the next round must list."""
        if stop.is_set():
            return False
        self.errors += 1
        self.last_error = self._describe(e)
        self.log.warning("%s informer: %s; retrying in %.1fs",
                         self.kind, self.last_error, self._delay)
        self._sleep(stop)
        return isinstance(e, (_WatchError, _SyncFailed))

    def _sleep(self, stop: threading.Event) -> None:
        stop.wait(self._delay)
        self._delay = min(self._delay * 2, self.backoff_max)

    def _describe(self, e: Exception) -> str:
        """One line, no traceback, nothing from the request headers."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError
        if isinstance(e, (KubeError, _SyncFailed)):
            return str(e)
        if isinstance(e, _WatchError):
            return "API server %s: the watch of %s failed: %s" % (self.conn.where, self.what, e)
        if isinstance(e, _Broken):
            return "API server %s: the watch of %s broke off (%s)" % (
                self.conn.where, self.what, e)
        if isinstance(e, (ApiException, HTTPError, OSError)):
            return str(api_error(self.conn, "watch", self.what, e))
        text = (str(e).strip() or type(e).__name__).splitlines()[0]
        return "API server %s: cannot watch %s (%s: %s)" % (
            self.conn.where, self.what, type(e).__name__, text)

    def _list(self) -> None:
        items, version = list_json(self.conn, self.list_call, self.kind, self.what,
                                   PAGE_SIZE, each=self._prune, **self.selectors)
        if not version:
            raise KubeError("API server %s: the list of %s has no resourceVersion"
                            % (self.conn.where, self.what))
        with self._lock:
            self._cache = {_key(item): item for item in items} if self.store else {}
            self._indexes = {name: {} for name in self._indexers}
            for item in self._cache.values():
                self._reindex(None, item)
        self.resource_version = version
        self.served = True
        self.last_event_time = time.monotonic()
        if self.synced.is_set():
            self.relists += 1
        if self.on_sync is not None and not self._call(
                self.on_sync, items, what="on_sync after listing %d" % len(items),
                reason="sync"):
            raise _SyncFailed("on_sync after listing %d %s failed; listing again"
                              % (len(items), self.what))
        self.synced.set()

    def _watch(self, stop: threading.Event) -> int:
        """Read one watch to its end; the number of events it brought."""
        from kubernetes.client.exceptions import ApiException
        try:
            response = self.list_call(
                watch=True, resource_version=self.resource_version,
                allow_watch_bookmarks=True, timeout_seconds=self.timeout_seconds,
                _preload_content=False,
                _request_timeout=(CONNECT_TIMEOUT_S,
                                  self.timeout_seconds + WATCH_READ_MARGIN_S),
                **self.selectors)
        except ApiException as e:
            if e.status == 410:
                raise _Gone("HTTP 410") from None
            raise
        with self._lock:
            self._response = response
        seen = 0
        try:
            if stop.is_set():
                return seen
            for event in self._events(response):
                self._dispatch(event)
                if not seen:
                    self._delay = self.backoff_initial   # the watch works: a success
                seen += 1
            return seen
        finally:
            with self._lock:
                self._response = None
            response.close()
            response.release_conn()

    @staticmethod
    def _events(response: Any) -> Iterator[JsonValue]:
        """The decoded events of a watch response, one JSON document a line. Only each
        new chunk is searched for the end of a line, and a line's parts are joined once:
        an object of 1.5 MiB in chunks of 1 KiB costs the watch one pass, not 1,500."""
        from urllib3.exceptions import HTTPError
        parts = []          # the line read so far
        try:
            for chunk in response.stream(amt=None, decode_content=True):
                *lines, rest = chunk.split(b"\n")
                if lines:
                    parts.append(lines[0])
                    lines[0], parts = b"".join(parts), []
                if rest:
                    parts.append(rest)
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
        except (HTTPError, OSError) as e:
            text = (str(e).strip() or type(e).__name__).splitlines()[0]
            raise _Broken(text) from None

    def _dispatch(self, event: JsonValue) -> None:
        kind = event.get("type") if isinstance(event, dict) else None
        obj = event.get("object") if isinstance(event, dict) else None
        if not isinstance(obj, dict):
            self.metrics.object_errors.labels(self.kind, "malformed_event").inc()
            self.log.warning("%s informer: ignoring a watch event of type %r without an "
                             "object", self.kind, kind)
            return
        if kind == "ERROR":
            message = "HTTP %s: %s" % (obj.get("code"), obj.get("message") or obj.get("reason"))
            if obj.get("code") == 410:
                raise _Gone(message)
            raise _WatchError(message)
        version = _version(obj)
        self.last_event_time = time.monotonic()
        if kind == "BOOKMARK":
            if version:
                self.resource_version = version
            return
        if kind not in _OBJECT_EVENTS:
            self.log.warning("%s informer: ignoring a watch event of type %r", self.kind, kind)
            return
        if version:
            self.resource_version = version
        obj.setdefault("kind", self.kind)
        name = "%s %s" % (kind, "/".join(str(p) for p in _key(obj) if p))
        if self._call(self._store, kind, obj, what="storing " + name, reason="store"):
            self._call(self.handler, kind, obj, what="handler on " + name, reason="handler")

    def _store(self, kind: str, obj: JsonObject) -> None:
        """Prune OBJ and apply event KIND to the store."""
        if self._prune is not None:
            self._prune(obj)
        if self.store:
            with self._lock:
                old = self._cache.get(_key(obj))
                if kind == "DELETED":
                    self._cache.pop(_key(obj), None)
                    self._reindex(old, None)
                else:
                    self._cache[_key(obj)] = obj
                    self._reindex(old, obj)

    def _call(self, callback: Callable[..., object], *args: Any, what: str, reason: str
              ) -> bool:
        """CALLBACK(*ARGS); False when it raised (logged whole and counted by REASON)."""
        try:
            callback(*args)
        except Exception as e:
            self.metrics.object_errors.labels(self.kind, reason).inc()
            self.log.exception("%s informer: %s failed (%s); going on", self.kind, what,
                               type(e).__name__)
            return False
        return True

    def _guard(self, stop: threading.Event, done: threading.Event) -> None:
        """Unblock a watch read when STOP is set (ends with run())."""
        while not stop.wait(STOP_POLL_S):
            if done.is_set():
                return
        with self._lock:
            response = self._response
        conn = getattr(response, "connection", None) or getattr(response, "_connection", None)
        sock = getattr(conn, "sock", None)
        if sock is not None:
            try:
                socket.socket.shutdown(sock, socket.SHUT_RDWR)   # not SSLSocket's: no TLS state
            except OSError:
                pass
