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

What a client can make it hold is bounded:

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
import http.server
import logging
import socket
import ssl
import threading
import time
import urllib.parse

from tacker_hwaffinity.kube import jsondepth
from tacker_hwaffinity.kube.connections import Connections
from tacker_hwaffinity.kube.tlsreload import ServerTLS, verified_name

DEFAULT_MAX_BODY = 1 << 20       # a POST route given as a bare callable
BIG_BODY = 1 << 20               # larger bodies are read and handled one at a time
MAX_CONNECTIONS = 256
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
        self.connections = Connections(self.max_connections)
        self._big = threading.Semaphore(1)
        self._server = _Server((self.host, self.port), _handler(self))
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
        except Exception as e:  # noqa: BLE001 - a bug answers 500, the thread lives on
            self.log.exception("POST %s failed", path)
            return 500, TEXT, ("internal error: %s\n" % type(e).__name__).encode()


class _Server(http.server.ThreadingHTTPServer):
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

    def shutdown_request(self, request):
        self.owner.connections.remove(request)
        super().shutdown_request(request)

    def handle_error(self, request, client_address):   # quiet: a client went away
        LOG.debug("connection from %s ended", client_address, exc_info=True)


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
        for reason in ("too_large", "no_length", "too_deep", "forbidden", "connections",
                       "busy"):
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


def _handler(server):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        rbufsize = 256 * 1024   # an extender request (5000 node names) in a few TLS reads
        timeout = server.read_timeout   # per socket operation; Connections has the deadlines

        def setup(self):
            super().setup()
            if isinstance(self.connection, ssl.SSLSocket):
                try:
                    self.connection.do_handshake()
                except (ssl.SSLError, OSError):
                    self.close_connection = True
                    self.rfile = self.wfile = None

        def handle(self):
            if self.rfile is None:
                return
            conns, sock = server.connections, self.connection
            wait = server.read_timeout          # a new connection's first request
            try:
                while True:
                    conns.waiting(sock, wait)
                    sock.settimeout(wait)
                    wait = server.idle_timeout
                    if not self.rfile.peek(1):
                        return                          # the client closed
                    conns.waiting(sock, server.read_timeout)
                    sock.settimeout(server.read_timeout)
                    self.close_connection = True
                    self.handle_one_request()
                    if self.close_connection:
                        return
            except (OSError, ValueError):       # timed out, cut, reset: the client is gone
                return

        def finish(self):
            if self.rfile is not None:
                super().finish()

        def handle_expect_100(self):
            return True         # do_POST sends 100 Continue once it takes the body

        def do_GET(self):
            path = urllib.parse.urlsplit(self.path).path
            if self.headers.get("Transfer-Encoding") or \
                    self.headers.get("Content-Length", "0").strip() != "0":
                return self._refuse(413, "too_large", "a GET carries no body")
            if path in server.posts:
                return self._refuse(405, None, "%s takes a POST" % path, keep=True)
            self._send(*server.answer(path, self.headers.get("Accept")))

        def do_POST(self):
            path = urllib.parse.urlsplit(self.path).path
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
            if self.headers.get("Transfer-Encoding"):
                return self._refuse(411, "no_length", "a POST to %s needs a Content-Length "
                                    "(a chunked body is refused)" % path)
            declared = self.headers.get("Content-Length")
            if declared is None:
                return self._refuse(411, "no_length", "a POST to %s needs a Content-Length"
                                    % path)
            if not declared.strip().isdigit():
                return self._refuse(400, "no_length", "Content-Length %r is not a number"
                                    % declared[:40])
            length = int(declared)
            if length > route.max_body:
                return self._refuse(413, "too_large", "a POST to %s takes at most %d bytes, "
                                    "this one declares %d" % (path, route.max_body, length))
            big = length > BIG_BODY
            if big and not server._big.acquire(timeout=server.read_timeout):
                return self._refuse(503, "busy", "another large body is being handled, "
                                    "try again")
            try:
                if self.headers.get("Expect", "").lower() == "100-continue":
                    self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                body = self.rfile.read(length)
                if len(body) != length:
                    self.close_connection = True        # cut short: nothing to answer
                    return
                deep = route.max_depth and jsondepth.nesting(body, route.max_depth)
                if deep:
                    return self._refuse(400, "too_deep", "the JSON body nests %d levels "
                                        "deep; a POST to %s takes at most %d" % (
                                            deep, path, route.max_depth), keep=True)
                server.connections.busy(self.connection)
                answer = server.answer_post(path, body)
                del body
                self._send(*answer)
            finally:
                if big:
                    server._big.release()

        def _authorised(self):
            name = verified_name(self.connection)
            if name is None:
                return False
            return not server.client_names or name in server.client_names

        def _refuse(self, status, reason, message, keep=False):
            """Answer STATUS with MESSAGE (one line) without reading the body; KEEP:
            the body was read, the connection may go on."""
            if reason:
                server.count_refused(reason)
            self._send(status, TEXT, (message + "\n").encode("utf-8"), close=not keep)
            if not keep:
                self._linger()

        def _linger(self):
            # the client may still be sending the body we refused: read and drop it for
            # a moment, so that it sees our answer rather than a reset
            try:
                socket.socket.shutdown(self.connection, socket.SHUT_WR)
                self.connection.settimeout(0.25)
                end = time.monotonic() + 1.0
                while time.monotonic() < end:
                    if not socket.socket.recv(self.connection, 65536):
                        break
            except OSError:
                pass

        def _send(self, status, content_type, body, close=False):
            if close:
                self.close_connection = True
            server.connections.busy(self.connection)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            if close:
                self.send_header("Connection", "close")
            self._headers_buffer.append(b"\r\n")        # end_headers() without its flush:
            self.wfile.write(b"".join(self._headers_buffer) + body)   # one write, one segment
            self._headers_buffer = []

        def log_message(self, format, *args):   # quiet: no line per probe or scrape
            pass

    return Handler
