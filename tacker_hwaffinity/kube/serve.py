"""The one HTTP port of an in-cluster component: ``/metrics`` (Prometheus text
exposition, or OpenMetrics when the scraper asks for it), ``/healthz`` and
``/readyz`` (readiness) and ``/livez`` (liveness) for the probes, plus the
component's own POST routes (``posts``: the webhook's review and extender verbs).
Everything else is 404.

One server in a daemon thread, quiet: probes and scrapes are not logged.
HTTP/1.1 with keep-alive (kube-scheduler and the API server reuse their
connections). With ``tls=(cert file, key file)`` it serves HTTPS only; the TLS
handshake runs in the connection's own thread, so a slow client never holds up
the others, and the pair is loaded again when the files change
(:mod:`kube.tlsreload`).

Requests are read one at a time in the connection's thread: the head (request
line and headers) up to its blank line, at most :data:`HEADER_BYTES` (431, refused
as soon as more has arrived without its end), parsed by httptools (llhttp, the
parser of Node.js: strict grammar, CRLF line ends, ASCII digits in a length, no
header folded over lines), then exactly the body it declares, never past it. On
top, so that nothing in front of the server can read a request otherwise than it
does: exactly one ``Content-Length`` and no transfer coding (chunked: 411; any
other: 501), HTTP/1.0 or 1.1 only (505). httptools replaced h11 (pure Python),
which took four fifths of a kept-alive connection's CPU per request: a few
microseconds instead of about 100 a request.

What a client can make it hold is bounded (:data:`CONNECTION_BYTES` a connection,
with ``tests/kube/test_serve_memory_budget.py`` checking the sum against the
Deployment's memory limit):

* a body only where a :class:`Route` takes one, of at most the route's
  ``max_body`` bytes, declared by ``Content-Length`` and refused (413) before a
  byte of it is read; no Content-Length or a chunked body: 411; a GET with a body:
  413. Bodies above :data:`BIG_BODY` take room in a byte budget while they arrive,
  once their first byte is here (a verified client certificate has a lane of its
  own; a client that falls behind is cut when another needs its room), and are
  handled one at a time once whole, verified ones first (:mod:`kube.bodies`), so
  that no client can hold them and a few together cannot take more memory than
  the sum allows;
* a JSON body nested deeper than the route's ``max_depth``: 400, before it is
  decoded (:mod:`objects.jsondepth`);
* at most ``max_connections`` connections; the TLS handshake, a new connection's
  first byte, then each request's headers and body, within ``read_timeout`` seconds
  each; a kept-alive connection idle for ``idle_timeout`` seconds between requests
  is closed. At the cap, a new connection replaces the
  one that has waited longest for its client (:mod:`kube.connections`), so idle or
  slow clients cannot keep a real one out;
* with ``client_ca``, a route with ``client_cert=True`` answers only a client
  certificate signed by that CA (and, with ``client_names``, of one of those common
  names): 403 otherwise. Other routes need none.
"""
import collections
import http
import logging
import re
import socket
import socketserver
import ssl
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import httptools

from tacker_hwaffinity.kube import bodies
from tacker_hwaffinity.kube.connections import Connections
from tacker_hwaffinity.kube.health import HealthCheck
from tacker_hwaffinity.kube.tlsreload import ServerTLS, verified_name
from tacker_hwaffinity.objects import jsondepth

if TYPE_CHECKING:   # prometheus_client is imported where used: start() and /metrics
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import Metric

