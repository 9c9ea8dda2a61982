"""One remote command on one SSH channel: argv quoting, stdin, a deadline.

The remote side runs the command through the login shell, so the argument
list is joined with every element ``shlex.quote``d: values arrive verbatim,
whatever spaces, quotes, ``$(...)`` or ``;`` they hold. There is no API
that takes a shell string.

The deadline covers opening the channel, sending stdin and reading output.
When it passes, the remote process group is sent SIGTERM, then SIGKILL
0.25 s later, through the SSH "signal" request, and the channel is closed:
the caller stops waiting either way. OpenSSH honours the request only for
non-root logins, so sessions also run commands under the remote ``timeout``
utility (``with_remote_timeout``), which ends them a second later.
"""
import logging
import math
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

LOG = logging.getLogger(__name__)


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


STDIN_FILE = "@stdin-file@"
# Saves stdin to a 0600 temp file, runs "$@" with each argument equal to $1 (the
# placeholder) replaced by the file's path, removes the file on exit or signal.
# The script is constant: the values only ever travel as quoted arguments.
_STDIN_SCRIPT = (
    "umask 077; f=$(mktemp) || exit 125; "
    "trap 'rm -f \"$f\"' EXIT; trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM; "
    "cat > \"$f\" || exit 125; p=$1; shift; "
    "for a do shift; if [ \"$a\" = \"$p\" ]; then set -- \"$@\" \"$f\"; "
    "else set -- \"$@\" \"$a\"; fi; done; "
    "\"$@\"")


def with_remote_timeout(argv, timeout, kill_after=1):
    """ARGV under the remote ``timeout`` utility (coreutils or busybox): SIGTERM
    to the command's process group one second after the client's own deadline
    (rounded up), SIGKILL KILL_AFTER seconds later. The client always gives up
    first; this only makes sure nothing keeps running on the server. Needed
    because OpenSSH refuses "signal" requests for root logins."""
    secs = int(math.ceil(timeout)) + 1
    return ["timeout", "-k", str(int(kill_after)), str(secs)] + list(argv)


def stdin_as_file(argv, placeholder=STDIN_FILE):
    """An argv that runs ARGV with every argument equal to PLACEHOLDER replaced
    by the path of a private temporary file holding the command's stdin (for
    tools that want a file, e.g. ``kubectl --kubeconfig``). The file is
    removed when the command ends or is signalled (not after SIGKILL)."""
    command_line(argv)
    if placeholder not in argv:
        raise ConfigError("stdin_as_file: no argument equals the placeholder %r" % placeholder)
    return ["sh", "-c", _STDIN_SCRIPT, "sh", placeholder] + list(argv)


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


def _stop_remote(chan, grace=0.25):
    """SIGTERM the remote process group (traps run: temp files go), SIGKILL
    after GRACE seconds. Best effort: the channel is closed next anyway."""
    try:
        send_signal(chan, "TERM")
        if not chan.status_event.wait(grace):
            send_signal(chan, "KILL")
    except Exception as e:  # noqa: BLE001 - the server may not support signals
        LOG.debug("%s: the remote command not signalled: %s: %s", chan, type(e).__name__, e)


def _dies(transport, settle=0.2):
    """Whether TRANSPORT is dead or dies within SETTLE seconds (paramiko closes
    the channels of a dying transport a moment before it marks itself inactive)."""
    deadline = time.monotonic() + settle
    while transport.is_active():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def _drain(chan, out, err, sizes):
    while chan.recv_ready():
        out.append(chan.recv(CHUNK))
        sizes[0] += len(out[-1])
    while chan.recv_stderr_ready():
        err.append(chan.recv_stderr(CHUNK))
        sizes[1] += len(err[-1])


def _remaining(deadline):
    """Seconds left before DEADLINE (a time.monotonic() value); None without one."""
    return None if deadline is None else deadline - time.monotonic()


def _open_channel(transport, deadline):
    """A new session channel on TRANSPORT; raises Timeout if DEADLINE has passed and
    NotStarted if no channel could be opened."""
    r = _remaining(deadline)
    if r is not None and r <= 0:
        raise Timeout(b"", b"")
    try:
        return transport.open_session(timeout=r)
    except (paramiko.SSHException, EOFError, OSError) as e:
        raise NotStarted(e) from e


def _exec(transport, chan, line):
    """Start command LINE on CHAN; raises Dropped when the request failed because
    TRANSPORT died, else paramiko's error."""
    try:
        chan.exec_command(line)
    except (paramiko.SSHException, EOFError, OSError):
        if not transport.is_active():
            raise Dropped() from None
        raise


def _send_stdin(chan, data, sent):
    """Send CHAN the next chunk of stdin DATA (SENT bytes of it already sent) if its window
    has room, and EOF after the last; return how many bytes are sent now."""
    if sent < len(data) and not chan.closed and chan.send_ready():
        try:
            sent += chan.send(data[sent:sent + CHUNK])
        except socket.timeout:
            pass
        except OSError:  # the channel closed: the command ended without all its stdin
            sent = len(data)
        if sent == len(data) and not chan.closed:
            chan.shutdown_write()
    return sent


def _relay(transport, chan, data, deadline, max_output, out, err):
    """Feed stdin DATA to the command on CHAN and collect its stdout and stderr chunks in
    OUT and ERR until it exits or the channel closes. Raises TooMuchOutput, Timeout
    (with the output so far) or Dropped."""
    sent, sizes = 0, [0, 0]
    if not data:
        chan.shutdown_write()
    fd = chan.fileno()
    while True:
        sent = _send_stdin(chan, data, sent)
        _drain(chan, out, err, sizes)
        if max(sizes) > max_output:
            raise TooMuchOutput()
        if chan.eof_received and not chan.recv_ready() and not chan.recv_stderr_ready():
            r = _remaining(deadline)
            if not chan.status_event.wait(r if r is None or r > 0 else 0):
                raise Timeout(b"".join(out), b"".join(err))
            return
        if chan.closed:
            # closed without EOF: by the server (still connected) or by a dead transport
            _drain(chan, out, err, sizes)
            return
        if not transport.is_active():
            raise Dropped()
        r = _remaining(deadline)
        if r is not None and r <= 0:
            raise Timeout(b"".join(out), b"".join(err))
        wait = 0.5 if r is None else min(r, 0.5)
        if sent < len(data):
            wait = min(wait, _POLL)
        select.select([fd], [], [], wait)


def execute(transport, argv, stdin=b"", deadline=None, max_output=MAX_OUTPUT):
    """Run ARGV on TRANSPORT: (exit_status, stdout, stderr). DEADLINE is a
    time.monotonic() value. Raises NotStarted (nothing ran: safe to repeat),
    Timeout, Dropped, TooMuchOutput, or paramiko's error for a refused request."""
    line = command_line(argv)
    chan = _open_channel(transport, deadline)
    out, err = [], []
    try:
        _exec(transport, chan, line)
        chan.settimeout(0.0)
        _relay(transport, chan, memoryview(stdin or b""), deadline, max_output, out, err)
        status = chan.recv_exit_status()
        # paramiko reports -1 both for "killed by a signal" and for "the transport
        # died before the exit status came": only the first leaves the transport up
        if (status == -1 or not chan.eof_received) and _dies(transport):
            raise Dropped()
        return status, b"".join(out), b"".join(err)
    except (Timeout, TooMuchOutput):
        _stop_remote(chan)
        raise
    finally:
        chan.close()
