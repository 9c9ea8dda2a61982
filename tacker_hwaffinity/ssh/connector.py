"""Setting up one SSH connection: TCP (or a jump host's channel), key
exchange, host-key check, authentication. Every step is bounded by the
connect timeout; a failed step closes what it opened. Retries are the
caller's business (``retry.call_with_retry``).
"""
import logging
import socket

import paramiko

from .auth import authenticate
from .errors import HostKeyMismatchError

LOG = logging.getLogger(__name__)


def handshake(target, sock, timeout, keepalive=None, algorithms=None):
    """Key exchange, host-key check and authentication on SOCK (closed on failure)."""
    try:
        transport = paramiko.Transport(sock)
    except BaseException:
        sock.close()
        raise
    try:
        transport.banner_timeout = timeout
        transport.handshake_timeout = timeout
        transport.auth_timeout = timeout
        opts = transport.get_security_options()
        offered = list(opts.key_types)
        opts.key_types = ([a for a in algorithms if a in offered] if algorithms else
                          target.host_keys.preferred_algorithms(target.host, target.port,
                                                                offered))
        transport.start_client(timeout=timeout)
        key = transport.get_remote_server_key()
        fp = target.host_keys.verify(target.host, target.port, key.get_name(), key.asbytes())
        cred = authenticate(transport, target.username, target.credentials, target.where)
        if keepalive:
            transport.set_keepalive(int(keepalive))
        LOG.debug("authenticated on %s with %s", target.where, cred.describe())
        return transport, fp
    except BaseException:
        transport.close()
        raise


def open_one(target, make_sock, timeout, keepalive=None):
    """A transport to TARGET over make_sock(). With only untyped pinned
    fingerprints, a mismatching first key leads to asking the server for
    each other key type in turn (as ssh-keyscan does)."""
    try:
        return handshake(target, make_sock(), timeout, keepalive)
    except HostKeyMismatchError as e:
        probes = target.host_keys.probes(target.host, target.port)
        if not probes:
            raise
        first = (e.key_type, e.fingerprint)
        seen = dict([first])
    for key_type, algorithms in probes:
        if key_type in seen:
            continue
        try:
            return handshake(target, make_sock(), timeout, keepalive, algorithms)
        except HostKeyMismatchError as e:
            seen[e.key_type] = e.fingerprint
        except paramiko.ssh_exception.IncompatiblePeer:
            continue  # the server has no key of this type
    raise HostKeyMismatchError(
        "host key MISMATCH for %s:%d: none of the server's keys (%s) has a pinned "
        "fingerprint (%s); refusing to connect" % (
            target.host, target.port, ", ".join("%s %s" % kv for kv in seen.items()),
            " or ".join(sorted(target.host_keys.fingerprints))),
        target.host, target.port, *first)


def tcp(host, port, timeout):
    """A TCP connection with Nagle's algorithm off: SSH requests are small
    and each waits for its reply, so Nagle plus delayed ACKs would add ~40 ms
    to many round trips (as OpenSSH, we set TCP_NODELAY)."""
    sock = socket.create_connection((host, port), timeout)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass
    return sock


def open_chain(target, jump, timeout, keepalive=None):
    """(transport to TARGET, transport to JUMP or None, target key fingerprint).
    Through JUMP, the target is reached over a direct-tcpip channel and its host
    key is checked against TARGET's own policy."""
    jt = None
    try:
        if jump is None:
            def make_sock():
                return tcp(target.host, target.port, timeout)
        else:
            jt, _ = open_one(jump, lambda: tcp(jump.host, jump.port, timeout), timeout,
                             keepalive)

            def make_sock():
                return jt.open_channel("direct-tcpip", (target.host, target.port),
                                       ("127.0.0.1", 0), timeout=timeout)
        transport, fp = open_one(target, make_sock, timeout, keepalive)
        return transport, jt, fp
    except BaseException:
        if jt is not None:
            jt.close()
        raise
