"""The metrics and health port of the in-cluster components, on loopback.

The server runs in a child process of its own, as it does in the components: the
pytest process may have had threading and sockets patched by eventlet (the Tacker
tests import it), which no component ever has.
"""
import http.client
import json
import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHILD = r"""
import json, sys, time
from prometheus_client import CollectorRegistry, Counter
from tacker_hwaffinity.kube.serve import HealthServer
state_file = sys.argv[1]
registry = CollectorRegistry()
Counter("hwaffinity_test_things", "Things counted by the test.", registry=registry).inc(3)
def health():
    with open(state_file) as f:
        state = json.load(f)
    if state.get("raise"):
        raise RuntimeError(state["raise"])
    return state["ok"], state["message"]
srv = HealthServer(0, host="127.0.0.1", registry=registry, health=health).start()
print(srv.port, flush=True)
line = sys.stdin.readline()           # "stop" (or EOF): stop, twice, then report
srv.stop()
srv.stop()
print("stopped", flush=True)
sys.stdin.readline()
"""


class Child:
    def __init__(self, tmp_path):
        self.state = tmp_path / "state.json"
        self.set(ok=True, message="ok")
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD, str(self.state)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     cwd=ROOT)
        self.port = int(self.proc.stdout.readline())

    def set(self, **state):
        self.state.write_text(json.dumps(state))

    def get(self, path, accept=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            conn.request("GET", path, headers={"Accept": accept} if accept else {})
            resp = conn.getresponse()
            return resp.status, resp.getheader("Content-Type"), resp.read().decode()
        finally:
            conn.close()

    def stop(self):
        self.proc.stdin.write("stop\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "stopped"

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def server(tmp_path):
    child = Child(tmp_path)
    yield child
    child.close()


def test_metrics_show_a_counter_of_the_given_registry(server):
    assert server.port > 0
    status, ctype, body = server.get("/metrics")
    assert status == 200
    assert ctype.startswith("text/plain")
    assert "hwaffinity_test_things_total 3.0" in body
    assert "python_gc" not in body          # the global registry is not mixed in


def test_metrics_in_openmetrics_when_asked(server):
    status, ctype, body = server.get("/metrics", accept="application/openmetrics-text")
    assert status == 200 and ctype.startswith("application/openmetrics-text")
    assert body.rstrip().endswith("# EOF")


def test_healthz_follows_the_health_callable(server):
    assert server.get("/healthz")[::2] == (200, "ok\n")
    server.set(ok=False, message="pods not listed yet")
    assert server.get("/healthz")[::2] == (503, "pods not listed yet\n")
    server.set(ok=True, message="ok", **{"raise": "boom"})
    status, _, body = server.get("/healthz?verbose=1")
    assert status == 503 and "RuntimeError: boom" in body


def test_everything_else_is_404(server):
    assert server.get("/")[0] == 404
    assert server.get("/metricsx")[0] == 404


def test_stop_frees_the_port(server):
    assert server.get("/healthz")[::2] == (200, "ok\n")
    t0 = time.monotonic()
    server.stop()                          # twice is harmless (the child stops twice)
    assert time.monotonic() - t0 < 5
    with pytest.raises(OSError):
        http.client.HTTPConnection("127.0.0.1", server.port, timeout=2).request(
            "GET", "/healthz")