DEFAULT_MAX_BODY = 1 << 20       # a POST route given as a bare callable
BIG_BODY = 64 << 10              # larger bodies take room in a lane (kube.bodies)
# a request's line and headers, all together: the API server's, kube-scheduler's,
# the kubelet's and Prometheus's requests carry a few hundred bytes (a bearer token
# a few KB); nginx's default (4 buffers of 8 KiB) and Node's (16 KiB) are as small
HEADER_BYTES = 32 << 10
READ_CHUNK = 64 << 10            # one read from a socket
# what one connection's reading may hold at most: its buffer and the head taken from
# it (each the cap and one read), its body (the buffer and the bytes handed over);
# bodies above BIG_BODY count in the lanes of kube.bodies
CONNECTION_BYTES = 2 * (HEADER_BYTES + READ_CHUNK) + 2 * BIG_BODY
MAX_CONNECTIONS = 128
READ_TIMEOUT = 10.0              # TLS handshake; one request's headers and body
IDLE_TIMEOUT = 60.0              # a kept-alive connection between requests
GETS = ("/metrics", "/healthz", "/readyz", "/livez")
TEXT = "text/plain; charset=utf-8"
LOG = logging.getLogger(__name__)

# What is sent back: (status, content type, body bytes).
Response = tuple[int, str, bytes]
# A POST route's handler: the request's body -> its response.
PostHandler = Callable[[bytes], Response]
# The header fields of a request as httptools hands them over: (name, value), in order.
HeaderFields = Sequence[tuple[bytes, bytes]]


class Route:
    """A POST route: HANDLER(body bytes) -> (status, content type, body bytes); the
    largest body it takes (MAX_BODY bytes); the deepest JSON (MAX_DEPTH; None: the
    body is not JSON); whether it answers only verified client certificates
    (CLIENT_CERT, when the server has a client CA)."""

    def __init__(self, handler: PostHandler, max_body: int,
                 max_depth: int | None = jsondepth.MAX_DEPTH, client_cert: bool = False) -> None:
        self.handler = handler
        self.max_body = int(max_body)
        self.max_depth = max_depth
        self.client_cert = client_cert


