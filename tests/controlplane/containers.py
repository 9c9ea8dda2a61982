"""Real processes in a kubelet-shaped cgroup v1 cpuset tree, for node-agent tests.

:class:`CgroupRuntime` stands in for kubelet + containerd on a test machine:
it builds, inside a private directory of the real cpuset hierarchy, the tree
kubelet would (reference section 6.1)::

    /sys/fs/cgroup/cpuset/hwaffinity-test-<hex>/     <- cgroup_root, the agent's /sys/fs/cgroup
        cpuset/                                      <- a cpuset cgroup named like the mount
            kubepods.slice/ (systemd) or kubepods/ (cgroupfs)
                <QoS level>/<pod>/<container>/

so ``detect(cgroup_root)`` finds a v1 layout unchanged. Every level is a
real cpuset cgroup whose cpus and mems are copied from its parent when it is
made (the kernel starts a v1 cpuset empty, and no task may join an empty
one), as runc does. Each container is one ``sleep 3600`` in its own process
group, moved into its container cgroup. ``start_pod``/``stop_pod`` plug into
``FakeKubelet.start_pod``/``stop_pod`` (harness.py); they are thread-safe and
may be called again for the same pod. ``cleanup`` removes everything and is
idempotent; it is also registered with atexit in case a test run aborts.
"""
import atexit
import errno
import os
import secrets
import signal
import subprocess
import threading
import time

from tacker_hwaffinity.agent.cgroupfs import KUBEPODS, Layout
from tacker_hwaffinity.numa.cpuset import parse_list

MOUNT = "/sys/fs/cgroup/cpuset"
PREFIX = "hwaffinity-test-"
_QOS_LEVEL = {"systemd": {"Burstable": "kubepods-burstable.slice",
                          "BestEffort": "kubepods-besteffort.slice"},
              "cgroupfs": {"Burstable": "burstable", "BestEffort": "besteffort"}}


def allowed(pid):
    """(Cpus_allowed_list, Mems_allowed_list) of PID from /proc as frozensets."""
    fields = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return (frozenset(parse_list(fields["Cpus_allowed_list"])),
            frozenset(parse_list(fields["Mems_allowed_list"])))


def cpuset_of(pid, mount=MOUNT):
    """The absolute cpuset cgroup directory PID is in (/proc/<pid>/cpuset)."""
    with open("/proc/%d/cpuset" % pid) as f:
        return os.path.normpath(mount + "/" + f.read().strip())


def make_cgroup(path):
    """Create the cpuset cgroup PATH with its parent's cpus and mems."""
    os.mkdir(path)
    parent = os.path.dirname(path)
    for name in ("cpuset.mems", "cpuset.cpus"):
        with open(os.path.join(parent, name)) as f:
            value = f.read().strip()
        with open(os.path.join(path, name), "w") as f:
            f.write(value + "\n")


class CgroupRuntime:
    """A private kubelet-shaped cpuset tree under ROOT (the v1 cpuset mount)."""

    def __init__(self, driver, root=None):
        if driver not in KUBEPODS:
            raise ValueError("unknown cgroup driver %r" % driver)
        self.driver = driver
        self.mount = root or MOUNT
        self.private = os.path.join(self.mount, PREFIX + secrets.token_hex(6))
        self.cgroup_root = self.private
        self.layout = Layout(self.cgroup_root, 1, driver,
                             os.path.join(self.private, "cpuset", KUBEPODS[driver]))
        self._lock = threading.RLock()
        self._pods = {}            # pod uid -> {"ids": {name: id}, "procs": {name: Popen}, ...}
        atexit.register(self.cleanup)
        try:
            for path in (self.private, self.layout.mount, self.layout.base):
                make_cgroup(path)
            for level in _QOS_LEVEL[driver].values():   # kubelet makes these at start-up
                make_cgroup(os.path.join(self.layout.base, level))
        except BaseException:
            self.cleanup()
            raise

    def start_pod(self, node, pod):
        """Create the pod's cgroups and one process per container; returns
        {container name: "containerd://<id>"} (the same again on a repeat call)."""
        uid = pod["metadata"]["uid"]
        qos = (pod.get("status") or {}).get("qosClass")
        if qos is None:
            raise ValueError("pod %s has no status.qosClass" % pod["metadata"].get("name"))
        with self._lock:
            if uid in self._pods:
                return dict(self._pods[uid]["ids"])
            entry = {"node": node, "ids": {}, "procs": {}, "paths": {}, "dirs": []}
            self._pods[uid] = entry
            try:
                for c in pod["spec"]["containers"]:
                    cid = secrets.token_hex(32)
                    path = self.layout.container_dir(uid, qos, cid, "containerd")
                    for level in _missing_levels(self.layout.base, path):
                        make_cgroup(level)
                        entry["dirs"].append(level)
                    proc = subprocess.Popen(
                        ["sleep", "3600"], process_group=0, stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    entry["procs"][c["name"]] = proc
                    entry["paths"][c["name"]] = path
                    with open(os.path.join(path, "cgroup.procs"), "w") as f:
                        f.write("%d\n" % proc.pid)
                    entry["ids"][c["name"]] = "containerd://" + cid
            except BaseException:
                self._stop(uid)
                raise
            return dict(entry["ids"])

    def stop_pod(self, node, pod):
        """Kill the pod's processes and remove its cgroups (no-op when unknown)."""
        with self._lock:
            self._stop(pod["metadata"]["uid"])

    def pid_of(self, pod_uid, container_name):
        """The pid of the process standing for that container."""
        with self._lock:
            return self._pods[pod_uid]["procs"][container_name].pid

    def container_dir(self, pod_uid, container_name):
        """The absolute cgroup directory of a started container."""
        with self._lock:
            return self._pods[pod_uid]["paths"][container_name]

    def cleanup(self):
        """Kill every process started here and remove the private tree
        bottom-up; safe to call any number of times."""
        with self._lock:
            for uid in list(self._pods):
                self._stop(uid)
            if os.path.isdir(self.private):
                for top, dirs, _ in os.walk(self.private, topdown=False):
                    for d in dirs:
                        _remove(os.path.join(top, d), self.mount)
                _remove(self.private, self.mount)
        atexit.unregister(self.cleanup)

    def _stop(self, uid):
        entry = self._pods.pop(uid, None)
        if entry is None:
            return
        for proc in entry["procs"].values():
            _kill(proc)
        for path in reversed(entry["dirs"]):
            _remove(path, self.mount)


def _missing_levels(base, path):
    """Directories from below BASE down to PATH that do not exist yet, top-down."""
    rel = os.path.relpath(path, base).split(os.sep)
    levels = [os.path.join(base, *rel[:i + 1]) for i in range(len(rel))]
    return [p for p in levels if not os.path.isdir(p)]


def _kill(proc):
    if proc.poll() is None:         # not reaped yet, so its pid (= pgid) is still ours
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def _remove(path, mount):
    """rmdir a cgroup; tasks this runtime did not start are moved to MOUNT
    (never killed) so the directory can go."""
    for attempt in range(50):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError as e:
            if e.errno != errno.EBUSY:
                raise
        for pid in _tasks(path):
            try:
                with open(os.path.join(mount, "cgroup.procs"), "w") as f:
                    f.write(pid + "\n")
            except OSError:
                pass          # exited meanwhile
        time.sleep(0.02)
    os.rmdir(path)


def _tasks(path):
    try:
        with open(os.path.join(path, "cgroup.procs")) as f:
            return f.read().split()
    except FileNotFoundError:
        return []
