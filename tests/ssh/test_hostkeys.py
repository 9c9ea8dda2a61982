"""Host-key verification against a real sshd, and known_hosts/fingerprint parsing."""
import base64
import logging
import subprocess

import pytest

from tacker_hwaffinity.ssh import (ConfigError, HostKeyMismatchError, HostKeyPolicy, SSHSession,
                                   Target, UnknownHostKeyError, fingerprint)
from tacker_hwaffinity.ssh.hostkeys import parse_fingerprint

from .sshd import HOST


def _other_key(tmp_path, key_type="ed25519"):
    path = tmp_path / ("other_" + key_type)
    subprocess.run(["ssh-keygen", "-q", "-t", key_type, "-N", "", "-f", str(path)], check=True,
                   timeout=30)
    with open(str(path) + ".pub") as f:
        return f.read().split()[:2]


def _connect(target, **kw):
    ssh = SSHSession(Target(**dict(target, **kw)))
    try:
        ssh.connect()
        return ssh
    finally:
        ssh.close()


@pytest.mark.ssh
def test_mismatching_key_is_refused_naming_host_and_fingerprint(sshd, target, tmp_path):
    t, b64 = _other_key(tmp_path)
    forged = "[%s]:%d %s %s\n" % (HOST, sshd.port, t, b64)
    ssh = SSHSession(Target(**dict(target, known_hosts=forged)))
    with pytest.raises(HostKeyMismatchError) as e:
        ssh.connect()
    msg = str(e.value)
    assert "127.0.0.1:%d" % sshd.port in msg and sshd.fingerprints["ssh-ed25519"] in msg
    assert "MISMATCH" in msg and e.value.fingerprint == sshd.fingerprints["ssh-ed25519"]
    assert ssh.stats.connect_attempts == 1 and not ssh.connected  # never retried
    # the opt-out covers unknown keys only, never a mismatch
    with pytest.raises(HostKeyMismatchError):
        _connect(target, known_hosts=forged, insecure_ignore_host_key=True)


@pytest.mark.ssh
def test_unknown_key_is_refused_unless_opted_out(sshd, target, caplog):
    other_host = sshd.known_hosts_for(name="[%s]:%d" % (HOST, sshd.port + 1))
    for known in (None, other_host):
        ssh = SSHSession(Target(**dict(target, known_hosts=known)))
        with pytest.raises(UnknownHostKeyError) as e:
            ssh.connect()
        assert "unknown host key for 127.0.0.1:%d" % sshd.port in str(e.value)
        assert e.value.fingerprint in str(e.value)
        assert e.value.fingerprint in sshd.fingerprints.values()
        assert ssh.stats.connect_attempts == 1
    with caplog.at_level(logging.WARNING, logger="tacker_hwaffinity.ssh"):
        ssh = _connect(target, known_hosts=None, insecure_ignore_host_key=True)
    warning = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("UNKNOWN host key of 127.0.0.1:%d" % sshd.port in w
               and ssh.host_key_fingerprint in w for w in warning), warning


@pytest.mark.ssh
@pytest.mark.parametrize("key_type", ["ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa"])
def test_a_known_hosts_line_of_any_type_is_used(sshd, target, key_type):
    """The server has three host keys; the client asks for the type it knows."""
    ssh = _connect(target, known_hosts=sshd.known_hosts_for(key_type))
    assert ssh.host_key_fingerprint == sshd.fingerprints[key_type]


@pytest.mark.ssh
@pytest.mark.parametrize("key_type", ["ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa"])
def test_pinned_fingerprints_as_ssh_keygen_prints_them(sshd, target, key_type):
    pub = "%s/ssh_host_%s_key.pub" % (sshd.dir, {"ssh-ed25519": "ed25519", "ssh-rsa": "rsa",
                                                  "ecdsa-sha2-nistp256": "ecdsa"}[key_type])
    line = subprocess.run(["ssh-keygen", "-lf", pub], check=True, capture_output=True,
                          text=True, timeout=30).stdout.strip()
    ssh = _connect(target, known_hosts=None, host_key_fingerprints=[line])
    assert ssh.host_key_fingerprint == sshd.fingerprints[key_type]


