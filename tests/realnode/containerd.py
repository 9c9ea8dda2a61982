"""A private containerd 1.7 with NRI enabled, for tests that drive it through the CRI.

:class:`Containerd` runs ``/usr/bin/containerd`` (tools/install-node-runtime.sh
installs trixie's 1.7) from a config written here, with everything under one
temp dir (``/tmp/hwaffinity-cd-XXXX/``)::

    config.toml  containerd.log  containerd.sock(.ttrpc)  nri.sock
    root/ state/ runc/ opt/ cni/ nri/ pods/<ns>_<name>_<uid>/   (CRI log dirs)

* CRI plugin: ``sandbox_image`` is the local pause image (tests/realnode/images.py),
  cgroupfs driver (``SystemdCgroup = false``), no CNI (the tests' pods use the
  host network), the snapshotter is overlayfs when an overlay mount works in
  the temp dir, else native.
* NRI: ``[plugins."io.containerd.nri.v1.nri"] disable = false``, its socket
  at ``.nri_socket``, external connections allowed, no plugin directories
  that could start a plugin of the host's.
* Without CAP_SYS_RESOURCE (some sandboxed hosts), no process may lower its
  ``oom_score_adj``, and runc fails to start the sandbox containerd gives -998:
  then ``restrict_oom_score_adj = true`` (never below containerd's own score).
* The images are imported with ``ctr -n k8s.io images import`` (no registry).

Containers get their cgroups under ``cgroup_parent(uid, qos)``, a path below a
per-instance prefix (``hwaffinity-realnode-<hex>``), never a kubelet's
``/kubepods``. :meth:`Containerd.stop` removes every container and sandbox
through the CRI, stops containerd, then kills whatever is left in its cgroups
and its shims, unmounts everything under the temp dir (``/proc/self/mountinfo``),
removes the cgroup directories under the prefix in every cgroup hierarchy, and
the temp dir. It is idempotent and is also what ``atexit`` calls if a run
aborts.

Outside the temp dir containerd 1.7 still uses ``/run/containerd/s/`` for its
shims' sockets (named by a hash of this instance's socket path, removed when
the shims exit).
"""
import atexit
import contextlib
import ctypes
import errno
import os
import platform
import secrets
import shutil
import signal
import subprocess
import tempfile
import time

from . import images as images_mod
from .cri import CRI, CRIError

CONTAINERD = "/usr/bin/containerd"
CTR = "/usr/bin/ctr"
NAMESPACE = "k8s.io"
CGROUP_PREFIX = "hwaffinity-realnode-"
DEFAULT_IMAGE_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "tacker-hwaffinity",
                                   "realnode-images")
MNT_DETACH = 2
CAP_SYS_RESOURCE = 24


class ContainerdError(RuntimeError):
    """containerd did not start (the message carries the tail of its log)."""


def containerd_version(binary=CONTAINERD):
    """(major, minor) of BINARY, or None when it is missing or does not answer."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for word in out.split():
        parts = word.lstrip("v").split(".")
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            return int(parts[0]), int(parts[1])
    return None


def mountpoints():
    """Mount points of this mount namespace (/proc/self/mountinfo, escapes decoded)."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 4:
                out.append(_unescape(fields[4]))
    return out


def cgroup_mounts():
    """Mount points of the cgroup (v1) and cgroup2 file systems."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            fstype = post.split()[0] if post else ""
            if fstype in ("cgroup", "cgroup2"):
                out.append(_unescape(pre.split()[4]))
    return out


def _unescape(path):
    return (path.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n")
            .replace("\\134", "\\"))


def _umount(path):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.umount2(path.encode(), MNT_DETACH) != 0:
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOENT):
            raise OSError(err, "umount2(%s): %s" % (path, os.strerror(err)))


def has_capability(cap):
    """True when this process has capability number CAP in its effective set."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> cap & 1)
    return False


def overlay_works(directory):
    """True when an overlay mount can be made (and removed) in DIRECTORY."""
    probe = tempfile.mkdtemp(prefix="ovl-probe-", dir=directory)
    try:
        for d in ("lower", "upper", "work", "merged"):
            os.mkdir(os.path.join(probe, d))
        merged = os.path.join(probe, "merged")
        opts = "lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work" % (probe, probe, probe)
        r = subprocess.run(["mount", "-t", "overlay", "overlay", "-o", opts, merged],
                           capture_output=True, timeout=10)
        if r.returncode != 0:
            return False
        _umount(merged)
        return True
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        shutil.rmtree(probe, ignore_errors=True)