class HealthServer:
    """Serve REGISTRY (default: prometheus_client's global one) and HEALTH, a
    callable returning (ok, message): 200 with the message (or "ok") when ok,
    503 with it otherwise. PORT 0 picks a free port; ``.port`` is the real one
    once :meth:`start` returned. POSTS: path -> :class:`Route` (or a bare handler,
    taking at most DEFAULT_MAX_BODY bytes)."""

    def __init__(self, port: int, host: str = "127.0.0.1",
                 registry: "CollectorRegistry | None" = None, health: HealthCheck | None = None,
                 posts: Mapping[str, Route | PostHandler] | None = None,
                 tls: tuple[str, str] | None = None, live: HealthCheck | None = None,
                 client_ca: str | None = None, client_names: Iterable[str] | None = (),
                 max_connections: int = MAX_CONNECTIONS, read_timeout: float = READ_TIMEOUT,
                 idle_timeout: float = IDLE_TIMEOUT, log: logging.Logger | None = None) -> None:
        self.host = host
        self.port = port
        self.registry = registry
        self.health: HealthCheck = health or (lambda: (True, "ok"))
        self.live: HealthCheck = live or (lambda: (True, "ok"))     # /livez: see kube.health
        self.posts = {path: r if isinstance(r, Route) else Route(r, DEFAULT_MAX_BODY)
                      for path, r in (posts or {}).items()}
        self.tls = tls
        self.client_ca = client_ca
        self.client_names = frozenset(client_names or ())
        self.max_connections = max_connections
        self.read_timeout = read_timeout
        self.idle_timeout = idle_timeout
        self.log = log or LOG
        self.refused: collections.Counter[str] = collections.Counter()   # reason -> refused
        self._refused_lock = threading.Lock()
        self.connections = Connections(max_connections)
        # bodies over BIG_BODY: the room they take while they arrive, verified client
        # certificates apart, and their handling, one at a time
        largest = max((r.max_body for r in self.posts.values()), default=0)
        verified = max((r.max_body for r in self.posts.values() if r.client_cert),
                       default=0) if client_ca else 0
        self.lanes = {True: bodies.Lane(verified * bodies.VERIFIED_BODIES, self.connections.cut),
                      False: bodies.Lane(largest * bodies.ANONYMOUS_BODIES,
                                         self.connections.cut)}
        self.handling = bodies.Handling()
        self._tls: ServerTLS | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> "HealthServer":
        if self.registry is None:
            from prometheus_client import REGISTRY
            self.registry = REGISTRY
        if self.tls is not None:
            self._tls = ServerTLS(*self.tls, client_ca=self.client_ca, log=self.log)
        elif self.client_ca:
            raise ValueError("a client CA needs TLS")
        # no handler class: _Server.finish_request serves the connection itself
        self._server = server = _Server((self.host, self.port), None)  # type: ignore[arg-type]
        server.owner = self
        server.daemon_threads = True
        server.timeout = 0.2          # handle_request() returns to check _stopping
        self.port = server.server_address[1]
        if self.posts or self._tls:
            _register(self.registry, _Collector(self))
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(server,), daemon=True,
                                        name="health-server-%d" % self.port)
        self._thread.start()
        return self

    def _serve(self, server: "_Server") -> None:
        # our own loop rather than serve_forever(): stop() then needs no handshake with
        # it (socketserver's shutdown() waits for one, which never comes in a process
        # where eventlet has patched threading, as Tacker's does)
        checked = time.monotonic()
        while not self._stopping.is_set():
            server.handle_request()
            self.connections.reap()
            if self._tls is not None and time.monotonic() - checked >= 1.0:
                checked = time.monotonic()
                self._tls.check()

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._stopping.set()
        thread.join(timeout=5)
        server.server_close()
        self.connections.shut_all()
        self._server = None

    def serve_connection(self, sock: socket.socket) -> None:
        """Answer the requests on SOCK (accepted, and added to :attr:`connections`)
        until the client or the server closes it; the caller closes SOCK."""
        _Connection(self, sock).serve()

    def count_refused(self, reason: str) -> None:
        with self._refused_lock:
            self.refused[reason] += 1

    def answer(self, path: str, accept: str | None) -> Response:
        """(status, content type, body bytes) for a GET of PATH."""
        if path == "/metrics":
            from prometheus_client.exposition import choose_encoder
            encoder, content_type = choose_encoder(accept or "")
            return 200, content_type, encoder(cast("CollectorRegistry", self.registry))  # start()'s
        if path in ("/healthz", "/readyz", "/livez"):
            try:
                ok, message = (self.live if path == "/livez" else self.health)()
            except Exception as e:  # noqa: BLE001 - a broken check is an unhealthy component
                ok, message = False, "health check failed: %s: %s" % (type(e).__name__, e)
            body = (message or ("ok" if ok else "unhealthy")) + "\n"
            return (200 if ok else 503), TEXT, body.encode("utf-8")
        return 404, TEXT, b"not found\n"

    def answer_post(self, path: str, body: bytes) -> Response:
        route = self.posts.get(path)
        if route is None:
            return 404, TEXT, b"not found\n"
        try:
            return route.handler(body)
        except Exception as e:
            self.log.exception("POST %s failed", path)
            return 500, TEXT, ("internal error: %s\n" % type(e).__name__).encode()


class _Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    request_queue_size = 128            # a burst of connections is not dropped at SYN
    owner: HealthServer                 # set by HealthServer.start

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = self.socket.accept()
        # answers are small and written at once: no Nagle delay against the peer's
        # delayed ACK (40 ms per answer on a kept-alive connection otherwise)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        owner = self.owner
        if owner._tls is not None:
            sock = owner._tls.context.wrap_socket(sock, server_side=True,
                                                  do_handshake_on_connect=False)
        if not owner.connections.add(sock, owner.read_timeout):
            owner.count_refused("connections")
            sock.close()                # every connection is being answered: try later
            raise OSError("at the connection cap")
        return sock, addr

    # requests are sockets (a TCP server); typeshed types BaseServer's, UDP's too
    def finish_request(self, request: Any, client_address: object) -> None:
        self.owner.serve_connection(request)

    def shutdown_request(self, request: Any) -> None:
        self.owner.connections.remove(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: object) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, OSError):          # quiet: a client went away
            LOG.debug("connection from %s ended", client_address, exc_info=True)
            return
        self.owner.count_refused("error")       # a bug: this connection ends, not others
        self.owner.log.error("connection from %s failed", client_address, exc_info=True)


