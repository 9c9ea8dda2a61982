"""A loopback HTTP proxy in front of the test cloud (Keystone and Nova), run as its own
process: ``python novagate.py UPSTREAM_PORT`` prints ``port N`` and serves until killed.

After ``POST /-/hold``, the next ``/servers/detail`` request waits, not yet forwarded,
until ``POST /-/release``; ``GET /-/held`` counts the requests held so far. A process of
its own because the pytest process may carry eventlet's patches (from the Tacker tests),
under which an in-process socketserver's threads and shutdown handshake hang.
"""
import http.client
import http.server
import sys
import threading

SKIPPED = ("connection", "keep-alive", "transfer-encoding", "content-length")


def serve(upstream):
    state = {"armed": False, "held": 0, "go": threading.Event()}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _answer(self, status, data, headers=()):
            self.send_response(status)
            for k, v in headers:
                if k.lower() not in SKIPPED:
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _control(self):
            if self.path == "/-/hold":
                state["go"].clear()
                state["armed"] = True
            elif self.path == "/-/release":
                state["go"].set()
            self._answer(200, str(state["held"]).encode())

        def _forward(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.startswith("/-/"):
                return self._control()
            if "/servers/detail" in self.path and state["armed"]:
                state["armed"] = False
                state["held"] += 1
                state["go"].wait(300)
            up = http.client.HTTPConnection("127.0.0.1", upstream, timeout=120)
            up.request(self.command, self.path, body or None,
                       {k: v for k, v in self.headers.items()
                        if k.lower() not in ("connection", "keep-alive")})
            answer = up.getresponse()
            data = answer.read()
            up.close()
            self._answer(answer.status, data, answer.getheaders())
        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print("port %d" % server.server_port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    serve(int(sys.argv[1]))
