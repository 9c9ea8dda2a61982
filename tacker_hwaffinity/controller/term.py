"""The leader's term: a side effect (a relabel, an eviction, an Event) only while the
Lease is confirmed, and a term that ends waits for the side effect in flight."""
import contextlib
import threading
from collections.abc import Callable, Iterator


class NotLeading(Exception):
    """The lease was not confirmed before a side effect: the tick is abandoned."""


class Term:
    """LEADING: confirms the lease right before each side effect (None: no election,
    this is the only instance). STALE: the term ended (set under LOCK, once no side
    effect is in flight); no side effect until the next tick starts a new one."""

    def __init__(self, leading: Callable[[], bool] | None = None) -> None:
        self.leading = leading
        self.stale = False
        self.lock = threading.Lock()    # held for the length of one side effect

    @contextlib.contextmanager
    def acting(self, what: str) -> Iterator[None]:
        """Do WHAT (one side effect, the body) only if the lease is confirmed now;
        raises NotLeading otherwise."""
        with self.lock:
            if self.stale or (self.leading is not None and not self.leading()):
                raise NotLeading(what)
            yield

    def end(self, meanwhile: Callable[[], None] | None = None) -> None:
        """The term ended: returns once no side effect is in flight, and none starts
        until ``begin``; MEANWHILE runs while none can."""
        with self.lock:
            self.stale = True
            if meanwhile is not None:
                meanwhile()

    def begin(self) -> None:
        """A new term: side effects may start again (each still confirms the lease)."""
        self.stale = False
