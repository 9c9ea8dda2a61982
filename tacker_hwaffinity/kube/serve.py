"""The one HTTP port of an in-cluster component: ``/metrics`` (Prometheus text
exposition, or OpenMetrics when the scraper asks for it) and ``/healthz``
(for the liveness/readiness probes), plus the component's own POST paths
(``posts``: the webhook's review and extender verbs). Everything else is 404.

One server in a daemon thread, quiet: probes and scrapes are not logged.
HTTP/1.1 with keep-alive (kube-scheduler and the API server reuse their
connections). With ``tls=(cert file, key file)`` it serves HTTPS only; the TLS
handshake runs in the connection's own thread, so a slow client never holds up
the others.
"""
import http.server
import socket
import ssl
import threading
import urllib.parse

MAX_BODY = 64 * 1024 * 1024     # an extender's NodeList of 5000 full nodes is ~25 MB


class HealthServer:
    """Serve REGISTRY (default: prometheus_client's global one) and HEALTH, a
    callable returning (ok, message): 200 with the message (or "ok") when ok,
    503 with it otherwise. PORT 0 picks a free port; ``.port`` is the real one
    once :meth:`start` returned."""

    def __init__(self, port, host="0.0.0.0", registry=None, health=None, posts=None,
                 tls=None):
        self.host = host
        self.port = port
        self.registry = registry
        self.health = health or (lambda: (True, "ok"))
        # path -> callable(body bytes) -> (status, content type, body bytes)
        self.posts = dict(posts or {})
        self.tls = tls
        self._server = None
        self._thread = None

    def start(self):
        if self.registry is None:
            from prometheus_client import REGISTRY
            self.registry = REGISTRY
        server_class = _Server
        if self.tls is not None:
            server_class = _tls_server(*self.tls)
        self._server = server_class((self.host, self.port), _handler(self))
        self._server.daemon_threads = True
        self._server.timeout = 0.2          # handle_request() returns to check _stopping
        self.port = self._server.server_address[1]
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True,
                                        name="health-server-%d" % self.port)
        self._thread.start()
        return self

    def _serve(self):
        # our own loop rather than serve_forever(): stop() then needs no handshake with
        # it (socketserver's shutdown() waits for one, which never comes in a process
        # where eventlet has patched threading, as Tacker's does)
        while not self._stopping.is_set():
            self._server.handle_request()

    def stop(self):
        if self._server is None:
            return
        self._stopping.set()
        self._thread.join(timeout=5)
        self._server.server_close()
        self._server = None

    def answer(self, path, accept):
        """(status, content type, body bytes) for a GET of PATH."""
        if path == "/metrics":
            from prometheus_client.exposition import choose_encoder
            encoder, content_type = choose_encoder(accept or "")
            return 200, content_type, encoder(self.registry)
        if path == "/healthz":
            try:
                ok, message = self.health()
            except Exception as e:  # noqa: BLE001 - a broken check is an unhealthy component
                ok, message = False, "health check failed: %s: %s" % (type(e).__name__, e)
            body = (message or ("ok" if ok else "unhealthy")) + "\n"
            return (200 if ok else 503), "text/plain; charset=utf-8", body.encode("utf-8")
        return 404, "text/plain; charset=utf-8", b"not found\n"


    def answer_post(self, path, body):
        handler = self.posts.get(path)
        if handler is None:
            return 404, "text/plain; charset=utf-8", b"not found\n"
        return handler(body)


class _Server(http.server.ThreadingHTTPServer):
    def get_request(self):
        sock, addr = self.socket.accept()
        # answers are small and written at once: no Nagle delay against the peer's
        # delayed ACK (40 ms per answer on a kept-alive connection otherwise)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock, addr


def _tls_server(cert, key):
    """A ThreadingHTTPServer class serving TLS 1.2+ with CERT/KEY (files)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)

    class TLSServer(_Server):
        def get_request(self):
            sock, addr = super().get_request()
            return context.wrap_socket(sock, server_side=True,
                                       do_handshake_on_connect=False), addr

    return TLSServer


def _handler(server):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        rbufsize = 256 * 1024   # an extender request (5000 node names) in a few TLS reads
        timeout = 60            # an idle keep-alive connection is closed after this

        def setup(self):
            super().setup()
            if isinstance(self.connection, ssl.SSLSocket):
                try:
                    self.connection.do_handshake()
                except (ssl.SSLError, OSError):
                    self.close_connection = True
                    self.rfile = self.wfile = None

        def handle(self):
            if self.rfile is not None:
                super().handle()

        def finish(self):
            if self.rfile is not None:
                super().finish()

        def do_GET(self):
            path = urllib.parse.urlsplit(self.path).path
            self._send(*server.answer(path, self.headers.get("Accept")))

        def do_POST(self):
            path = urllib.parse.urlsplit(self.path).path
            try:
                length = int(self.headers.get("Content-Length") or "")
            except ValueError:
                length = -1
            if not 0 <= length <= MAX_BODY:
                self.close_connection = True
                return self._send(411 if length < 0 else 413, "text/plain; charset=utf-8",
                                  b"a POST needs a Content-Length of at most %d\n" % MAX_BODY)
            self._send(*server.answer_post(path, self.rfile.read(length)))

        def _send(self, status, content_type, body):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self._headers_buffer.append(b"\r\n")        # end_headers() without its flush:
            self.wfile.write(b"".join(self._headers_buffer) + body)   # one write, one segment
            self._headers_buffer = []

        def log_message(self, format, *args):   # quiet: no line per probe or scrape
            pass

    return Handler
