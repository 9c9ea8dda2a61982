"""Where kubectl runs: on a master over SSH, or here with a kubeconfig.

Both runners take the argument lists of ``labeling.kubectl`` (argv[0] is
"kubectl") and answer ``(exit status, stdout, stderr)``; the kubeconfig,
which holds credentials, is a 0600 temporary file removed on close and never
appears in a log or message.
"""
import json
import logging
import os
import subprocess
import tempfile

LOG = logging.getLogger(__name__)


class KubeAccessError(Exception):
    """kubectl could not be run at all (not: kubectl exited non-zero)."""


class SshKubectl:
    """kubectl on the far side of an ``ssh.SSHSession``."""

    def __init__(self, session, kubectl="kubectl", kubeconfig_path=None):
        self.session = session
        self.prefix = [kubectl] + (["--kubeconfig", kubeconfig_path] if kubeconfig_path else [])

    @property
    def where(self):
        return "kubectl over SSH on %s" % self.session.target.where

    def run(self, argv, stdin=None, timeout=None):
        from tacker_hwaffinity.ssh import SSHError
        try:
            r = self.session.run(self.prefix + list(argv[1:]), stdin=stdin, timeout=timeout)
        except SSHError as e:
            raise KubeAccessError(str(e)) from None
        return r.exit_status, r.stdout, r.stderr

    def close(self):
        self.session.close()


class LocalKubectl:
    """kubectl on this machine with KUBECONFIG (text)."""

    def __init__(self, kubeconfig, kubectl="kubectl", timeout=120.0):
        self.kubectl, self.timeout = kubectl, timeout
        fd, self.path = tempfile.mkstemp(prefix="hwaffinity-kubeconfig-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:  # mkstemp: mode 0600
            f.write(kubeconfig)

    @property
    def where(self):
        return "local kubectl with the given kubeconfig"

    def run(self, argv, stdin=None, timeout=None):
        cmd = [self.kubectl, "--kubeconfig", self.path] + list(argv[1:])
        try:
            p = subprocess.run(cmd, input=(stdin or "").encode("utf-8"), capture_output=True,
                               timeout=timeout or self.timeout, check=False)
        except FileNotFoundError:
            raise KubeAccessError("kubectl (%s) is not installed here" % self.kubectl) from None
        except subprocess.TimeoutExpired:
            raise KubeAccessError("kubectl %s did not finish within %.0f s"
                                  % (" ".join(argv[1:3]), timeout or self.timeout)) from None
        return p.returncode, p.stdout.decode("utf-8", "replace"), \
            p.stderr.decode("utf-8", "replace")

    def close(self):
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def kubeconfig_from_vim(endpoint, bearer_token, ssl_ca_cert=None):
    """A kubeconfig (JSON text) for a Tacker Kubernetes VIM: endpoint, bearer
    token and, optionally, the CA certificate (PEM)."""
    import base64
    cluster = {"server": endpoint}
    if ssl_ca_cert:
        cluster["certificate-authority-data"] = base64.b64encode(
            ssl_ca_cert.encode("utf-8")).decode("ascii")
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "vim",
        "clusters": [{"name": "vim", "cluster": cluster}],
        "users": [{"name": "vim", "user": {"token": bearer_token}}],
        "contexts": [{"name": "vim", "context": {"cluster": "vim", "user": "vim"}}]})


# the kubeconfig fields holding a credential (users[].user and its auth-provider config)
CREDENTIAL_FIELDS = ("token", "password", "client-key-data", "id-token", "refresh-token",
                     "client-secret")


def kubeconfig_secrets(kubeconfig):
    """Each credential of the KUBECONFIG text (YAML or JSON) on its own, a client key also
    decoded (PEM); none when it is no YAML, as then kubectl cannot use it either."""
    import base64
    import binascii

    import yaml
    try:
        doc = yaml.safe_load(kubeconfig or "")
    except yaml.YAMLError:
        return []
    found = []

    def walk(node):
        items = node.items() if isinstance(node, dict) else \
            enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            if key in CREDENTIAL_FIELDS and isinstance(value, str) and value:
                found.append(value)
                if key == "client-key-data":
                    try:
                        found.append(base64.b64decode(value).decode("utf-8", "replace"))
                    except (binascii.Error, ValueError):
                        pass
            else:
                walk(value)
    walk(doc)
    return found
