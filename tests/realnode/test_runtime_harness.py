"""The real-node harness itself: a private containerd 1.7 (NRI on), driven through the CRI
as a kubelet drives it, runs real containers whose first process reports what it saw.

Proves what later tests (the NRI node agent) rely on: pods and containers made
over CRI v1 with annotations and a cgroup parent; a container's CRI log holds
what its first process printed; UpdateContainerResources moves a running
container's cpuset (cgroup file and the kernel's Cpus_allowed_list); the CRI
client works through a TCP forward (as in the VM); stop() leaves no mount,
cgroup, process or directory behind.
"""
import os
import socket
import stat
import subprocess
import time
import uuid

import pytest

from tacker_hwaffinity.numa.cpuset import format_list, parse_list

from . import images
from .conftest import require_node_runtime
from .containerd import Containerd
from .cri import CRI, CRIError, parse_log

pytestmark = pytest.mark.realnode

# what the first process saw, then wait; it is PID 1 of its namespace: SIGTERM needs the trap
REPORT = ("trap 'exit 0' TERM; grep -E 'Cpus_allowed_list|Mems_allowed_list' /proc/self/status; "
          "sleep 300 & wait $!")


def online_cpus():
    with open("/sys/devices/system/cpu/online") as f:
        return sorted(parse_list(f.read()))


