"""SSHSession: a verified, authenticated connection that runs argument lists.

    with SSHSession(Target(...), jump=Target(...)) as ssh:
        result = ssh.run(["kubectl", "get", "nodes"], stdin=token, timeout=30)

Connection set-up (including the jump host) is retried with bounded
exponential backoff on transient failures only. When the transport has
dropped between two commands, the next ``run`` reconnects once,
transparently; a drop while a command runs raises ConnectionLost instead,
because the command may have run. The context manager always closes both
transports; a session that is garbage-collected unclosed closes them too.
"""
import logging
import threading
import time
import weakref

import paramiko

from . import command, connector
from .errors import CommandFailed, CommandTimeout, ConnectError, ConnectionLost, SSHError
from .redact import Redactor
from .retry import RetryExhausted, RetryPolicy, call_with_retry
from .stats import SessionStats

LOG = logging.getLogger(__name__)
_SHOW = 300  # characters of a command line or of stderr quoted in messages


class _Link:
    """The open transports of a session (kept apart so a finalizer can close them)."""

    def __init__(self):
        self.transport = None
        self.jump = None
        self.fingerprint = None

    def alive(self):
        return self.transport is not None and self.transport.is_active()

    def close(self):
        for t in (self.transport, self.jump):
            if t is not None:
                try:
                    t.close()
                except Exception as e:  # noqa: BLE001 - closing is best effort
                    LOG.debug("closing %s failed: %s: %s", t, type(e).__name__, e)
        self.transport = self.jump = None


def _short(text):
    """TEXT on one line, its middle elided past _SHOW characters (the end of a
    wrapped command line is the part that tells what ran)."""
    text = " ".join(str(text).split())
    if len(text) <= _SHOW:
        return text
    head = _SHOW // 3
    return text[:head] + " ... " + text[head - _SHOW:]


