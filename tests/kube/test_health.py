"""kube.health: a worker thread that dies makes /healthz, /readyz and /livez 503 with
one line naming it; readiness waits for the first full reconcile, liveness does not.

The probes are served and read in a child process, as in the components: the pytest
process may have had threading and sockets patched by eventlet (the Tacker tests import
it), under which an in-process server's thread does not answer."""
import json
import os
import subprocess
import sys
import threading

from tacker_hwaffinity.kube.health import MAX_REASON, Supervisor, one_line

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHILD = r"""
import json, sys, threading, urllib.error, urllib.request
from tacker_hwaffinity.kube.health import Supervisor
from tacker_hwaffinity.kube.serve import HealthServer
stop, synced, go = threading.Event(), threading.Event(), threading.Event()
workers = Supervisor(stop)
def ready():
    return (True, "ok") if synced.is_set() else (False, "caches not synced yet")
server = HealthServer(0, host="127.0.0.1", health=workers.health(ready),
                      live=workers.live).start()
def get(path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (server.port, path),
                                    timeout=5) as r:
            return [r.status, r.read().decode()]
    except urllib.error.HTTPError as e:
        return [e.code, e.read().decode()]
def raising():
    go.wait(5)
    raise ConnectionError("https://admin:s3cret@api.example:6443 reset\nmore detail")
seen = []
for step in sys.argv[1:]:                 # the scenario, one step a word
    if step == "synced":
        synced.set()
    elif step == "go":
        go.set()
    elif step.startswith("start:"):
        name, what = step[6:].split("=")
        thread = workers.start(name, {"wait": stop.wait, "raise": raising,
                                      "return": lambda: None}[what])
    elif step == "join":
        thread.join(5)
    else:
        seen.append(get(step))
stop.set()
server.stop()
workers.join(5)
print(json.dumps(seen))
"""


def probes(*steps):
    """The [status, body] of each probe path among STEPS, run in a child process."""
    p = subprocess.run([sys.executable, "-c", CHILD] + list(steps), capture_output=True,
                       text=True, cwd=ROOT, timeout=60)
    assert p.returncode == 0, p.stderr
    return [tuple(a) for a in json.loads(p.stdout.splitlines()[-1])]


def test_ready_only_after_the_first_reconcile_and_alive_meanwhile():
    assert probes("start:pod-watch=wait", "/livez", "/readyz", "/healthz", "synced",
                  "/readyz", "/healthz") == [
        (200, "ok\n"), (503, "caches not synced yet\n"), (503, "caches not synced yet\n"),
        (200, "ok\n"), (200, "ok\n")]


def test_a_worker_that_raises_makes_every_probe_fail_with_its_name_and_reason():
    want = "worker thread pod-watch died: ConnectionError: https://***@api.example:6443 reset\n"
    got = probes("synced", "start:pod-watch=raise", "/healthz", "go", "join",
                 "/livez", "/readyz", "/healthz")
    assert got == [(200, "ok\n")] + [(503, want)] * 3
    assert "s3cret" not in want


def test_a_worker_that_returns_while_the_component_runs_is_dead():
    assert probes("synced", "start:resync=return", "join", "/livez") == [
        (503, "worker thread resync died: ended while the component runs\n")]


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
