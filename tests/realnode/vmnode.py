"""The test VM as a node: pods through its CRI, the agent as a guest process.

:class:`VMRuntime` gives :class:`realnode.test_runtime_harness.Pod` what it
needs of a runtime (``cri``, ``cgroup_parent``, ``pod_log_dir``, ``images``)
for the guest's containerd (systemd cgroup driver). Pod logs are written by
containerd into the guest's writable share, so the host reads what each
container's first process printed without a round trip; ``proc_status`` reads
a process's ``/proc/<pid>/status`` in the guest kernel.

:class:`GuestAgent` runs ``hwaffinity agent`` from the read-only source share
with the guest's python3, as a transient systemd service (as a DaemonSet's
container would be: its own cgroup, killed with it), its output appended to
``out/agent.log``.
"""
import os
import shlex
import time

from realnode.cri import CRI
from realnode.test_runtime_harness import Pod, wait_for
from realnode.vm import GUEST_OUT, GUEST_SRC
from tacker_hwaffinity.numa.cpuset import parse_list

CRI_TIMEOUT = 90            # one CRI call under TCG takes seconds: 3x headroom
UNIT = "hwaffinity-agent"
UNREACHABLE_KUBECONFIG = (  # nobody listens on port 9: the API server is down
    "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "
    "'http://127.0.0.1:9'}}]\nusers: [{name: u, user: {token: t}}]\n"
    "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n")


class VMRuntime:
    """The guest's containerd as the kubelet drives it (systemd cgroup driver)."""

    def __init__(self, vm, images):
        self.vm = vm
        self.images = {name: {"ref": ref} for name, ref in images.items()}
        self.cri = CRI("127.0.0.1:%d" % vm.host_port("cri"), timeout=CRI_TIMEOUT)
        self.cri.wait_ready(timeout=60)

    @staticmethod
    def cgroup_parent(uid, qos="guaranteed"):
        """What the kubelet passes with the systemd driver: ``kubepods-[qos-]pod<uid>.slice``."""
        qos = qos.lower()
        level = "" if qos == "guaranteed" else qos + "-"
        return "kubepods-%spod%s.slice" % (level, uid.replace("-", "_"))

    def pod_log_dir(self, namespace, name, uid):
        guest = "%s/pods/%s_%s_%s" % (GUEST_OUT, namespace, name, uid)
        os.makedirs(self.host_path(guest), exist_ok=True)
        return guest

    def host_path(self, guest_path):
        """The host path of a file in the guest's writable share."""
        assert guest_path.startswith(GUEST_OUT + "/"), guest_path
        return os.path.join(self.vm.out_dir, guest_path[len(GUEST_OUT) + 1:])

    def proc_status(self, pid):
        """``/proc/PID/status`` in the guest, as {field: value}."""
        text = self.vm.get("/proc/%d/status" % pid)
        return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)

    def allowed(self, cid):
        """(Cpus_allowed_list, Mems_allowed_list) of container CID's first process now."""
        fields = self.proc_status(self.cri.pid(cid))
        return fields["Cpus_allowed_list"], fields["Mems_allowed_list"]

    def pinned(self, cid):
        """(Cpus_allowed_list, Mems_allowed_list) of CID's first process when it is on one
        CPU and one memory node now; False otherwise."""
        cpus, mems = self.allowed(cid)
        return len(parse_list(cpus)) == 1 and len(parse_list(mems)) == 1 and (cpus, mems)

    def scope(self, pod, cid):
        """The container's cgroup directory (a systemd scope) in the guest."""
        parent = pod.cgroup_parent
        levels = ["kubepods.slice"]
        if not parent.startswith("kubepods-pod"):
            levels.append(parent.rsplit("-", 1)[0] + ".slice")
        return "/sys/fs/cgroup/%s/%s/cri-containerd-%s.scope" % ("/".join(levels), parent, cid)

    def close(self):
        self.cri.close()


class VMPod(Pod):
    """A host-network pod in the guest; its containers' logs are read on the host."""

    def log_path(self, name):
        return self.runtime.host_path(super().log_path(name))

    def remove(self):
        try:
            super().remove()
        except Exception:       # noqa: BLE001 - removed by the test already
            pass


class GuestAgent:
    """``hwaffinity agent`` in the guest, as the systemd unit ``hwaffinity-agent``."""

    def __init__(self, vm, *args, node="vm-node", state_dir="/var/lib/hwaffinity",
                 kubeconfig=None):
        self.vm = vm
        self.log = os.path.join(vm.out_dir, "agent.log")
        if kubeconfig is None:
            kubeconfig = "/run/hwaffinity-unreachable.kubeconfig"
            vm.put(kubeconfig, UNREACHABLE_KUBECONFIG, mode=0o600)
        self.argv = ["python3", "-m", "tacker_hwaffinity.cli.main", "agent", "--node", node,
                     "--kubeconfig", kubeconfig, "--state-dir", state_dir,
                     "--metrics-address", "127.0.0.1:9464"] + list(args)
        self.mark = 0

    def start(self, wait_for_line="synchronized with the runtime", timeout=180):
        self.mark = os.path.getsize(self.log) if os.path.exists(self.log) else 0
        if self.active():       # left by a test whose fixture never got to stop it
            self.stop()
        self.vm.run("systemctl reset-failed %s 2>/dev/null" % UNIT)
        self.vm.check(
            "systemd-run --unit=%s --collect -p StandardOutput=append:%s/agent.log "
            "-p StandardError=append:%s/agent.log -E PYTHONPATH=%s "
            # the source share is read-only: bytecode goes to the guest's disk, once per boot
            "-E PYTHONPYCACHEPREFIX=/var/cache/hwaffinity-pyc "
            "%s" % (UNIT, GUEST_OUT, GUEST_OUT, GUEST_SRC,
                    " ".join(shlex.quote(a) for a in self.argv)))
        if wait_for_line:
            try:
                self.wait_log(wait_for_line, timeout)
            except BaseException:
                self.stop()     # a fixture whose start failed has no teardown to stop it
                raise
        return self

    def text(self):
        try:
            with open(self.log, errors="replace") as f:
                f.seek(self.mark)
                return f.read()
        except FileNotFoundError:
            return ""

    def active(self):
        return self.vm.run("systemctl is-active --quiet %s" % UNIT)[0] == 0

    def wait_log(self, what, timeout=120):
        def seen():
            return what in self.text() or not self.active()
        wait_for(seen, timeout, "%r in the guest agent's log" % what)
        assert what in self.text(), "agent log since start:\n" + self.text()[-3000:]

    def signal(self, name):
        self.vm.check("systemctl kill -s %s %s" % (name, UNIT))

    def stop(self):
        self.vm.run("systemctl kill -s CONT %s 2>/dev/null; systemctl stop %s 2>/dev/null"
                    % (UNIT, UNIT), timeout=60)
        deadline = time.monotonic() + 30
        while self.active() and time.monotonic() < deadline:
            time.sleep(0.5)
