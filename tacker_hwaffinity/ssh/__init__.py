"""SSH adapter: run kubectl (or anything) on a cluster master, safely.

Host keys are verified by default (known_hosts text and/or SHA256
fingerprints); keys or passwords authenticate; commands are argument lists,
each argument shell-quoted; every command has a deadline; secrets travel on
stdin and never into logs or exception messages. See doc/ssh.md.
"""
from .command import STDIN_FILE, CommandResult, command_line, stdin_as_file
from .errors import (AuthenticationError, CommandFailed, CommandTimeout, ConfigError,
                     ConnectError, ConnectionLost, HostKeyError, HostKeyMismatchError, SSHError,
                     UnknownHostKeyError)
from .hostkeys import HostKeyPolicy, fingerprint
from .retry import RetryPolicy
from .session import SSHSession
from .stats import SessionStats
from .target import Target

__all__ = [
    "AuthenticationError", "CommandFailed", "CommandResult", "CommandTimeout", "ConfigError",
    "ConnectError", "ConnectionLost", "HostKeyError", "HostKeyMismatchError", "HostKeyPolicy",
    "RetryPolicy", "SSHError", "SSHSession", "SessionStats", "Target", "UnknownHostKeyError",
    "STDIN_FILE", "command_line", "fingerprint", "stdin_as_file",
]
