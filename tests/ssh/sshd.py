"""A real OpenSSH sshd on 127.0.0.1 for the SSH adapter's tests.

Everything lives in a fresh 0700 directory: a private sshd_config, host keys
generated with ssh-keygen, the pid file, authorized_keys with freshly
generated user keys for the current user, and sshd's log. The system's
/etc/ssh is never read or changed. sshd runs in the foreground (-D, -e logs
to the log file) in its own session and is stopped by its pid.
"""
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from controlplane.harness import free_port

HINT = ("OpenSSH sshd not found: run 'sudo bash tools/install-test-packages.sh' "
        "(installs openssh-server)")
HOST = "127.0.0.1"
HOST_KEY_TYPES = ("ed25519", "ecdsa", "rsa")
# name -> (ssh-keygen type, extra arguments, passphrase)
USER_KEYS = {
    "ed25519": ("ed25519", [], ""),
    "ecdsa": ("ecdsa", ["-b", "384"], ""),
    "rsa": ("rsa", ["-b", "2048"], ""),
    "rsa-pem": ("rsa", ["-b", "2048", "-m", "PEM"], ""),
    "rsa-pkcs8": ("rsa", ["-b", "2048", "-m", "PKCS8"], ""),
    "ecdsa-pem-passphrase": ("ecdsa", ["-m", "PEM"], "pem passphrase"),
    "ed25519-passphrase": ("ed25519", [], "correct horse battery staple"),
}
PRIVSEP_DIR = "/run/sshd"  # Debian's compiled-in privilege separation directory

CONFIG = """\
Port {port}
{listen}
AddressFamily inet
{host_keys}
PidFile {dir}/sshd.pid
AuthorizedKeysFile {dir}/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication yes
KbdInteractiveAuthentication no
PermitEmptyPasswords no
UsePAM no
StrictModes no
PermitRootLogin yes
AllowTcpForwarding yes
PermitOpen {host}:*
AllowAgentForwarding no
X11Forwarding no
PermitTunnel no
PrintMotd no
PrintLastLog no
UseDNS no
MaxStartups 50:30:100
MaxSessions 50
MaxAuthTries 10
LoginGraceTime 20
LogLevel VERBOSE
"""


def find(name):
    for path in (shutil.which(name), "/usr/sbin/" + name, "/usr/bin/" + name):
        if path and os.access(path, os.X_OK):
            return os.path.abspath(path)
    return None


def _run(argv, timeout=30):
    return subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout)


def _read(path):
    with open(path) as f:
        return f.read()


