"""The QEMU test VM (tests/realnode/vm.py) gives what the real-node tests rely on.

One guest for the module (the session's, from vmfixture): it boots, runs
systemd on cgroup v2 with the cpuset controller, shows 4 CPUs in 2 NUMA
nodes, runs containerd 1.7 with its NRI socket open, runs a CRI pod (as a
kubelet would, through the forwarded CRI port) whose container lands in a
systemd scope under the pod's slice with the cpuset it asked for, and runs
this project's code from the 9p share with the guest's python3.
"""
import time
import uuid

import pytest

from realnode.cri import CRI, parse_log
from realnode.vm import GUEST_SRC
from realnode.vmfixture import guest_images, guest_vm  # noqa: F401  (fixtures)

pytestmark = pytest.mark.vm

CRI_TIMEOUT = 90            # one CRI call under TCG takes seconds; 3x headroom


@pytest.fixture(scope="module")
def vm(guest_vm):  # noqa: F811  (the imported fixture)
    return guest_vm


@pytest.fixture(scope="module")
def cri(vm):
    client = CRI("127.0.0.1:%d" % vm.host_port("cri"), timeout=CRI_TIMEOUT)
    client.wait_ready(timeout=60)
    yield client
    client.close()


def test_boots_with_systemd(vm):
    assert vm.check("cat /proc/1/comm").strip() == "systemd"
    state = vm.run("systemctl is-system-running --wait", timeout=120)[1].strip()
    failed = vm.run("systemctl --failed --no-legend --plain")[1]
    assert state == "running", "system %s; failed units:\n%s" % (state, failed)
    assert "hwaffinity-vm" in vm.check("hostname")


def test_cgroup_v2_with_cpuset(vm):
    assert vm.check("stat -fc %T /sys/fs/cgroup").strip() == "cgroup2fs"
    assert "cpuset" in vm.check("cat /sys/fs/cgroup/cgroup.controllers").split()
    # a cgroup v1 hierarchy would show up as separate mounts
    assert vm.check("grep -c ' cgroup ' /proc/mounts || true").strip() == "0"


def test_four_cpus_in_two_numa_nodes(vm):
    assert vm.check("nproc").strip() == "4"
    assert vm.check("cat /sys/devices/system/node/online").strip() == "0-1"
    assert vm.check("cat /sys/devices/system/node/node0/cpulist").strip() == "0-1"
    assert vm.check("cat /sys/devices/system/node/node1/cpulist").strip() == "2-3"


def test_containerd_17_with_nri(vm, cri):
    assert " 1.7." in vm.check("containerd --version")
    vm.check("test -S /var/run/nri/nri.sock")
    config = vm.get("/etc/containerd/config.toml")
    assert "SystemdCgroup = true" in config
    version = cri.version()
    assert version["runtime_name"] == "containerd"
    assert version["runtime_version"].lstrip("v").startswith("1.7."), version


def _wait_log(vm, path, needles, timeout=CRI_TIMEOUT):
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = vm.run("cat %s 2>/dev/null" % path)[1]
        if all(n in text for n in needles):
            return text
        time.sleep(1)
    raise AssertionError("%s lacks %s after %d s:\n%s" % (path, needles, timeout, text))


def test_cri_pod_runs_in_systemd_scope(vm, cri, guest_images):  # noqa: F811
    uid = str(uuid.uuid4())
    # what the kubelet passes with the systemd cgroup driver for a BestEffort pod
    parent = "kubepods-besteffort-pod%s.slice" % uid.replace("-", "_")
    logdir = "/var/log/pods/default_probe_%s" % uid
    sandbox = cri.sandbox_config("probe", "default", uid, cgroup_parent=parent,
                                 log_directory=logdir)
    pod = cri.run_pod_config(sandbox)
    try:
        cid = cri.create_container(
            pod, sandbox, "show", guest_images["busybox"], ["/bin/sh", "-c"],
            ["grep -E '^(Cpus|Mems)_allowed_list' /proc/self/status; sleep 600"],
            resources={"cpuset_cpus": "2-3", "cpuset_mems": "1"}, log_path="show/0.log")
        cri.start(cid)
        assert cri.state(cid) == "RUNNING"
        text = _wait_log(vm, logdir + "/show/0.log", ("Cpus_allowed_list", "Mems_allowed_list"))
        lines = dict(line.split(":", 1) for _, line in parse_log(text) if ":" in line)
        assert lines["Cpus_allowed_list"].strip() == "2-3", text
        assert lines["Mems_allowed_list"].strip() == "1", text

        pid = cri.pid(cid)
        assert pid, "containerd reported no pid for %s" % cid
        cgroup = vm.check("cat /proc/%d/cgroup" % pid).strip()
        assert cgroup.startswith("0::/"), cgroup
        path = cgroup[len("0::"):]
        assert path == ("/kubepods.slice/kubepods-besteffort.slice/%s/cri-containerd-%s.scope"
                        % (parent, cid)), path
        scope = "/sys/fs/cgroup" + path
        assert vm.check("cat %s/cpuset.cpus" % scope).strip() == "2-3"
        assert vm.check("cat %s/cpuset.mems" % scope).strip() == "1"
        unit = vm.check("systemctl show -P ActiveState cri-containerd-%s.scope" % cid).strip()
        assert unit == "active"
    finally:
        for c in cri.list_containers(sandbox_id=pod):
            cri.stop(c["id"], timeout=2)
            cri.remove(c["id"])
        cri.stop_pod(pod)
        cri.remove_pod(pod)


def test_project_code_runs_in_guest(vm):
    env = "PYTHONPATH=%s PYTHONDONTWRITEBYTECODE=1" % GUEST_SRC
    out = vm.check("%s python3 -c 'import tacker_hwaffinity, sys; "
                   "print(tacker_hwaffinity.__file__, sys.version_info[:2])'" % env)
    assert out.startswith(GUEST_SRC + "/tacker_hwaffinity/"), out
    out = vm.check("%s python3 -m tacker_hwaffinity.cli.main --help" % env, timeout=120)
    assert "agent" in out
    out = vm.check("%s python3 -m tacker_hwaffinity.cli.main agent --help" % env, timeout=120)
    assert "usage" in out
