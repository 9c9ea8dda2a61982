"""Fixtures for the SSH adapter's tests against a real OpenSSH sshd.

Tests marked ``ssh`` use the session fixture ``sshd`` (one server for the
whole run, on a free 127.0.0.1 port, stopped by pid in a finaliser). If sshd
is missing or does not start, the tests fail when CI=true and are skipped
otherwise, naming tools/install-test-packages.sh. sshd's config and log are
kept when a test marked ssh failed. Every test here is bounded by an alarm (TEST_SECONDS).
"""
import atexit
import os
import signal
import threading

import pytest

from . import sshd as sshd_mod
from .availability import PARAMIKO_MISSING, unavailable

MARKER = "ssh"
TEST_SECONDS = 30
_SERVER_KEY = pytest.StashKey[object]()
_FIGURES_KEY = pytest.StashKey[dict]()
_FAILED_KEY = pytest.StashKey[int]()  # failed tests marked ssh (not the whole session's)

# Without paramiko the test modules cannot even be imported, and a collection
# error would stop the whole run: collect only test_requirements.py, which
# reports the missing dependency.
collect_ignore = sorted(
    n for n in os.listdir(os.path.dirname(__file__))
    if n.startswith("test_") and n.endswith(".py") and n != "test_requirements.py"
) if PARAMIKO_MISSING else []


def pytest_configure(config):
    config.stash[_FIGURES_KEY] = {}


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    figures = config.stash.get(_FIGURES_KEY, {})
    if figures:
        terminalreporter.write_line("sshd: " + "; ".join(
            "%s %s" % kv for kv in sorted(figures.items())))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    server = item.session.stash.get(_SERVER_KEY, None)
    if report.failed and server is not None and item.get_closest_marker(MARKER):
        item.session.stash[_FAILED_KEY] = item.session.stash.get(_FAILED_KEY, 0) + 1
        report.sections.append(("sshd", "log %s; last lines:\n%s"
                                % (server.log_path, server.tail(15))))


@pytest.fixture
def figures(request):
    """{name: text} printed in the terminal summary."""
    return request.config.stash[_FIGURES_KEY]


@pytest.fixture(autouse=True)
def _bounded():
    """Abort any test here that runs longer than TEST_SECONDS."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum, frame):
        raise TimeoutError("test exceeded %d s" % TEST_SECONDS)
    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, TEST_SECONDS)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="session")
def sshd(request):
    """A running :class:`sshd.SSHServer`, shared by the session."""
    if sshd_mod.find("sshd") is None or sshd_mod.find("ssh-keygen") is None:
        unavailable(sshd_mod.HINT)
    server = sshd_mod.SSHServer()
    atexit.register(server.stop)  # also when the finaliser never runs
    try:
        server.start(timeout=10)
    except Exception as e:  # noqa: BLE001 - reported with the log
        server.cleanup(keep_logs=True)
        unavailable("sshd did not start (%s); config and log kept in %s" % (e, server.dir))
    request.session.stash[_SERVER_KEY] = server
    request.config.stash[_FIGURES_KEY]["start-up"] = "%.0f ms" % (server.startup_seconds * 1000)
    try:
        yield server
    finally:
        failed = request.session.stash.get(_FAILED_KEY, 0) > 0
        server.cleanup(keep_logs=failed)
        atexit.unregister(server.stop)
        if failed:
            print("\nsshd config and log kept in %s" % server.dir)


@pytest.fixture
def target(sshd):
    """Keyword arguments for a Target of the test sshd: ed25519 key, strict host keys."""
    key, _ = sshd.user_keys["ed25519"]
    return dict(host=sshd_mod.HOST, port=sshd.port, username=sshd.username,
                private_key=key, known_hosts=sshd.known_hosts)
