"""A throwaway QEMU guest (cgroup v2, systemd, containerd 1.7 or 2.x with NRI) for real-node tests.

This host runs cgroup v1 and its ``/dev/kvm`` is a nested paravirtual
hypervisor a stock kernel cannot use, so the guest runs under QEMU's TCG
emulation (``-accel tcg,thread=multi,tb-size=256 -cpu max``): 4 vCPUs in two
emulated NUMA nodes (cpus 0-1 on node 0, 2-3 on node 1, 1 GiB each).

The image (kernel, initramfs, ext4 root) is built once by
``tools/build-vm-image.sh`` into the cache, keyed by that script's hash; the
root disk is attached with ``snapshot=on``, so every boot starts from the
pristine image and nothing a test does persists.

Per boot, in a private temporary directory:

* a fresh ed25519 client key and host key: the guest installs both before sshd
  starts, so the harness knows the exact host key it must see (no
  trust-on-first-use) and no key is baked into the image;
* three 9p shares, mounted by the image's boot unit under ``/mnt/hwaffinity``:
  ``ctl`` (read-only: keys, ``setup.sh``, ``setup.env``, OCI image tarballs),
  ``src`` (read-only: the project checkout, for ``PYTHONPATH``) and ``out``
  (writable: what the guest reports, readable from the host as :attr:`out_dir`);
* user-mode networking with ``hostfwd`` on 127.0.0.1 for ssh, for the CRI
  socket's TCP forward (``cri``) and any ``forwards={name: guest_port}``.

``tests/realnode/guest/setup.sh`` does the guest side: phase ``boot`` (keys,
before sshd) and phase ``runtime`` (containerd with ``SystemdCgroup = true``,
NRI enabled on ``/var/run/nri/nri.sock``, ``sandbox_image`` a local pause image,
socat from TCP ``CRI_PORT`` to the CRI socket, ``ctr images import``). The runtime is
trixie's containerd 1.7 (``RUNTIMES``: ``containerd``) unless ``runtime="containerd2"``
asks for Debian's containerd 2.x, which the image carries unpacked beside it;
:meth:`GuestVM.use_runtime` switches a running guest from one to the other (the pods
must be gone: the images are imported again, into the other runtime's own root).

Usage::

    with GuestVM(images=[...tarball paths...], sandbox_image="localhost/hwaffinity-pause:1") as vm:
        rc, out, err = vm.run("cat /sys/fs/cgroup/cgroup.controllers")
        cri = CRI("127.0.0.1:%d" % vm.host_port("cri"))

Every wait is bounded and a timeout raises :class:`VMError` with the tail of
the serial console (and of the guest script's log when that is what stalled).
QEMU never outlives the harness: :meth:`close` runs from ``__exit__``, from
``atexit`` and from a finalizer, and QEMU gets ``PR_SET_PDEATHSIG`` so it dies
with the process that started it.
"""
import atexit
import base64
import ctypes
import hashlib
import io
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref

import paramiko
from sshkeys import ed25519_keypair
from controlplane.harness import free_port

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_SCRIPT = os.path.join(REPO, "tools", "build-vm-image.sh")
APT_INSTALL = os.path.join(REPO, "tools", "apt-install.sh")
GUEST_SETUP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "guest", "setup.sh")
QEMU = "qemu-system-x86_64"
IMAGE_FILES = ("rootfs.img", "vmlinuz", "initrd.img", "manifest")

GUEST_BASE = "/mnt/hwaffinity"
GUEST_SRC = GUEST_BASE + "/src"      # the project checkout (read-only)
GUEST_CTL = GUEST_BASE + "/ctl"      # harness -> guest (read-only)
GUEST_OUT = GUEST_BASE + "/out"      # guest -> host (writable)
CRI_GUEST_PORT = 7010
RUNTIMES = ("containerd", "containerd2")

BOOT_TIMEOUT = 180          # boot to SSH: 32-55 s under TCG on 2 busy host cores
RUNTIME_TIMEOUT = 180       # containerd up, images imported: 8-12 s after SSH
BUILD_TIMEOUT = 1800        # a cold image build: ~3-4 min