def _register(registry: "CollectorRegistry", collector: "_Collector") -> None:
    try:
        registry.register(collector)
    except ValueError:      # a second server on the same registry: the first one reports
        pass


class _Collector:
    """The server's own metrics: refusals, connections, TLS reloads."""

    def __init__(self, server: HealthServer) -> None:
        self.server = server

    def collect(self) -> Iterator["Metric"]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
        s = self.server
        refused = CounterMetricFamily(
            "hwaffinity_http_refused", "Requests and connections refused before a handler, "
            "by reason", labels=["reason"])
        for reason in ("too_large", "no_length", "malformed", "too_deep", "forbidden",
                       "connections", "busy", "error"):
            refused.add_metric([reason], s.refused[reason])
        yield refused
        yield GaugeMetricFamily("hwaffinity_http_connections", "Open connections",
                                value=len(s.connections))
        closed = CounterMetricFamily(
            "hwaffinity_http_connections_cut", "Connections the server shut down: past "
            "their read or idle timeout, to make room at the cap, or sending a large body "
            "too slowly while another needs its room", labels=["reason"])
        closed.add_metric(["timeout"], s.connections.expired)
        closed.add_metric(["evicted"], s.connections.evicted)
        closed.add_metric(["slow_body"], s.connections.slow)
        yield closed
        if s._tls is not None:
            reloads = CounterMetricFamily(
                "hwaffinity_tls_reloads", "Serving certificate loads after a change of its "
                "files, by outcome (failed: the previous pair is still served)",
                labels=["outcome"])
            reloads.add_metric(["loaded"], s._tls.loaded - 1)
            reloads.add_metric(["failed"], s._tls.failed)
            yield reloads


class _Head:
    """What httptools hands over of one request head: its target and its header fields
    (name, value), in order."""

    __slots__ = ("target", "headers")

    def __init__(self) -> None:
        self.target = b""
        self.headers: list[tuple[bytes, bytes]] = []

    def on_url(self, url: bytes) -> None:
        self.target += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))


