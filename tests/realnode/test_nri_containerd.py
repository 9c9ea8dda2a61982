"""The agent in NRI mode on a real containerd 1.7 (NRI on, cgroup v1, runc), as a process
(``hwaffinity agent --mode nri``), with containers created through the CRI as the kubelet
creates them: each container's first process prints its own ``Cpus_allowed_list`` at
start, so there is no window in which it could have run elsewhere unseen.

This host has 2 CPUs on one NUMA node: a Guaranteed 1-CPU container gets CPU 0
exclusively and the shared pool is CPU 1; with nothing exclusive the shared pool is
0-1 (no reserved CPUs). The API server is unreachable on purpose: the agent's
annotations and Events wait, container starts do not.
"""
import os
import signal
import subprocess
import sys
import time

import pytest

from .test_runtime_harness import Pod, log_lines, status_fields, wait_for

pytestmark = pytest.mark.realnode

GUARANTEED_1 = {"cpu_shares": 1024, "cpu_quota": 100000, "cpu_period": 100000,
                "memory_limit": 64 << 20}
BURSTABLE_100M = {"cpu_shares": 102, "cpu_period": 100000}
FORGED = '{"c": {"pool": "socket0", "exclusiveCpus": "0", "cpuType": "normal", "mems": "0"}}'


class AgentProcess:
    def __init__(self, tmp, nri_socket):
        self.tmp, self.nri_socket = tmp, nri_socket
        kubeconfig = os.path.join(tmp, "kubeconfig")
        with open(kubeconfig, "w") as f:        # nobody listens on port 9
            f.write("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "
                    "'http://127.0.0.1:9'}}]\nusers: [{name: u, user: {token: t}}]\n"
                    "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
                    "current-context: x\n")
        self.args = [sys.executable, "-m", "tacker_hwaffinity.cli.main", "agent", "--node", "n1",
                     "--mode", "auto", "--nri-socket", nri_socket, "--kubeconfig", kubeconfig,
                     "--state-dir", os.path.join(tmp, "state"), "--kubelet-root",
                     os.path.join(tmp, "kubelet"), "--metrics-address", "127.0.0.1:0"]
        self.proc = None
        self.log = os.path.join(tmp, "agent.log")

    def start(self):
        self.mark = os.path.getsize(self.log) if os.path.exists(self.log) else 0
        self.out = open(self.log, "a")
        self.proc = subprocess.Popen(self.args, stderr=self.out, stdout=self.out)
        self.wait_log("synchronized with the runtime")
        return self

    def text(self):
        with open(self.log) as f:
            f.seek(self.mark)
            return f.read()

    def wait_log(self, what, timeout=20):
        wait_for(lambda: what in self.text() or self.proc.poll() is not None, timeout, what)
        assert what in self.text(), self.text()[-2000:]

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            if sig != signal.SIGSTOP:
                self.proc.wait(15)
        self.out.close()


@pytest.fixture
def agent(containerd17, tmp_path):
    a = AgentProcess(str(tmp_path), containerd17.nri_socket).start()
    yield a
    if a.proc.poll() is None:
        os.kill(a.proc.pid, signal.SIGCONT)
        a.stop()


def seen(pod, name):
    """{field: value} the container's first process printed at start."""
    return {text.split(":")[0]: text.split(":", 1)[1].strip()
            for stream, text in log_lines(pod.log_path(name), 2) if stream == "stdout"}


def now_allowed(containerd17, cid):
    return status_fields(containerd17.cri.pid(cid))["Cpus_allowed_list"]


def test_containers_start_pinned_and_the_shared_pool_follows(containerd17, agent):
    assert "mode nri (the runtime's NRI socket" in agent.text()
    assert "configured by containerd v1.7" in agent.text() or "configured by containerd 1.7" \
        in agent.text()
    g = Pod(containerd17, "nri-exclusive", qos="guaranteed")
    b = Pod(containerd17, "nri-shared", qos="burstable")
    try:
        cg = g.container("c", resources=GUARANTEED_1)
        assert seen(g, "c")["Cpus_allowed_list"] == "0"            # exclusive, from the start
        cb = b.container("c", resources=BURSTABLE_100M)
        assert seen(b, "c")["Cpus_allowed_list"] == "1"            # the shared pool left
        g.remove()
        # the exclusive CPU went back: the runtime updated the shared container (through NRI)
        wait_for(lambda: now_allowed(containerd17, cb) == "0-1", 10, "the shared pool to grow")
        assert os.listdir(os.path.join(agent.tmp, "state")) == ["nri-grants.json"]
        assert cg not in containerd17.cri.list_containers()
    finally:
        for p in (g, b):
            try:
                p.remove()
            except Exception:       # noqa: BLE001 -- removed in the test
                pass


