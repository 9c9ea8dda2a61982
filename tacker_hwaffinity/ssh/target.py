"""Where to connect and how to trust and log into it.

The field names are those of the driver's ``ssh`` parameter block
(``tacker_hwaffinity.labeling.params``), so ``Target.from_params(block)``
takes the block as validated there. Credentials are checked when the Target
is built: an unreadable key or a wrong passphrase fails before any network
traffic, and without naming the key or the passphrase.
"""
from .auth import Password, PrivateKey
from .errors import ConfigError
from .hostkeys import HostKeyPolicy

_FIELDS = ("host", "port", "username", "password", "private_key", "private_key_passphrase",
           "known_hosts", "host_key_fingerprints", "insecure_ignore_host_key")


class Target:
    """One SSH server: address, login, credentials, host-key policy.

    Credentials are tried in this order: the private key, then the password.
    At least one is required. Host keys: KNOWN_HOSTS (text) and/or
    HOST_KEY_FINGERPRINTS ('SHA256:...'); unknown keys are refused unless
    INSECURE_IGNORE_HOST_KEY is true (a warning is logged when it is used).
    """

    def __init__(self, host, username, port=22, password=None, private_key=None,
                 private_key_passphrase=None, known_hosts=None, host_key_fingerprints=(),
                 insecure_ignore_host_key=False):
        if not isinstance(host, str) or not host.strip() or any(c.isspace() for c in host):
            raise ConfigError("ssh host: expected a host name or address, got %r" % (host,))
        if not isinstance(username, str) or not username or any(c.isspace() for c in username):
            raise ConfigError("ssh username on %s: expected a user name" % host)
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise ConfigError("ssh port on %s: expected 1..65535, got %r" % (host, port))
        self.host, self.username, self.port = host, username, port
        self.credentials = []
        if private_key:
            self.credentials.append(PrivateKey(private_key, private_key_passphrase))
        if password:
            self.credentials.append(Password(password))
        if not self.credentials:
            raise ConfigError("ssh %s: give a private_key or a password" % self.where)
        self.host_keys = HostKeyPolicy(known_hosts, host_key_fingerprints or (),
                                       insecure_ignore_host_key)

    @classmethod
    def from_params(cls, params, **defaults):
        """A Target from a parameter block (unknown keys are ignored); DEFAULTS
        fill fields the block leaves unset (e.g. host, username)."""
        kw = {k: v for k, v in defaults.items() if v is not None}
        kw.update({k: params[k] for k in _FIELDS if params.get(k) is not None})
        if "host" not in kw or "username" not in kw:
            raise ConfigError("ssh parameters: host and username are required")
        return cls(**kw)

    @property
    def where(self):
        return "%s@%s:%d" % (self.username, self.host, self.port)

    @property
    def secrets(self):
        """Every secret string of this target, for the redactor."""
        out = []
        for c in self.credentials:
            out.extend(c.secrets)
        return out

    def __repr__(self):
        auth = ", ".join(c.describe() for c in self.credentials)
        return "Target(%s, auth=%s)" % (self.where, auth)
