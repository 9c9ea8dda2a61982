"""Fixtures for the tests against a real Tacker (marker ``tacker``): one broker, one
database, one cloud (Nova + Heat), one Tacker, one Barbican (when a test asks for it) and
the VMs' kubelets for the whole directory; a master per module."""
import contextlib
import os
import shutil
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "openstack"))
sys.path.insert(0, HERE)

import barbicanharness  # noqa: E402
import mariadb  # noqa: E402
import osharness  # noqa: E402
import rabbit  # noqa: E402
import tackerharness  # noqa: E402
from . import lcm  # noqa: E402


@pytest.fixture(scope="package")
def tacker_broker():
    with rabbit.running() as broker:
        yield broker


@pytest.fixture(scope="package")
def tacker_db():
    with mariadb.running() as db:
        yield db


@pytest.fixture(scope="package")
def tacker_cloud(request):
    """Four compute hosts: VNF-A's three workers (hard anti-affinity) plus one to scale
    out to."""
    with osharness.heat_clouds(request) as start:
        yield start(4)


@pytest.fixture(scope="package")
def kubelets(tacker_cloud, control_plane):
    """What the VMs' kubelets would do: register each ACTIVE server as a node."""
    from .kubelets import Kubelets
    k = Kubelets(tacker_cloud, control_plane)
    yield k
    k.cleanup()


@pytest.fixture(scope="module")
def master(control_plane):
    """The cluster's master (an sshd running the real kubectl), down until started."""
    from .lcm import Master
    m = Master(control_plane)
    yield m
    m.stop()


LOG_LINES = 25


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report ends with the last lines of every harness server it used:
    CI keeps no run directory, and a hang in one server is a timeout in another."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)     # read by _no_cascade
    if not report.failed:
        return
    for name, path in _harness_logs(item.funcargs):
        report.sections.append(("%s log (last %d lines of %s)" % (name, LOG_LINES, path),
                                osharness.tail_of(path, LOG_LINES)))
    tacker = item.funcargs.get("tacker")
    if tacker is not None and call.excinfo is not None and _timed_out(call.excinfo):
        # what Tacker is doing while the client gave up: every greenthread's stack
        for name, process in tacker.processes():
            report.sections.append(("%s stacks (Guru Meditation Report)" % name,
                                    tackerharness.stacks_only(process.stacks())))


@pytest.fixture(autouse=True)
def _no_cascade(request):
    """A test that fails leaves no LCM operation blocking the next one: the story's steps
    run in order on the same instances, and one step's FAILED_TEMP would otherwise be
    every later step's 409. After a failed test that used Tacker, every occurrence still
    running is waited for, and every FAILED_TEMP one rolled back or marked FAILED, as an
    operator would (``lcm.settle_left``); what was done is printed. A test that passes
    keeps what it leaves (a FAILED_TEMP that the next step retries on purpose)."""
    clients = [request.getfixturevalue(name) for name in ("v2", "v1_client")] \
        if "tacker" in request.fixturenames else []
    yield
    call = getattr(request.node, "rep_call", None)
    if not clients or call is None or not call.failed:
        return
    for client in clients:
        for line in lcm.settle_left(client):
            sys.stdout.write("\nafter the failed %s: %s\n" % (request.node.name, line))


def _timed_out(excinfo):
    return "timeout" in excinfo.typename.lower() or "timed out" in str(excinfo.value)


def _harness_logs(funcargs):
    """[(name, log path)] of the harness servers among a test's fixture values."""
    logs = []
    cloud = funcargs.get("tacker_cloud")
    if cloud is not None:
        logs += [(s.name, s.log_path) for s in (cloud.cloud, cloud.heat_server) if s]
    if funcargs.get("barbican") is not None:
        server = funcargs["barbican"].server
        logs.append((server.name, server.log_path))
    if funcargs.get("tacker") is not None:
        logs += sorted(funcargs["tacker"].logs().items())
    return logs


@contextlib.contextmanager
def _run_dir(request, name):
    """A run directory for NAME's state and logs: removed afterwards, kept (and named)
    when a test failed meanwhile."""
    run_dir = tempfile.mkdtemp(prefix="hwaffinity-%s-" % name)
    failed_before = request.session.testsfailed
    yield run_dir
    if request.session.testsfailed == failed_before:
        shutil.rmtree(run_dir, ignore_errors=True)
    else:
        sys.stdout.write("\n%s state and logs kept in %s\n" % (name, run_dir))


