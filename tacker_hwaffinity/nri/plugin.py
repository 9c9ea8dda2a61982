"""An NRI plugin's session with the runtime: connect, register, serve, ask for updates.

The plugin dials the runtime's NRI socket, listens on mux connection 1 (the
runtime calls ``Configure``, ``Synchronize``, ``CreateContainer``, ... there)
and calls ``RegisterPlugin``/``UpdateContainers`` on connection 2. Requests from
the runtime are answered in arrival order by one worker thread, so a slow
handler never stops the reader from taking in the runtime's answers to our own
calls (``UpdateContainers`` may be sent from any thread while a request is
handled; the runtime answers it after the request, so a handler must not wait for
it). The runtime gives up on a request after its own timeout (containerd:
``plugin_request_timeout``, 2 s by default) and then, in containerd and CRI-O
alike, drops the plugin's connection and goes on without it: the container is
created as the kubelet asked (a timeout, a closed connection and a protocol error
are "fatal" there; any other error status would fail the container, so a handler
that raises on a container request is answered with an empty response: the
container runs as the kubelet asked, and the error is logged). ``wait`` returns
when the connection ends; the caller reconnects and is synchronized afresh.

A HANDLER has the methods ``configure(request)`` -> event mask,
``synchronize(pods, containers)`` -> [ContainerUpdate],
``create_container(pod, container)`` -> (ContainerAdjustment or None, [update]),
``update_container(pod, container, resources)`` -> [update],
``stop_container(pod, container)`` -> [update], ``state_change(event, pod,
container)`` and ``shutdown()``; messages are the dicts of ``nri.api``.
"""
import logging
import queue
import socket
import threading
import typing

from tacker_hwaffinity.nri import api, ttrpc
from tacker_hwaffinity.nri.mux import PLUGIN_CONN, RUNTIME_CONN, Mux, MuxError
from tacker_hwaffinity.nri.wire import WireError

PLUGIN_NAME = "hwaffinity"
# requests whose error status would fail the container in the runtime (containerd's NRI
# adaptation returns a plugin's non-fatal error to the CRI call): answered empty instead
CONTAINER_METHODS = frozenset({"CreateContainer", "UpdateContainer", "StopContainer",
                               "StateChange"})
DEFAULT_INDEX = "90"


class ConnectError(Exception):
    """The runtime's NRI socket is missing, refuses us, or registration failed."""


Msg = typing.Dict[str, typing.Any]
"""A message of ``nri.api``, decoded."""


class Handler(typing.Protocol):
    """What a plugin's HANDLER answers the runtime's requests with (module docstring)."""

    def configure(self, request: Msg) -> int: ...

    def synchronize(self, pods: typing.List[Msg], containers: typing.List[Msg]
                    ) -> typing.List[Msg]: ...

    def create_container(self, pod: Msg, container: Msg
                         ) -> typing.Tuple[typing.Optional[Msg], typing.List[Msg]]: ...

    def update_container(self, pod: Msg, container: Msg,
                         resources: typing.Optional[Msg]) -> typing.List[Msg]: ...

    def stop_container(self, pod: Msg, container: Msg) -> typing.List[Msg]: ...

    def state_change(self, event: int, pod: Msg, container: Msg) -> None: ...

    def shutdown(self) -> None: ...


