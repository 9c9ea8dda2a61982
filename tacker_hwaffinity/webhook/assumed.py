"""Assume / confirm: pods the extender let through, until the watch shows where they went.

The extender has no bind verb, so it never learns where kube-scheduler put a pod.
``add(rec)`` records a pod that just passed the filter as *pending* (node unknown).
The pod watch *confirms* it (``confirm``): when the pod shows up with ``spec.nodeName``
it becomes an ordinary bound pod and the record goes; the record also goes when the
pod is deleted, turns Succeeded/Failed, or is older than ``ttl`` (kube-scheduler failed
to bind it, or a later extender rejected it; its next attempt assumes it again).

``wait(rec, relevant, timeout)`` blocks (bounded by TIMEOUT) until no pending record
that ``relevant(pending record)`` calls relevant is left, and returns how many remain.
Every method is called with the pod index's lock held (``Condition`` on that lock).
See ``doc/webhook.md``.
"""
import collections
import threading
import time


class Assumed:
    """Pending pod records by key, oldest first. LOCK: the pod index's lock; CLOCK:
    seconds, monotonic; TTL: seconds a record lives unconfirmed."""

    def __init__(self, lock, clock, ttl):
        self.cond = threading.Condition(lock)
        self.clock, self.ttl = clock, ttl
        self._records = collections.OrderedDict()   # key -> (PodRecord, assumed at)

    def __len__(self):
        return len(self._records)

    def __contains__(self, key):
        return key in self._records

    def keys(self):
        return self._records.keys()

    def records(self):
        """(key, PodRecord) of every pending record, oldest first."""
        return ((key, rec) for key, (rec, _at) in self._records.items())

    def add(self, rec):
        self.expire()
        self._records.pop(rec.key, None)
        self._records[rec.key] = (rec, self.clock())

    def confirm(self, key, uid=None):
        """The watch saw pod KEY bound, terminal or deleted (a deletion carries UID: a
        record of another pod of that name stays)."""
        got = self._records.get(key)
        if got is None or (uid and got[0].uid and got[0].uid != uid):
            return
        del self._records[key]
        self.cond.notify_all()

    def expire(self):
        now = self.clock()
        dropped = False
        while self._records:
            key, (_rec, at) = next(iter(self._records.items()))
            if now - at < self.ttl:
                break
            del self._records[key]
            dropped = True
        if dropped:
            self.cond.notify_all()

    def wait(self, key, relevant, timeout):
        """Block until no pending record other than KEY's that RELEVANT(record) accepts
        is left, at most TIMEOUT seconds; return how many remain."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                self.expire()
                left = [at for k, (p, at) in self._records.items()
                        if k != key and relevant(p)]
                remaining = deadline - time.monotonic()
                if not left or remaining <= 0:
                    return len(left)
                to_expiry = min(left) + self.ttl - self.clock()
                self.cond.wait(max(min(remaining, to_expiry), 0.001))