@pytest.fixture(scope="package")
def tacker(request, tacker_cloud, tacker_broker, tacker_db):
    with _run_dir(request, "tacker") as run_dir:
        server = tackerharness.Tacker(tacker_cloud, tacker_broker.url,
                                      tacker_db.database("tacker", "tacker", "tacker-pw"),
                                      run_dir)
        try:
            server.start()
        except tackerharness.TackerError as e:
            server.stop()
            pytest.fail("Tacker did not start (state in %s): %s" % (run_dir, e),
                        pytrace=False)
        rss = server.rss_bytes()
        sys.stdout.write("\ntacker: start-up %.1f s (migrations %.1f s); RSS %s; MariaDB "
                         "%.1f s, %d MiB\n" % (
                             server.startup_seconds, server.migrate_seconds,
                             ", ".join("%s %d MiB" % (k, v >> 20)
                                       for k, v in sorted(rss.items())),
                             tacker_db.startup_seconds, tacker_db.rss_bytes() >> 20))
        yield server
        server.stop()


@pytest.fixture(scope="package")
def barbican(request, tacker_cloud):
    """A real Barbican API in the cloud's catalog: the key manager that keeps Tacker's
    Kubernetes VIMs' keys."""
    with _run_dir(request, "barbican") as run_dir:
        server = barbicanharness.Barbican(tacker_cloud, run_dir)
        try:
            server.start()
        except osharness.HarnessError as e:
            pytest.fail("Barbican did not start (log: %s): %s" % (server.server.log_path, e),
                        pytrace=False)
        sys.stdout.write("\nbarbican: start-up %.1f s\n" % server.startup_seconds)
        yield server
        server.stop()


@pytest.fixture(scope="package")
def packages_client(tacker, tacker_cloud):
    """The VNF package API."""
    return _client(tacker_cloud)


def _client(tacker_cloud, api_version=None):
    """python-tackerclient (its Python API) as the admin user, through the catalog."""
    from tackerclient.v1_0 import client as tackerclient
    return tackerclient.Client(session=tacker_cloud.session("admin"),
                               **({"api_version": api_version} if api_version else {}))


@pytest.fixture(scope="package")
def v1_client(tacker, tacker_cloud):
    """VNF LCM v1 (and the VIM and package APIs)."""
    return _client(tacker_cloud, "1")


@pytest.fixture(scope="package")
def v2(tacker, tacker_cloud):
    """VNF LCM v2."""
    return _client(tacker_cloud, "2")


@pytest.fixture(scope="package")
def vnf_a_zip(tmp_path_factory):
    from .packages import build
    return build("k8s-cluster", tmp_path_factory.mktemp("vnf-a"))


@pytest.fixture(scope="package")
def cnf_zip(tmp_path_factory):
    from .packages import build
    return build("cnf", tmp_path_factory.mktemp("vnf-b"))


@pytest.fixture(scope="package")
def guide(tacker_cloud, tmp_path_factory):
    """doc/user-guide.md's commands, which the tests run at their steps (``guide.py``):
    in one working directory holding the checkout's ``csar/`` and ``samples/``, with the
    cloud admin's ``OS_*`` variables (the story adds ``KUBECONFIG`` once the cluster is
    there) and this venv's commands (``openstack``, ``hwaffinity``) first on PATH."""
    from . import guide as guide_module
    workdir = tmp_path_factory.mktemp("user-guide")
    for name in ("csar", "samples"):
        os.symlink(os.path.join(ROOT, name), os.path.join(str(workdir), name))
    # what the guide's download (a command it marks as one the story cannot run) gives:
    # a stand-in, as Nova's fake virt driver boots any bytes
    (workdir / guide_module.IMAGE).write_bytes(b"QFI\xfb" + b"\0" * 65532)
    env = osharness.cli_env(tacker_cloud)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return guide_module.Guide(str(workdir), env)


@pytest.fixture(scope="package")
def vnf_a_onboarded(packages_client, guide):
    """VNF-A onboarded once, as the user guide does it (Tacker refuses a second package
    with the same vnfdId): (final state, package, seconds it took)."""
    values = guide.run("onboard-vnf-a")
    pkg = packages_client.show_vnf_package(values["VNF_A_PACKAGE"])
    return pkg["onboardingState"], pkg, guide.seconds["onboard-vnf-a"]
