"""Host-key verification: known_hosts text and pinned SHA256 fingerprints.

The policy is strict by default. A key is accepted when it equals a
known_hosts entry for the host (plain, wildcard or hashed host patterns;
``[host]:port`` for ports other than 22) or when its SHA256 fingerprint is
one of the pinned ones. A key is refused as

* *revoked* when a ``@revoked`` line lists it;
* *mismatching* when anything is known or pinned for the host but not this
  key (this is never overridden, not even by the opt-out);
* *unknown* when nothing is known or pinned for the host; only then does
  ``insecure_ignore_host_key=True`` accept it, with a warning in the log.
"""
import base64
import binascii
import hashlib
import hmac
import logging
import re

from .errors import ConfigError, HostKeyMismatchError, UnknownHostKeyError

LOG = logging.getLogger(__name__)

# known_hosts key type -> host-key algorithms that present that key
_ALGORITHMS = {
    "ssh-rsa": ("rsa-sha2-512", "rsa-sha2-256"),
    "ssh-ed25519": ("ssh-ed25519",),
    "ecdsa-sha2-nistp256": ("ecdsa-sha2-nistp256",),
    "ecdsa-sha2-nistp384": ("ecdsa-sha2-nistp384",),
    "ecdsa-sha2-nistp521": ("ecdsa-sha2-nistp521",),
}
# ssh-keygen -lf "(TYPE)" suffix -> key type (ECDSA by bit count)
_LF_TYPES = {"ED25519": "ssh-ed25519", "RSA": "ssh-rsa",
             "ECDSA": {"256": "ecdsa-sha2-nistp256", "384": "ecdsa-sha2-nistp384",
                       "521": "ecdsa-sha2-nistp521"}}
_FP = re.compile(r"SHA256:([A-Za-z0-9+/]{43})=?")


def fingerprint(blob):
    """OpenSSH's SHA256 fingerprint of a public key blob: ``SHA256:<base64>``."""
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode("ascii")
    return "SHA256:" + digest.rstrip("=")


def host_key_name(host, port):
    """How known_hosts names HOST:PORT."""
    return host if int(port) == 22 else "[%s]:%d" % (host, int(port))


def _match_pattern(pattern, name):
    if pattern.startswith("|1|"):
        try:
            _, _, salt, digest = pattern.split("|")
            mac = hmac.new(base64.b64decode(salt), name.encode("utf-8"), hashlib.sha1).digest()
            return hmac.compare_digest(mac, base64.b64decode(digest))
        except (ValueError, binascii.Error):
            return False
    # OpenSSH wildcards are only * and ?; brackets in "[host]:port" are literal
    rx = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern.lower())
    return re.fullmatch(rx, name.lower()) is not None


def _hosts_match(patterns, name):
    """OpenSSH semantics: a negated pattern that matches excludes the line."""
    matched = False
    for p in patterns.split(","):
        if p.startswith("!"):
            if _match_pattern(p[1:], name):
                return False
        elif _match_pattern(p, name):
            matched = True
    return matched


class _Entry:
    __slots__ = ("marker", "patterns", "key_type", "blob")

    def __init__(self, marker, patterns, key_type, blob):
        self.marker, self.patterns, self.key_type, self.blob = marker, patterns, key_type, blob


