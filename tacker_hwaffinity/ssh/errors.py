"""Errors of the SSH adapter.

Every message names the host (and port) it is about. No message carries a
password, a private key, a passphrase, stdin data or a registered secret:
the session builds messages from non-secret facts and passes everything it
quotes (command lines, remote output) through its redactor first.
"""


class SSHError(Exception):
    """Base class: something went wrong talking to HOST:PORT."""

    def __init__(self, message, host=None, port=None):
        super().__init__(message)
        self.message = message
        self.host = host
        self.port = port

    def __str__(self):
        return self.message


class ConfigError(SSHError):
    """The target's parameters are unusable (bad port, no credentials, bad key text)."""


class ConnectError(SSHError):
    """The connection could not be set up: a transient failure (refused, reset,
    timeout, dropped transport) persisted through every attempt."""

    def __init__(self, message, host=None, port=None, attempts=0, cause=None):
        super().__init__(message, host, port)
        self.attempts = attempts
        self.cause = cause  # the exception class name of the last failure


class HostKeyError(SSHError):
    """The server's host key is not acceptable. Never retried."""

    def __init__(self, message, host=None, port=None, key_type=None, fingerprint=None):
        super().__init__(message, host, port)
        self.key_type = key_type
        self.fingerprint = fingerprint


class UnknownHostKeyError(HostKeyError):
    """Nothing is known about this host's key (and unknown keys are not accepted)."""


class HostKeyMismatchError(HostKeyError):
    """The host's key differs from the known or pinned one: possibly an attack."""


class AuthenticationError(SSHError):
    """The server rejected every credential offered. Never retried."""


class ConnectionLost(SSHError):
    """The transport dropped while a command ran: the command may or may not
    have run, so it is not repeated."""


class CommandTimeout(SSHError):
    """The command did not finish in time; its channel was closed (and the
    remote process group sent SIGKILL when the server supports it)."""

    def __init__(self, message, host=None, port=None, timeout=None, stdout=b"", stderr=b""):
        super().__init__(message, host, port)
        self.timeout = timeout
        self.stdout = stdout  # what arrived before the deadline (bytes)
        self.stderr = stderr


class CommandFailed(SSHError):
    """The command exited non-zero (raised only when the caller asks to check)."""

    def __init__(self, message, host=None, port=None, result=None):
        super().__init__(message, host, port)
        self.result = result
