"""kube.health: a worker thread that dies makes /healthz, /readyz and /livez 503 with
one line naming it; readiness waits for the first full reconcile, liveness does not."""
import threading
import urllib.error
import urllib.request

import pytest

from tacker_hwaffinity.kube.health import MAX_REASON, Supervisor, one_line
from tacker_hwaffinity.kube.serve import HealthServer


def get(server, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (server.port, path),
                                    timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.fixture
def component():
    """A supervisor, a readiness flag and the HTTP server answering for them."""
    stop, synced = threading.Event(), threading.Event()
    workers = Supervisor(stop)

    def ready():
        return (True, "ok") if synced.is_set() else (False, "caches not synced yet")
    server = HealthServer(0, host="127.0.0.1", health=workers.health(ready),
                          live=workers.live).start()
    yield workers, synced, server
    stop.set()
    server.stop()
    workers.join(5)


def test_ready_only_after_the_first_reconcile_and_alive_meanwhile(component):
    workers, synced, server = component
    workers.start("pod-watch", workers.stop.wait)
    assert get(server, "/livez") == (200, "ok\n")
    assert get(server, "/readyz") == (503, "caches not synced yet\n")
    assert get(server, "/healthz") == (503, "caches not synced yet\n")
    synced.set()
    assert get(server, "/readyz") == (200, "ok\n") == get(server, "/healthz")


def test_a_worker_that_raises_makes_every_probe_fail_with_its_name_and_reason(component):
    workers, synced, server = component
    synced.set()
    go = threading.Event()

    def watch():
        go.wait(5)
        raise ConnectionError("https://admin:s3cret@api.example:6443 reset\nmore detail")
    thread = workers.start("pod-watch", watch)
    assert get(server, "/healthz")[0] == 200
    go.set()
    thread.join(5)
    want = "worker thread pod-watch died: ConnectionError: https://***@api.example:6443 reset\n"
    for path in ("/livez", "/readyz", "/healthz"):
        assert get(server, path) == (503, want), path
    assert "s3cret" not in want


def test_a_worker_that_returns_while_the_component_runs_is_dead(component):
    workers, synced, server = component
    synced.set()
    workers.start("resync", lambda: None).join(5)
    assert get(server, "/livez") == (503, "worker thread resync died: ended while the "
                                          "component runs\n")


def test_workers_that_end_because_the_component_stops_are_not_deaths():
    stop = threading.Event()
    workers = Supervisor(stop)
    workers.start("a", stop.wait)
    stop.set()
    workers.join(5)
    assert workers.deaths() == [] and workers.live() == (True, "ok")


def test_the_reason_is_one_bounded_line():
    text = one_line(RuntimeError("x" * 1000 + "\nsecond"))
    assert text.startswith("RuntimeError: xxx") and len(text) == MAX_REASON
    assert "\n" not in text and one_line(KeyError()) == "KeyError"


def test_the_shipped_probes_ask_liveness_of_livez_and_readiness_of_readyz():
    import os

    import yaml
    deploy = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "deploy")
    seen = []
    for component, name in (("agent", "daemonset.yaml"), ("controller", "deployment.yaml"),
                            ("webhook", "deployment.yaml")):
        with open(os.path.join(deploy, component, name)) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        for doc in docs:
            for c in doc.get("spec", {}).get("template", {}).get("spec", {}).get(
                    "containers", []):
                assert c["livenessProbe"]["httpGet"]["path"] == "/livez", component
                assert c["readinessProbe"]["httpGet"]["path"] == "/readyz", component
                seen.append(component)
    assert seen == ["agent", "controller", "webhook"]
