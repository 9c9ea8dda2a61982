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

Requests are read by h11 (python-hyper's HTTP/1.1 implementation), one
:class:`h11.Connection` per connection in the connection's thread, with stricter
framing on top, so that nothing in front of the server can read a request
otherwise than it does: exactly one ``Content-Length``, no transfer coding
(chunked: 411; any other, or an empty one: 501), no header folded over lines,
ASCII digits only (400 for the others); the request line and headers together
at most :data:`HEADER_BYTES` (431), refused as soon as more has arrived.

What a client can make it hold is bounded (:data:`CONNECTION_BYTES` a connection,
with ``tests/kube/test_serve_memory_budget.py`` checking the sum against the
Deployment's memory limit):

* a body only where a :class:`Route` takes one, of at most the route's
  ``max_body`` bytes, declared by ``Content-Length`` and refused (413) before a
  byte of it is read; no Content-Length or a chunked body: 411; a GET with a body:
  413. Bodies above :data:`BIG_BODY` are read and handled one at a time, so that
  a few clients together cannot take more memory than one can;
* a JSON body nested deeper than the route's ``max_depth``: 400, before it is
  decoded (:mod:`kube.jsondepth`);
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

import h11

from tacker_hwaffinity.kube import jsondepth
from tacker_hwaffinity.kube.connections import Connections
from tacker_hwaffinity.kube.tlsreload import ServerTLS, verified_name

DEFAULT_MAX_BODY = 1 << 20       # a POST route given as a bare callable
BIG_BODY = 64 << 10              # larger bodies are read and handled one at a time
# a request's line and headers, all together: the API server's, kube-scheduler's,
# the kubelet's and Prometheus's requests carry a few hundred bytes (a bearer token
# a few KB); nginx's default (4 buffers of 8 KiB) and Node's (16 KiB) are as small
HEADER_BYTES = 32 << 10
READ_CHUNK = 64 << 10            # one read from a socket
# what one connection's reading may hold at most: h11's buffer and our copy of the
# request's head (each the cap and one read), its body (the buffer and the bytes
# handed over); bodies above BIG_BODY count once for the whole server
CONNECTION_BYTES = 2 * (HEADER_BYTES + READ_CHUNK) + 2 * BIG_BODY
MAX_CONNECTIONS = 128
READ_TIMEOUT = 10.0              # TLS handshake; one request's headers and body
IDLE_TIMEOUT = 60.0              # a kept-alive connection between requests
GETS = ("/metrics", "/healthz", "/readyz", "/livez")
TEXT = "text/plain; charset=utf-8"
LOG = logging.getLogger(__name__)


class Route:
    """A POST route: HANDLER(body bytes) -> (status, content type, body bytes); the
    largest body it takes (MAX_BODY bytes); the deepest JSON (MAX_DEPTH; None: the
    body is not JSON); whether it answers only verified client certificates
    (CLIENT_CERT, when the server has a client CA)."""

    def __init__(self, handler, max_body, max_depth=jsondepth.MAX_DEPTH, client_cert=False):
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

    def __init__(self, port, host="127.0.0.1", registry=None, health=None, posts=None,
                 tls=None, live=None, client_ca=None, client_names=(),
                 max_connections=MAX_CONNECTIONS, read_timeout=READ_TIMEOUT,
                 idle_timeout=IDLE_TIMEOUT, log=None):
        self.host = host
        self.port = port
        self.registry = registry
        self.health = health or (lambda: (True, "ok"))
        self.live = live or (lambda: (True, "ok"))     # /livez: see kube.health
        self.posts = {path: r if isinstance(r, Route) else Route(r, DEFAULT_MAX_BODY)
                      for path, r in (posts or {}).items()}
        self.tls = tls
        self.client_ca = client_ca
        self.client_names = frozenset(client_names or ())
        self.max_connections = max_connections
        self.read_timeout = read_timeout
        self.idle_timeout = idle_timeout
        self.log = log or LOG
        self.refused = collections.Counter()       # reason -> answers refused
        self._refused_lock = threading.Lock()
        self.connections = Connections(max_connections)
        self._big = threading.Semaphore(1)         # a body over BIG_BODY being handled
        self._tls = None
        self._server = None
        self._thread = None

    def start(self):
        if self.registry is None:
            from prometheus_client import REGISTRY
            self.registry = REGISTRY
        if self.tls is not None:
            self._tls = ServerTLS(*self.tls, client_ca=self.client_ca, log=self.log)
        elif self.client_ca:
            raise ValueError("a client CA needs TLS")
        self._server = _Server((self.host, self.port), None)
        self._server.owner = self
        self._server.daemon_threads = True
        self._server.timeout = 0.2          # handle_request() returns to check _stopping
        self.port = self._server.server_address[1]
        if self.posts or self._tls:
            _register(self.registry, _Collector(self))
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True,
                                        name="health-server-%d" % self.port)
        self._thread.start()
        return self

    def _serve(self):
        # our own loop rather than serve_forever(): stop() then needs no handshake with
        # it (socketserver's shutdown() waits for one, which never comes in a process
        # where eventlet has patched threading, as Tacker's does)
        checked = time.monotonic()
        while not self._stopping.is_set():
            self._server.handle_request()
            self.connections.reap()
            if self._tls is not None and time.monotonic() - checked >= 1.0:
                checked = time.monotonic()
                self._tls.check()

    def stop(self):
        if self._server is None:
            return
        self._stopping.set()
        self._thread.join(timeout=5)
        self._server.server_close()
        self.connections.shut_all()
        self._server = None

    def serve_connection(self, sock):
        """Answer the requests on SOCK (accepted, and added to :attr:`connections`)
        until the client or the server closes it; the caller closes SOCK."""
        _Connection(self, sock).serve()

    def count_refused(self, reason):
        with self._refused_lock:
            self.refused[reason] += 1

    def answer(self, path, accept):
        """(status, content type, body bytes) for a GET of PATH."""
        if path == "/metrics":
            from prometheus_client.exposition import choose_encoder
            encoder, content_type = choose_encoder(accept or "")
            return 200, content_type, encoder(self.registry)
        if path in ("/healthz", "/readyz", "/livez"):
            try:
                ok, message = (self.live if path == "/livez" else self.health)()
            except Exception as e:  # noqa: BLE001 - a broken check is an unhealthy component
                ok, message = False, "health check failed: %s: %s" % (type(e).__name__, e)
            body = (message or ("ok" if ok else "unhealthy")) + "\n"
            return (200 if ok else 503), TEXT, body.encode("utf-8")
        return 404, TEXT, b"not found\n"

    def answer_post(self, path, body):
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

    def get_request(self):
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

    def finish_request(self, request, client_address):
        self.owner.serve_connection(request)

    def shutdown_request(self, request):
        self.owner.connections.remove(request)
        super().shutdown_request(request)

    def handle_error(self, request, client_address):
        error = sys.exc_info()[1]
        if isinstance(error, OSError):          # quiet: a client went away
            LOG.debug("connection from %s ended", client_address, exc_info=True)
            return
        self.owner.count_refused("error")       # a bug: this connection ends, not others
        self.owner.log.error("connection from %s failed", client_address, exc_info=True)


def _register(registry, collector):
    try:
        registry.register(collector)
    except ValueError:      # a second server on the same registry: the first one reports
        pass


class _Collector:
    def __init__(self, server):
        self.server = server

    def collect(self):
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
            "their read or idle timeout, or to make room at the cap", labels=["reason"])
        closed.add_metric(["timeout"], s.connections.expired)
        closed.add_metric(["evicted"], s.connections.evicted)
        yield closed
        if s._tls is not None:
            reloads = CounterMetricFamily(
                "hwaffinity_tls_reloads", "Serving certificate loads after a change of its "
                "files, by outcome (failed: the previous pair is still served)",
                labels=["outcome"])
            reloads.add_metric(["loaded"], s._tls.loaded - 1)
            reloads.add_metric(["failed"], s._tls.failed)
            yield reloads


