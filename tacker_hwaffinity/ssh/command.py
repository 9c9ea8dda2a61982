"""One remote command on one SSH channel: argv quoting, stdin, a deadline.

The remote side runs the command through the login shell, so the argument
list is joined with every element ``shlex.quote``d: values arrive verbatim,
whatever spaces, quotes, ``$(...)`` or ``;`` they hold. There is no API
that takes a shell string.

The deadline covers opening the channel, sending stdin and reading output.
When it passes, the remote process group is sent SIGKILL through the SSH
"signal" request (OpenSSH sshd honours it; others may ignore it) and the
channel is closed: the caller stops waiting at once either way.
"""
import os
import select
import shlex
import socket
import time
from dataclasses import dataclass, field

import paramiko
from paramiko.common import cMSG_CHANNEL_REQUEST

from .errors import ConfigError

CHUNK = 32768
MAX_OUTPUT = 64 * 2 ** 20  # bytes per stream; beyond it the command is abandoned
_POLL = 0.02  # seconds between checks while stdin waits for window space


def command_line(argv):
    """ARGV (a list or tuple of str or os.PathLike) -> one safely quoted command line."""
    if isinstance(argv, (str, bytes)) or not isinstance(argv, (list, tuple)):
        raise ConfigError("command must be a list of arguments, not %s: build no shell strings "
                          "from values" % type(argv).__name__)
    if not argv:
        raise ConfigError("command: empty argument list")
    parts = []
    for i, a in enumerate(argv):
        if isinstance(a, os.PathLike):
            a = os.fspath(a)
        if not isinstance(a, str):
            raise ConfigError("command argument %d: expected str, got %s" % (i, type(a).__name__))
        if "\0" in a:
            raise ConfigError("command argument %d contains a NUL byte" % i)
        parts.append(shlex.quote(a))
    return " ".join(parts)


@dataclass(frozen=True)
class CommandResult:
    """What one command returned. EXIT_STATUS is -1 when the process died by a
    signal (the server sent no exit status)."""

    argv: tuple
    exit_status: int
    stdout_bytes: bytes = field(repr=False)
    stderr_bytes: bytes = field(repr=False)
    duration: float = 0.0

    @property
    def stdout(self):
        return self.stdout_bytes.decode("utf-8", "replace")

    @property
    def stderr(self):
        return self.stderr_bytes.decode("utf-8", "replace")

    @property
    def ok(self):
        return self.exit_status == 0


class Timeout(Exception):
    """Internal: the deadline passed (carries partial output)."""

    def __init__(self, stdout, stderr):
        super().__init__("deadline")
        self.stdout, self.stderr = stdout, stderr


class Dropped(Exception):
    """Internal: the transport died while the command ran."""


class NotStarted(Exception):
    """Internal: no channel could be opened, so the command did not run. CAUSE is why."""

    def __init__(self, cause):
        super().__init__(type(cause).__name__)
        self.cause = cause


class TooMuchOutput(Exception):
    """Internal: a stream exceeded MAX_OUTPUT."""


def send_signal(channel, name="KILL"):
    """RFC 4254 6.9 "signal" request; best effort (no reply is asked for)."""
    m = paramiko.Message()
    m.add_byte(cMSG_CHANNEL_REQUEST)
    m.add_int(channel.remote_chanid)
    m.add_string("signal")
    m.add_boolean(False)
    m.add_string(name)
    # paramiko has no public call for this request; Channel's own requests use the same path
    channel.transport._send_user_message(m)


def _drain(chan, out, err, sizes):
    while chan.recv_ready():
        out.append(chan.recv(CHUNK))
        sizes[0] += len(out[-1])
    while chan.recv_stderr_ready():
        err.append(chan.recv_stderr(CHUNK))
        sizes[1] += len(err[-1])


def execute(transport, argv, stdin=b"", deadline=None, max_output=MAX_OUTPUT):
    """Run ARGV on TRANSPORT: (exit_status, stdout, stderr). DEADLINE is a
    time.monotonic() value. Raises NotStarted (nothing ran: safe to repeat),
    Timeout, Dropped, TooMuchOutput, or paramiko's error for a refused request."""
    line = command_line(argv)

    def remaining():
        return None if deadline is None else deadline - time.monotonic()

    r = remaining()
    if r is not None and r <= 0:
        raise Timeout(b"", b"")
    try:
        chan = transport.open_session(timeout=r)
    except (paramiko.SSHException, EOFError, OSError) as e:
        raise NotStarted(e) from e
    out, err, sizes = [], [], [0, 0]
    try:
        try:
            chan.exec_command(line)
        except (paramiko.SSHException, EOFError, OSError):
            if not transport.is_active():
                raise Dropped() from None
            raise
        chan.settimeout(0.0)
        data = memoryview(stdin or b"")
        sent = 0
        if not data:
            chan.shutdown_write()
        fd = chan.fileno()
        while True:
            if sent < len(data) and chan.send_ready():
                try:
                    sent += chan.send(data[sent:sent + CHUNK])
                except socket.timeout:
                    pass
                if sent == len(data):
                    chan.shutdown_write()
            _drain(chan, out, err, sizes)
            if max(sizes) > max_output:
                raise TooMuchOutput()
            if chan.eof_received and not chan.recv_ready() and not chan.recv_stderr_ready():
                r = remaining()
                if chan.status_event.wait(r if r is None or r > 0 else 0):
                    break
                if not transport.is_active():
                    raise Dropped()
                raise Timeout(b"".join(out), b"".join(err))
            if not transport.is_active() or chan.closed:
                _drain(chan, out, err, sizes)
                if chan.exit_status_ready():
                    break
                raise Dropped()
            r = remaining()
            if r is not None and r <= 0:
                raise Timeout(b"".join(out), b"".join(err))
            wait = 0.5 if r is None else min(r, 0.5)
            if sent < len(data):
                wait = min(wait, _POLL)
            select.select([fd], [], [], wait)
        return chan.recv_exit_status(), b"".join(out), b"".join(err)
    except (Timeout, TooMuchOutput):
        try:
            send_signal(chan)
        except Exception:  # noqa: BLE001 - best effort; closing the channel follows
            pass
        raise
    finally:
        chan.close()