def children(pid):
    """Pids whose parent is PID (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = _read("/proc/%s/stat" % entry)
        except OSError:
            continue
        # the command name may hold spaces and parentheses: split after the last ')'
        if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
            out.append(int(entry))
    return out


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        for c in children(todo.pop()):
            out.append(c)
            todo.append(c)
    return out


class SSHServer:
    """One sshd on HOST:port. Attributes once started: port, username, known_hosts
    (text for every host key), fingerprints {type: 'SHA256:...'}, user_keys
    {name: (private key text, passphrase)}, startup_seconds, log_path."""

    def __init__(self, sshd=None, keygen=None, extra_hosts=()):
        self.sshd = sshd or find("sshd")
        self.keygen = keygen or find("ssh-keygen")
        self.dir = tempfile.mkdtemp(prefix="hwaffinity-sshd-")
        os.chmod(self.dir, 0o700)
        self.log_path = os.path.join(self.dir, "sshd.log")
        self.config_path = os.path.join(self.dir, "sshd_config")
        self.username = pwd.getpwuid(os.getuid()).pw_name
        self.port = None
        self.proc = None
        self.startup_seconds = None
        self.known_hosts = ""
        self.fingerprints = {}
        self.host_key_lines = {}
        self.user_keys = {}
        # more loopback addresses to listen on (same port): one sshd, several "VMs"
        self.hosts = (HOST,) + tuple(extra_hosts)

    def path(self, name):
        return os.path.join(self.dir, name)

    def _keygen(self, name, key_type, extra=(), passphrase=""):
        path = self.path(name)
        _run([self.keygen, "-q", "-t", key_type, *extra, "-N", passphrase, "-C", name,
              "-f", path])
        return path

    def prepare(self):
        """Generate host and user keys and write authorized_keys."""
        for t in HOST_KEY_TYPES:
            path = self._keygen("ssh_host_%s_key" % t, t)
            pub = _read(path + ".pub").split()
            self.host_key_lines[pub[0]] = pub[1]
            fp = _run([self.keygen, "-lf", path + ".pub"]).stdout.split()[1]
            self.fingerprints[pub[0]] = fp
        authorized = []
        for name, (t, extra, passphrase) in USER_KEYS.items():
            path = self._keygen("user_%s" % name, t, extra, passphrase)
            self.user_keys[name] = (_read(path), passphrase)
            authorized.append(_read(path + ".pub").strip())
        with open(self.path("authorized_keys"), "w") as f:
            f.write("\n".join(authorized) + "\n")

    def known_hosts_for(self, *types, name=None):
        """known_hosts text naming this server as '[127.0.0.1]:port' (or NAME)."""
        name = name or "[%s]:%d" % (HOST, self.port)
        types = types or tuple(self.host_key_lines)
        return "".join("%s %s %s\n" % (name, t, self.host_key_lines[t]) for t in types)

    def _write_config(self):
        host_keys = "\n".join("HostKey %s" % self.path("ssh_host_%s_key" % t)
                              for t in HOST_KEY_TYPES)
        with open(self.config_path, "w") as f:
            f.write(CONFIG.format(port=self.port, host=HOST, host_keys=host_keys, dir=self.dir,
                                  listen="\n".join("ListenAddress %s" % h for h in self.hosts)))

    def start(self, timeout=10, port=None):
        """Start sshd (generating keys the first time); wait for its banner."""
        if not self.host_key_lines:
            self.prepare()
        if os.geteuid() == 0 and not os.path.isdir(PRIVSEP_DIR):
            # what systemd's RuntimeDirectory= does for the packaged service
            os.makedirs(PRIVSEP_DIR, mode=0o755, exist_ok=True)
        tries = 1 if port else 3
        for _ in range(tries):
            self.port = port or free_port()
            self._write_config()
            _run([self.sshd, "-t", "-f", self.config_path])
            t0 = time.monotonic()
            with open(self.log_path, "a") as log:
                self.proc = subprocess.Popen([self.sshd, "-D", "-e", "-f", self.config_path],
                                             stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, start_new_session=True)
            if self._wait_banner(timeout):
                self.startup_seconds = time.monotonic() - t0
                self.known_hosts = self.known_hosts_for()
                return self
            if "Address already in use" not in self.tail():
                break
        raise RuntimeError("sshd did not start on %s:%s; log %s:\n%s"
                           % (HOST, self.port, self.log_path, self.tail()))

    def _wait_banner(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with socket.create_connection((HOST, self.port), timeout=1) as s:
                    if s.recv(64).startswith(b"SSH-2.0-"):
                        return True
            except OSError:
                pass
            time.sleep(0.02)
        self.stop()
        return False

    def tail(self, lines=30):
        try:
            return "".join(_read(self.log_path).splitlines(True)[-lines:])
        except OSError:
            return ""

    def connection_pids(self):
        """Per-connection sshd processes (children of the listener)."""
        return children(self.proc.pid) if self.proc else []

    def kill_connections(self, pids=None):
        """SIGKILL the given per-connection processes (default: all) and what they started."""
        victims = []
        for pid in pids if pids is not None else self.connection_pids():
            victims += [pid] + descendants(pid)
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return victims

    def stop(self, timeout=5):
        """SIGTERM the listener by pid (its connections too), SIGKILL after TIMEOUT."""
        if self.proc is None:
            return
        conns = [p for c in self.connection_pids() for p in [c] + descendants(c)]
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        for pid in conns:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc = None

    def restart(self, timeout=10):
        """Stop sshd (dropping every connection) and start it again on the same port."""
        port = self.port
        self.stop()
        return self.start(timeout, port=port)

    def cleanup(self, keep_logs):
        """Remove the directory; with KEEP_LOGS keep config and log, never private keys."""
        self.stop()
        if not keep_logs:
            shutil.rmtree(self.dir, ignore_errors=True)
            return
        for name in os.listdir(self.dir):
            if name not in ("sshd.log", "sshd_config") and not name.endswith(".pub"):
                os.unlink(self.path(name))