class _Connection:
    """One accepted connection of SERVER (a :class:`HealthServer`): its requests,
    read by h11 with our limits on top, answered in order until either side closes."""

    def __init__(self, server, sock):
        self.server = server
        self.sock = sock
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=HEADER_BYTES)
        self.request = None         # the h11.Request being answered
        self.authorised = None      # its client certificate checked: True or False

    def serve(self):
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
                self._next_cycle()
                wait = server.idle_timeout
        except (OSError, h11.RemoteProtocolError):  # timed out, cut, reset, or sent
            return                                  # no more than part of a body

    def _exchange(self, wait):
        """Read one request (its first byte within WAIT seconds, the rest within the
        read timeout) and answer it; whether the connection goes on."""
        server, sock = self.server, self.sock
        head = bytearray(self.h11.trailing_data[0])     # bytes of it already read
        if head:
            wait = server.read_timeout
        server.connections.waiting(sock, wait)
        sock.settimeout(wait)
        try:
            while True:
                event = self.h11.next_event()
                if event is not h11.NEED_DATA:
                    break
                data = sock.recv(READ_CHUNK)
                if data and not head:               # the request began: the read timeout
                    server.connections.waiting(sock, server.read_timeout)
                    sock.settimeout(server.read_timeout)
                if len(head) <= HEADER_BYTES:
                    head += data
                self.h11.receive_data(data)
        except h11.RemoteProtocolError as e:
            if e.error_status_hint == 431:
                return self._refuse(431, "too_large", "the request's headers take more than "
                                    "%d bytes" % HEADER_BYTES)
            return self._refuse(e.error_status_hint, "malformed", "malformed request: %s"
                                % str(e)[:200])
        if not isinstance(event, h11.Request):
            return False                            # closed between requests
        self.request = event
        problem = _ambiguous(head)
        if problem:
            return self._refuse(*problem)
        path = urllib.parse.urlsplit(event.target.decode("ascii", "replace")).path
        headers = {name.decode("ascii"): value.decode("latin-1")
                   for name, value in event.headers}
        if event.method == b"GET":
            return self._get(path, headers)
        if event.method == b"POST":
            return self._post(path, headers)
        return self._refuse(501, None, "%s is not served" % event.method.decode("ascii"))

    def _get(self, path, headers):
        server = self.server
        if "transfer-encoding" in headers or headers.get("content-length", "0") != "0":
            return self._refuse(413, "too_large", "a GET carries no body")
        if not isinstance(self._next(), h11.EndOfMessage):
            return False
        if path in server.posts:
            return self._send(405, TEXT, b"%s takes a POST\n" % path.encode())
        return self._send(*server.answer(path, headers.get("accept")))

    def _post(self, path, headers):
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
        if "transfer-encoding" in headers:
            return self._refuse(411, "no_length", "a POST to %s needs a Content-Length "
                                "(a chunked body is refused)" % path)
        if "content-length" not in headers:
            return self._refuse(411, "no_length", "a POST to %s needs a Content-Length"
                                % path)
        length = int(headers["content-length"])     # h11 took only ASCII digits
        if length > route.max_body:
            return self._refuse(413, "too_large", "a POST to %s takes at most %d bytes, "
                                "this one declares %d" % (path, route.max_body, length))
        big = length > BIG_BODY
        if big and not server._big.acquire(timeout=server.read_timeout):
            return self._refuse(503, "busy", "another large body is being handled, try "
                                "again")
        try:
            if self.h11.they_are_waiting_for_100_continue:
                self.sock.sendall(self.h11.send(h11.InformationalResponse(
                    status_code=100, headers=[], reason=b"Continue")))
            body = self._body(length)
            if body is None:
                return False                    # cut short: nothing to answer
            deep = route.max_depth and jsondepth.nesting(body, route.max_depth)
            if deep:
                return self._send(400, TEXT, b"the JSON body nests %d levels deep; a POST "
                                  b"to %s takes at most %d\n" % (
                                      deep, path.encode(), route.max_depth),
                                  reason="too_deep")
            server.connections.busy(self.sock)
            answer = server.answer_post(path, body)
            del body
            return self._send(*answer)
        finally:
            if big:
                server._big.release()

    def _body(self, length):
        """The LENGTH bytes of the request's body, or None when the client stopped
        sending them."""
        body = bytearray(length)
        view = memoryview(body)
        filled = 0
        while True:
            try:
                event = self._next()
            except h11.RemoteProtocolError:
                return None
            if isinstance(event, h11.EndOfMessage):
                view.release()
                return bytes(body)
            if not isinstance(event, h11.Data):
                return None
            view[filled:filled + len(event.data)] = event.data
            filled += len(event.data)

    def _next(self):
        """The next h11 event of the request being read, reading as needed."""
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.h11.receive_data(self.sock.recv(READ_CHUNK))

    def _authorised(self):
        """Whether the client certificate is one the extender answers; decided once a
        connection (its certificate cannot change within it)."""
        if self.authorised is None:
            name = verified_name(self.sock)
            self.authorised = name is not None and (not self.server.client_names
                                                    or name in self.server.client_names)
        return self.authorised

    def _refuse(self, status, reason, message):
        """Answer STATUS with MESSAGE (one line) without reading the body, count it
        under REASON (None: not counted), and close."""
        self._send(status, TEXT, (message + "\n").encode("utf-8"), reason=reason,
                   close=True)
        self._linger()
        return False

    def _linger(self):
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

    def _raw(self, method, *args):
        """socket.socket's METHOD on the connection, also for an SSLSocket (whose TLS
        records are then dropped unread); the socket's own where it is none (eventlet's
        GreenSocket, in a patched process)."""
        try:
            return getattr(socket.socket, method)(self.sock, *args)
        except TypeError:
            return getattr(self.sock, method)(*args)

    def _send(self, status, content_type, body, reason=None, close=False):
        """Answer in one write; whether the connection goes on (the request was
        read whole, and neither side asked to close). h11 reads the requests; the
        answer is written here, as h11 would write it (HTTP/1.1, ``Connection:
        close`` where the connection ends, no body for a HEAD), in a tenth of its
        time (70 us an answer)."""
        if reason:
            self.server.count_refused(reason)
        self.server.connections.busy(self.sock)
        request = self.request
        keep = not close and self.h11.their_state is h11.DONE and _keeps_alive(request)
        if request is not None and request.method == b"HEAD":
            body = b""
        self.sock.sendall(b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s\r\n%s"
                          % (status, _PHRASES[status], content_type.encode("latin-1"),
                             len(body), b"" if keep else b"Connection: close\r\n", body))
        return keep

    def _next_cycle(self):
        """A new h11 connection state for the next request, holding what was read past
        the last one (h11's own would need the answer written through it)."""
        rest, closed = self.h11.trailing_data
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=HEADER_BYTES)
        self.request = None
        if rest:
            self.h11.receive_data(rest)
        if closed:
            self.h11.receive_data(b"")