def parse_known_hosts(text):
    """known_hosts TEXT -> entries. ``@cert-authority`` lines are ignored (host
    certificates are not supported); malformed lines raise ConfigError naming the
    line number."""
    entries = []
    for n, raw in enumerate((text or "").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        marker = None
        if fields[0].startswith("@"):
            marker, fields = fields[0], fields[1:]
            if marker not in ("@revoked", "@cert-authority"):
                raise ConfigError("known_hosts line %d: unknown marker %s" % (n, marker))
        if len(fields) < 3:
            raise ConfigError("known_hosts line %d: expected 'hosts keytype base64-key'" % n)
        try:
            blob = base64.b64decode(fields[2], validate=True)
        except (ValueError, binascii.Error):
            raise ConfigError("known_hosts line %d: the key is not base64" % n) from None
        if marker == "@cert-authority":
            LOG.warning("known_hosts line %d: @cert-authority is not supported; ignored", n)
            continue
        entries.append(_Entry(marker, fields[0], fields[1], blob))
    return entries


def parse_fingerprint(text):
    """'SHA256:...' or a whole ``ssh-keygen -lf`` line -> (fingerprint, key type or None)."""
    m = _FP.search(text or "")
    if not m:
        raise ConfigError("host key fingerprint %r: expected 'SHA256:<43 base64 characters>' "
                          "as ssh-keygen -lf prints it" % (text,))
    key_type = None
    t = re.search(r"\((ED25519|RSA|ECDSA)\)\s*$", text.strip())
    if t:
        key_type = _LF_TYPES[t.group(1)]
        if isinstance(key_type, dict):
            bits = text.split()[0]
            key_type = key_type.get(bits)
    return "SHA256:" + m.group(1), key_type


class HostKeyPolicy:
    """What a client accepts as the host key of one target."""

    def __init__(self, known_hosts=None, fingerprints=(), insecure_ignore_host_key=False):
        if isinstance(fingerprints, str):
            fingerprints = [fingerprints]
        self.entries = parse_known_hosts(known_hosts)
        pinned = [parse_fingerprint(f) for f in fingerprints or ()]
        self.fingerprints = {fp for fp, _ in pinned}
        self._pinned_types = [t for _, t in pinned if t]
        self.insecure = bool(insecure_ignore_host_key)

    def _entries_for(self, host, port):
        name = host_key_name(host, port)
        return [e for e in self.entries if _hosts_match(e.patterns, name)]

    def preferred_algorithms(self, host, port, offered):
        """OFFERED host-key algorithms reordered so that the types we can verify
        come first (as OpenSSH does), so a server with several keys presents
        the one we know."""
        known = [e.key_type for e in self._entries_for(host, port) if e.marker is None]
        known += self._pinned_types
        first = []
        for key_type in known:
            for alg in _ALGORITHMS.get(key_type, (key_type,)):
                if alg in offered and alg not in first:
                    first.append(alg)
        return first + [a for a in offered if a not in first]

    def probes(self, host, port):
        """(key type, algorithms) to ask the server for one by one after its
        first key matched nothing. Only when untyped fingerprints are all we
        know: a 'SHA256:...' alone does not say which of the server's keys it is."""
        if self._entries_for(host, port) or self._pinned_types or not self.fingerprints:
            return []
        return list(_ALGORITHMS.items())

    def verify(self, host, port, key_type, blob):
        """Accept the server key (KEY_TYPE, BLOB) for HOST:PORT, or raise a HostKeyError."""
        fp = fingerprint(blob)
        where = "%s:%d" % (host, int(port))
        entries = self._entries_for(host, port)
        if any(e.marker == "@revoked" and e.blob == blob for e in self.entries):
            raise HostKeyMismatchError(
                "host key of %s is REVOKED in known_hosts: %s %s" % (where, key_type, fp),
                host, port, key_type, fp)
        if any(e.marker is None and e.blob == blob for e in entries) or fp in self.fingerprints:
            LOG.debug("host key of %s verified: %s %s", where, key_type, fp)
            return fp
        known = [e for e in entries if e.marker is None]
        if known or self.fingerprints:
            expected = sorted({"%s %s" % (e.key_type, fingerprint(e.blob)) for e in known}
                              | self.fingerprints)
            raise HostKeyMismatchError(
                "host key MISMATCH for %s: the server presented %s %s, expected %s "
                "(possible man-in-the-middle; refusing to connect)"
                % (where, key_type, fp, " or ".join(expected)), host, port, key_type, fp)
        if self.insecure:
            LOG.warning("accepting UNKNOWN host key of %s without verification "
                        "(insecure_ignore_host_key is set): %s %s", where, key_type, fp)
            return fp
        raise UnknownHostKeyError(
            "unknown host key for %s: the server presented %s %s; add it to known_hosts "
            "or host_key_fingerprints after checking it out of band" % (where, key_type, fp),
            host, port, key_type, fp)