class Containerd:
    """One private containerd: ``start()``, use ``.cri`` / ``.cri_socket`` / ``.nri_socket``,
    ``stop()``. Usable as a context manager."""

    def __init__(self, binary=CONTAINERD, ctr=CTR, image_cache=None, base_dir=None,
                 plugin_request_timeout="2s", plugin_registration_timeout="5s",
                 snapshotter=None, systemd_cgroup=False, log_level="info", nri=True,
                 cri_timeout=30.0, restrict_oom_score_adj=None, nri_socket=None,
                 spawn_prefix=(), cgroup_prefix=None, nri_socket_seen_at=None):
        """NRI_SOCKET: where the NRI socket goes (default: in the temp dir), and
        NRI_SOCKET_SEEN_AT where this process sees it (another path when containerd runs
        in another mount namespace). SPAWN_PREFIX:
        argv put before containerd's (a real node runs it in its mount namespace with
        nsenter). CGROUP_PREFIX: the top cgroup directory the containers go below (a
        kubelet's --cgroup-root), removed on stop like the default one."""
        self.binary, self.ctr = binary, ctr
        self.image_cache = image_cache or DEFAULT_IMAGE_CACHE
        self.plugin_request_timeout = plugin_request_timeout
        self.plugin_registration_timeout = plugin_registration_timeout
        self.systemd_cgroup = systemd_cgroup
        self.log_level = log_level
        self.nri = nri
        self.cri_timeout = cri_timeout
        self.dir = tempfile.mkdtemp(prefix="hwaffinity-cd-", dir=base_dir or "/tmp")
        self.root = os.path.join(self.dir, "root")
        self.state = os.path.join(self.dir, "state")
        self.config_path = os.path.join(self.dir, "config.toml")
        self.log_path = os.path.join(self.dir, "containerd.log")
        self.cri_socket = os.path.join(self.dir, "containerd.sock")
        self.nri_socket = nri_socket or os.path.join(self.dir, "nri.sock")
        self.nri_socket_seen_at = nri_socket_seen_at or self.nri_socket
        self.spawn_prefix = list(spawn_prefix)
        self.pods_dir = os.path.join(self.dir, "pods")
        self.cgroup_prefix = cgroup_prefix or CGROUP_PREFIX + secrets.token_hex(6)
        self.snapshotter = snapshotter or ("overlayfs" if overlay_works(self.dir) else "native")
        if restrict_oom_score_adj is None:
            restrict_oom_score_adj = not has_capability(CAP_SYS_RESOURCE)
        self.restrict_oom_score_adj = restrict_oom_score_adj
        self.images = {}
        self.proc = None
        self.cri = None
        self._log = None
        self._stopped = False
        atexit.register(self.stop)

    # -- configuration -------------------------------------------------
    def config_text(self):
        """config.toml (version 2), every path inside the temp dir."""
        pause = images_mod.image_ref("pause")
        d = self.dir
        return _CONFIG.format(
            root=self.root, state=self.state, sock=self.cri_socket, level=self.log_level,
            opt=os.path.join(d, "opt"), pause=pause, snapshotter=self.snapshotter,
            systemd=str(bool(self.systemd_cgroup)).lower(), runc_root=os.path.join(d, "runc"),
            restrict_oom=str(bool(self.restrict_oom_score_adj)).lower(),
            cni_bin=os.path.join(d, "cni", "bin"), cni_conf=os.path.join(d, "cni", "conf"),
            nri_disable=str(not self.nri).lower(), nri_sock=self.nri_socket,
            nri_plugins=os.path.join(d, "nri", "plugins"),
            nri_conf=os.path.join(d, "nri", "conf.d"),
            reg_timeout=self.plugin_registration_timeout,
            req_timeout=self.plugin_request_timeout, platform="linux/" + _goarch())

    def cgroup_parent(self, uid, qos="guaranteed"):
        """The pod cgroup parent the kubelet would pass, below this instance's prefix:
        cgroupfs ``/<prefix>/pod<uid>`` (``/<prefix>/burstable/pod<uid>``, ...) or, with
        the systemd driver, ``<prefix>-[qos-]pod<uid>.slice`` (dashes made underscores)."""
        qos = qos.lower()
        levels = [] if qos == "guaranteed" else [qos]
        if self.systemd_cgroup:
            parts = [self.cgroup_prefix.replace("-", "_")] + levels + \
                ["pod" + uid.replace("-", "_")]
            return "-".join(parts) + ".slice"
        return "/" + "/".join([self.cgroup_prefix] + levels + ["pod" + uid])

    def pod_log_dir(self, namespace, name, uid):
        """A kubelet-shaped log directory for a pod (created), like /var/log/pods/NS_NAME_UID."""
        path = os.path.join(self.pods_dir, "%s_%s_%s" % (namespace, name, uid))
        os.makedirs(path, exist_ok=True)
        return path

    # -- life cycle ----------------------------------------------------
    def start(self, timeout=30.0):
        """Write the config, start containerd, wait for the CRI, import the images."""
        for d in (self.root, self.state, self.pods_dir, os.path.join(self.dir, "opt"),
                  os.path.join(self.dir, "runc"), os.path.join(self.dir, "cni", "bin"),
                  os.path.join(self.dir, "cni", "conf"),
                  os.path.join(self.dir, "nri", "plugins"),
                  os.path.join(self.dir, "nri", "conf.d")):
            os.makedirs(d, exist_ok=True)
        with open(self.config_path, "w") as f:
            f.write(self.config_text())
        self.images = images_mod.build_images(self.image_cache)
        self._spawn(timeout)
        for name in sorted(self.images):
            self.import_image(self.images[name]["path"])
        # The CRI's image store learns of an import from containerd's ImageCreate event,
        # handled after ``ctr images import`` returns: wait until it lists them all.
        deadline = time.monotonic() + timeout
        while True:
            refs = {tag for image in self.cri.list_images()
                    for tag in image.get("repo_tags", [])}
            missing = [i["ref"] for i in self.images.values() if i["ref"] not in refs]
            if not missing:
                return self
            if time.monotonic() > deadline:
                raise ContainerdError("imported images not seen by the CRI in %.0f s: %s\n%s"
                                      % (timeout, missing, self.log_tail()))
            time.sleep(0.1)

    def _spawn(self, timeout):
        self._log = open(self.log_path, "ab")
        argv = self.spawn_prefix + [self.binary, "--config", self.config_path]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self._stopped = False
        self.cri = CRI(self.cri_socket, timeout=self.cri_timeout)
        try:
            self.cri.wait_ready(timeout=timeout, alive=lambda: self.proc.poll() is None)
            if self.nri:
                deadline = time.monotonic() + timeout
                while not os.path.exists(self.nri_socket_seen_at):
                    if time.monotonic() > deadline or self.proc.poll() is not None:
                        raise ContainerdError("no NRI socket at %s" % self.nri_socket)
                    time.sleep(0.05)
        except (CRIError, TimeoutError, ContainerdError) as exc:
            rc = self.proc.poll()
            state = "exited with %s" % rc if rc is not None else "still running"
            raise ContainerdError("containerd did not start (%s): %s\n--- %s (tail) ---\n%s"
                                  % (state, exc, self.log_path, self.log_tail())) from None

    def import_image(self, path):
        """``ctr -n k8s.io images import`` PATH into this containerd (unpacked for the CRI)."""
        r = subprocess.run([self.ctr, "--address", self.cri_socket, "-n", NAMESPACE, "images",
                            "import", "--snapshotter", self.snapshotter, path],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise ContainerdError("ctr images import %s failed (%d): %s%s"
                                  % (path, r.returncode, r.stdout, r.stderr))
        return r.stdout

    def restart(self, timeout=30.0):
        """Stop containerd (SIGTERM) and start it again; containers keep running."""
        self._terminate()
        self._spawn(timeout)
        return self

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """Remove everything this instance made (idempotent). Returns what was left over,
        as a list of strings (empty when the CRI removed everything cleanly)."""
        if self._stopped:
            return []
        self._stopped = True
        leftovers = []
        if self.running():
            leftovers += self._remove_all()
        self._terminate()
        leftovers += self._kill_leftover_processes()
        leftovers += self._unmount_all()
        leftovers += self._remove_cgroups()
        shutil.rmtree(self.dir, ignore_errors=True)
        atexit.unregister(self.stop)
        return leftovers

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- inspection ----------------------------------------------------
    def log_tail(self, lines=40):
        try:
            with open(self.log_path, "rb") as f:
                data = f.read()
        except OSError:
            return ""
        return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def mounts(self):
        """Mount points at or below the temp dir."""
        return [m for m in mountpoints() if m == self.dir or m.startswith(self.dir + "/")]

    def cgroup_dirs(self):
        """This instance's cgroup directories (the prefix, in every cgroup hierarchy)."""
        names = {self.cgroup_prefix}
        if self.systemd_cgroup:
            names.add(self.cgroup_prefix.replace("-", "_") + ".slice")
        out = []
        for mount in cgroup_mounts():
            for name in names:
                path = os.path.join(mount, name)
                if os.path.isdir(path):
                    out.append(path)
        return out

    def shim_pids(self):
        """PIDs of containerd shims serving this instance (``-address <our socket>``)."""
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % entry, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if not argv or b"containerd-shim" not in os.path.basename(argv[0]):
                continue
            for i, arg in enumerate(argv[:-1]):
                if arg in (b"-address", b"--address") and argv[i + 1] == self.cri_socket.encode():
                    pids.append(int(entry))
        return pids

    # -- teardown ------------------------------------------------------
    def _remove_all(self):
        leftovers = []
        try:
            for c in self.cri.list_containers():
                with contextlib.suppress(CRIError):
                    self.cri.stop(c["id"], timeout=2)
                try:
                    self.cri.remove(c["id"])
                except CRIError as exc:
                    leftovers.append("container %s: %s" % (c["id"][:12], exc))
            for p in self.cri.list_pods():
                with contextlib.suppress(CRIError):
                    self.cri.stop_pod(p["id"])
                try:
                    self.cri.remove_pod(p["id"])
                except CRIError as exc:
                    leftovers.append("sandbox %s: %s" % (p["id"][:12], exc))
        except CRIError as exc:
            leftovers.append("listing: %s" % exc)
        return leftovers

    def _terminate(self, grace=10.0):
        if self.cri is not None:
            self.cri.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self._log is not None:
            self._log.close()
            self._log = None

    def _kill_leftover_processes(self):
        """SIGKILL the processes still in our cgroups, then our shims."""
        leftovers = []
        for path in self.cgroup_dirs():
            for dirpath, _dirs, files in os.walk(path):
                if "cgroup.procs" not in files:
                    continue
                with contextlib.suppress(OSError), open(os.path.join(dirpath, "cgroup.procs")) as f:
                    for pid in f.read().split():
                        leftovers.append("process %s in %s" % (pid, dirpath))
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(int(pid), signal.SIGKILL)
        for pid in self.shim_pids():
            leftovers.append("shim %d" % pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while self.shim_pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        return leftovers

    def _unmount_all(self):
        leftovers = []
        for _ in range(5):
            mounts = self.mounts()
            if not mounts:
                break
            for m in sorted(mounts, key=lambda p: p.count("/"), reverse=True):
                leftovers.append("mount %s" % m)
                with contextlib.suppress(OSError):
                    _umount(m)
        return leftovers

    def _remove_cgroups(self):
        """rmdir our cgroup trees bottom-up (retrying while the kernel reaps tasks)."""
        leftovers = []
        for path in self.cgroup_dirs():
            deadline = time.monotonic() + 5
            while os.path.isdir(path):
                busy = False
                for dirpath, _dirs, _files in sorted(os.walk(path), key=lambda w: -len(w[0])):
                    try:
                        os.rmdir(dirpath)
                    except FileNotFoundError:
                        pass
                    except OSError:
                        busy = True
                if not busy or time.monotonic() > deadline:
                    if busy:
                        leftovers.append("cgroup %s (busy)" % path)
                    break
                time.sleep(0.1)
        return leftovers


def _goarch():
    return images_mod._GOARCH.get(platform.machine(), platform.machine())


_CONFIG = """\
# written by tests/realnode/containerd.py: a private containerd, everything in one temp dir
version = 2
root = "{root}"
state = "{state}"
plugin_dir = ""
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
                    "io.containerd.tracing.processor.v1.otlp",
                    "io.containerd.internal.v1.tracing"]

[grpc]
  address = "{sock}"

[ttrpc]
  address = "{sock}.ttrpc"

[debug]
  address = ""
  level = "{level}"

[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "{opt}"

  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "{pause}"
    disable_tcp_service = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    enable_selinux = false
    disable_apparmor = true
    restrict_oom_score_adj = {restrict_oom}
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "{cni_bin}"
      conf_dir = "{cni_conf}"
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "{snapshotter}"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = {systemd}
          Root = "{runc_root}"

  [plugins."io.containerd.nri.v1.nri"]
    disable = {nri_disable}
    disable_connections = false
    socket_path = "{nri_sock}"
    plugin_path = "{nri_plugins}"
    plugin_config_path = "{nri_conf}"
    plugin_registration_timeout = "{reg_timeout}"
    plugin_request_timeout = "{req_timeout}"

  [plugins."io.containerd.transfer.v1.local"]
    [[plugins."io.containerd.transfer.v1.local".unpack_config]]
      platform = "{platform}"
      snapshotter = "{snapshotter}"
"""
