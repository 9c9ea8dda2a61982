"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go does it.

The Python client ships only a ConfigMap lock, whose record Go electors cannot
read, so the Lease lock is written here, following client-go's
``tryAcquireOrRenew``: read the Lease (create it when missing); note the local
time whenever its spec changes; a Lease held by someone else counts as expired
only ``lease_duration`` after that local time (not after its ``renewTime``, so
clocks need not agree); replace it with the resourceVersion that was read, so
a concurrent writer gets 409 and exactly one wins.

A leader renews every ``retry_period``. Renewals time out so that a leader
whose renewals have failed for ``renew_deadline`` (shorter than
``lease_duration``) clears :attr:`is_leader` before any other elector can
consider the Lease expired: two electors never act at once. Each request of
a leader is bounded by what is left of that deadline.

Times are written as MicroTime strings with exactly six fractional digits:
the client would send datetimes through ``isoformat()``, which drops a zero
fraction, and the API server rejects those. Failed requests are one log line
each (no traceback, no credentials).
"""
import datetime
import json
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import cast

from tacker_hwaffinity.kube.client import Connection, KubeError
from tacker_hwaffinity.kube.lists import api_error
from tacker_hwaffinity.objects.jsontypes import JsonObject, ReadOnlyJson

JITTER = 1.2                 # client-go's JitterFactor: acquire retries wait 1-2.2 x retry_period
MICRO_TIME = "%Y-%m-%dT%H:%M:%S.%fZ"
MIN_REQUEST_S = 0.05         # a renewal with less time than this left is not sent

# what one attempt found
ACQUIRED, HELD, FAILED = "acquired", "held", "failed"


def micro_time(when: datetime.datetime | None = None) -> str:
    """WHEN (an aware datetime; a naive one is taken as UTC; default: now) as a
    MicroTime string: UTC, exactly six fractional digits, ``Z``."""
    if when is None:
        when = datetime.datetime.now(datetime.timezone.utc)
    elif when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.astimezone(datetime.timezone.utc).strftime(MICRO_TIME)


def validate_durations(lease_duration: float, renew_deadline: float, retry_period: float
                       ) -> None:
    """Raise ValueError unless leaseDuration > renewDeadline > 1.2 x retryPeriod > 0."""
    if not retry_period > 0:
        raise ValueError("retry_period must be greater than zero (got %r)" % (retry_period,))
    if not renew_deadline > JITTER * retry_period:
        raise ValueError("renew_deadline (%r) must be greater than %.1f x retry_period (%r)"
                         % (renew_deadline, JITTER, retry_period))
    if not lease_duration > renew_deadline:
        raise ValueError("lease_duration (%r) must be greater than renew_deadline (%r)"
                         % (lease_duration, renew_deadline))


class LeaderElector:
    """Elect one leader among the electors sharing the Lease NAMESPACE/NAME.

    IDENTITY names this elector (unique among them: the pod name, say).
    ``on_started()`` runs in a new daemon thread each time this elector
    becomes leader; the work it starts must stop when :attr:`is_leader` is
    cleared or ``on_stopped()`` is called (on the thread of :meth:`run`, once
    per term, before a release). An exception in either is logged with its
    traceback (a bug) and election carries on. CLOCK is the monotonic clock
    that measures expiry and deadlines.

    ``is_leader`` (``threading.Event``), ``holder`` (the holderIdentity last
    seen), ``transitions`` (the leaseTransitions last seen) and
    ``last_error`` (one line, or None) are for callers and health checks.
    ``is_leader`` may be stale by up to a renewal; before a side effect, ask
    :meth:`confirm`.
    """

    def __init__(self, conn: Connection, namespace: str, name: str, identity: str,
                 lease_duration: float = 15.0, renew_deadline: float = 10.0,
                 retry_period: float = 2.0, on_started: Callable[[], object] | None = None,
                 on_stopped: Callable[[], object] | None = None,
                 log: logging.Logger | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        validate_durations(lease_duration, renew_deadline, retry_period)
        if not identity:
            raise ValueError("the identity of a leader elector must not be empty")
        if not namespace or not name:
            raise ValueError("the Lease needs a namespace and a name")
        self.conn = conn
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = float(lease_duration)
        self.renew_deadline = float(renew_deadline)
        self.retry_period = float(retry_period)
        self.on_started = on_started
        self.on_stopped = on_stopped
        self.log = log or logging.getLogger(__name__)
        self.clock = clock
        self.is_leader = threading.Event()
        self.holder: str | None = None
        self.transitions: int | None = None
        self.last_error: str | None = None
        # the Lease as last read or written (its resourceVersion)
        self._lease: JsonObject | None = None
        self._observed: ReadOnlyJson | None = None  # its spec
        self._observed_at: float | None = None      # clock() when that spec was first seen
        # clock() at the start of the last successful attempt
        self._held_since: float | None = None

    @property
    def what(self) -> str:
        return "lease %s/%s" % (self.namespace, self.name)

    # -- the loop --------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Acquire, lead, renew, until STOP (a ``threading.Event``) is set; a term
        that ends because renewals failed goes back to acquiring. On STOP a
        leader steps down and releases the Lease, so another elector need not
        wait for it to expire."""
        try:
            while not stop.is_set():
                if not self._acquire(stop):
                    return
                self.is_leader.set()
                self.log.info("%s: %s is now the leader (transitions %s)",
                              self.what, self.identity, self.transitions)
                if self.on_started is not None:
                    threading.Thread(target=self._callback, args=(self.on_started, "on_started"),
                                     name="leader-%s" % self.name, daemon=True).start()
                stopped = self._renew(stop)
                self._step_down()
                if stopped:
                    self._release()
                    return
        finally:
            self._step_down()         # whatever ended run(), this elector no longer leads

    def _step_down(self) -> None:
        if self.is_leader.is_set():
            self.is_leader.clear()
            if self.on_stopped is not None:
                self._callback(self.on_stopped, "on_stopped")

    def _acquire(self, stop: threading.Event) -> bool:
        """Try now, then every retry_period (with jitter); False once STOP is set."""
        while not stop.is_set():
            if self._try(self.renew_deadline) == ACQUIRED:
                return True
            stop.wait(self.retry_period * (1 + random.random() * JITTER))
        return False

    def _renew(self, stop: threading.Event) -> bool:
        """Renew every retry_period; True when STOP ended the term, False when
        renewals failed until renew_deadline after the last success (or the
        Lease turned out to be someone else's)."""
        due = self._term() + self.retry_period
        while True:
            if stop.wait(max(0.0, due - self.clock())):
                return True
            started = self.clock()
            left = self._term() + self.renew_deadline - started
            if left < MIN_REQUEST_S:
                self.log.warning("%s: %s could not renew for %.1fs; stepping down", self.what,
                                 self.identity, self.renew_deadline)
                return False
            result = self._try(left)
            if result == ACQUIRED:          # the term now runs from `started`
                due = self._term() + self.retry_period
            elif result == HELD:
                self.log.warning("%s: %s lost the lease to %s; stepping down", self.what,
                                 self.identity, self.holder)
                return False
            else:
                due = min(self.clock() + self.retry_period,
                          self._term() + self.renew_deadline)

    def _term(self) -> float:
        """``_held_since`` while this elector leads (``_renew`` runs only then)."""
        return cast(float, self._held_since)

    # -- before each side effect ---------------------------------------------------
    def confirm(self) -> bool:
        """True when this elector may act now; called right before each side effect
        (a relabel, an eviction, an Event), from any thread. Both checks must pass:

        * local: :attr:`is_leader` is set and the last successful renewal started
          less than ``renew_deadline`` ago by the monotonic clock. Another elector
          takes the Lease only ``lease_duration`` after it saw that renewal, so an
          action confirmed now lands before anyone else may act: the difference
          (``lease_duration - renew_deadline``, 5 s by default) is the time left
          for the action's own request. A leader that was frozen (SIGSTOP, a paused
          VM, a starved process) fails here as soon as it runs again, even before
          its renewal thread notices;
        * remote: a fresh GET of the Lease, answered before that deadline, names
          this elector as the holder. This catches what the local clock cannot: a
          Lease another identity holds anyway (written by hand, deleted and
          recreated, taken by an elector whose clock runs fast).

        Any error is a no (one log line). Nothing of the elector's own state is
        changed: the renewal loop decides the term.
        """
        held = self._held_since
        if not self.is_leader.is_set() or held is None:
            return False
        deadline = held + self.renew_deadline
        left = deadline - self.clock()
        if left < MIN_REQUEST_S:
            return False
        try:
            lease = self._send("GET", self._path(), None, left, "get")
        except KubeError as e:
            self.log.warning("%s: %s cannot confirm it holds it: %s", self.what,
                             self.identity, e)
            return False
        holder = (lease.get("spec") or {}).get("holderIdentity") or ""
        if holder != self.identity:
            self.log.warning("%s: held by %s, not %s", self.what, holder or "nobody",
                             self.identity)
            return False
        return self.is_leader.is_set() and self.clock() < deadline

    def _callback(self, callback: Callable[[], object], what: str) -> None:
        try:
            callback()
        except Exception:
            self.log.exception("%s: %s of %s failed", self.what, what, self.identity)

    # -- one attempt -------------------------------------------------------------
    def _try(self, timeout: float) -> str:
        """client-go's tryAcquireOrRenew: ACQUIRED (this elector holds the Lease
        now), HELD (someone else does, unexpired) or FAILED (an error or a lost
        race)."""
        try:
            return self._attempt(timeout)
        except Exception as e:  # noqa: BLE001 - one attempt failed; the election goes on
            text = (str(e).strip() or type(e).__name__).splitlines()[0]
            return self._failed(KubeError("API server %s: cannot use %s (%s: %s)" % (
                self.conn.where, self.what, type(e).__name__, text)))

    def _attempt(self, timeout: float) -> str:
        started = self.clock()
        now = micro_time()
        seconds = max(1, int(self.lease_duration))   # client-go truncates to whole seconds
        try:
            lease = self._send("GET", self._path(), None, timeout, "get")
        except KubeError as e:
            if e.status != 404:
                return self._failed(e)
            lease = None
        if lease is None:
            spec: JsonObject = {"holderIdentity": self.identity, "leaseDurationSeconds": seconds,
                                "acquireTime": now, "renewTime": now, "leaseTransitions": 0}
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": spec}
            left = timeout - (self.clock() - started)
            try:
                created = self._send("POST", self._path(collection=True), body, left, "create")
            except KubeError as e:
                return self._failed(e)
            return self._took(created, started)
        spec = lease.get("spec") or {}
        if spec != self._observed:
            self._observed, self._observed_at = spec, self.clock()
        self._lease = lease
        self.holder = spec.get("holderIdentity") or ""
        self.transitions = transitions = spec.get("leaseTransitions") or 0
        mine = self.holder == self.identity
        # (_observed_at: set above at the first spec, which differs from None)
        if self.holder and not mine and \
                cast(float, self._observed_at) + self.lease_duration > started:
            return HELD
        record = {"holderIdentity": self.identity, "leaseDurationSeconds": seconds,
                  "acquireTime": (spec.get("acquireTime") or now) if mine else now,
                  "renewTime": now,
                  "leaseTransitions": transitions if mine else transitions + 1}
        left = timeout - (self.clock() - started)
        if left < MIN_REQUEST_S:
            return FAILED               # no time left to write before the deadline
        try:
            updated = self._send("PUT", self._path(), dict(lease, spec=record), left, "update")
        except KubeError as e:
            return self._failed(e)
        return self._took(updated, started)

    def _took(self, lease: JsonObject, started: float) -> str:
        self._lease = lease
        self._observed, self._observed_at = lease.get("spec") or {}, self.clock()
        self.holder = self._observed.get("holderIdentity") or ""
        self.transitions = self._observed.get("leaseTransitions") or 0
        self._held_since = started
        return ACQUIRED

    def _failed(self, e: KubeError) -> str:
        if e.status == 409:      # another elector wrote first: not an error
            self.log.info("%s: %s lost a race to write it; trying again", self.what,
                          self.identity)
        else:
            self.last_error = str(e)
            self.log.warning("%s: %s", self.what, self.last_error)
        return FAILED

    def _release(self) -> None:
        """Hand the Lease back (holderIdentity "", leaseDurationSeconds 1) when
        this elector holds it as last seen; a 409 means it no longer does."""
        if self._lease is None or self.holder != self.identity:
            return
        now = micro_time()
        record = {"holderIdentity": "", "leaseDurationSeconds": 1,
                  "acquireTime": now, "renewTime": now,
                  "leaseTransitions": self.transitions or 0}
        try:
            released = self._send("PUT", self._path(), dict(self._lease, spec=record),
                                  self.renew_deadline, "update")
        except KubeError as e:
            self._failed(e)
            return
        self._lease = released
        self._observed, self._observed_at = released.get("spec") or {}, self.clock()
        self.holder = ""
        self.log.info("%s: %s released it", self.what, self.identity)

    # -- requests ------------------------------------------------------------------
    def _path(self, collection: bool = False) -> str:
        path = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % self.namespace
        return path if collection else "%s/%s" % (path, self.name)

    def _send(self, method: str, path: str, body: JsonObject | None, timeout: float,
              verb: str) -> JsonObject:
        """One request, its JSON answer; KubeError on failure. TIMEOUT bounds the
        whole request (a leader must hear back before its deadline)."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError
        limit = max(MIN_REQUEST_S, timeout)      # a number: the client makes it a total timeout
        api = self.conn.api_client
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            if hasattr(api, "param_serialize"):
                # Clients generated with pydantic models (37.x) would turn a dict
                # body into a V1Lease and its times into isoformat() strings, which
                # drop a zero fraction: send the dict as it is.
                request = api.param_serialize(method=method, resource_path=path,
                                              header_params=headers, body=body,
                                              auth_settings=["BearerToken"])
                response = api.call_api(*request, _request_timeout=limit)
                response.read()
                if not 200 <= response.status <= 299:
                    raise ApiException(http_resp=response)
            else:                   # older clients send a dict body unchanged
                response = api.call_api(path, method, header_params=headers, body=body,
                                        auth_settings=["BearerToken"],
                                        _return_http_data_only=True, _preload_content=False,
                                        _request_timeout=limit)
            answer: JsonObject = json.loads(response.data)
            return answer
        except (ApiException, HTTPError, OSError) as e:
            raise api_error(self.conn, verb, self.what, e) from None
        except ValueError as e:
            raise KubeError("API server %s: the answer to %s %s is not JSON (%s)"
                            % (self.conn.where, verb, self.what, e)) from None