class Plugin:
    def __init__(self, handler: Handler, socket_path: str = api.DEFAULT_SOCKET,
                 name: str = PLUGIN_NAME, index: str = DEFAULT_INDEX,
                 log: typing.Optional[logging.Logger] = None,
                 call_timeout: float = 5.0) -> None:
        if not (len(index) == 2 and index.isdigit()):
            raise ValueError("an NRI plugin index is two digits, got %r" % index)
        self.handler = handler
        self.socket_path = socket_path
        self.name, self.index = name, index
        self.log = log
        self.call_timeout = call_timeout
        self.mux: typing.Optional[Mux] = None
        self.closed = threading.Event()
        self.close_error: typing.Optional[BaseException] = None
        self._plugin_frames = ttrpc.FrameReader()
        self._runtime_frames = ttrpc.FrameReader()
        # stream id -> [Event, result: (code, text, payload) or an exception]
        self._pending: typing.Dict[int, typing.List[typing.Any]] = {}
        self._next_stream = 1
        self._lock = threading.Lock()
        self._requests: "queue.Queue[typing.Any]" = queue.Queue()
        self._sync: typing.List[Msg] = []   # SynchronizeRequests with more=True, gathered

    # -- connection ---------------------------------------------------
    def connect(self) -> None:
        """Dial, start reading, register. Raises ConnectError."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.call_timeout)
        try:
            sock.connect(self.socket_path)
        except OSError as e:
            sock.close()
            raise ConnectError("cannot connect to the runtime's NRI socket %s: %s"
                               % (self.socket_path, e.strerror or e))
        sock.settimeout(None)
        self.mux = mux = Mux(sock, {PLUGIN_CONN: self._plugin_bytes,
                                    RUNTIME_CONN: self._runtime_bytes}, self._on_close)
        mux.start()
        threading.Thread(target=self._serve, name="nri-requests", daemon=True).start()
        try:
            self.call("RegisterPlugin", {"plugin_name": self.name, "plugin_idx": self.index})
        except (ttrpc.RemoteError, MuxError, TimeoutError) as e:
            self.close()
            raise ConnectError("registering as NRI plugin %s-%s: %s"
                               % (self.index, self.name, e))

    def wait(self, stop: typing.Optional[threading.Event] = None, poll: float = 0.5) -> None:
        """Block until the runtime closes the connection (or STOP is set)."""
        while not self.closed.wait(poll):
            if stop is not None and stop.is_set():
                break

    def close(self) -> None:
        if self.mux is not None:
            self.mux.close()

    def _on_close(self, error):
        self.close_error = error
        self.closed.set()
        with self._lock:
            for slot in self._pending.values():
                slot[1] = MuxError("the NRI connection closed")
                slot[0].set()
        self._requests.put(None)

    # -- calling the runtime ------------------------------------------
    def call(self, method: str, message: Msg, timeout: typing.Optional[float] = None) -> Msg:
        request, response = api.RUNTIME_METHODS[method]
        if self.mux is None:
            raise MuxError("not connected to the runtime")
        done = threading.Event()
        slot: typing.List[typing.Any] = [done, None]
        with self._lock:
            sid = self._next_stream
            self._next_stream += 2
            self._pending[sid] = slot
        try:
            self.mux.send(RUNTIME_CONN, ttrpc.request_frame(
                sid, api.RUNTIME_SERVICE, method, request.encode(message)))
            if not done.wait(self.call_timeout if timeout is None else timeout):
                raise TimeoutError("the runtime did not answer %s in %.1f s" % (
                    method, self.call_timeout if timeout is None else timeout))
        finally:
            with self._lock:
                self._pending.pop(sid, None)
        result = slot[1]
        if isinstance(result, Exception):
            raise result
        code, text, payload = result
        if code != ttrpc.OK:
            raise ttrpc.RemoteError(method, code, text)
        return response.decode(payload)

    def update_containers(self, updates: typing.Iterable[Msg],
                          evictions: typing.Iterable[Msg] = ()) -> typing.List[Msg]:
        """Ask the runtime to update UPDATES now; returns the updates that failed."""
        reply = self.call("UpdateContainers", {"update": list(updates),
                                               "evict": list(evictions)})
        return reply.get("failed", [])

    def _runtime_bytes(self, data):
        for sid, kind, _flags, body in self._runtime_frames.feed(data):
            if kind != ttrpc.RESPONSE:
                continue
            with self._lock:
                slot = self._pending.get(sid)
            if slot is not None:
                slot[1] = ttrpc.parse_response(body)
                slot[0].set()

    # -- serving the runtime ------------------------------------------
    def _plugin_bytes(self, data):
        for sid, kind, _flags, body in self._plugin_frames.feed(data):
            if kind == ttrpc.REQUEST:
                self._requests.put((sid, ttrpc.parse_request(body)))

    def _serve(self):
        while True:
            item = self._requests.get()
            if item is None:
                return
            try:
                self.mux.send(PLUGIN_CONN, self._answer(*item))
            except MuxError:
                return

    def _answer(self, sid, req):
        method = req.get("method", "")
        if req.get("service") != api.PLUGIN_SERVICE or method not in api.PLUGIN_METHODS:
            return ttrpc.response_frame(sid, code=ttrpc.UNIMPLEMENTED, message="%s/%s" % (
                req.get("service"), method))
        request, response = api.PLUGIN_METHODS[method]
        try:
            msg = request.decode(req.get("payload", b""))
            out = getattr(self, "_on_" + method)(msg)
        except Exception as e:
            if self.log is not None and isinstance(e, WireError):     # say, over a cap
                self.log.warning("NRI %s: the request not read: %s", method, e)
            elif self.log is not None:
                self.log.exception("NRI %s failed", method)
            if method in CONTAINER_METHODS:
                # an error status fails the container's creation in the runtime; without
                # our answer the container runs as the kubelet asked
                return ttrpc.response_frame(sid, response.encode({}))
            return ttrpc.response_frame(sid, code=ttrpc.UNKNOWN, message="%s: %s" % (
                type(e).__name__, e))
        return ttrpc.response_frame(sid, response.encode(out or {}))

    def _on_Configure(self, msg):
        return {"events": self.handler.configure(msg)}

    def _on_Synchronize(self, msg):
        self._sync.append(msg)
        if msg.get("more"):
            return {"more": True}
        parts, self._sync = self._sync, []
        pods = [p for m in parts for p in m.get("pods", [])]
        containers = [c for m in parts for c in m.get("containers", [])]
        return {"update": self.handler.synchronize(pods, containers)}

    def _on_Shutdown(self, _msg):
        self.handler.shutdown()
        return {}

    def _on_CreateContainer(self, msg):
        adjust, updates = self.handler.create_container(msg.get("pod") or {},
                                                        msg.get("container") or {})
        return {"adjust": adjust, "update": updates}

    def _on_UpdateContainer(self, msg):
        return {"update": self.handler.update_container(
            msg.get("pod") or {}, msg.get("container") or {}, msg.get("linux_resources"))}

    def _on_StopContainer(self, msg):
        return {"update": self.handler.stop_container(msg.get("pod") or {},
                                                      msg.get("container") or {})}

    def _on_StateChange(self, msg):
        self.handler.state_change(msg.get("event", 0), msg.get("pod") or {},
                                  msg.get("container") or {})
        return {}
