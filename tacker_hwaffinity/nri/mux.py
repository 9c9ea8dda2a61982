"""NRI's multiplexed connection: several byte streams over the one unix socket.

Each chunk on the socket is ``connection id (u32 BE) | length (u32 BE) | bytes``
(containerd/nri ``pkg/net/multiplex``). Connection 1 carries the plugin's
service (the runtime is the ttrpc client), connection 2 the runtime's service
(the plugin is the client). One thread reads the socket and hands each chunk to
the sink of its connection; writers share a lock so chunks never interleave. A
write the runtime takes nothing of for ``SEND_STALL_S`` (it stopped reading) closes
the connection, so no writer holds that lock longer than twice that (the part of a
write the kernel took before the stall, then the stall) once the runtime stops.
"""
import socket
import struct
import threading

from tacker_hwaffinity.nri.ttrpc import HEADER_LEN, MAX_DATA

PLUGIN_CONN, RUNTIME_CONN = 1, 2
CHUNK = struct.Struct(">II")
MAX_CHUNK = HEADER_LEN + MAX_DATA
SEND_STALL_S = 2.5      # the longest one send() waits for the runtime to take bytes


class MuxError(Exception):
    pass


class Mux:
    """SOCK multiplexed: ``sinks[conn id](bytes)`` for what arrives, ``send`` to write.
    ``on_close(error or None)`` is called once, from the reader, when the socket ends."""

    def __init__(self, sock, sinks, on_close):
        self.sock = sock
        # a blocking socket whose sends alone time out (SO_SNDTIMEO): reads wait for the
        # runtime's next request however long it takes, a send SEND_STALL_S at most
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack(
            "ll", int(SEND_STALL_S), int(SEND_STALL_S % 1 * 1e6)))
        self.sinks = dict(sinks)
        self.on_close = on_close
        self._wlock = threading.Lock()
        self._closed = threading.Event()
        self.thread = threading.Thread(target=self._read, name="nri-mux", daemon=True)

    def start(self):
        self.thread.start()

    @property
    def closed(self):
        return self._closed.is_set()

    def send(self, conn_id, data):
        """Write DATA on connection CONN_ID whole; MuxError (and the connection closed)
        when the socket fails or the runtime takes nothing for SEND_STALL_S."""
        view = memoryview(data)
        with self._wlock:
            if self._closed.is_set():
                raise MuxError("the NRI connection is closed")
            try:
                while True:
                    part = view[:MAX_CHUNK]
                    self.sock.sendall(CHUNK.pack(conn_id, len(part)) + bytes(part))
                    view = view[MAX_CHUNK:]
                    if not len(view):
                        break
            except BlockingIOError:
                self.close()
                raise MuxError("writing to the NRI socket: the runtime took nothing for "
                               "%.1f s" % SEND_STALL_S)
            except OSError as e:
                self.close()
                raise MuxError("writing to the NRI socket: %s" % e)

    def close(self):
        if not self._closed.is_set():
            self._closed.set()
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.sock.close()

    def _read(self):
        error = None
        try:
            while not self._closed.is_set():
                head = self._exactly(CHUNK.size)
                if head is None:
                    break
                conn_id, size = CHUNK.unpack(head)
                if size > MAX_CHUNK:
                    raise MuxError("a chunk of %d bytes on connection %d (at most %d)"
                                   % (size, conn_id, MAX_CHUNK))
                data = self._exactly(size) if size else b""
                if data is None:
                    raise MuxError("the NRI socket ended inside a chunk")
                sink = self.sinks.get(conn_id)
                if sink is not None:
                    sink(data)
        except Exception as e:      # noqa: BLE001 -- reported through on_close, once
            error = e
        closed_by_us = self._closed.is_set() and isinstance(error, OSError)
        self.close()
        self.on_close(None if closed_by_us else error)

    def _exactly(self, n):
        parts, left = [], n
        while left:
            try:
                got = self.sock.recv(min(left, 1 << 20))
            except OSError:
                if self._closed.is_set():
                    return None
                raise
            if not got:
                if left == n:
                    return None
                raise MuxError("the NRI socket ended mid-message")
            parts.append(got)
            left -= len(got)
        return b"".join(parts)
