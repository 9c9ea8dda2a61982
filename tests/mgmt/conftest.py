"""Fixtures for the MgmtDriver tests: a real OpenSSH sshd standing in for a
Kubernetes master (it runs the real kubectl against the real control plane
of tests/controlplane), and helpers to reach it the way the driver does."""
import atexit
import os
import sys

import pytest

from ssh import sshd as sshd_mod

# the OpenStack harness (osharness, fakekeystone) lives in tests/openstack
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "openstack"))


def pytest_configure(config):
    for name, doc in (("ssh", "needs a real OpenSSH sshd on 127.0.0.1"),
                      ("controlplane", "needs the real Kubernetes control plane"),
                      ("openstack", "needs the real Nova/Heat venv (tools/openstack-venv.sh)")):
        config.addinivalue_line("markers", "%s: %s" % (name, doc))


@pytest.fixture(scope="session")
def master_sshd():
    """A running sshd (the 'master'), shared by the session."""
    if sshd_mod.find("sshd") is None or sshd_mod.find("ssh-keygen") is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(sshd_mod.HINT, pytrace=False)
        pytest.skip(sshd_mod.HINT)
    server = sshd_mod.SSHServer()
    atexit.register(server.stop)
    server.start(timeout=10)
    try:
        yield server
    finally:
        server.cleanup(keep_logs=False)
        atexit.unregister(server.stop)


@pytest.fixture
def ssh_params(master_sshd, control_plane):
    """The ``hwaffinity_param.ssh`` block that reaches the master and runs
    the real kubectl there with the control plane's admin kubeconfig."""
    from controlplane import harness
    key, _ = master_sshd.user_keys["ed25519"]
    return {"host": sshd_mod.HOST, "port": master_sshd.port, "username": master_sshd.username,
            "private_key": key, "known_hosts": master_sshd.known_hosts,
            "kubectl": harness.find_binaries()["kubectl"],
            "kubeconfig_path": control_plane.kubeconfig, "connect_timeout": 5,
            "command_timeout": 60, "retries": 1}