class _Connection:
    """One accepted connection of SERVER (a :class:`HealthServer`): its requests, read
    one at a time (the head checked by us and parsed by httptools, then exactly the
    body it declares), answered in order until either side closes."""

    def __init__(self, server: HealthServer, sock: socket.socket) -> None:
        self.server = server
        self.sock = sock
        self.buffer = bytearray()   # bytes read past the last request
        self.method: bytes | None = None    # the request being answered: its method,
        self.version: str | None = None     # HTTP version ("1.1")
        self.headers: HeaderFields = ()     # and header fields
        self.read_whole = False     # its body read (or it has none)
        self.authorised: bool | None = None     # its client certificate checked

    def serve(self) -> None:
        server, sock = self.server, self.sock
        sock.settimeout(server.read_timeout)
        if isinstance(sock, ssl.SSLSocket):
            try:
                sock.do_handshake()
            except (ssl.SSLError, OSError):
                return
        wait = server.read_timeout              # a new connection's first request
        try:
            while self._exchange(wait):
                wait = server.idle_timeout
        except OSError:                         # timed out, cut, reset
            return

    def _exchange(self, wait: float) -> bool:
        """Read one request (its first byte within WAIT seconds, the rest within the
        read timeout) and answer it; whether the connection goes on."""
        self.method, self.version, self.headers, self.read_whole = None, None, (), False
        head = self._head(wait)
        if not isinstance(head, bytes):
            return head                         # False: closed, or refused
        if len(head) > HEADER_BYTES:
            return self._refuse(431, "too_large", "the request's headers take more than "
                                "%d bytes" % HEADER_BYTES)
        parsed = _Head()
        parser = httptools.HttpRequestParser(parsed)
        # a transfer coding (with or without a length) is refused below, by method,
        # before any body is read: the parser need not refuse it first
        parser.set_dangerous_leniencies(lenient_chunked_length=True,
                                        lenient_transfer_encoding=True)
        try:
            parser.feed_data(head)
        except httptools.HttpParserUpgrade:
            pass                # Upgrade or CONNECT, its head read whole: never switched to
        except httptools.HttpParserInvalidMethodError:
            method = head.split(b" ", 1)[0]
            if _TOKEN.fullmatch(method):
                return self._refuse(501, None, "%s is not served" % method.decode("ascii"))
            return self._refuse(400, "malformed", "malformed request: the method is not "
                                "a token")
        except httptools.HttpParserError as e:
            return self._refuse(400, "malformed", "malformed request: %s" % (
                _ambiguous(head) or str(e)[:200]))
        self.method, self.version = parser.get_method(), parser.get_http_version()
        self.headers = parsed.headers
        if self.version not in ("1.1", "1.0"):
            return self._refuse(505, None, "HTTP/%s is not served" % self.version)
        path = urllib.parse.urlsplit(parsed.target.decode("ascii", "replace")).path
        headers = {name.decode("ascii").lower(): value.decode("latin-1")
                   for name, value in parsed.headers}
        if self.method == b"GET":
            return self._get(path, headers)
        if self.method == b"POST":
            return self._post(path, headers)
        return self._refuse(501, None, "%s is not served" % self.method.decode("ascii"))

    def _head(self, wait: float) -> bytes | bool:
        """The next request's line and headers, through the blank line that ends them
        (bytes), taken from the buffer; or False: the client closed between requests,
        or the head was refused (answered)."""
        server, sock, buffer = self.server, self.sock, self.buffer
        if buffer:
            wait = server.read_timeout          # part of it is here already
        server.connections.waiting(sock, wait)
        sock.settimeout(wait)
        searched = 0
        while True:
            end = _HEAD_END.search(buffer, max(searched - 2, 0))
            if end is not None:
                head = bytes(buffer[:end.end()])
                del buffer[:end.end()]
                return head
            if len(buffer) > HEADER_BYTES:
                return self._refuse(431, "too_large", "the request's headers take more "
                                    "than %d bytes" % HEADER_BYTES)
            searched = len(buffer)
            data = sock.recv(READ_CHUNK)
            if not data:
                if not buffer:
                    return False                # closed between requests
                return self._refuse(400, "malformed", "malformed request: the connection "
                                    "ended inside a request's head")
            if not buffer:                      # the request began: the read timeout
                server.connections.waiting(sock, server.read_timeout)
                sock.settimeout(server.read_timeout)
            buffer += data

    def _get(self, path: str, headers: Mapping[str, str]) -> bool:
        server = self.server
        if "transfer-encoding" in headers or headers.get("content-length", "0") != "0":
            return self._refuse(413, "too_large", "a GET carries no body")
        self.read_whole = True
        if path in server.posts:
            return self._send(405, TEXT, b"%s takes a POST\n" % path.encode())
        return self._send(*server.answer(path, headers.get("accept")))

    def _post(self, path: str, headers: Mapping[str, str]) -> bool:
        server = self.server
        route = server.posts.get(path)
        if route is None:
            if path in GETS:
                return self._refuse(405, None, "%s takes a GET" % path)
            return self._refuse(404, None, "not found")
        if route.client_cert and server.client_ca and not self._authorised():
            return self._refuse(403, "forbidden", "%s answers only a client certificate "
                                "signed by the configured client CA%s" % (
                                    path, " with common name " + ", ".join(
                                        sorted(server.client_names))
                                    if server.client_names else ""))
        coding = headers.get("transfer-encoding")
        if coding is not None:
            if coding.rpartition(",")[2].strip().lower() == "chunked":
                return self._refuse(411, "no_length", "a POST to %s needs a Content-Length "
                                    "(a chunked body is refused)" % path)
            return self._refuse(501, None, "the transfer coding %r is not served"
                                % coding[:100])
        if "content-length" not in headers:
            return self._refuse(411, "no_length", "a POST to %s needs a Content-Length"
                                % path)
        length = int(headers["content-length"])     # httptools took only ASCII digits
        if length > route.max_body:
            return self._refuse(413, "too_large", "a POST to %s takes at most %d bytes, "
                                "this one declares %d" % (path, route.max_body, length))
        if self.version == "1.1" and any(
                name.lower() == b"expect" and value.lower() == b"100-continue"
                for name, value in self.headers):
            self.sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        if length > BIG_BODY:
            return self._post_large(path, route, length)
        body: bytes | bytearray | None = self._receive(length)
        if body is None:
            return False                        # cut short: nothing to answer
        body = bytes(body)
        answer = self._answer(path, route, body)
        del body
        return self._send(*answer)

    def _post_large(self, path: str, route: Route, length: int) -> bool:
        """Receive a body of LENGTH bytes (over BIG_BODY) into room of a lane once its
        first byte is here, then answer it in the handling slot (:mod:`kube.bodies`)."""
        server = self.server
        if not self.buffer and not self._more():
            return False                        # closed before the body began
        verified = bool(server.client_ca) and self._authorised()
        lane = server.lanes[verified and length <= server.lanes[True].capacity]
        reservation = lane.reserve(self.sock, length)
        if reservation is None:
            return self._refuse(503, "busy", "large bodies in flight take all the room "
                                "for them, try again")
        slot = False
        try:
            try:
                body: bytes | bytearray | None = self._receive(length, reservation)
                if body is None:
                    return False                # cut short: nothing to answer
                # still waiting (evictable at the cap) until the slot is ours: no
                # client makes connections busy that others cannot replace
                slot = server.handling.take(verified)
                # handed over as bytes in the slot: then its room is given back
                body = bytes(body) if slot else None
            finally:
                lane.give_back(reservation)
            if body is None:                    # the slot was not ours
                return self._refuse(503, "busy", "large bodies are being handled, try "
                                    "again")
            answer = self._answer(path, route, body)
            del body
        finally:
            if slot:
                server.handling.give_back()
        return self._send(*answer)

    def _answer(self, path: str, route: Route, body: bytes
                ) -> tuple[int, str, bytes, str | None]:
        """(status, content type, body, refusal reason) answering BODY, a POST to PATH's
        ROUTE: a 400 when it nests too deeply, else its handler's answer."""
        if route.max_depth and (deep := jsondepth.nesting(body, route.max_depth)):
            return 400, TEXT, b"the JSON body nests %d levels deep; a POST to %s takes at " \
                b"most %d\n" % (deep, path.encode(), route.max_depth), "too_deep"
        self.server.connections.busy(self.sock)
        status, content_type, text = self.server.answer_post(path, body)
        return status, content_type, text, None

    def _more(self) -> bool:
        """Read what the client sent next into the buffer; whether it sent anything."""
        data = self.sock.recv(READ_CHUNK)
        self.buffer += data
        return bool(data)

    def _receive(self, length: int, reservation: bodies.Reservation | None = None
                 ) -> bytearray | None:
        """The LENGTH bytes of the request's body (a bytearray): what the buffer holds
        of it, then read into place (never past it), counted in RESERVATION as they
        arrive; None when the client stopped sending."""
        body = bytearray(length)
        filled = min(length, len(self.buffer))
        body[:filled] = self.buffer[:filled]
        del self.buffer[:filled]
        with memoryview(body) as view:
            while filled < length:
                if reservation is not None:
                    reservation.received = filled
                got = self.sock.recv_into(view[filled:], min(length - filled, READ_CHUNK))
                if not got:
                    return None
                filled += got
        if reservation is not None:
            reservation.received = filled
        self.read_whole = True
        return body

    def _authorised(self) -> bool:
        """Whether the client certificate is one the extender answers; decided once a
        connection (its certificate cannot change within it)."""
        if self.authorised is None:
            name = verified_name(self.sock)
            self.authorised = name is not None and (not self.server.client_names
                                                    or name in self.server.client_names)
        return self.authorised

    def _refuse(self, status: int, reason: str | None, message: str) -> bool:
        """Answer STATUS with MESSAGE (one line) without reading the body, count it
        under REASON (None: not counted), and close."""
        self._send(status, TEXT, (message + "\n").encode("utf-8"), reason=reason,
                   close=True)
        self._linger()
        return False

    def _linger(self) -> None:
        # the client may still be sending the body we refused: read and drop it for
        # a moment, so that it sees our answer rather than a reset
        try:
            self._raw("shutdown", socket.SHUT_WR)
            self.sock.settimeout(0.25)
            end = time.monotonic() + 1.0
            while time.monotonic() < end:
                if not self._raw("recv", READ_CHUNK):
                    break
        except OSError:
            pass

    def _raw(self, method: str, *args: Any) -> Any:
        """socket.socket's METHOD on the connection, also for an SSLSocket (whose TLS
        records are then dropped unread); the socket's own where it is none (eventlet's
        GreenSocket, in a patched process)."""
        try:
            return getattr(socket.socket, method)(self.sock, *args)
        except TypeError:
            return getattr(self.sock, method)(*args)

    def _send(self, status: int, content_type: str, body: bytes, reason: str | None = None,
              close: bool = False) -> bool:
        """Answer in one write; whether the connection goes on (the request was
        read whole, and neither side asked to close): HTTP/1.1, ``Connection: close``
        where the connection ends, no body for a HEAD, as h11 writes an answer."""
        if reason:
            self.server.count_refused(reason)
        self.server.connections.busy(self.sock)
        keep = not close and self.read_whole and _keeps_alive(self.version, self.headers)
        if self.method == b"HEAD":
            body = b""
        self.sock.sendall(b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s\r\n%s"
                          % (status, _PHRASES[status], content_type.encode("latin-1"),
                             len(body), b"" if keep else b"Connection: close\r\n", body))
        return keep


