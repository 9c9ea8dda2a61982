"""No password, key, passphrase, token or stdin data in logs or exception messages."""
import logging
import traceback

import pytest

from tacker_hwaffinity.ssh import (AuthenticationError, CommandFailed, CommandTimeout, ConfigError,
                                   SSHSession, Target)

pytestmark = pytest.mark.ssh
PASSWORD = "Pa55-w0rd!hunter2"
TOKEN = "tok-3f9c2a7be1d84e0f9a6c5b4d3e2f1a0b"
KUBECONFIG = "apiVersion: v1\nusers:\n- name: admin\n  user:\n    token: %s\n" % TOKEN


def _exposed(caplog, errors):
    texts = [caplog.text] + [r.getMessage() for r in caplog.records]
    for e in errors:
        texts += [str(e), repr(e), "".join(traceback.format_exception(e))]
    return "\n".join(texts)


def _assert_clean(text, secrets):
    """No secret, and no line of one (PEM armor lines name only the format)."""
    for s in secrets:
        assert s not in text, "secret leaked: %r" % s[:12]
        for line in s.splitlines():
            line = line.strip()
            if len(line) >= 12 and not line.startswith("-----"):
                assert line not in text, "secret leaked: %r" % line[:12]


def test_nothing_secret_reaches_logs_or_errors(sshd, target, caplog):
    caplog.set_level(logging.DEBUG)  # every logger, paramiko's included
    key, passphrase = sshd.user_keys["ed25519-passphrase"]
    errors = []
    # a wrong password on the real sshd (root has no usable password)
    ssh = SSHSession(Target(**dict(target, private_key=None, password=PASSWORD)))
    with pytest.raises(AuthenticationError, match="authentication as 'root' failed") as e:
        ssh.connect()
    assert "password" in str(e.value) and ssh.stats.connect_attempts == 1  # never retried
    errors.append(e.value)
    # a wrong passphrase
    with pytest.raises(ConfigError) as e:
        Target(**dict(target, private_key=key, private_key_passphrase=PASSWORD))
    errors.append(e.value)
    t = Target(**dict(target, private_key=key, private_key_passphrase=passphrase,
                      password=PASSWORD))
    assert PASSWORD not in repr(t) and passphrase not in repr(t)
    with SSHSession(t) as ssh:
        # stdin carries the kubeconfig; the command echoes it and fails
        with pytest.raises(CommandFailed) as e:
            ssh.run(["sh", "-c", "cat >&2; exit 1"], stdin=KUBECONFIG, check=True)
        assert TOKEN in e.value.result.stderr  # the caller still gets the real output
        errors.append(e.value)
        # a token the caller had to put on a command line, declared as a secret
        with pytest.raises(CommandTimeout) as e:
            ssh.run(["sh", "-c", "sleep 5", TOKEN], timeout=0.3, secrets=[TOKEN])
        errors.append(e.value)
        with pytest.raises(CommandFailed) as e:
            ssh.run(["sh", "-c", 'echo "bad $0" >&2; exit 2', PASSWORD], check=True)
        errors.append(e.value)
    text = _exposed(caplog, errors)
    assert "***" in text and "run on" in text  # the messages are there, masked
    _assert_clean(text, [PASSWORD, passphrase, TOKEN, KUBECONFIG, key])