def wait_for(predicate, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(0.05)


def log_lines(path, count, timeout=10.0):
    """The first COUNT complete lines of a CRI log file, as {text: stream}."""
    def read():
        try:
            with open(path) as f:
                entries = parse_log(f.read())
        except FileNotFoundError:
            return None
        return entries if len(entries) >= count else None
    return wait_for(read, timeout, "%d lines in %s" % (count, path))


def status_fields(pid):
    with open("/proc/%d/status" % pid) as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


class Pod:
    """One host-network pod in a Containerd, with helpers to add containers."""

    def __init__(self, runtime, name, annotations=None, labels=None, qos="guaranteed",
                 namespace="default", uid=None):
        self.runtime, self.cri = runtime, runtime.cri
        self.name, self.namespace, self.uid = name, namespace, uid or str(uuid.uuid4())
        self.cgroup_parent = runtime.cgroup_parent(self.uid, qos)
        self.config = self.cri.sandbox_config(
            name, self.namespace, self.uid, annotations=annotations, labels=labels,
            cgroup_parent=self.cgroup_parent,
            log_directory=runtime.pod_log_dir(self.namespace, name, self.uid))
        self.id = self.cri.run_pod_config(self.config)

    def container(self, name, image="busybox", command=("/bin/sh", "-c"), args=(REPORT,),
                  **kw):
        cid = self.cri.create_container(self.id, self.config, name,
                                        self.runtime.images[image]["ref"], list(command),
                                        list(args), log_path="%s/0.log" % name, **kw)
        self.cri.start(cid)
        return cid

    def log_path(self, name):
        return os.path.join(self.config["log_directory"], name, "0.log")

    def cpuset_dir(self, cid):
        return "/sys/fs/cgroup/cpuset%s/%s" % (self.cgroup_parent, cid)

    def remove(self):
        self.cri.stop_pod(self.id)
        self.cri.remove_pod(self.id)


def test_runtime_is_containerd_17_with_nri_socket(containerd17):
    version = containerd17.cri.version()
    assert version["runtime_name"] == "containerd"
    assert version["runtime_version"].startswith("1.7."), version
    assert version["runtime_api_version"] == "v1"
    tags = {t for image in containerd17.cri.list_images() for t in image.get("repo_tags", [])}
    assert {images.image_ref("busybox"), images.image_ref("pause")} <= tags
    assert stat.S_ISSOCK(os.stat(containerd17.nri_socket).st_mode)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:      # it accepts plugins
        s.connect(containerd17.nri_socket)
    assert "NRI" in containerd17.log_text()


def test_container_reports_its_cpuset_and_update_moves_it(containerd17):
    cpus = online_cpus()
    first, second = format_list({cpus[-1]}), format_list({cpus[0]})
    pod = Pod(containerd17, "harness-cpuset", annotations={"example.com/affinity": "far"},
              labels={"app": "harness"})
    try:
        listed = [p for p in containerd17.cri.list_pods() if p["id"] == pod.id]
        assert listed[0]["annotations"] == {"example.com/affinity": "far"}
        assert listed[0]["metadata"]["uid"] == pod.uid
        cid = pod.container("app", resources={"cpuset_cpus": first, "cpuset_mems": "0",
                                              "cpu_shares": 1024},
                            annotations={"example.com/role": "worker"})

        lines = dict((text.split(":")[0], text.split(":", 1)[1].strip())
                     for stream, text in log_lines(pod.log_path("app"), 2) if stream == "stdout")
        assert lines == {"Cpus_allowed_list": first, "Mems_allowed_list": "0"}

        status = containerd17.cri.status(cid)
        assert status["annotations"]["example.com/role"] == "worker"
        assert status["log_path"] == pod.log_path("app")
        assert containerd17.cri.state(cid) == "RUNNING"
        pid = containerd17.cri.pid(cid)
        with open(os.path.join(pod.cpuset_dir(cid), "cgroup.procs")) as f:
            assert str(pid) in f.read().split()
        assert status_fields(pid)["NSpid"].split()[-1] == "1"     # its own PID namespace

        containerd17.cri.update_resources(cid, cpuset_cpus=second, cpuset_mems="0",
                                          cpu_shares=1024)
        with open(os.path.join(pod.cpuset_dir(cid), "cpuset.cpus")) as f:
            assert f.read().strip() == second
        assert status_fields(pid)["Cpus_allowed_list"] == second
        assert containerd17.cri.status(cid)["resources"]["linux"]["cpuset_cpus"] == second

        started = time.monotonic()
        containerd17.cri.stop(cid, timeout=20)
        assert time.monotonic() - started < 5
        status = containerd17.cri.status(cid)
        assert (status["state"], status.get("exit_code", 0)) == (2, 0)    # EXITED, by the trap
        containerd17.cri.remove(cid)
        assert cid not in {c["id"] for c in containerd17.cri.list_containers()}
        assert not os.path.exists(pod.cpuset_dir(cid))
    finally:
        pod.remove()
    assert pod.id not in {p["id"] for p in containerd17.cri.list_pods()}
    assert not any(m.startswith(containerd17.state) and pod.id in m
                   for m in containerd17.mounts())


def test_pause_image_stops_promptly_on_sigterm(containerd17):
    pod = Pod(containerd17, "harness-pause", qos="burstable")
    try:
        assert "/burstable/pod" in pod.cgroup_parent
        cid = pod.container("pause", image="pause", command=(), args=())
        wait_for(lambda: containerd17.cri.pid(cid), what="the pause process")
        started = time.monotonic()
        containerd17.cri.stop(cid, timeout=20)      # SIGKILL only after 20 s
        assert time.monotonic() - started < 5
        status = containerd17.cri.status(cid)
        assert (status["state"], status.get("exit_code", 0)) == (2, 0)    # EXITED, trap's exit 0
        containerd17.cri.remove(cid)
    finally:
        pod.remove()


def test_cri_errors_carry_code_and_message(containerd17):
    with pytest.raises(CRIError) as info:
        containerd17.cri.status("0" * 64)
    assert info.value.code.name == "NOT_FOUND"
    assert "ContainerStatus" in str(info.value) and "NOT_FOUND" in str(info.value)


def test_cri_client_reaches_the_runtime_through_a_tcp_forward(containerd17):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    forward = subprocess.Popen(
        ["socat", "TCP-LISTEN:%d,bind=127.0.0.1,reuseaddr,fork" % port,
         "UNIX-CONNECT:%s" % containerd17.cri_socket], stderr=subprocess.PIPE)
    try:
        with CRI("127.0.0.1:%d" % port, timeout=5) as cri:
            assert cri.wait_ready(timeout=10)["runtime_name"] == "containerd"
            assert images.image_ref("pause") in {
                t for image in cri.list_images() for t in image.get("repo_tags", [])}
    finally:
        forward.terminate()
        forward.communicate(timeout=10)


def test_images_are_deterministic_and_cached(tmp_path):
    if not any(os.path.exists(p) for p in images.BUSYBOX_CANDIDATES):
        require_node_runtime()
    a = images.build_images(str(tmp_path / "a"))
    b = images.build_images(str(tmp_path / "b"))
    for name in ("busybox", "pause"):
        assert a[name]["digest"] == b[name]["digest"]
        with open(a[name]["path"], "rb") as fa, open(b[name]["path"], "rb") as fb:
            assert fa.read() == fb.read()
    mtime = os.stat(a["pause"]["path"]).st_mtime_ns
    assert images.build_images(str(tmp_path / "a")) == a
    assert os.stat(a["pause"]["path"]).st_mtime_ns == mtime
    assert a["busybox"]["digest"] != a["pause"]["digest"]


def test_restart_keeps_containers_and_stop_leaves_nothing():
    require_node_runtime()
    runtime = Containerd(plugin_request_timeout="3s")
    try:
        runtime.start()
        pod = Pod(runtime, "harness-leftover")
        cid = pod.container("app")                      # left running for stop() to clean
        pid = wait_for(lambda: runtime.cri.pid(cid), what="the container's pid")
        runtime.restart()
        assert runtime.cri.state(cid) == "RUNNING"
        assert runtime.cri.pid(cid) == pid
        assert runtime.mounts() and runtime.cgroup_dirs() and runtime.shim_pids()
        assert 'plugin_request_timeout = "3s"' in runtime.config_text()
        proc = runtime.proc
    finally:
        leftovers = runtime.stop()
    assert leftovers == []                              # the CRI removed everything itself
    assert proc.poll() is not None
    assert runtime.mounts() == []
    assert runtime.cgroup_dirs() == []
    assert runtime.shim_pids() == []
    assert not os.path.exists(runtime.dir)
    wait_for(lambda: not os.path.exists("/proc/%d" % pid), 5, "the container's process to end")
    assert runtime.stop() == []                         # idempotent