class SSHSession:
    """Runs commands on TARGET (a ``Target``), optionally through JUMP.

    CONNECT_TIMEOUT bounds each TCP connect, banner, key exchange and
    authentication step; COMMAND_TIMEOUT is the default per-command deadline;
    RETRY a ``RetryPolicy`` for connection set-up; KEEPALIVE (seconds) sends
    SSH keepalives so a dead peer is noticed on idle connections.
    REMOTE_TIMEOUT runs each command under the server's ``timeout`` utility
    so it cannot outlive its deadline there (argv[0] must then be a program,
    not a shell builtin); RECONNECT allows one reconnect per command after a
    drop between commands.
    """

    def __init__(self, target, jump=None, connect_timeout=10.0, command_timeout=120.0,
                 retry=None, keepalive=None, reconnect=True, remote_timeout=True):
        self.target, self.jump = target, jump
        self.connect_timeout = float(connect_timeout)
        self.command_timeout = float(command_timeout)
        self.retry = retry or RetryPolicy()
        self.keepalive = keepalive
        self.reconnect = reconnect
        self.remote_timeout = remote_timeout
        self.stats = SessionStats()
        self._lock = threading.RLock()
        self._link = _Link()
        self._dropped = False  # the live transport died (not closed by the caller)
        self._redact = Redactor()
        for t in (target, jump):
            for s in (t.secrets if t else ()):
                self._redact.add_lines(s)
        self._finalizer = weakref.finalize(self, self._link.close)

    @classmethod
    def from_params(cls, params, **defaults):
        """A session from the driver's ``ssh`` block; DEFAULTS (host, username,
        password...) fill what the block leaves unset, for the target only."""
        from .target import Target
        jump = params.get("jump_host")
        return cls(Target.from_params(params, **defaults),
                   jump=Target.from_params(jump) if jump else None,
                   connect_timeout=params.get("connect_timeout", 10),
                   command_timeout=params.get("command_timeout", 120),
                   retry=RetryPolicy.from_retries(params.get("retries", 3)))

    # -- connection -------------------------------------------------------

    @property
    def connected(self):
        return self._link.alive()

    @property
    def host_key_fingerprint(self):
        """SHA256 fingerprint of the target's host key, once connected."""
        return self._link.fingerprint

    def _open_chain(self):
        with self._lock:
            self.stats.connect_attempts += 1
        return connector.open_chain(self.target, self.jump, self.connect_timeout, self.keepalive)

    def connect(self):
        """Connect (if not connected); returns self. Raises HostKeyError,
        AuthenticationError, ConfigError at once, ConnectError when transient
        failures outlast the retry policy."""
        with self._lock:
            if self._link.alive():
                return self
            self._link.close()
            t = self.target
            via = " via %s" % self.jump.where if self.jump else ""
            start = time.monotonic()

            def on_retry(attempt, exc, pause):
                LOG.warning("connecting to %s%s: attempt %d failed (%s); retrying in %.1f s",
                            t.where, via, attempt, self._redact(_describe(exc)), pause)
            try:
                (transport, jump, fp), attempts = call_with_retry(
                    self._open_chain, self.retry, on_retry)
            except RetryExhausted as e:
                raise ConnectError(self._redact(
                    "cannot connect to %s%s: %d attempt(s) in %.1f s, last: %s" % (
                        t.where, via, e.attempts, time.monotonic() - start, _describe(e.last))),
                    t.host, t.port, e.attempts, type(e.last).__name__) from e.last
            except SSHError:
                raise
            except Exception as e:  # not transient and not ours: name resolution, algorithms
                raise ConnectError(self._redact("cannot connect to %s%s: %s" % (
                    t.where, via, _describe(e))), t.host, t.port, 1, type(e).__name__) from e
            took = time.monotonic() - start
            self._link.transport, self._link.jump, self._link.fingerprint = transport, jump, fp
            self.stats.connections += 2 if jump else 1
            self.stats.connect_seconds += took
            if self._dropped:
                self.stats.reconnects += 1
            self._dropped = False
            LOG.info("connected to %s%s in %.0f ms (%d attempt(s), host key %s)",
                     t.where, via, took * 1000, attempts, fp)
            return self

    def close(self):
        """Close the transports (idempotent). The session may connect again."""
        with self._lock:
            if self._link.transport is not None:
                LOG.debug("closing connection to %s", self.target.where)
            self._link.close()
            self._dropped = False

    def __enter__(self):
        return self.connect()

    def __exit__(self, *exc):
        self.close()
        return False

    # -- commands ---------------------------------------------------------

    def run(self, argv, stdin=None, timeout=None, check=False, secrets=()):
        """Run ARGV (a list of arguments, each shell-quoted) and return a
        ``CommandResult``. STDIN (str or bytes) is sent to the command and never
        logged: pass secrets there. SECRETS are extra strings to keep out of logs
        and messages. TIMEOUT (default: the session's) bounds the command; on
        expiry CommandTimeout. CHECK: CommandFailed on a non-zero exit."""
        line = command.command_line(argv)
        data = stdin.encode("utf-8") if isinstance(stdin, str) else bytes(stdin or b"")
        red = self._redact.child(secrets, lines=data or None)
        timeout = self.command_timeout if timeout is None else float(timeout)
        where, host, port = self.target.where, self.target.host, self.target.port
        shown = _short(red(line))
        with self._lock:
            self.stats.commands += 1
        LOG.debug("run on %s: %s (stdin %d bytes, timeout %.1f s)",
                  where, shown, len(data), timeout)
        budget = 1 if self.reconnect else 0  # reconnects this call may make
        for _ in (1, 2):
            transport, reconnected = self._ensure(budget > 0)
            budget -= reconnected
            start = time.monotonic()
            try:
                remote = (command.with_remote_timeout(argv, timeout) if self.remote_timeout
                          else argv)
                status, out, err = command.execute(transport, remote, data, start + timeout)
            except command.NotStarted as e:
                self._drop(transport)
                if budget > 0:
                    LOG.debug("no channel on %s (%s): the transport is gone",
                              where, red(_describe(e.cause)))
                    continue
                raise ConnectionLost(red("cannot open a channel on %s for: %s (%s)" % (
                    where, shown, _describe(e.cause))), host, port) from None
            except command.Timeout as e:
                with self._lock:
                    self.stats.command_timeouts += 1
                    self.stats.command_seconds += time.monotonic() - start
                raise CommandTimeout(red("command timed out after %.1f s on %s: %s" % (
                    timeout, where, shown)), host, port, timeout,
                    e.stdout, e.stderr) from None
            except command.Dropped:
                self._drop(transport)
                raise ConnectionLost(red("connection to %s dropped while running: %s (it may or "
                                         "may not have run; not repeated)" % (where, shown)),
                                     host, port) from None
            except command.TooMuchOutput:
                raise SSHError(red("command output over %d bytes on %s: %s" % (
                    command.MAX_OUTPUT, where, shown)), host, port) from None
            except (paramiko.SSHException, OSError, EOFError) as e:
                raise SSHError(red("command refused by %s: %s (%s)" % (
                    where, shown, _describe(e))), host, port) from None
            took = time.monotonic() - start
            with self._lock:
                self.stats.command_seconds += took
            result = command.CommandResult(tuple(argv), status, out, err, took)
            LOG.debug("exit %d on %s after %.0f ms: %s", status, where, took * 1000, shown)
            if check and status != 0:
                raise CommandFailed(red("command exited %d on %s: %s; stderr: %s" % (
                    status, where, shown, _short(result.stderr) or "(empty)")),
                    host, port, result)
            return result
        raise ConnectionLost("connection to %s keeps dropping before commands start" % where,
                             self.target.host, self.target.port)

    def _ensure(self, may_reconnect):
        """(live transport, whether it replaced one that dropped)."""
        with self._lock:
            if self._link.alive():
                return self._link.transport, False
            dropped = self._dropped or self._link.transport is not None
            if dropped:
                if not may_reconnect:
                    raise ConnectionLost("connection to %s dropped%s" % (
                        self.target.where, "" if self.reconnect else " (reconnect disabled)"),
                        self.target.host, self.target.port)
                LOG.warning("connection to %s dropped between commands; reconnecting once",
                            self.target.where)
                self._dropped = True
            self.connect()
            return self._link.transport, dropped

    def _drop(self, transport):
        with self._lock:
            if self._link.transport is transport:
                self._link.close()
                self._dropped = True


def _describe(exc):
    text = str(exc) or ""
    name = type(exc).__name__
    return "%s: %s" % (name, text) if text else name
