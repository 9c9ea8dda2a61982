"""Fixtures shared by every test directory.

The real Kubernetes control plane is a session resource: defining its
fixtures here (not in tests/controlplane/) lets tests elsewhere (SSH,
labelling) use the same running stack instead of starting a second one.

``master_sshd`` and ``ssh_params`` (a real OpenSSH sshd standing in for a
Kubernetes master, running the real kubectl against that control plane)
live here too, so that the MgmtDriver tests (tests/mgmt) and the package
tests (tests/packages) reach the same master the way the driver does.
"""
import atexit
import os

import pytest
from hypothesis import HealthCheck, settings

# How many inputs each property draws (tests/fuzzing.py): "ci" unless
# HYPOTHESIS_PROFILE names another; "dev" for the quick loop, "long" for minutes of
# fuzzing on demand (doc/testing.md). A test's own @settings(max_examples=...) wins.
settings.register_profile("ci", max_examples=200, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=20, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=20000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

pytest.register_assert_rewrite("ci_policy")

from ci_policy import unavailable  # noqa: E402  (after the rewrite registration)
from controlplane.fixtures import (  # noqa: E402,F401  (fixtures and hooks pytest collects)
    control_plane, control_plane_panic_guard, host_nodes, namespace, pytest_runtest_makereport,
    pytest_terminal_summary)
from ssh import sshd as sshd_mod  # noqa: E402

pytest_plugins = ["ci_policy", "pytester", "xdist_groups"]


@pytest.fixture(scope="session")
def master_sshd():
    """A running sshd (the 'master'), shared by the session."""
    if sshd_mod.find("sshd") is None or sshd_mod.find("ssh-keygen") is None:
        unavailable(sshd_mod.HINT)
    server = sshd_mod.SSHServer()
    atexit.register(server.stop)
    server.start(timeout=10)
    try:
        yield server
    finally:
        server.cleanup(keep_logs=False)
        atexit.unregister(server.stop)


@pytest.fixture
def ssh_params(master_sshd, control_plane):  # noqa: F811  (the fixture, imported above)
    """The ``hwaffinity_param.ssh`` block that reaches the master and runs
    the real kubectl there with the control plane's admin kubeconfig."""
    from controlplane import harness
    key, _ = master_sshd.user_keys["ed25519"]
    return {"host": sshd_mod.HOST, "port": master_sshd.port, "username": master_sshd.username,
            "private_key": key, "known_hosts": master_sshd.known_hosts,
            "kubectl": harness.find_binaries()["kubectl"],
            "kubeconfig_path": control_plane.kubeconfig, "connect_timeout": 5,
            "command_timeout": 60, "retries": 1}


def pytest_addoption(parser):
    parser.addoption("--reverse", action="store_true",
                     help="run the collected tests in reverse order (the modules, and the "
                          "tests within each): no test may need one that ran before it")


@pytest.hookimpl(trylast=True)      # after pytest groups the tests by parametrized fixtures
def pytest_collection_modifyitems(config, items):
    if config.getoption("--reverse"):
        items.reverse()