@pytest.mark.ssh
@pytest.mark.parametrize("key_type", ["ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa"])
def test_bare_fingerprint_of_any_host_key(sshd, target, key_type):
    """'SHA256:...' alone does not name a type: the client asks for each in turn."""
    ssh = _connect(target, known_hosts=None, host_key_fingerprints=[sshd.fingerprints[key_type]])
    assert ssh.host_key_fingerprint == sshd.fingerprints[key_type]


@pytest.mark.ssh
def test_bare_fingerprint_matching_no_host_key(sshd, target):
    pinned = "SHA256:" + "A" * 43
    with pytest.raises(HostKeyMismatchError) as e:
        _connect(target, known_hosts=None, host_key_fingerprints=[pinned])
    msg = str(e.value)
    assert "127.0.0.1:%d" % sshd.port in msg and pinned in msg
    assert all(fp in msg for fp in sshd.fingerprints.values()), msg


@pytest.mark.ssh
def test_hashed_known_hosts(sshd, target, tmp_path):
    path = tmp_path / "known_hosts"
    path.write_text(sshd.known_hosts)
    subprocess.run(["ssh-keygen", "-H", "-f", str(path)], check=True, capture_output=True,
                   timeout=30)
    hashed = path.read_text()
    assert hashed.startswith("|1|") and "127.0.0.1" not in hashed
    _connect(target, known_hosts=hashed)


@pytest.mark.ssh
def test_revoked_key_is_refused(sshd, target):
    revoked = "@revoked * ssh-ed25519 %s\n" % sshd.host_key_lines["ssh-ed25519"]
    with pytest.raises(HostKeyMismatchError, match="REVOKED"):
        _connect(target, known_hosts=revoked + sshd.known_hosts)


def test_host_patterns():
    key = "AAAAC3NzaC1lZDI1NTE5AAAAIOZjeA2fH4B+tChPFaLrRBvA+0lHDaHcuTfRb3ygcNRr"
    blob = base64.b64decode(key)
    fp = fingerprint(blob)
    policy = HostKeyPolicy("10.0.0.*,!10.0.0.7 ssh-ed25519 %s\n"
                           "[master-?]:2222 ssh-ed25519 %s\n# comment\n\n" % (key, key))
    assert policy.verify("10.0.0.5", 22, "ssh-ed25519", blob) == fp
    assert policy.verify("master-1", 2222, "ssh-ed25519", blob) == fp
    for host, port in (("10.0.0.7", 22), ("10.0.0.5", 2222), ("master-1", 22), ("master-12", 2222)):
        with pytest.raises(UnknownHostKeyError):
            policy.verify(host, port, "ssh-ed25519", blob)


@pytest.mark.parametrize("text, message", [
    ("host ssh-ed25519", "line 1: expected"),
    ("\nhost ssh-ed25519 !!!notbase64", "line 2: the key is not base64"),
    ("@bogus host ssh-ed25519 AAAA", "line 1: unknown marker"),
])
def test_malformed_known_hosts(text, message):
    with pytest.raises(ConfigError, match=message):
        HostKeyPolicy(text)


def test_fingerprint_forms():
    fp = "SHA256:" + "A" * 43
    assert parse_fingerprint(fp) == (fp, None)
    assert parse_fingerprint(fp + "=") == (fp, None)
    assert parse_fingerprint("256 %s root@vm (ECDSA)" % fp) == (fp, "ecdsa-sha2-nistp256")
    assert parse_fingerprint("3072 %s no comment (RSA)" % fp) == (fp, "ssh-rsa")
    for bad in ("MD5:aa:bb", "SHA256:short", ""):
        with pytest.raises(ConfigError, match="expected 'SHA256:"):
            parse_fingerprint(bad)
