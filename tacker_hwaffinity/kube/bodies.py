"""What large request bodies share in :class:`kube.serve.HealthServer`: the memory
they take while they arrive (a :class:`Lane`, a byte budget) and their handling,
one at a time (:class:`Handling`).

Receiving and handling are apart, so that no client can hold what the others need:

* a body over ``serve.BIG_BODY`` takes room in a lane for its whole length once its
  first byte has arrived (a client that declares a length and sends nothing holds
  no room, only its connection, which the read timeout and the cap bound). When a
  newcomer finds no room, the reservation whose client is furthest behind a rate
  of :data:`MIN_RATE` after a grace of :data:`GRACE` seconds (the slowest one first)
  is cut: its connection is shut down and counted
  (``hwaffinity_http_connections_cut{reason="slow_body"}``). A reservation is thus
  held against a waiting newcomer at most ``GRACE + its length / MIN_RATE`` (1 s for
  6 MiB), however its client paces itself. Waiters take room smallest first (a
  larger one never blocks a smaller one that fits), each for at most
  :data:`ROOM_WAIT` seconds (then 503, counted as ``busy``);
* requests on a connection whose client certificate was verified have a lane of
  their own: no anonymous client can take its room;
* handling (the nesting check, the decoding and the handler: our own CPU, and the
  memory of the decoded body) takes the one :class:`Handling` slot once the whole
  body has arrived: verified requests first, then in order of arrival, each waiting
  at most :data:`HANDLE_WAIT` seconds. The room a body took is given back as soon
  as it is handed over to its handler.

What that may hold, summed against the webhook's memory limit by
``tests/kube/test_serve_memory_budget.py``: the lanes' room (:data:`ANONYMOUS_BODIES`
of the largest route body, :data:`VERIFIED_BODIES` of the largest body of a route
that answers only client certificates), plus the one body being handled: handed
over as bytes, and decoded.
"""
import collections
import itertools
import socket
import threading
import time
from collections.abc import Callable

ANONYMOUS_BODIES = 2        # the anonymous lane: this many of the largest route body
VERIFIED_BODIES = 1         # the verified lane: this many of the largest client_cert body
MIN_RATE = 8 << 20          # bytes a second: under it, a body's client is behind
GRACE = 0.25                # seconds a reservation is never behind, from its grant
ROOM_WAIT = 1.5             # seconds a body waits for room in its lane at most: past the
                            # longest a reservation is held against it (GRACE + 6 MiB / MIN_RATE)
HANDLE_WAIT = 3.0           # seconds a received body waits for the handling slot at most


class Reservation:
    """LENGTH bytes of a lane's room for the body arriving on SOCK; the reader keeps
    ``received`` up to date."""

    __slots__ = ("sock", "length", "received", "since", "cut")

    def __init__(self, sock: socket.socket, length: int, now: float) -> None:
        self.sock = sock
        self.length = length
        self.received = 0
        self.since = now
        self.cut = False

    def behind_at(self) -> float:
        """When its client falls behind MIN_RATE if it sends nothing more."""
        return self.since + GRACE + self.received / MIN_RATE

    def rate(self, now: float) -> float:
        return self.received / max(now - self.since, 1e-6)


class Lane:
    """CAPACITY bytes of room for bodies in flight; CUT(sock) shuts down the connection
    of a reservation that is behind (and counts it)."""

    def __init__(self, capacity: int, cut: Callable[[socket.socket], None]) -> None:
        self.capacity = capacity
        self._cut = cut
        self._changed = threading.Condition()
        self._held: list[Reservation] = []      # granted, not yet given back
        self._waiting: list[tuple[int, int]] = []   # (length, arrival) of those waiting for room
        self._arrivals = itertools.count()

    @property
    def used(self) -> int:
        return sum(r.length for r in self._held)

    def reserve(self, sock: socket.socket, length: int) -> Reservation | None:
        """A :class:`Reservation` of LENGTH bytes for SOCK, or None after ROOM_WAIT
        seconds without room (or when LENGTH is over the capacity)."""
        if length > self.capacity:
            return None
        deadline = time.monotonic() + ROOM_WAIT
        me = (length, next(self._arrivals))
        with self._changed:
            self._waiting.append(me)
            try:
                while True:
                    now = time.monotonic()
                    if min(self._waiting) == me:
                        if self.used + length <= self.capacity:
                            reservation = Reservation(sock, length, now)
                            self._held.append(reservation)
                            return reservation
                        self._make_room(length, now)
                        if self.used + length <= self.capacity:
                            continue
                    if now >= deadline:
                        return None
                    self._changed.wait(min(deadline, self._next_behind(now)) - now)
            finally:
                self._waiting.remove(me)
                self._changed.notify_all()

    def give_back(self, reservation: Reservation) -> None:
        with self._changed:
            self._held.remove(reservation)
            self._changed.notify_all()

    def _make_room(self, length: int, now: float) -> None:
        """Cut reservations that are behind, slowest first, until LENGTH bytes fit once
        their readers give them back (or none is left behind)."""
        short = self.used + length - self.capacity - sum(
            r.length for r in self._held if r.cut)
        behind = sorted((r for r in self._held if _cuttable(r) and r.behind_at() <= now),
                        key=lambda r: (r.rate(now), r.since))
        for reservation in behind:
            if short <= 0:
                return
            reservation.cut = True
            short -= reservation.length
            self._cut(reservation.sock)

    def _next_behind(self, now: float) -> float:
        """The next moment a held reservation may fall behind (at the latest a second
        away: a reservation given back wakes the waiters by itself)."""
        return min([t for t in (r.behind_at() for r in self._held if _cuttable(r))
                    if t > now] + [now + 1.0])


def _cuttable(reservation: Reservation) -> bool:
    """Whether RESERVATION waits for its client: not cut yet, its body not all here."""
    return not reservation.cut and reservation.received < reservation.length


class Handling:
    """The one slot for handling a large body: verified requests first, then the
    others, each in order of arrival."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._busy = False
        # verified, anonymous: a token per request waiting
        self._queues: tuple[collections.deque[object], collections.deque[object]] = (
            collections.deque(), collections.deque())

    def take(self, verified: bool) -> bool:
        """Wait for the slot at most HANDLE_WAIT seconds; whether it was taken."""
        deadline = time.monotonic() + HANDLE_WAIT
        queue = self._queues[0 if verified else 1]
        me = object()
        with self._changed:
            queue.append(me)
            try:
                while self._busy or self._first() is not me:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._changed.wait(left)
                self._busy = True
                return True
            finally:
                queue.remove(me)
                self._changed.notify_all()

    def give_back(self) -> None:
        with self._changed:
            self._busy = False
            self._changed.notify_all()

    def _first(self) -> object | None:
        return next((q[0] for q in self._queues if q), None)
