"""The metrics and health port of the in-cluster components, on loopback."""
import http.client

import pytest
from prometheus_client import CollectorRegistry, Counter

from tacker_hwaffinity.kube.serve import HealthServer


def get(server, path, accept=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request("GET", path, headers={"Accept": accept} if accept else {})
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type"), resp.read().decode()
    finally:
        conn.close()


@pytest.fixture
def state():
    return {"ok": True, "message": "ok"}


@pytest.fixture
def server(state):
    registry = CollectorRegistry()
    counter = Counter("hwaffinity_test_things", "Things counted by the test.",
                      registry=registry)
    counter.inc(3)

    def health():
        if isinstance(state["ok"], Exception):
            raise state["ok"]
        return state["ok"], state["message"]
    srv = HealthServer(0, host="127.0.0.1", registry=registry, health=health).start()
    yield srv
    srv.stop()


def test_metrics_show_a_counter_of_the_given_registry(server):
    assert server.port > 0
    status, ctype, body = get(server, "/metrics")
    assert status == 200
    assert ctype.startswith("text/plain")
    assert "hwaffinity_test_things_total 3.0" in body
    assert "python_gc" not in body          # the global registry is not mixed in


def test_metrics_in_openmetrics_when_asked(server):
    status, ctype, body = get(server, "/metrics", accept="application/openmetrics-text")
    assert status == 200 and ctype.startswith("application/openmetrics-text")
    assert body.rstrip().endswith("# EOF")


def test_healthz_follows_the_health_callable(server, state):
    assert get(server, "/healthz")[::2] == (200, "ok\n")
    state.update(ok=False, message="pods not listed yet")
    assert get(server, "/healthz")[::2] == (503, "pods not listed yet\n")
    state.update(ok=RuntimeError("boom"))
    status, _, body = get(server, "/healthz?verbose=1")
    assert status == 503 and "RuntimeError: boom" in body


def test_everything_else_is_404(server):
    assert get(server, "/")[0] == 404
    assert get(server, "/metricsx")[0] == 404


def test_stop_frees_the_port(state):
    srv = HealthServer(0, host="127.0.0.1", registry=CollectorRegistry()).start()
    port = srv.port
    assert get(srv, "/healthz")[::2] == (200, "ok\n")
    srv.stop()
    srv.stop()                                  # twice is harmless
    with pytest.raises(OSError):
        http.client.HTTPConnection("127.0.0.1", port, timeout=2).request("GET", "/healthz")
