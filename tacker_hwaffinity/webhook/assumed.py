"""Assume / confirm: pods the extender let through, until the watch shows where they went.

The extender has no bind verb, so it never learns where kube-scheduler put a pod.
``add(rec, verified)`` records a pod that just passed the filter as *pending* (node
unknown). The pod watch *confirms* it (``confirm``): when the pod shows up with
``spec.nodeName`` it becomes an ordinary bound pod and the record goes; the record also
goes when the pod is deleted, turns Succeeded/Failed, or is older than ``ttl``
(kube-scheduler failed to bind it, or a later extender rejected it; its next attempt
assumes it again).

What one ``/filter`` caller can do with records is bounded (``doc/webhook.md``):

- a record is *verified* once the watch shows a pod of that name and uid, unbound; only
  verified records delay a filter (a forged pod, that no watch ever shows, delays none);
- a record delays filters for at most one wait: the first filter that waits for it sets
  its ``until`` (that filter's deadline), and no filter waits for it after that;
- at most ``max_records`` records exist: a new one drops the oldest unverified record,
  else the oldest (counted in ``dropped`` with the reason ``cap``).

``wait(key, relevant, timeout)`` blocks (bounded by TIMEOUT) until no verified pending
record that ``relevant(pending record)`` calls relevant, and that was not waited for once
already, is left, and returns how many remain. Every method is called with the pod
index's lock held (``Condition`` on that lock).
"""
import collections
import threading
import time
from collections.abc import Callable, Iterator, KeysView
from typing import TYPE_CHECKING

from prometheus_client import Counter

if TYPE_CHECKING:   # podcache imports this module: its record type, for annotations only
    from tacker_hwaffinity.webhook.podcache import PodRecord

MAX_PENDING = 1024       # pending records at most; kube-scheduler binds in well under 1 s


class Pending:
    """One pending record: the PodRecord, when it was assumed (the cache's clock), whether
    the watch showed that pod (``verified``), and the ``time.monotonic()`` after which no
    filter waits for it (``until``; None until a filter first waits for it)."""

    __slots__ = ("rec", "at", "verified", "until")

    def __init__(self, rec: "PodRecord", at: float, verified: bool) -> None:
        self.rec, self.at, self.verified = rec, at, verified
        self.until: float | None = None


class Assumed:
    """Pending pod records by key, oldest first. LOCK: the pod index's lock; CLOCK:
    seconds, monotonic; TTL: seconds a record lives unconfirmed; DROPPED: a prometheus
    Counter labelled by reason (``cap``, ``expired``)."""

    def __init__(self, lock: threading.RLock, clock: Callable[[], float], ttl: float,
                 dropped: Counter, max_records: int = MAX_PENDING) -> None:
        self.cond = threading.Condition(lock)
        self.clock, self.ttl, self.dropped = clock, ttl, dropped
        self.max_records = max_records
        self._records: collections.OrderedDict[str, Pending] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, key: str) -> bool:
        return key in self._records

    def keys(self) -> KeysView[str]:
        return self._records.keys()

    def records(self) -> Iterator[tuple[str, "PodRecord"]]:
        """(key, PodRecord) of every verified pending record, oldest first."""
        return ((key, p.rec) for key, p in self._records.items() if p.verified)

    def add(self, rec: "PodRecord", verified: bool) -> None:
        """Record REC as pending; VERIFIED: the watch has shown that pod already."""
        self.expire()
        self._records.pop(rec.key, None)
        if len(self._records) >= self.max_records:
            oldest = next((k for k, p in self._records.items() if not p.verified),
                          next(iter(self._records)))
            del self._records[oldest]
            self.dropped.labels("cap").inc()
        self._records[rec.key] = Pending(rec, self.clock(), verified)

    def verify(self, key: str, uid: str | None) -> None:
        """The watch shows pod KEY (of UID) unbound: its record, if any, is a real pod's."""
        got = self._records.get(key)
        if got is not None and got.rec.uid == uid:
            got.verified = True

    def confirm(self, key: str, uid: str | None = None) -> None:
        """The watch saw pod KEY bound, terminal or deleted (a deletion carries UID: a
        record of another pod of that name stays)."""
        got = self._records.get(key)
        if got is None or (uid and got.rec.uid and got.rec.uid != uid):
            return
        del self._records[key]
        self.cond.notify_all()

    def expire(self) -> None:
        now = self.clock()
        dropped = False
        while self._records:
            key, p = next(iter(self._records.items()))
            if now - p.at < self.ttl:
                break
            del self._records[key]
            self.dropped.labels("expired").inc()
            dropped = True
        if dropped:
            self.cond.notify_all()

    def wait(self, key: str, relevant: Callable[["PodRecord"], bool], timeout: float) -> int:
        """Block until no verified pending record other than KEY's that RELEVANT(record)
        accepts, and that no filter waited for already, is left, at most TIMEOUT seconds;
        return how many remain."""
        start = time.monotonic()
        deadline = start + timeout
        with self.cond:
            while True:
                self.expire()
                left = [p for k, p in self._records.items()
                        if k != key and p.verified and (p.until is None or p.until > start)
                        and relevant(p.rec)]
                now = time.monotonic()
                waiting = [p for p in left if p.until is None or p.until > now]
                if not waiting or now >= deadline:
                    return len(left)
                for p in waiting:
                    if p.until is None:
                        p.until = deadline
                to_expiry = min(p.at for p in waiting) + self.ttl - self.clock()
                wake = min(deadline, min(p.until for p in waiting if p.until is not None)) - now
                self.cond.wait(max(min(wake, to_expiry), 0.001))
