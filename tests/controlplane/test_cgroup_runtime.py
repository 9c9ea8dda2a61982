"""The agent's cgroup adapter against the real kernel, through CgroupRuntime:
real processes in a private kubelet-shaped cgroup v1 cpuset tree, checked in
/proc/<pid>/status. Needs root and a writable /sys/fs/cgroup/cpuset (no
control plane); without them it skips, or fails under CI."""
import errno
import os
import re
import subprocess

import pytest

from ci_policy import unavailable
from tacker_hwaffinity.agent.cgroupfs import Vanished, Writer, WriteError, detect
from tacker_hwaffinity.numa.cpuset import parse_list
from tests import builders

from .containers import MOUNT, PREFIX, CgroupRuntime, allowed, cpuset_of

pytestmark = pytest.mark.root


def _mount_cpus():
    with open(os.path.join(MOUNT, "cpuset.cpus")) as f:
        return parse_list(f.read())


@pytest.fixture(scope="module")
def kernel_cpuset():
    """Skip (fail under CI) unless this process can build cpuset cgroups."""
    if os.geteuid() != 0:
        unavailable("the cgroup runtime tests need root")
    if not os.path.isfile(os.path.join(MOUNT, "cpuset.cpus")):
        unavailable("no cgroup v1 cpuset controller at %s" % MOUNT)
    if not os.access(MOUNT, os.W_OK) or not os.access(os.path.join(MOUNT, "cpuset.cpus"),
                                                      os.W_OK):
        unavailable("%s is not writable" % MOUNT)
    if not {0, 1} <= _mount_cpus():
        unavailable("the cgroup runtime tests need CPUs 0 and 1 in %s" % MOUNT)


@pytest.fixture(params=["systemd", "cgroupfs"])
def runtime(request, kernel_cpuset):
    rt = CgroupRuntime(request.param)
    try:
        yield rt
    finally:
        rt.cleanup()
    assert not os.path.exists(rt.private)


def pod(uid, qos="Burstable", containers=("app",)):
    """A pod object as the API server returns it to FakeKubelet."""
    return builders.pod("p-" + uid[:8], uid=uid, on="node-a", phase="Pending", qos=qos,
                        containers=[{"name": n} for n in containers])


def write(path, value):
    """A raw write, to shape the tree or to show what the kernel says."""
    with open(path, "w") as f:
        f.write(value + "\n")


def narrow_subtree(top, cpus):
    """Shrink TOP and everything below it to CPUS, children first (bottom-up)."""
    for level, _, _ in os.walk(top, topdown=False):
        write(os.path.join(level, "cpuset.cpus"), cpus)


def test_detect_finds_the_private_tree(runtime):
    layout = detect(runtime.cgroup_root)
    assert layout == runtime.layout
    assert (layout.version, layout.driver) == (1, runtime.driver)
    assert layout.base.startswith(os.path.join(MOUNT, PREFIX))
    layout.check_writable()
    assert layout.describe() == "cgroup v1 cpuset, %s driver, at %s" % (
        runtime.driver, layout.base)


@pytest.mark.parametrize("qos", ["Guaranteed", "Burstable", "BestEffort"])
def test_each_container_is_a_process_in_its_cgroup(runtime, qos):
    uid = "3f2a1b6c-0d4e-4f5a-8b9c-0123456789ab"
    p = pod(uid, qos, ("app", "sidecar"))
    ids = runtime.start_pod("node-a", p)
    assert sorted(ids) == ["app", "sidecar"]
    assert all(re.fullmatch("containerd://[0-9a-f]{64}", i) for i in ids.values())
    assert runtime.start_pod("node-a", p) == ids         # FakeKubelet may ask again
    layout = detect(runtime.cgroup_root)
    for name, cid in ids.items():
        pid = runtime.pid_of(uid, name)
        path = layout.container_dir(uid, qos, cid)
        assert cpuset_of(pid) == path == runtime.container_dir(uid, name)
        assert os.getpgid(pid) == pid
        # every level was initialised from its parent: the whole machine here
        assert allowed(pid)[0] == _mount_cpus()


def test_apply_moves_the_process(runtime):
    uid = "0b5c7e1e-1111-4222-8333-444455556666"
    runtime.start_pod("node-a", pod(uid))
    pid, path = runtime.pid_of(uid, "app"), runtime.container_dir(uid, "app")
    w = Writer(detect(runtime.cgroup_root))
    done = w.apply(path, {1}, {0})
    assert done.changed and done.after == ({1}, {0})
    assert allowed(pid) == ({1}, {0})
    assert w.apply(path, {0}, {0}).after == ({0}, {0})     # disjoint from {1}: accepted
    assert allowed(pid) == ({0}, {0})
    assert not w.apply(path, {0}, {0}).changed
    # a recorded machine's ids, mapped to this one's
    assert Writer(w.layout, cpu_map={70: 1, 71: 0}).apply(path, {70}, {0}).after == ({1}, {0})
    assert allowed(pid) == ({1}, {0})


