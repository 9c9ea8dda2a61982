"""Pieces of the SSH adapter that need no server."""
import errno
import shlex
import socket
import subprocess

import paramiko
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tacker_hwaffinity.ssh import ConfigError, RetryPolicy, SSHSession, Target, command_line
from tacker_hwaffinity.ssh.errors import AuthenticationError, UnknownHostKeyError
from tacker_hwaffinity.ssh.redact import Redactor
from tacker_hwaffinity.ssh.retry import RetryExhausted, call_with_retry, is_transient

@pytest.fixture(scope="module")
def key_text(tmp_path_factory):
    path = tmp_path_factory.mktemp("key") / "k"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True,
                   timeout=30)
    return path.read_text()


@given(st.lists(st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",))),
                min_size=1, max_size=8))
def test_command_line_round_trips_through_a_posix_shell_parser(argv):
    assert shlex.split(command_line(argv)) == argv


@pytest.mark.parametrize("bad", ["ls -l", b"ls", None, [], ["ls", 3], ("a", None)])
def test_command_line_takes_only_argument_lists(bad):
    with pytest.raises(ConfigError):
        command_line(bad)


def test_retry_sleeps_are_bounded_and_grow():
    p = RetryPolicy(attempts=6, delay=0.5, multiplier=2, max_delay=3, jitter=0)
    assert list(p.sleeps()) == [0.5, 1.0, 2.0, 3, 3]
    assert RetryPolicy.from_retries(0).attempts == 1
    for bad in (dict(attempts=0), dict(attempts=51), dict(delay=-1), dict(multiplier=0.5),
                dict(jitter=1), dict(deadline=0)):
        with pytest.raises(ConfigError):
            RetryPolicy(**bad)


@pytest.mark.parametrize("exc, transient", [
    (ConnectionRefusedError(), True), (ConnectionResetError(), True), (socket.timeout(), True),
    (TimeoutError(), True), (EOFError(), True), (OSError(errno.EHOSTUNREACH, "x"), True),
    (paramiko.SSHException("Error reading SSH protocol banner"), True),
    (paramiko.ChannelException(2, "Connect failed"), True),
    (paramiko.ChannelException(1, "Administratively prohibited"), False),
    (paramiko.AuthenticationException(), False), (AuthenticationError("x"), False),
    (UnknownHostKeyError("x"), False), (ConfigError("x"), False),
    (paramiko.ssh_exception.IncompatiblePeer("x"), False), (socket.gaierror(), False),
    (OSError(errno.EACCES, "x"), False), (ValueError(), False),
])
def test_transient_failures(exc, transient):
    assert is_transient(exc) is transient


def test_call_with_retry_stops_at_the_first_permanent_failure():
    calls, slept = [], []

    def fail(exc):
        def f():
            calls.append(1)
            raise exc
        return f
    policy = RetryPolicy(attempts=4, delay=1, jitter=0)
    with pytest.raises(AuthenticationError):
        call_with_retry(fail(AuthenticationError("no")), policy, sleep=slept.append)
    assert len(calls) == 1 and slept == []
    with pytest.raises(RetryExhausted) as e:
        call_with_retry(fail(ConnectionRefusedError()), policy, sleep=slept.append)
    assert e.value.attempts == 4 and len(calls) == 5 and slept == [1, 2, 4]


def test_redactor():
    r = Redactor(["hunter2"])
    r.add_lines("apiVersion: v1\ntoken: abcdefghijklmnop\n")
    assert r("pw hunter2 and token: abcdefghijklmnop ok") == "pw *** and *** ok"
    assert r.child(["extra"])("extra hunter2") == "*** ***"
    assert "hunter2" not in repr(r)


def test_target_validation(key_text):
    good = dict(host="10.0.0.5", username="ubuntu", private_key=key_text)
    assert "ssh-ed25519" in repr(Target(**good))
    for bad, msg in ((dict(host=""), "host"), (dict(host="a b"), "host"),
                     (dict(username=""), "username"), (dict(port=0), "port"),
                     (dict(port="22"), "port"), (dict(port=True), "port"),
                     (dict(private_key=None), "private_key or a password"),
                     (dict(private_key="not a key"), "could not be loaded"),
                     (dict(host_key_fingerprints=["MD5:00"]), "SHA256")):
        with pytest.raises(ConfigError, match=msg):
            Target(**dict(good, **bad))


def test_session_from_driver_parameters(key_text):
    """The shape of the driver's hwaffinity_param.ssh block."""
    block = {"private_key": key_text, "port": 2222, "known_hosts": "", "retries": 2,
             "connect_timeout": 5, "command_timeout": 60, "insecure_ignore_host_key": False,
             "host_key_fingerprints": ["SHA256:" + "B" * 43],
             "jump_host": {"host": "192.0.2.1", "username": "jump", "password": "pw"}}
    s = SSHSession.from_params(block, host="10.0.0.5", username="ubuntu")
    assert (s.target.host, s.target.port, s.target.username) == ("10.0.0.5", 2222, "ubuntu")
    assert (s.jump.where, s.retry.attempts, s.connect_timeout, s.command_timeout) == (
        "jump@192.0.2.1:22", 3, 5.0, 60.0)
    with pytest.raises(ConfigError, match="host and username"):
        SSHSession.from_params({"private_key": key_text})
