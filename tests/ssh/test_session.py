"""SSHSession against a real sshd: authentication, commands, quoting, stdin."""
import time

import pytest

from tacker_hwaffinity.ssh import SSHSession, Target

pytestmark = pytest.mark.ssh


def test_key_auth_runs_a_command(sshd, target):
    with SSHSession(Target(**target)) as ssh:
        r = ssh.run(["id", "-un"])
        assert (r.exit_status, r.stdout, r.stderr) == (0, sshd.username + "\n", "")
        assert ssh.host_key_fingerprint in sshd.fingerprints.values()
    assert not ssh.connected
    assert ssh.stats.connections == 1 and ssh.stats.commands == 1


def test_figures(sshd, target, figures):
    t0 = time.monotonic()
    ssh = SSHSession(Target(**target)).connect()
    connect = time.monotonic() - t0
    try:
        rtts = []
        for _ in range(10):
            t0 = time.monotonic()
            ssh.run(["true"], check=True)
            rtts.append(time.monotonic() - t0)
    finally:
        ssh.close()
    rtt = sorted(rtts)[len(rtts) // 2]
    figures["connect"] = "%.0f ms" % (connect * 1000)
    figures["round trip"] = "%.1f ms (median of %d)" % (rtt * 1000, len(rtts))
    assert connect < 3 and rtt < 1