class VMError(RuntimeError):
    """The VM did not boot, a guest step failed, or a wait timed out."""


class ImageUnavailable(VMError):
    """QEMU or the cached image is missing and could not be installed or built."""


# -- the image -----------------------------------------------------------------

def cache_root():
    return os.environ.get("HWAFFINITY_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "tacker-hwaffinity")


def recipe_key(script=BUILD_SCRIPT):
    """The image's cache key: the first 12 hex of the build script's SHA-256 (as the script)."""
    with open(script, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:12]


def image_dir():
    return os.path.join(cache_root(), "vm-" + recipe_key())


def image_complete(path=None):
    path = path or image_dir()
    return all(os.path.isfile(os.path.join(path, f)) and os.path.getsize(os.path.join(path, f))
               for f in IMAGE_FILES)


def _tail(text, lines=40):
    return "\n".join(text.splitlines()[-lines:])


def ensure_image(timeout=BUILD_TIMEOUT):
    """The image directory, building the image (and installing QEMU) when missing.

    Raises :class:`ImageUnavailable` naming what is missing when it cannot."""
    if shutil.which(QEMU) is None:
        try:
            proc = subprocess.run(["bash", APT_INSTALL, "qemu-system-x86", "qemu-utils"],
                                  capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            raise ImageUnavailable("%s not found; installing qemu-system-x86 timed out" % QEMU)
        if shutil.which(QEMU) is None:
            raise ImageUnavailable("%s not found and qemu-system-x86 could not be installed:\n%s"
                                   % (QEMU, _tail(proc.stdout + proc.stderr)))
    path = image_dir()
    if image_complete(path):
        return path
    log = os.path.join(cache_root(), "build-vm-image.log")
    os.makedirs(cache_root(), exist_ok=True)
    try:
        with open(log, "w") as f:
            proc = subprocess.run(["bash", BUILD_SCRIPT], stdout=f, stderr=subprocess.STDOUT,
                                  timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ImageUnavailable("the VM image build (tools/build-vm-image.sh) took over %d s; "
                               "log: %s" % (timeout, log))
    with open(log, errors="replace") as f:
        output = f.read()
    if proc.returncode != 0 or not image_complete(path):
        raise ImageUnavailable("the VM image could not be built (tools/build-vm-image.sh "
                               "exit %d):\n%s" % (proc.returncode, _tail(output)))
    return path


# -- helpers -------------------------------------------------------------------

_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    """In the child before exec: SIGKILL when the starting thread exits (no orphan QEMU)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except Exception:   # noqa: BLE001 - best effort; close()/atexit still stop QEMU
        pass


def _terminate(proc, grace):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _cleanup(state):
    """The finalizer: stop QEMU and remove the temp dir (no SSH: may run at interpreter exit)."""
    proc, tmp = state.get("proc"), state.get("tmp")
    if proc is not None:
        _terminate(proc, 5)
    if tmp and not state.get("keep"):
        shutil.rmtree(tmp, ignore_errors=True)


# -- the VM --------------------------------------------------------------------

class GuestVM:
    """One booted guest. Use as a context manager, or call :meth:`start` and :meth:`close`.

    SRC is shared read-only at ``/mnt/hwaffinity/src`` (default: this checkout).
    FORWARDS maps names to guest TCP ports reachable from the host at
    ``127.0.0.1:host_port(name)``; ``ssh`` and (with CONTAINERD) ``cri`` are added.
    IMAGES are OCI tarball paths imported into containerd's ``k8s.io`` namespace.
    """

    def __init__(self, src=REPO, forwards=None, containerd=True, nri=True, images=(),
                 sandbox_image="localhost/hwaffinity-pause:1", nri_request_timeout="2s",
                 nri_registration_timeout="5s", cpus=4, memory_mib=2048,
                 boot_timeout=BOOT_TIMEOUT, runtime_timeout=RUNTIME_TIMEOUT, append="",
                 image=None, keep_tmp=False, tcg_thread="multi", runtime="containerd"):
        if cpus % 2 or memory_mib % 2:
            raise ValueError("cpus and memory_mib must split evenly over 2 NUMA nodes")
        if runtime not in RUNTIMES:
            raise ValueError("runtime must be one of %s, not %r" % (RUNTIMES, runtime))
        self.runtime = runtime
        self.src = os.path.abspath(src)
        self.guest_ports = dict(forwards or {})
        for reserved in ("ssh", "cri"):
            if reserved in self.guest_ports:
                raise ValueError("forward name %r is reserved" % reserved)
        self.guest_ports["ssh"] = 22
        if containerd:
            self.guest_ports["cri"] = CRI_GUEST_PORT
        self.containerd, self.nri = containerd, nri
        self.images = [os.path.abspath(p) for p in images]
        self.sandbox_image = sandbox_image
        self.nri_request_timeout = nri_request_timeout
        self.nri_registration_timeout = nri_registration_timeout
        self.cpus, self.memory_mib = cpus, memory_mib
        self.boot_timeout, self.runtime_timeout = boot_timeout, runtime_timeout
        self.append = append
        self.tcg_thread = tcg_thread
        self.image = image
        self.ports = {}
        self.proc = None
        self.client = None
        self.tmp = None
        self.timings = {}
        self._state = {"keep": keep_tmp}
        self._finalizer = None
        self._closed = False

    # -- lifecycle ----------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def out_dir(self):
        """Host path of the guest's writable share (``/mnt/hwaffinity/out``)."""
        return os.path.join(self.tmp, "out")

    @property
    def serial_path(self):
        return os.path.join(self.tmp, "serial.log")

    def start(self):
        """Boot, wait for SSH and (with containerd) for the runtime; raises VMError."""
        t0 = time.monotonic()
        self.image = self.image or ensure_image()
        self.tmp = tempfile.mkdtemp(prefix="hwaffinity-vm-")
        self._state["tmp"] = self.tmp
        self._finalizer = weakref.finalize(self, _cleanup, self._state)
        atexit.register(self.close)
        try:
            self._prepare_shares()
            for boot in range(2):
                self._launch_forwarded()
                self.timings["qemu_started"] = time.monotonic() - t0
                try:
                    self._wait_ssh()
                    break
                except VMError:
                    # QEMU itself killed by a signal before the guest wrote a byte (CI
                    # once: SIGSEGV in qemu-system-x86_64, empty console): boot once more
                    if boot or not self._qemu_crashed_silently():
                        raise
                    sys.stderr.write("vm: QEMU exited with %s before the guest wrote a "
                                     "byte; booting again\n" % self.proc.returncode)
            self.timings["boot_to_ssh"] = time.monotonic() - t0
            if self.containerd:
                self._wait_runtime()
                self.timings["runtime_ready"] = time.monotonic() - t0
        except BaseException:
            self.close()
            raise
        return self

    def _prepare_shares(self):
        ctl = os.path.join(self.tmp, "ctl")
        os.makedirs(ctl)
        os.makedirs(self.out_dir)
        client_private, client_public = ed25519_keypair()
        host_private, host_public = ed25519_keypair()
        self._client_key = paramiko.Ed25519Key(file_obj=io.StringIO(client_private))
        self._host_public = host_public
        files = {"authorized_keys": client_public + "\n",
                 "ssh_host_ed25519_key": host_private,
                 "ssh_host_ed25519_key.pub": host_public + "\n"}
        names = []
        for i, path in enumerate(self.images):
            name = "image-%d-%s" % (i, os.path.basename(path))
            dest = os.path.join(ctl, name)
            try:
                os.link(path, dest)
            except OSError:
                shutil.copyfile(path, dest)
            names.append(name)
        env = {"CONTAINERD": "1" if self.containerd else "0", "NRI": "1" if self.nri else "0",
               "CRI_PORT": str(CRI_GUEST_PORT), "SANDBOX_IMAGE": self.sandbox_image,
               "NRI_REQUEST_TIMEOUT": self.nri_request_timeout,
               "NRI_REGISTRATION_TIMEOUT": self.nri_registration_timeout,
               "IMAGES": " ".join(names), "RUNTIME": self.runtime}
        files["setup.env"] = "".join("%s=%s\n" % (k, shlex.quote(v)) for k, v in env.items())
        for name, text in files.items():
            path = os.path.join(ctl, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o600 if "key" in name and not name.endswith(".pub") else 0o644)
        shutil.copyfile(GUEST_SETUP, os.path.join(ctl, "setup.sh"))

    def _qemu_argv(self):
        half_cpus, half_mem = self.cpus // 2, self.memory_mib // 2
        fwd = ",".join("hostfwd=tcp:127.0.0.1:%d-:%d" % (self.ports[n], gp)
                       for n, gp in sorted(self.guest_ports.items()))
        append = ("console=ttyS0 root=/dev/vda rw systemd.unified_cgroup_hierarchy=1 "
                  "net.ifnames=0 panic=-1 loglevel=4 systemd.show_status=auto "
                  # -cpu max offers SVM/VMX, so udev loads kvm; its static-key flips are
                  # live kernel text patching, which oopsed (int3) under MTTCG here
                  "module_blacklist=kvm,kvm_amd,kvm_intel "
                  + self.append).strip()
        argv = [QEMU, "-name", "hwaffinity-vm", "-nodefaults", "-no-user-config",
                "-display", "none", "-monitor", "none", "-no-reboot",
                "-accel", "tcg,thread=%s,tb-size=256" % self.tcg_thread, "-cpu", "max",
                "-machine", "pc",
                "-smp", "%d,sockets=2,cores=%d,threads=1" % (self.cpus, half_cpus),
                "-m", str(self.memory_mib)]
        for node in (0, 1):
            first = node * half_cpus
            argv += ["-object", "memory-backend-ram,id=mem%d,size=%dM" % (node, half_mem),
                     "-numa", "node,nodeid=%d,cpus=%d-%d,memdev=mem%d"
                     % (node, first, first + half_cpus - 1, node)]
        argv += ["-kernel", os.path.join(self.image, "vmlinuz"),
                 "-initrd", os.path.join(self.image, "initrd.img"),
                 "-append", append,
                 "-drive", "file=%s,if=virtio,format=raw,snapshot=on,cache=unsafe"
                 % os.path.join(self.image, "rootfs.img"),
                 "-netdev", "user,id=n0" + ("," + fwd if fwd else ""),
                 "-device", "virtio-net-pci,netdev=n0",
                 "-device", "virtio-rng-pci",
                 "-virtfs", "local,path=%s,mount_tag=hwctl,security_model=none,readonly=on"
                 % os.path.join(self.tmp, "ctl"),
                 "-virtfs", "local,path=%s,mount_tag=hwsrc,security_model=none,readonly=on"
                 % self.src,
                 "-virtfs", "local,path=%s,mount_tag=hwout,security_model=none" % self.out_dir,
                 "-serial", "file:%s" % self.serial_path]
        return argv

    def _launch(self):
        self.ports = {name: free_port() for name in self.guest_ports}
        self._qemu_log = os.path.join(self.tmp, "qemu.log")
        env = dict(os.environ, TMPDIR=self.tmp)     # snapshot=on's overlay lives in our tmp
        with open(self._qemu_log, "w") as log:
            self.proc = subprocess.Popen(self._qemu_argv(), stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT, env=env,
                                         start_new_session=True, preexec_fn=_die_with_parent)
        self._state["proc"] = self.proc

    def _launch_forwarded(self):
        """Launch QEMU, again (3 times at most) while a host forward's port was taken."""
        for attempt in range(3):
            self._launch()
            if self._wait_launched():
                return
        raise VMError("QEMU could not bind its host forwards three times:\n"
                      + self._qemu_log_tail())

    def _qemu_crashed_silently(self):
        """QEMU ended by a signal, and the guest's console is empty."""
        code = self.proc.poll() if self.proc is not None else None
        try:
            written = os.path.getsize(self.serial_path)
        except OSError:
            written = 0
        return code is not None and code < 0 and not written

    def _wait_launched(self):
        """False when QEMU exited at once because a forward port was taken (retry)."""
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                text = self._qemu_log_tail()
                if "host forwarding rule" in text or "Address already in use" in text:
                    return False
                raise VMError("QEMU exited with %s at start:\n%s" % (self.proc.returncode, text))
            if os.path.exists(self.serial_path) and os.path.getsize(self.serial_path):
                return True
            time.sleep(0.1)
        return True

    def _qemu_log_tail(self):
        try:
            with open(self._qemu_log, errors="replace") as f:
                return _tail(f.read())
        except OSError:
            return ""

    def _fail(self, message, extra=None):
        parts = [message]
        if extra:
            parts.append(extra)
        parts.append("--- QEMU ---\n" + self._qemu_log_tail())
        parts.append("--- serial console (tail) ---\n" + _tail(self.serial_log(), 60))
        raise VMError("\n".join(parts))

    def _alive(self):
        return self.proc is not None and self.proc.poll() is None

    def _banner(self, port):
        """True when sshd (not just slirp's listener) answers on PORT with its banner."""
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                s.settimeout(3)
                return s.recv(4).startswith(b"SSH-")
        except OSError:
            return False

    def _wait_ssh(self):
        port = self.ports["ssh"]
        deadline = time.monotonic() + self.boot_timeout
        last = None
        while True:
            if not self._alive():
                self._fail("the VM stopped (QEMU exit %s) before SSH answered"
                           % self.proc.returncode)
            if self._banner(port):
                try:
                    self.client = self._connect(port)
                    return
                except (paramiko.SSHException, OSError) as exc:
                    last = exc
            if time.monotonic() >= deadline:
                self._fail("no SSH on 127.0.0.1:%d within %d s (last error: %s)"
                           % (port, self.boot_timeout, last))
            time.sleep(1)

    def _connect(self, port):
        client = paramiko.SSHClient()
        # The guest's host key is the one this harness generated for this boot (the
        # guest installs it before sshd starts): strict checking, no trust on first use.
        keytype, blob = self._host_public.split()[:2]
        client.get_host_keys().add("[127.0.0.1]:%d" % port, keytype,
                                   paramiko.PKey.from_type_string(keytype,
                                                                  base64.b64decode(blob)))
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        client.connect("127.0.0.1", port=port, username="root", pkey=self._client_key,
                       look_for_keys=False, allow_agent=False, timeout=10, banner_timeout=30,
                       auth_timeout=30)
        client.get_transport().set_keepalive(15)
        return client

    def _read_out(self, name):
        try:
            with open(os.path.join(self.out_dir, name), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def _wait_runtime(self):
        deadline = time.monotonic() + self.runtime_timeout
        rc_path = os.path.join(self.out_dir, "runtime.rc")
        while True:
            rc = self._read_out("runtime.rc").strip()
            if rc:
                if rc != "0":
                    self._fail("the guest runtime setup (setup.sh runtime) exited %s" % rc,
                               "--- out/runtime.log ---\n" + _tail(self._read_out("runtime.log")))
                return
            if not self._alive():
                self._fail("the VM stopped while containerd was being set up")
            if time.monotonic() >= deadline:
                try:
                    status = self.run("systemctl status --no-pager hwaffinity-runtime "
                                      "containerd 2>&1 | tail -n 30", timeout=30)[1]
                except VMError as exc:
                    status = "(unavailable: %s)" % exc
                self._fail("containerd not ready within %d s (%s never appeared)"
                           % (self.runtime_timeout, rc_path),
                           "--- out/runtime.log ---\n" + _tail(self._read_out("runtime.log"))
                           + "\n--- systemctl status ---\n" + status)
            time.sleep(0.5)

    # -- using the guest ----------------------------------------------
    def run(self, cmd, timeout=60, input=None):
        """Run CMD (a shell string) as root in the guest: ``(rc, stdout, stderr)``.

        Raises :class:`VMError` when it does not finish within TIMEOUT seconds."""
        if self.client is None:
            raise VMError("the VM is not connected")
        chan = self.client.get_transport().open_session(timeout=30)
        chan.settimeout(1.0)
        chan.exec_command(cmd)
        if input is not None:
            chan.sendall(input if isinstance(input, bytes) else input.encode())
        chan.shutdown_write()
        out, err = bytearray(), bytearray()
        deadline = time.monotonic() + timeout
        try:
            while True:
                while chan.recv_ready():
                    out += chan.recv(65536)
                while chan.recv_stderr_ready():
                    err += chan.recv_stderr(65536)
                if chan.exit_status_ready() and not chan.recv_ready() \
                        and not chan.recv_stderr_ready():
                    break
                if time.monotonic() >= deadline:
                    raise VMError("guest command timed out after %s s: %s\nstdout: %s\nstderr: %s"
                                  % (timeout, cmd, _tail(out.decode(errors="replace"), 20),
                                     _tail(err.decode(errors="replace"), 20)))
                time.sleep(0.02)
            rc = chan.recv_exit_status()
        finally:
            chan.close()
        return rc, out.decode(errors="replace"), err.decode(errors="replace")

    def check(self, cmd, timeout=60, input=None):
        """Run CMD; its stdout, or :class:`VMError` with both outputs when it exits non-zero."""
        rc, out, err = self.run(cmd, timeout=timeout, input=input)
        if rc != 0:
            raise VMError("guest command exited %d: %s\nstdout:\n%s\nstderr:\n%s"
                          % (rc, cmd, _tail(out), _tail(err)))
        return out

    def put(self, path, data, mode=None):
        """Write DATA (bytes or str) to PATH in the guest (parent directories created)."""
        cmd = "mkdir -p %s && cat > %s" % (shlex.quote(os.path.dirname(path) or "/"),
                                           shlex.quote(path))
        if mode is not None:
            cmd += " && chmod %o %s" % (mode, shlex.quote(path))
        self.check(cmd, input=data if isinstance(data, bytes) else data.encode())

    def get(self, path, timeout=60):
        """The text of PATH in the guest."""
        return self.check("cat %s" % shlex.quote(path), timeout=timeout)

    def use_runtime(self, runtime):
        """Stop the guest's containerd and start RUNTIME (one of ``RUNTIMES``) in its place,
        on the same CRI socket and forward, with the images imported; VMError if it does
        not come up. A no-op when RUNTIME already runs."""
        if runtime not in RUNTIMES:
            raise ValueError("runtime must be one of %s, not %r" % (RUNTIMES, runtime))
        if runtime == self.runtime:
            return
        rc, out, err = self.run("sh %s/setup.sh switch %s" % (GUEST_CTL, runtime),
                                timeout=self.runtime_timeout)
        if rc != 0:
            raise VMError("switching the guest to %s: setup.sh exited %d\n--- out/runtime.log"
                          " ---\n%s" % (runtime, rc, _tail(self._read_out("runtime.log"))))
        self.runtime = runtime

    def host_port(self, name):
        """The 127.0.0.1 port forwarded to guest port ``forwards[name]`` (or ssh, cri)."""
        return self.ports[name]

    def serial_log(self):
        """The serial console so far."""
        try:
            with open(self.serial_path, errors="replace") as f:
                return f.read()
        except (OSError, TypeError):
            return ""

    def rss_mib(self):
        """QEMU's resident memory in MiB (None when it is not running)."""
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) // 1024
        except (OSError, AttributeError):
            return None
        return None

    def close(self, poweroff_timeout=15):
        """Power the guest off (bounded), then stop QEMU and remove the temp directory."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        if self.client is not None:
            if self._alive():
                try:
                    self.run("systemctl poweroff --no-block", timeout=10)
                except Exception:   # noqa: BLE001 - QEMU is stopped below in any case
                    pass
            self.client.close()
            self.client = None
        if self.proc is not None and self._alive():
            try:
                self.proc.wait(poweroff_timeout)
            except subprocess.TimeoutExpired:
                pass
        if self._finalizer is not None:
            self._finalizer()       # terminate QEMU if still up, remove the temp dir
