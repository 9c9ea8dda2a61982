"""Fixtures for tests against real OpenStack Nova and Heat (marker ``openstack``).

The servers start once per session, on first use, as subprocesses of the
venv built by ``tools/openstack-venv.sh``; see ``doc/openstack-harness.md``.
Deselect with ``-m "not openstack"``. A test that uses one of these fixtures
is marked ``openstack`` automatically.

| fixture                   | scope    | yields                                          |
|---------------------------|----------|-------------------------------------------------|
| ``openstack_cloud``       | session  | ``osharness.OpenStackCloud``: Nova, Placement,  |
|                           |          | fake Keystone/Glance/Neutron (``cloud.network``,|
|                           |          | ``cloud.neutron(user)``); N computes (default 3,|
|                           |          | ``$HWAFFINITY_OPENSTACK_COMPUTES``)             |
| ``openstack_heat``        | session  | the same cloud, with Heat started               |
| ``openstack_cloud_factory`` | session | ``make(computes=3, heat=False)`` -> another,   |
|                           |          | separate cloud (stopped at session end)         |
| ``openstack_python``      | session  | path of the venv's python                       |
| ``heat_validator``        | session  | ``osharness.validate_heat`` bound to the venv:  |
|                           |          | ``(template, files=, environment=,              |
|                           |          | parameters=) -> [error, ...]`` (no servers)     |
"""
import functools

import pytest

import osharness

MARKER = "openstack"
FIXTURES = {"openstack_cloud", "openstack_heat", "openstack_cloud_factory",
            "openstack_python", "heat_validator"}

_CLOUDS_KEY = pytest.StashKey[list]()
_FIGURES_KEY = pytest.StashKey[list]()


def pytest_configure(config):
    config.stash[_CLOUDS_KEY] = []
    config.stash[_FIGURES_KEY] = []


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(MARKER)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and item.get_closest_marker(MARKER):
        clouds = item.config.stash.get(_CLOUDS_KEY, [])
        if clouds:
            report.sections.append((
                "openstack", "server logs kept in: %s" % ", ".join(
                    c.run_dir for c in clouds)))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    for line in config.stash.get(_FIGURES_KEY, []):
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def openstack_python():
    """Path of the python in the Nova/Heat venv (built on first use). Without
    it: fail under CI=true, skip with the reason otherwise."""
    return osharness.python_or_skip()


class _Clouds:
    """Starts clouds; stops all of them at the end, keeping logs on failure."""

    def __init__(self, request, python):
        self.request = request
        self.python = python
        self.failed_before = request.session.testsfailed
        self.clouds = []

    def make(self, computes=osharness.DEFAULT_COMPUTES, heat=False):
        cloud = osharness.OpenStackCloud(computes=computes, python=self.python)
        self.clouds.append(cloud)
        self.request.config.stash[_CLOUDS_KEY].append(cloud)
        try:
            cloud.start()
            if heat:
                cloud.start_heat()
        except osharness.HarnessError as exc:
            pytest.fail("OpenStack servers did not start (logs in %s): %s"
                        % (cloud.run_dir, exc), pytrace=False)
        return cloud

    def finish(self):
        failed = self.request.session.testsfailed > self.failed_before
        figures = self.request.config.stash[_FIGURES_KEY]
        for cloud in self.clouds:
            try:
                start = cloud.startup_seconds()
                rss = cloud.rss_bytes()
                figures.append("openstack (%d computes): start-up %s; RSS %s" % (
                    cloud.computes,
                    ", ".join("%s %.1f s" % kv for kv in start.items()),
                    ", ".join("%s %.0f MiB" % (k, v / 2 ** 20) for k, v in rss.items())))
            except Exception:  # noqa: BLE001 - figures are informative only
                pass
            cloud.stop(keep_logs=failed)
            if failed:
                print("\nOpenStack server logs kept in %s" % cloud.run_dir)


@pytest.fixture(scope="session")
def heat_validator(openstack_python):
    """Offline real-Heat validation: ``validate(template, files=None,
    environment=None, parameters=None) -> list of error strings``; the
    attribute ``.many(bundles)`` validates several in one process."""
    validate = functools.partial(osharness.validate_heat, python=openstack_python)
    validate.many = functools.partial(osharness.validate_heat_many, python=openstack_python)
    return validate


@pytest.fixture(scope="session")
def openstack_cloud_factory(request, openstack_python):
    """``make(computes=3, heat=False)``: start a separate cloud; all are
    stopped (by process group) at session end, logs kept if a test failed."""
    clouds = _Clouds(request, openstack_python)
    try:
        yield clouds.make
    finally:
        clouds.finish()


@pytest.fixture(scope="session")
def openstack_cloud(openstack_cloud_factory):
    """The shared cloud: Nova API/conductor/scheduler, N fake computes
    (``compute1``..), Placement, fake Keystone v3, Glance and Neutron."""
    return openstack_cloud_factory()


@pytest.fixture(scope="session")
def openstack_heat(openstack_cloud):
    """The shared cloud with Heat (API + engine, action_retry_limit=0)."""
    try:
        openstack_cloud.start_heat()
    except osharness.HarnessError as exc:
        pytest.fail("Heat did not start (logs in %s): %s"
                    % (openstack_cloud.run_dir, exc), pytrace=False)
    return openstack_cloud
