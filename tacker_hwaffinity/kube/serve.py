"""The one HTTP port of an in-cluster component: ``/metrics`` (Prometheus text
exposition, or OpenMetrics when the scraper asks for it) and ``/healthz``
(for the liveness/readiness probes). Everything else is 404.

One server in a daemon thread, quiet: probes and scrapes are not logged.
"""
import http.server
import threading
import urllib.parse


class HealthServer:
    """Serve REGISTRY (default: prometheus_client's global one) and HEALTH, a
    callable returning (ok, message): 200 with the message (or "ok") when ok,
    503 with it otherwise. PORT 0 picks a free port; ``.port`` is the real one
    once :meth:`start` returned."""

    def __init__(self, port, host="0.0.0.0", registry=None, health=None):
        self.host = host
        self.port = port
        self.registry = registry
        self.health = health or (lambda: (True, "ok"))
        self._server = None
        self._thread = None

    def start(self):
        if self.registry is None:
            from prometheus_client import REGISTRY
            self.registry = REGISTRY
        self._server = http.server.ThreadingHTTPServer((self.host, self.port), _handler(self))
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


def _handler(server):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path = urllib.parse.urlsplit(self.path).path
            status, content_type, body = server.answer(path, self.headers.get("Accept"))
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args):   # quiet: no line per probe or scrape
            pass

    return Handler
