"""SSHSession against a real sshd: authentication, commands, quoting, stdin, timeouts."""
import hashlib
import os
import socket
import time

import pytest

from tacker_hwaffinity.ssh import (STDIN_FILE, AuthenticationError, CommandFailed, CommandTimeout,
                                   ConfigError, SSHSession, Target, stdin_as_file)

from .sshd import USER_KEYS

pytestmark = pytest.mark.ssh


@pytest.fixture
def ssh(target):
    with SSHSession(Target(**target), command_timeout=10) as s:
        yield s


def test_key_auth_runs_a_command(sshd, target):
    with SSHSession(Target(**target)) as ssh:
        r = ssh.run(["id", "-un"])
        assert (r.exit_status, r.stdout, r.stderr) == (0, sshd.username + "\n", "")
        assert ssh.host_key_fingerprint in sshd.fingerprints.values()
        sock = ssh._link.transport.sock  # Nagle off: ~40 ms less per request
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    assert not ssh.connected
    assert ssh.stats.connections == 1 and ssh.stats.commands == 1


@pytest.mark.parametrize("name", sorted(USER_KEYS))
def test_every_key_type_authenticates(sshd, target, name):
    text, passphrase = sshd.user_keys[name]
    t = Target(**dict(target, private_key=text, private_key_passphrase=passphrase or None))
    with SSHSession(t) as ssh:
        assert ssh.run(["echo", name]).stdout == name + "\n"


def test_wrong_passphrase_fails_before_connecting(sshd, target):
    text, passphrase = sshd.user_keys["ed25519-passphrase"]
    with pytest.raises(ConfigError, match="could not be loaded|encrypted") as e:
        Target(**dict(target, private_key=text, private_key_passphrase="not " + passphrase))
    assert passphrase not in str(e.value) and "not " + passphrase not in str(e.value)
    with pytest.raises(ConfigError, match="encrypted and no passphrase"):
        Target(**dict(target, private_key=text))


def test_unauthorized_key_is_refused_without_retry(sshd, target, tmp_path):
    os.system("ssh-keygen -q -t ed25519 -N '' -f %s/other >/dev/null" % tmp_path)
    t = Target(**dict(target, private_key=(tmp_path / "other").read_text()))
    ssh = SSHSession(t)
    with pytest.raises(AuthenticationError, match="127.0.0.1:%d" % sshd.port):
        ssh.connect()
    assert ssh.stats.connect_attempts == 1 and not ssh.connected


def test_exit_status_stderr_and_check(ssh):
    r = ssh.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (r.exit_status, r.stdout, r.stderr, r.ok) == (3, "out\n", "err\n", False)
    with pytest.raises(CommandFailed, match="exited 3.*stderr: err") as e:
        ssh.run(["sh", "-c", "echo err >&2; exit 3"], check=True)
    assert e.value.result.exit_status == 3


VALUES = ["with space", "it's", 'say "hi"', "$(touch /tmp/hwaffinity-pwned)", "`id`", "a;b",
          "x && y", "| cat", "$HOME", "*", "", "-n", "\\back\\slash", "new\nline", "tab\there",
          "ünïcødé", "CIS-node=host-a", "{a,b}", "~root", "#comment", "!", "'\"'\"'"]


def test_arguments_arrive_verbatim(ssh):
    r = ssh.run(["printf", "%s\\0"] + VALUES, check=True)
    assert r.stdout_bytes.split(b"\0")[:-1] == [v.encode() for v in VALUES]
    assert not os.path.exists("/tmp/hwaffinity-pwned")


def test_a_shell_string_is_refused(ssh):
    with pytest.raises(ConfigError, match="list of arguments"):
        ssh.run("echo hi; rm -rf /")
    with pytest.raises(ConfigError, match="NUL"):
        ssh.run(["echo", "a\0b"])


def test_stdin_is_delivered(ssh):
    assert ssh.run(["cat"], stdin="token: s3cr3t\n").stdout == "token: s3cr3t\n"
    blob = os.urandom(3 * 2 ** 20)  # over paramiko's window: sent while output is read
    r = ssh.run(["sha256sum"], stdin=blob[:2 ** 19], check=True)
    assert r.stdout.split()[0] == hashlib.sha256(blob[:2 ** 19]).hexdigest()
    echoed = ssh.run(["cat"], stdin=blob, check=True)
    assert echoed.stdout_bytes == blob
    assert ssh.run(["cat"]).stdout == ""  # no stdin: EOF at once, no hang


def test_stdin_as_a_private_temp_file(ssh):
    r = ssh.run(stdin_as_file(["sh", "-c", 'stat -c %a "$0"; cat "$0"; echo " $1"', STDIN_FILE,
                               "it's $(x)"]), stdin="kubeconfig-bytes", check=True)
    assert r.stdout == "600\nkubeconfig-bytes it's $(x)\n"
    r = ssh.run(stdin_as_file(["sh", "-c", 'echo "$0"; exit 4', STDIN_FILE]), stdin="x")
    assert r.exit_status == 4
    assert ssh.run(["test", "-e", r.stdout.strip()]).exit_status == 1  # removed


def test_timeout_stops_waiting_and_the_remote_process(ssh):
    marker = "hwaffinity-timeout-%d" % os.getpid()
    t0 = time.monotonic()
    with pytest.raises(CommandTimeout, match="timed out after 1.0 s on") as e:
        ssh.run(["sh", "-c", "echo partial; sleep 30; : %s" % marker], timeout=1)
    took = time.monotonic() - t0
    assert took < 10, took   # stopped waiting long before the command's 30 s
    assert e.value.stdout == b"partial\n" and e.value.timeout == 1
    assert ssh.stats.command_timeouts == 1
    # the session is still usable, and the remote process group is gone: the
    # server's timeout utility ends it 1 s after the client's deadline (root
    # logins get no SSH "signal" from OpenSSH)
    deadline = time.monotonic() + 15
    # "[h]..." matches the marker but not this pgrep's own command line
    while ssh.run(["pgrep", "-f", "[h]" + marker[1:]]).exit_status == 0:
        assert time.monotonic() < deadline, "remote command survived its timeout"
        time.sleep(0.1)


def test_timeout_also_bounds_a_command_that_ignores_term(ssh):
    t0 = time.monotonic()
    with pytest.raises(CommandTimeout):
        ssh.run(["sh", "-c", "trap '' TERM; sleep 30"], timeout=0.5)
    assert time.monotonic() - t0 < 10   # not the command's 30 s


def test_figures(sshd, target, figures):
    t0 = time.monotonic()
    ssh = SSHSession(Target(**target)).connect()
    connect = time.monotonic() - t0
    try:
        rtts = []
        for _ in range(10):
            t0 = time.monotonic()
            ssh.run(["true"], check=True)
            rtts.append(time.monotonic() - t0)
    finally:
        ssh.close()
    rtt = sorted(rtts)[len(rtts) // 2]
    figures["connect"] = "%.0f ms" % (connect * 1000)
    figures["round trip"] = "%.1f ms (median of %d, `true` via the login shell)" % (
        rtt * 1000, len(rtts))
    assert connect < 3 and rtt < 1
