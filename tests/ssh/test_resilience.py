"""Drops, restarts, retries and jump hosts against a real sshd."""
import socket
import threading
import time

import paramiko
import pytest

from tacker_hwaffinity.ssh import (ConnectError, ConnectionLost, HostKeyMismatchError,
                                   RetryPolicy, SSHSession, Target)

from .sshd import HOST, free_port

pytestmark = pytest.mark.ssh
FAST = RetryPolicy(attempts=3, delay=0.05, jitter=0)
# Waits and bounds are behaviour checks with margins that hold on a loaded
# 2-core machine: each is far below what the unbounded behaviour would take
# (a command that runs for 30 s, a server that never answers). The timings
# themselves are figures (test_session.py::test_figures, benchmarks).
WAIT_S = 10
BOUND_S = 10


def live_transports():
    return [t for t in threading.enumerate() if isinstance(t, paramiko.Transport) and t.is_alive()]


@pytest.fixture(autouse=True)
def no_leaked_transports():
    yield
    deadline = time.monotonic() + WAIT_S
    while live_transports() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not live_transports(), "a paramiko transport was left open"


def connected(sshd, target, **kw):
    """A connected session and the sshd processes serving it."""
    before = set(sshd.connection_pids())
    ssh = SSHSession(Target(**target), **kw).connect()
    deadline = time.monotonic() + WAIT_S
    while not set(sshd.connection_pids()) - before:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return ssh, sorted(set(sshd.connection_pids()) - before)


@pytest.mark.parametrize("wait_for_eof", [True, False])
def test_reconnects_once_after_a_drop_between_commands(sshd, target, wait_for_eof):
    ssh, pids = connected(sshd, target, retry=FAST)
    with ssh:
        assert ssh.run(["echo", "1"]).stdout == "1\n"
        sshd.kill_connections(pids)
        if wait_for_eof:
            deadline = time.monotonic() + WAIT_S
            while ssh.connected:
                assert time.monotonic() < deadline
                time.sleep(0.01)
        # else: the next command may find the transport still "active": the
        # failed channel open is what reveals the drop
        assert ssh.run(["echo", "2"]).stdout == "2\n"
        assert (ssh.stats.connections, ssh.stats.reconnects, ssh.stats.commands) == (2, 1, 2)


def test_survives_an_sshd_restart_between_commands(sshd, target):
    with SSHSession(Target(**target), retry=FAST) as ssh:
        ssh.run(["true"], check=True)
        sshd.restart()
        assert ssh.run(["echo", "after restart"]).stdout == "after restart\n"
        assert ssh.stats.reconnects == 1


def test_drop_during_a_command_is_not_repeated(sshd, target):
    ssh, pids = connected(sshd, target, retry=FAST)
    killer = threading.Timer(0.5, sshd.kill_connections, [pids])
    killer.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(ConnectionLost, match="dropped while running.*not repeated"):
            ssh.run(["sleep", "30"], timeout=60)
        assert time.monotonic() - t0 < BOUND_S   # not waiting for the command
        assert ssh.run(["true"]).ok and ssh.stats.reconnects == 1
    finally:
        killer.join()
        ssh.close()


def test_no_reconnect_when_disabled(sshd, target):
    ssh, pids = connected(sshd, target, retry=FAST, reconnect=False)
    with ssh:
        sshd.kill_connections(pids)
        with pytest.raises(ConnectionLost):
            ssh.run(["true"])
        assert ssh.stats.connections == 1


def test_refused_connections_are_retried_then_reported(target):
    port = free_port()
    ssh = SSHSession(Target(**dict(target, port=port)), retry=FAST)
    t0 = time.monotonic()
    with pytest.raises(ConnectError) as e:
        ssh.connect()
    assert time.monotonic() - t0 < BOUND_S
    assert e.value.attempts == 3 and ssh.stats.connect_attempts == 3
    assert "%s:%d: 3 attempt(s)" % (HOST, port) in str(e.value)
    assert "ConnectionRefusedError" in str(e.value)


def test_retry_is_bounded_by_its_deadline(target):
    policy = RetryPolicy(attempts=50, delay=0.2, multiplier=1, jitter=0, deadline=0.5)
    ssh = SSHSession(Target(**dict(target, port=free_port())), retry=policy)
    t0 = time.monotonic()
    with pytest.raises(ConnectError):
        ssh.connect()
    # unbounded: 50 attempts 0.2 s apart, over 10 s; the deadline allows 0.5 s
    assert time.monotonic() - t0 < 5 and ssh.stats.connect_attempts <= 4


def test_backoff_waits_for_sshd_to_come_back(sshd, target):
    sshd.stop()
    port = sshd.port
    starter = threading.Timer(0.6, sshd.start, kwargs={"port": port})
    starter.start()
    try:
        policy = RetryPolicy(attempts=10, delay=0.1, multiplier=2, max_delay=0.4, jitter=0)
        with SSHSession(Target(**target), retry=policy) as ssh:
            assert ssh.run(["true"]).ok
            assert ssh.stats.connect_attempts >= 3 and ssh.stats.connections == 1
    finally:
        starter.join()
        if sshd.proc is None:
            sshd.start(port=port)


def test_a_silent_server_times_out_and_is_retried(target):
    with socket.socket() as listener:
        listener.bind((HOST, 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        ssh = SSHSession(Target(**dict(target, port=port)), connect_timeout=0.3,
                         retry=RetryPolicy(attempts=2, delay=0.05, jitter=0))
        t0 = time.monotonic()
        with pytest.raises(ConnectError) as e:
            ssh.connect()
        assert time.monotonic() - t0 < BOUND_S   # a silent server never answers
        assert e.value.attempts == 2


def test_jump_host(sshd, target):
    """Through the same sshd: the target is reached over a direct-tcpip channel."""
    with SSHSession(Target(**target), jump=Target(**target)) as ssh:
        client_port = int(ssh.run(["sh", "-c", "echo $SSH_CONNECTION"]).stdout.split()[1])
        jump_port = ssh._link.jump.sock.getsockname()[1]
        assert client_port != jump_port  # the inner connection comes from sshd itself
        assert isinstance(ssh._link.transport.sock, paramiko.Channel)
        assert ssh.stats.connections == 2


def test_jump_host_checks_both_host_keys(sshd, target, tmp_path):
    forged = sshd.known_hosts.replace(sshd.host_key_lines["ssh-ed25519"],
                                      sshd.host_key_lines["ssh-ed25519"][:-8] + "AAAAAAAA")
    bad = dict(target, known_hosts=forged)
    for tgt, jump in ((bad, target), (target, bad)):
        ssh = SSHSession(Target(**tgt), jump=Target(**jump), retry=FAST)
        with pytest.raises(HostKeyMismatchError):
            ssh.connect()
        assert ssh.stats.connect_attempts == 1


def test_jump_host_cannot_reach_the_target(sshd, target):
    port = free_port()
    ssh = SSHSession(Target(**dict(target, port=port)), jump=Target(**target), retry=FAST)
    with pytest.raises(ConnectError, match="via .*3 attempt"):
        ssh.connect()
