"""Fixtures for tests against a real Kubernetes control plane.

Opt-in: only tests marked ``controlplane`` may use these fixtures; the stack
starts once per session, on first use. Deselect with ``-m "not controlplane"``.
tests/conftest.py imports them, so every test directory shares one stack.
"""
import uuid

import pytest

from ci_policy import unavailable
from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL

from . import harness

MARKER = "controlplane"
HOST_VALUES = ("host-a", "host-b", "host-c")


_RUN_DIR_KEY = pytest.StashKey[str]()
_CONTROL_PLANE_KEY = pytest.StashKey[object]()
_FIGURES_KEY = pytest.StashKey[str]()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    figures = config.stash.get(_FIGURES_KEY, None)
    if figures:
        terminalreporter.write_line(figures)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    run_dir = item.session.stash.get(_RUN_DIR_KEY, None)
    if report.failed and run_dir and item.get_closest_marker(MARKER):
        report.sections.append(("control plane", "component logs kept in %s/logs" % run_dir))


@pytest.fixture(scope="session")
def control_plane(request):
    """Start the stack once per session; stop every process on the way out.

    Yields a :class:`harness.ControlPlane` (``.kubeconfig`` is the admin
    kubeconfig path, ``.admin`` an API client, ``.add_node(...)`` creates
    kubelet-less Ready nodes). Logs stay in ``<run dir>/logs`` when a test
    failed; otherwise the run directory is removed.
    """
    binaries = harness.find_binaries()
    if binaries is None:
        unavailable(harness.BUILD_HINT)
    cp = harness.ControlPlane(binaries)
    request.session.stash[_RUN_DIR_KEY] = cp.run_dir
    request.session.stash[_CONTROL_PLANE_KEY] = cp
    try:
        cp.start(timeout=90)
    except Exception:  # noqa: BLE001 - any start-up failure: a test failure naming the logs
        pytest.fail("control plane did not start; logs in %s/logs" % cp.run_dir, pytrace=True)
    failed_before = request.session.testsfailed
    try:
        yield cp
    finally:
        try:
            request.config.stash[_FIGURES_KEY] = (
                "control plane: start-up %.1f s; resident memory at the end %.0f MiB (%s)" % (
                    cp.startup_seconds, cp.rss_bytes() / 2 ** 20,
                    ", ".join("%s %.0f" % kv for kv in
                              ((k, v / 2 ** 20) for k, v in cp.rss_by_component().items()))))
        except Exception:  # noqa: BLE001 - figures are informative only
            pass
        panics = cp.new_panics()
        failed = request.session.testsfailed > failed_before or bool(panics)
        cp.stop(keep_logs=failed)
        if failed:
            print("\ncontrol-plane component logs kept in %s/logs" % cp.run_dir)
        if panics:
            pytest.fail(panic_report(panics, cp.run_dir), pytrace=False)


def panic_report(panics, run_dir):
    lines = ["the control plane panicked (logs in %s/logs):" % run_dir]
    for component, found in sorted(panics.items()):
        lines.extend("  %s: %s" % (component, p) for p in found)
    return "\n".join(lines)


@pytest.fixture(autouse=True)
def control_plane_panic_guard(request):
    """Fails any test during which a component of the running control plane
    logged a panic, naming the request (kube-apiserver recovers panics per
    request, so a panic never stops the stack and must be looked for)."""
    yield
    cp = request.session.stash.get(_CONTROL_PLANE_KEY, None)
    if cp is not None and not cp.stopped:
        panics = cp.new_panics()
        if panics:
            pytest.fail(panic_report(panics, cp.run_dir), pytrace=False)


@pytest.fixture(scope="session")
def host_nodes(control_plane):
    """Six Ready nodes, two per value of the compute-host label
    (``DEFAULT_HOST_LABEL``): {node name: host value}."""
    nodes = {}
    for i in range(6):
        name = "worker-%d" % (i + 1)
        value = HOST_VALUES[i % 3]
        control_plane.add_node(name, {DEFAULT_HOST_LABEL: value}, wait=False)
        nodes[name] = value
    for name in nodes:
        control_plane.wait_node_schedulable(name, timeout=30)
    return nodes


@pytest.fixture
def namespace(control_plane):
    """A fresh namespace for one test, deleted afterwards."""
    name = "t-" + uuid.uuid4().hex[:10]
    control_plane.create_namespace(name)
    yield name
    control_plane.delete_namespace(name)