def test_init_container_is_pinned_and_gives_its_cpu_back(containerd17, agent):
    pod = Pod(containerd17, "nri-init", qos="guaranteed")
    try:
        pod.container("init", args=("grep -E 'Cpus_allowed_list|Mems_allowed_list' "
                                    "/proc/self/status",), resources=GUARANTEED_1)
        assert seen(pod, "init")["Cpus_allowed_list"] == "0"
        wait_for(lambda: containerd17.cri.state(
            containerd17.cri.list_containers(pod.id)[0]["id"]) == "EXITED", 20, "init to exit")
        pod.container("app", resources=GUARANTEED_1)       # its CPU again: the init is done
        assert seen(pod, "app")["Cpus_allowed_list"] == "0"
    finally:
        pod.remove()


def test_resize_is_placed_again(containerd17, agent):
    pod = Pod(containerd17, "nri-resize", qos="guaranteed")
    try:
        cid = pod.container("c", resources=GUARANTEED_1)
        assert seen(pod, "c")["Cpus_allowed_list"] == "0"
        containerd17.cri.update_resources(cid, cpu_shares=512, cpu_quota=50000,
                                          cpu_period=100000, memory_limit=64 << 20)
        # 500m is no whole CPU: shared now, the whole pool
        wait_for(lambda: now_allowed(containerd17, cid) == "0-1", 10, "the resize")
        assert "resized: placed again" in agent.text()
    finally:
        pod.remove()


def test_an_agent_restart_changes_nothing(containerd17, agent):
    g = Pod(containerd17, "nri-restart-g", qos="guaranteed")
    b = Pod(containerd17, "nri-restart-b", qos="burstable")
    try:
        cg = g.container("c", resources=GUARANTEED_1)
        cb = b.container("c", resources=BURSTABLE_100M)
        assert seen(g, "c")["Cpus_allowed_list"] == "0" and seen(b, "c")["Cpus_allowed_list"] \
            == "1"
        agent.stop()
        agent.start()
        assert "2 container(s)" in agent.text() and "0 cpuset(s) corrected" in agent.text()
        assert now_allowed(containerd17, cg) == "0" and now_allowed(containerd17, cb) == "1"
    finally:
        g.remove()
        b.remove()


def test_a_killed_agent_never_stops_a_start_and_the_next_sync_pins(containerd17, agent):
    agent.stop(signal.SIGKILL)
    pod = Pod(containerd17, "nri-killed", qos="guaranteed")
    try:
        t0 = time.monotonic()
        cid = pod.container("c", resources=GUARANTEED_1)
        assert seen(pod, "c")["Cpus_allowed_list"] == "0-1"      # started, unpinned
        assert time.monotonic() - t0 < 10
        agent.start()
        assert "1 cpuset(s) corrected" in agent.text()
        # containerd applies the Synchronize reply's updates after the agent logged them
        wait_for(lambda: now_allowed(containerd17, cid) == "0", 10, "the resync to pin it")
    finally:
        pod.remove()


def test_a_stopped_agent_costs_one_request_timeout_then_reconnects(containerd17, agent):
    agent.stop(signal.SIGSTOP)          # connected but silent: containerd's 2 s timeout
    pod = Pod(containerd17, "nri-slow", qos="guaranteed")
    try:
        t0 = time.monotonic()
        cid = pod.container("c", resources=GUARANTEED_1)
        elapsed = time.monotonic() - t0
        assert seen(pod, "c")["Cpus_allowed_list"] == "0-1"
        assert 1.5 < elapsed < 10, elapsed
        os.kill(agent.proc.pid, signal.SIGCONT)
        agent.wait_log("reconnecting")
        wait_for(lambda: now_allowed(containerd17, cid) == "0", 20, "the resync to pin it")
    finally:
        pod.remove()


def test_a_forged_annotation_is_ignored(containerd17, agent):
    pod = Pod(containerd17, "nri-forged", qos="besteffort",
              annotations={"hwaffinity.io/numa": FORGED})
    try:
        pod.container("c", resources={"cpu_shares": 2, "cpu_period": 100000})
        assert seen(pod, "c")["Cpus_allowed_list"] == "0-1"       # not the forged CPU 0
        agent.wait_log("hwaffinity.io/numa; the agent's own checkpoint is the record")
    finally:
        pod.remove()
