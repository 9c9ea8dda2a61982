"""kube.component: the one runner of the agent, the controller and the webhook."""
import logging
import os
import signal
import socket
import subprocess
import sys

import pytest

from numa.conftest import expand_dump
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.kube import component
from tacker_hwaffinity.kube.component import Address, Refused, Started

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Fake:
    """A component whose start is START(context) and that records what happened."""

    name = "fake"
    log_level = "INFO"

    def __init__(self, start, port=0):
        self.address = Address("127.0.0.1", port, "--metrics-address")
        self._start = start
        self.events = []

    def start(self, context):
        self.events.append("start")
        return self._start(self, context)


@pytest.fixture(autouse=True)
def signals():
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    for s, h in handlers.items():
        signal.signal(s, h)


@pytest.fixture
def busy_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        yield s.getsockname()[1]


def test_parse_address():
    assert component.parse_address("10.0.0.1:9464", "--x") == Address("10.0.0.1", 9464, "--x")
    assert component.parse_address(":8443", "--x") == Address("0.0.0.0", 8443, "--x")
    with pytest.raises(InputError) as e:
        component.parse_address("localhost", "--metrics-address")
    assert "--metrics-address" in str(e.value) and "HOST:PORT" in str(e.value)


def test_a_run_logs_its_start_lines_runs_its_main_and_closes_after_the_threads(caplog):
    def start(fake, context):
        context.workers.start("worker", lambda stop: (stop.wait(), fake.events.append(
            "worker ended")), context.workers.stop)

        def main(stop):
            fake.events.append("main")
            stop.set()
        return Started(lambda: (True, "ok"), lambda port: ["fake serving on %d" % port],
                       main=main, close=[lambda: fake.events.append("closed")])
    fake = Fake(start)
    with caplog.at_level(logging.INFO, logger="hwaffinity.fake"):
        assert component.run(fake) == 0
    assert fake.events == ["start", "main", "worker ended", "closed"]
    line, = [r.getMessage() for r in caplog.records if r.name == "hwaffinity.fake"]
    assert line.startswith("fake serving on ") and not line.endswith(" 0")


def test_a_refusal_is_the_cli_s_bad_input():
    """cli.main prints it as the one error line of the command and exits 2."""
    def start(fake, context):
        raise Refused("no API server")
    with pytest.raises(InputError) as e:
        component.run(Fake(start))
    assert str(e.value) == "no API server"


def test_a_port_in_use_is_bad_input_naming_the_flag_and_stops_what_started(busy_port):
    def start(fake, context):
        context.workers.start("worker", lambda stop: (stop.wait(), fake.events.append(
            "worker ended")), context.workers.stop)
        return Started(lambda: (True, "ok"), lambda port: [],
                       close=[lambda: fake.events.append("closed")])
    fake = Fake(start, busy_port)
    with pytest.raises(InputError) as e:
        component.run(fake)
    assert str(e.value).startswith("field --metrics-address: cannot serve on 127.0.0.1:%d: "
                                   % busy_port), str(e.value)
    assert fake.events == ["start", "worker ended", "closed"]


def test_the_agent_on_a_port_in_use_says_so_in_one_line(tmp_path, busy_port):
    """Through the whole command: it was a traceback (exit 1) for the agent and the
    controller, and one line (exit 2) for the webhook only."""
    sysfs = expand_dump("sysfs-2socket.txt", str(tmp_path / "sys"))
    cgroup = tmp_path / "cgroup"
    os.makedirs(cgroup / "kubepods.slice")
    (cgroup / "cgroup.controllers").write_text("cpuset cpu memory\n")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n")
    p = subprocess.run(
        [sys.executable, "-m", "tacker_hwaffinity.cli.main", "agent", "--node", "n1",
         "--dry-run", "--mode", "cgroupfs", "--sysfs-root", sysfs, "--cgroup-root",
         str(cgroup), "--kubelet-root", str(tmp_path / "kubelet"), "--kubeconfig",
         str(kubeconfig), "--metrics-address", "127.0.0.1:%d" % busy_port],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.splitlines()[-1].endswith(
        "--metrics-address: cannot serve on 127.0.0.1:%d: [Errno 98] Address already in use"
        % busy_port), p.stderr
