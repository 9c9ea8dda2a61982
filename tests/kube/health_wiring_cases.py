"""Each CLI runs its watch loops under kube.health's Supervisor: a watch thread that
dies turns the component's /livez and /healthz to 503 with the thread's name and the
reason, and the process stays up to answer them (the kubelet restarts it).

The CLIs' ``run``/``serve`` (each a kube.component.run of its daemon) run here in the
test's own (main) thread, as in the process, with the informers' loop replaced (the pod
watch raises, the others sync and wait) and no API server or OpenStack behind them;
SIGTERM ends them as it ends the process. The same with the real API server:
tests/controlplane/test_kube_informer.py.
"""
import os
import signal
import threading
import urllib.error
import urllib.request

import pytest

from tacker_hwaffinity.cli.main import build_parser
from tacker_hwaffinity.kube import client as kube_client
from tacker_hwaffinity.kube.informer import Informer
from tacker_hwaffinity.kube.serve import HealthServer

REASON = "RuntimeError: the watch broke"


class Anything:
    """A stand-in for a client object: every attribute is a callable, every item text."""

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        return lambda *a, **kw: Anything()

    def __getitem__(self, key):
        return "x"

    def __str__(self):
        return "x"


def get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.fixture
def dying_watch(monkeypatch):
    """Informers whose pod watch raises and whose others sync and wait; servers
    started are collected; SIGTERM/SIGINT handlers restored afterwards."""
    servers = []
    start = HealthServer.start

    def started(self):
        servers.append(self)
        return start(self)

    def run(self, stop):
        if self.kind == "Pod":
            raise RuntimeError("the watch broke")
        self.synced.set()
        stop.wait()
    monkeypatch.setattr(HealthServer, "start", started)
    monkeypatch.setattr(Informer, "run", run)
    monkeypatch.setattr(kube_client, "connect", lambda *a, **kw: Anything())
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield servers
    for s, h in handlers.items():
        signal.signal(s, h)


def probe_then_stop(servers):
    """From another thread: once the component serves, the answers of /livez and
    /healthz after the pod watch died; then SIGTERM to this process."""
    answers = {}

    def probe():
        try:
            for _ in range(500):
                if servers and servers[0].port:
                    port = servers[0].port
                    if get(port, "/livez")[0] == 503:
                        for path in ("/livez", "/readyz", "/healthz"):
                            answers[path] = get(port, path)
                        return
                threading.Event().wait(0.02)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)
    threading.Thread(target=probe, daemon=True).start()
    return answers


def check(answers, thread="pod-watch"):
    want = (503, "worker thread %s died: %s\n" % (thread, REASON))
    assert answers == {"/livez": want, "/readyz": want, "/healthz": want}


def test_the_agent_reports_its_dead_pod_watch(dying_watch, monkeypatch, tmp_path):
    from tacker_hwaffinity.agent import cgroupfs, daemon
    from tacker_hwaffinity.cli import agent as cli
    from tacker_hwaffinity.objects.yamlio import parse_documents
    from tacker_hwaffinity.numa.topology import machine_from_yaml
    base = tmp_path / "cpuset" / "kubepods.slice"
    for sub in ("", "kubepods-burstable.slice", "kubepods-besteffort.slice"):
        (base / sub).mkdir(parents=True, exist_ok=True)
        (base / sub / "cpuset.cpus").write_text("0-3\n")
        (base / sub / "cpuset.mems").write_text("0\n")
    server = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "numa", "data", "server.yaml")
    with open(server) as f:
        machine = machine_from_yaml(parse_documents(f.read(), server)[0], server)
    layout = cgroupfs.detect(str(tmp_path))
    monkeypatch.setattr(daemon, "prepare",
                        lambda config, log: daemon.Prepared("cgroupfs", machine, layout))
    args = build_parser("agent").parse_args(["agent", "--node", "n1", "--metrics-address",
                                             "127.0.0.1:0", "--resync", "3600"])
    answers = probe_then_stop(dying_watch)
    assert cli.run(args) == 0
    check(answers)


def test_the_controller_reports_its_dead_pod_watch(dying_watch, monkeypatch):
    from tacker_hwaffinity import openstack
    from tacker_hwaffinity.cli import controller as cli
    from tacker_hwaffinity.controller import runner
    from tacker_hwaffinity.kube import leader
    from tacker_hwaffinity.openstack import api, auth, servers

    class Elector(Anything):
        def __init__(self, *a, **kw):
            self.is_leader = threading.Event()

        def run(self, stop):
            stop.wait()
    monkeypatch.setattr(openstack, "access_from_environment", lambda *a: Anything())
    monkeypatch.setattr(auth, "session", lambda *a, **kw: Anything())
    monkeypatch.setattr(api, "OpenStack", Anything)
    monkeypatch.setattr(servers, "ServerPoll", Anything)
    monkeypatch.setattr(runner, "Controller", Anything)
    monkeypatch.setattr(leader, "LeaderElector", Elector)
    args = build_parser("controller").parse_args(
        ["controller", "--worker-metadata", "cluster=c1", "--metrics-address", "127.0.0.1:0"])
    answers = probe_then_stop(dying_watch)
    assert cli.run(args) == 0
    check(answers)


def test_the_webhook_reports_its_dead_pod_watch(dying_watch):
    from tacker_hwaffinity.cli import webhook as cli
    args = build_parser("webhook").parse_args(
        ["webhook", "serve", "--insecure-for-tests", "--address", "127.0.0.1:0"])
    answers = probe_then_stop(dying_watch)
    assert cli.serve(args) == 0
    check(answers)
