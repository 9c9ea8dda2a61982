"""Credentials: a private key (text, optional passphrase) or a password.

Loading a key never lets the key text or the passphrase reach an exception
message or a traceback: failures are re-raised ``from None`` with a message
that names only the key's format.
"""
import base64
import binascii
import io
import struct

import paramiko
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from .errors import AuthenticationError, ConfigError
from .hostkeys import fingerprint


_CLASSES = ((rsa.RSAPrivateKey, paramiko.RSAKey), (ed25519.Ed25519PrivateKey, paramiko.Ed25519Key),
            (ec.EllipticCurvePrivateKey, paramiko.ECDSAKey))


def _load(data, password):
    """A paramiko key from DATA (bytes) in any format cryptography reads: OpenSSH,
    PKCS#1, SEC1 or PKCS#8 PEM, encrypted or not. The key is re-serialised in
    memory to the OpenSSH format, which paramiko reads for every key type."""
    try:
        loaded = serialization.load_ssh_private_key(data, password=password)
    except ValueError:
        loaded = serialization.load_pem_private_key(data, password=password)
    for crypto_class, paramiko_class in _CLASSES:
        if isinstance(loaded, crypto_class):
            break
    else:
        raise ConfigError("private key: unsupported type %s (use RSA, ECDSA or Ed25519)"
                          % type(loaded).__name__.lstrip("_"))
    text = loaded.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode("ascii")
    return paramiko_class.from_private_key(io.StringIO(text))


def _encrypted(text):
    """Whether key TEXT is passphrase-protected (PEM headers, PKCS#8, or the
    cipher name of an OpenSSH key). Older cryptography releases say only
    "could not load" when the passphrase is missing."""
    if "ENCRYPTED" in text:
        return True
    body = "".join(line for line in text.strip().splitlines()[1:-1])
    try:
        blob = base64.b64decode(body)
    except (ValueError, binascii.Error):
        return False
    magic = b"openssh-key-v1\0"
    if not blob.startswith(magic) or len(blob) < len(magic) + 4:
        return False
    n = struct.unpack(">I", blob[len(magic):len(magic) + 4])[0]
    return blob[len(magic) + 4:len(magic) + 4 + n] != b"none"


def _format(text):
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if first.startswith("-----BEGIN ") and len(first) < 60 else "unrecognised text"


class PrivateKey:
    """A private key given as text (OpenSSH or PEM format), loaded at once.
    A passphrase given for an unencrypted key is ignored."""

    def __init__(self, text, passphrase=None):
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        if not isinstance(text, str) or not text.strip():
            raise ConfigError("private key: empty")
        pw = passphrase.encode("utf-8") if isinstance(passphrase, str) else passphrase
        self._secrets = tuple(s for s in (passphrase, text) if s)
        data = text.encode("utf-8")
        try:
            try:
                self.key = _load(data, pw or None)
            except TypeError:
                # cryptography: "Password was given but private key is not encrypted"
                # (or "... not given but private key is encrypted", handled below)
                if not pw:
                    raise
                self.key = _load(data, None)
        except ConfigError:
            raise
        except TypeError:
            raise ConfigError("private key (%s) is encrypted and no passphrase was given"
                              % _format(text)) from None
        except (ValueError, paramiko.SSHException, IndexError, UnicodeError):
            if not pw and _encrypted(text):
                raise ConfigError("private key (%s) is encrypted and no passphrase was given"
                                  % _format(text)) from None
            raise ConfigError("private key (%s) could not be loaded: wrong passphrase or not "
                              "an RSA, ECDSA or Ed25519 key" % _format(text)) from None
        self.key_type = self.key.get_name()
        self.fingerprint = fingerprint(self.key.asbytes())

    @property
    def secrets(self):
        return self._secrets

    def authenticate(self, transport, username):
        return transport.auth_publickey(username, self.key)

    def describe(self):
        return "public key %s %s" % (self.key_type, self.fingerprint)

    def __repr__(self):
        return "PrivateKey(%s %s)" % (self.key_type, self.fingerprint)


class Password:
    """A password. Prefer keys: a password is sent to whoever holds the host key."""

    def __init__(self, password):
        if not isinstance(password, str) or not password:
            raise ConfigError("password: empty")
        self._password = password

    @property
    def secrets(self):
        return (self._password,)

    def authenticate(self, transport, username):
        # fallback: servers that allow only keyboard-interactive get the same password
        return transport.auth_password(username, self._password, fallback=True)

    def describe(self):
        return "password"

    def __repr__(self):
        return "Password(***)"


def authenticate(transport, username, credentials, where):
    """Try CREDENTIALS in order on an open TRANSPORT; AuthenticationError when none works."""
    tried = []
    for cred in credentials:
        tried.append(cred.describe())
        try:
            remaining = cred.authenticate(transport, username)
        except paramiko.BadAuthenticationType as e:
            tried[-1] += " (server allows only %s)" % ",".join(e.allowed_types or ["nothing"])
            continue
        except paramiko.AuthenticationException:
            continue
        if transport.is_authenticated():
            return cred
        tried[-1] += " (partial; server also wants %s)" % ",".join(remaining or [])
    raise AuthenticationError("authentication as %r failed on %s; tried: %s"
                              % (username, where, "; ".join(tried) or "no credentials"))