_PHRASES = {s.value: s.phrase.encode("ascii") for s in http.HTTPStatus}


def _keeps_alive(request):
    """Whether h11 would keep the connection open after answering REQUEST: HTTP/1.1
    and no ``close`` in its Connection header."""
    if request is None or request.http_version != b"1.1":
        return False
    return not any(name == b"connection" and b"close" in
                   [t.strip().lower() for t in value.split(b",")]
                   for name, value in request.headers)


_HEAD_END = re.compile(rb"\n\r?\n")


def _ambiguous(head):
    """(status, reason, message) refusing the request whose bytes start with HEAD
    (h11 parsed its request line and headers), or None: its headers over
    :data:`HEADER_BYTES`, a header folded over lines, more than one Content-Length
    or a list of them. h11 reads each of those one way; an intermediary may read it
    another."""
    end = _HEAD_END.search(head)
    if end is None or end.end() > HEADER_BYTES:
        return 431, "too_large", "the request's headers take more than %d bytes" % \
            HEADER_BYTES
    lengths = 0
    for line in bytes(head[:end.start()]).split(b"\n")[1:]:
        if line[:1] in (b" ", b"\t"):
            return 400, "malformed", "a header is folded over lines (obs-fold)"
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            lengths += 1
            if lengths > 1 or b"," in value:
                return 400, "malformed", "more than one Content-Length"
    return None
