"""Bounded exponential backoff, and which failures are worth another attempt.

Transient: the peer refused, reset or dropped the connection, a timeout, an
unreachable network, an SSH transport that died before it was ready, or a jump
host that could not reach the target yet. Never transient: host-key and
authentication failures, bad configuration, incompatible algorithms, name
resolution errors.
"""
import errno
import random
import socket
import time
from dataclasses import dataclass

import paramiko

from .errors import AuthenticationError, ConfigError, HostKeyError

_TRANSIENT_ERRNOS = {errno.ECONNREFUSED, errno.ECONNRESET, errno.ECONNABORTED, errno.ETIMEDOUT,
                     errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EPIPE, errno.EAGAIN}
# paramiko.ChannelException codes of a refused direct-tcpip open (RFC 4254 5.1)
_OPEN_CONNECT_FAILED = 2


@dataclass(frozen=True)
class RetryPolicy:
    """ATTEMPTS connection attempts in all (1 = no retry), sleeping DELAY,
    DELAY*MULTIPLIER, ... capped at MAX_DELAY (+/- JITTER as a fraction)
    between them, and never starting an attempt after DEADLINE seconds."""

    attempts: int = 4
    delay: float = 0.5
    multiplier: float = 2.0
    max_delay: float = 8.0
    jitter: float = 0.1
    deadline: float = 120.0

    def __post_init__(self):
        if not 1 <= int(self.attempts) <= 50:
            raise ConfigError("retry: attempts must be 1..50, got %r" % (self.attempts,))
        if self.delay < 0 or self.max_delay < 0 or self.multiplier < 1 or self.deadline <= 0:
            raise ConfigError("retry: delays must be >= 0, multiplier >= 1, deadline > 0")
        if not 0 <= self.jitter < 1:
            raise ConfigError("retry: jitter must be in [0, 1)")

    @classmethod
    def from_retries(cls, retries, **kw):
        """The driver parameter 'retries' counts attempts after the first."""
        return cls(attempts=int(retries) + 1, **kw)

    def sleeps(self):
        """The ATTEMPTS-1 pauses between attempts, in seconds."""
        d = self.delay
        for _ in range(int(self.attempts) - 1):
            j = 1 + random.uniform(-self.jitter, self.jitter) if self.jitter else 1
            yield min(d, self.max_delay) * j
            d *= self.multiplier


def is_transient(exc):
    """True when a failed connection set-up is worth another attempt."""
    if isinstance(exc, (HostKeyError, AuthenticationError, ConfigError,
                        paramiko.AuthenticationException, paramiko.BadHostKeyException,
                        paramiko.ssh_exception.IncompatiblePeer, socket.gaierror)):
        return False
    if isinstance(exc, paramiko.ChannelException):
        return exc.code == _OPEN_CONNECT_FAILED
    if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError):
        return True
    if isinstance(exc, (ConnectionError, TimeoutError, socket.timeout, EOFError)):
        return True
    if isinstance(exc, OSError):
        return exc.errno in _TRANSIENT_ERRNOS
    # banner/kex interrupted ("Error reading SSH protocol banner", "SSH session not
    # active", "Negotiation failed" after a reset): the transport died during set-up
    return isinstance(exc, paramiko.SSHException)


class RetryExhausted(Exception):
    """Every attempt failed transiently: LAST is the final error, after ATTEMPTS tries."""

    def __init__(self, last, attempts):
        super().__init__("%s after %d attempts" % (type(last).__name__, attempts))
        self.last = last
        self.attempts = attempts


def call_with_retry(func, policy, on_retry=None, clock=time.monotonic, sleep=time.sleep):
    """FUNC() until it succeeds, fails non-transiently, or the policy is spent.

    Returns (result, attempts). A non-transient error propagates unchanged at
    once; when the attempts or the deadline run out, RetryExhausted."""
    start = clock()
    sleeps = policy.sleeps()
    attempt = 0
    while True:
        attempt += 1
        try:
            return func(), attempt
        except Exception as e:
            if not is_transient(e):
                raise
            pause = next(sleeps, None)
            if pause is None or clock() - start + pause > policy.deadline:
                raise RetryExhausted(e, attempt) from e
            if on_retry:
                on_retry(attempt, e, pause)
            sleep(pause)