_PHRASES = {s.value: s.phrase.encode("ascii") for s in http.HTTPStatus}


def _keeps_alive(version: str | None, headers: HeaderFields) -> bool:
    """Whether the connection stays open after answering a request of HTTP VERSION with
    HEADERS: HTTP/1.1 and no ``close`` in its Connection header (h11's rule; an
    HTTP/1.0 client's keep-alive is not honoured)."""
    if version != "1.1":
        return False
    return not any(name.lower() == b"connection" and b"close" in
                   [t.strip().lower() for t in value.split(b",")]
                   for name, value in headers)


_HEAD_END = re.compile(rb"\n\r?\n")
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def _ambiguous(head: bytes) -> str | None:
    """What makes HEAD (a request's line and headers, through the blank line that ends
    them, refused by the parser) ambiguous to an intermediary, in words, or None: a
    header folded over lines, more than one Content-Length or a list of them. The
    parser refuses each of those; this names it."""
    lines = head.split(b"\n")[1:]
    if any(line[:1] in (b" ", b"\t") for line in lines):
        return "a header is folded over lines (obs-fold)"
    lengths = [value for name, _, value in (line.partition(b":") for line in lines)
               if name.strip().lower() == b"content-length"]
    if len(lengths) > 1 or any(b"," in value for value in lengths):
        return "more than one Content-Length"
    return None