def test_a_move_outside_the_pod_grows_the_pod_first(runtime):
    uid = "9d8c7b6a-5555-4666-8777-888899990000"
    runtime.start_pod("node-a", pod(uid))
    pid, path = runtime.pid_of(uid, "app"), runtime.container_dir(uid, "app")
    pod_dir = os.path.dirname(path)
    narrow_subtree(pod_dir, "0")
    # the kernel rule the writer works around: a child CPU outside its parent
    with pytest.raises(PermissionError) as info:
        write(os.path.join(path, "cpuset.cpus"), "1")
    assert info.value.errno == errno.EACCES
    done = Writer(detect(runtime.cgroup_root)).apply(path, {1}, {0})
    assert done.writes == ((os.path.join(pod_dir, "cpuset.cpus"), "0-1"),
                           (os.path.join(path, "cpuset.cpus"), "1"))
    assert allowed(pid) == ({1}, {0})


def test_kernel_refusals_are_write_errors(runtime):
    uid = "5e4d3c2b-aaaa-4bbb-8ccc-dddd0000eeee"
    runtime.start_pod("node-a", pod(uid, "Burstable", ("app", "sidecar")))
    pid, path = runtime.pid_of(uid, "app"), runtime.container_dir(uid, "app")
    layout = detect(runtime.cgroup_root)
    w = Writer(layout)
    w.apply(path, {1}, {0})

    # shrinking a parent below a child's CPUs: EBUSY
    with pytest.raises(WriteError) as info:
        w.apply(os.path.dirname(path), {0}, {0})
    assert info.value.errno_name == "EBUSY"

    # a CPU id beyond the machine: ERANGE (past nr_cpu_ids) or EINVAL (not present)
    with pytest.raises(WriteError) as info:
        w.apply(path, {max(_mount_cpus()) + 64}, {0})
    assert info.value.errno_name in ("ERANGE", "EINVAL")
    assert info.value.path.endswith("cpuset.cpus")

    # a memory node that does not exist: EINVAL
    nodes = os.listdir("/sys/devices/system/node")
    absent = 1 + max(int(n[4:]) for n in nodes if re.fullmatch(r"node\d+", n))
    with pytest.raises(WriteError) as info:
        w.apply(path, {1}, {absent})
    assert info.value.errno_name == "EINVAL" and info.value.path.endswith("cpuset.mems")

    # a CPU outside kubepods itself (the writer grows only the levels below it): EACCES
    w.apply(path, {0}, {0})
    narrow_subtree(layout.base, "0")
    with pytest.raises(WriteError) as info:   # the writer still believes the levels hold 0-1
        w.apply(path, {1}, {0})
    assert info.value.errno_name == "EACCES" and info.value.path == path + "/cpuset.cpus"
    w.forget_levels()                         # as a full reconcile does: levels read again
    with pytest.raises(WriteError) as info:
        w.apply(path, {1}, {0})
    err = info.value
    assert err.errno_name == "EACCES" and err.value == "0-1"
    assert os.path.dirname(err.path) == os.path.join(layout.base, "kubepods-burstable.slice"
                                                     if runtime.driver == "systemd"
                                                     else "burstable")
    assert "EACCES (Permission denied)" in str(err)
    assert allowed(pid) == ({0}, {0})        # nothing moved


def test_stop_pod_removes_it_and_the_agent_sees_it_vanish(runtime):
    uid = "7a7a7a7a-1234-4567-8901-abcdefabcdef"
    p = pod(uid, "Guaranteed")
    runtime.start_pod("node-a", p)
    pid, path = runtime.pid_of(uid, "app"), runtime.container_dir(uid, "app")
    runtime.stop_pod("node-a", p)
    runtime.stop_pod("node-a", p)                         # repeated: a no-op
    assert not os.path.exists(path) and not os.path.exists(os.path.dirname(path))
    assert not os.path.exists("/proc/%d" % pid)
    with pytest.raises(Vanished) as info:
        Writer(detect(runtime.cgroup_root)).apply(path, {0}, {0})
    assert info.value.path == path


def test_cleanup_leaves_nothing_behind(kernel_cpuset):
    rt = CgroupRuntime("systemd")
    try:
        rt.start_pod("node-a", pod("11112222-3333-4444-5555-666677778888", "BestEffort"))
        pid = rt.pid_of("11112222-3333-4444-5555-666677778888", "app")
        path = rt.container_dir("11112222-3333-4444-5555-666677778888", "app")
        # a process the runtime did not start, left in the tree by a failed test
        stray = subprocess.Popen(["sleep", "3600"])
        write(os.path.join(os.path.dirname(path), "cgroup.procs"), str(stray.pid))
    finally:
        rt.cleanup()
    try:
        assert not os.path.exists(rt.private)
        assert not os.path.exists("/proc/%d" % pid)
        assert cpuset_of(stray.pid) == MOUNT                # moved out, not killed
        assert stray.poll() is None
    finally:
        stray.kill()
        stray.wait()
    rt.cleanup()                                          # idempotent
