"""The open connections of :class:`kube.serve.HealthServer`: how many, and how long
each may keep the server waiting.

A connection is either *waiting* (for a TLS handshake, for the next request of a
kept-alive connection, for the rest of a request's headers and body) or *busy*
(its request is being answered). A waiting connection has a deadline; the serving
loop calls :meth:`Connections.reap` a few times a second and shuts down those past
it, so a client that trickles a byte now and then (slowloris) is gone after the read
timeout however it paces itself. At the cap, a new connection takes the place of the
waiting connection that has waited longest: idle or slow clients can never keep a
real one out, and a busy connection (ours to finish) is never cut. A connection
whose large body arrives too slowly while another needs its room is cut too
(:meth:`Connections.cut`, decided by :mod:`kube.bodies`).

Shutting a socket down from another thread is safe (``shutdown(2)``, never
``close``): the connection's own thread sees end of file and closes it.
"""
import socket
from typing import Any
import threading
import time

WAITING, BUSY, CLOSING = "waiting", "busy", "closing"


class Connections:
    """The open connections, each WAITING, BUSY or CLOSING (the module's docstring)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        # socket -> [state, deadline (None while busy), since]
        self._table: dict[socket.socket, list[Any]] = {}
        self.evicted = 0            # shut down to make room for a new one
        self.expired = 0            # shut down at their deadline
        self.slow = 0               # shut down for sending a large body too slowly

    def __len__(self) -> int:
        return len(self._table)

    def add(self, sock: socket.socket, timeout: float) -> bool:
        """Register SOCK (just accepted), waiting at most TIMEOUT seconds; at the cap,
        shut the longest-waiting one down first. False when every connection is busy
        (the caller closes SOCK)."""
        with self._lock:
            live = [(entry[2], s) for s, entry in self._table.items() if entry[0] != CLOSING]
            if len(live) >= self.limit:
                waiting = [(since, s) for since, s in live
                           if self._table[s][0] == WAITING]
                if not waiting:
                    return False
                self._shut(min(waiting, key=lambda w: w[0])[1])
                self.evicted += 1
            now = time.monotonic()
            self._table[sock] = [WAITING, now + timeout, now]
        return True

    def waiting(self, sock: socket.socket, timeout: float) -> None:
        """SOCK now waits for its client, at most TIMEOUT seconds from now."""
        self._set(sock, WAITING, timeout)

    def busy(self, sock: socket.socket) -> None:
        """SOCK's request is read: no deadline, not to be cut for another."""
        self._set(sock, BUSY, None)

    def remove(self, sock: socket.socket) -> None:
        with self._lock:
            self._table.pop(sock, None)

    def reap(self) -> None:
        """Shut down the waiting connections past their deadline."""
        now = time.monotonic()
        with self._lock:
            late = [s for s, (state, deadline, _) in self._table.items()
                    if state == WAITING and deadline < now]
            for s in late:
                self._shut(s)
            self.expired += len(late)

    def cut(self, sock: socket.socket) -> None:
        """Shut SOCK down for another's sake: its large body arrives too slowly while
        another waits for its room (:mod:`kube.bodies`)."""
        with self._lock:
            entry = self._table.get(sock)
            if entry is not None and entry[0] != CLOSING:
                self._shut(sock)
                self.slow += 1

    def shut_all(self) -> None:
        with self._lock:
            for s in list(self._table):
                self._shut(s)

    def _set(self, sock: socket.socket, state: str, timeout: float | None) -> None:
        now = time.monotonic()
        with self._lock:
            entry = self._table.get(sock)
            if entry is not None and entry[0] != CLOSING:
                entry[:] = [state, None if timeout is None else now + timeout, now]

    def _shut(self, sock: socket.socket) -> None:
        self._table[sock][0] = CLOSING
        try:
            # socket.socket's own shutdown, also for an SSLSocket (whose override
            # would drop its SSL object under the thread reading from it)
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except TypeError:
            # not a socket.socket: eventlet's GreenSocket, where a process is patched
            # (the test suite's, after the Tacker tests)
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        except OSError:
            pass
