"""The MgmtDriver's messages (Tacker's error, the v2 script's stderr, our log) hold no
credential, even one quoted on its own: a Kubernetes VIM's bearer token, a kubeconfig
parameter's token, password or client key, the join file's bootstrap token and certificate
key, a line of tacker.conf (which holds Tacker's passwords)."""
import base64
import logging

import pytest

from tacker_hwaffinity.labeling import params as parameters
from tacker_hwaffinity.mgmt import kubectl_runner, lifecycle

TOKEN = "eyJhbGciOiJSUzI1NiJ9.vim-b3arer"
KEY_PEM = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBk3yK3yL1ne0fTheCl1entKey\n" \
          "-----END EC PRIVATE KEY-----\n"
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443"}}]
users:
- name: admin
  user:
    token: kc-t0ken
    password: kc-passw0rd
    client-key-data: %s
contexts: [{name: c, context: {cluster: c, user: admin}}]
current-context: c
""" % base64.b64encode(KEY_PEM.encode()).decode()


def _logged(redact, text, caplog):
    log = logging.getLogger("test.mgmt.secrets")
    with caplog.at_level(logging.DEBUG):
        log.error("instantiate_end failed: %s", redact(text))
    return caplog.text


def test_a_vim_bearer_token_quoted_alone_is_masked(caplog):
    job = lifecycle.Job("instantiate_end", parameters.parse({}),
                        kubeconfig=kubectl_runner.kubeconfig_from_vim(
                            "https://10.0.0.1:6443", TOKEN))
    text = _logged(lifecycle.redactor(job), "401 Unauthorized: Bearer %s" % TOKEN, caplog)
    assert "vim-b3arer" not in text and "Unauthorized" in text


def test_each_credential_of_a_kubeconfig_parameter_is_masked(caplog):
    job = lifecycle.Job("instantiate_end", parameters.parse(
        {"hwaffinity_param": {"kubeconfig": KUBECONFIG}}))
    text = _logged(lifecycle.redactor(job),
                   "kubectl: token kc-t0ken, password kc-passw0rd, key %s" % KEY_PEM, caplog)
    for secret in ("kc-t0ken", "kc-passw0rd", "ClientKey"):
        assert secret not in text


def test_a_kubeconfig_that_is_no_yaml_has_no_credentials_to_read():
    assert kubectl_runner.kubeconfig_secrets("users: [") == []


class _JoinRefusingSession:
    """Stands for a worker's SSH session: the script exits 1 with kubeadm's refusal quoting
    the bootstrap token (the real script over a real sshd: test_install.py)."""

    def __init__(self, stderr):
        self.stderr, self.stdins = stderr, []

    def run(self, argv, stdin=None, timeout=None, secrets=()):
        from tacker_hwaffinity.ssh import CommandResult
        self.stdins.append(stdin)
        return CommandResult(tuple(argv), 1, b"", self.stderr.encode())


def test_a_join_failure_quoting_the_bootstrap_token_is_masked(caplog):
    from tacker_hwaffinity.mgmt import install_plan, install_ssh
    from tacker_hwaffinity.mgmt.reconcile import HookFailed
    token, cert_key = "abcdef.0123456789abcdef", "9f" * 32
    join = ("control_plane_endpoint=10.0.0.10:6443\ntoken=%s\nca_cert_hash=sha256:%s\n"
            "certificate_key=%s\n" % (token, "0" * 64, cert_key))
    session = _JoinRefusingSession("kubeadm join: token %s (key %s) refused\n"
                                   % (token, cert_key))
    worker = install_plan.Node("s-w1", "worker-1", install_plan.JOIN_WORKER, "10.0.0.21",
                               "10.0.0.21", False)
    plan = install_plan.Plan("10.0.0.10:6443", None, worker, False, [], [worker])
    installer = install_ssh.Installer({}, {"timeout": 60, "sudo": False,
                                           "kubernetes_minor": "1.35"}, b"#!/bin/sh\n",
                                      session_for=lambda node: session)
    try:
        installer._install(worker, plan, join)
    except HookFailed as e:
        logging.getLogger("test.mgmt.secrets").error("install failed: %s", e)
    assert "worker-1" in caplog.text and "refused" in caplog.text
    assert token not in caplog.text and cert_key not in caplog.text


def test_a_tacker_conf_line_oslo_config_refuses_is_not_quoted(tmp_path, caplog):
    """The v2 script reads tacker.conf, which holds Tacker's passwords; oslo.config's
    parse error quotes the line it refuses."""
    from tacker_hwaffinity.errors import InputError
    from tacker_hwaffinity.mgmt import conf
    path = tmp_path / "tacker.conf"
    path.write_text("[keystone_authtoken]\npassword S3cretPw\n")
    with pytest.raises(InputError) as e:
        conf.load_tacker_conf({"TACKER_CONFIG_FILES": str(path)})
    text = _logged(str, str(e.value), caplog)
    assert "S3cretPw" not in text
    assert "line 2" in text and str(path) in text
