"""How the test suite behaves under CI (``CI`` set to a true value).

CI must prove what the suite claims, so under CI:

* a missing prerequisite fails the test instead of skipping it
  (:func:`unavailable`);
* a run that skipped any test fails, and says which ones (the pytest hooks
  below; tests/conftest.py loads this module as a plugin);
* nothing rewrites checked-in expectations (:func:`refuse_in_ci`).

An empty parametrisation is a collection error everywhere
(``empty_parameter_set_mark = fail_at_collect`` in tox.ini).
"""
import os

import pytest

TRUE_VALUES = frozenset(("1", "true", "yes", "on", "y", "t"))


def in_ci():
    """True when ``CI`` holds any true value (case and spaces ignored)."""
    return os.environ.get("CI", "").strip().lower() in TRUE_VALUES


def unavailable(reason):
    """A prerequisite is missing: fail under CI, skip with REASON elsewhere."""
    if in_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def refuse_in_ci(what):
    """Fail at once when a run under CI asks for WHAT (e.g. rewriting golden files)."""
    if in_ci():
        pytest.fail("%s is refused when CI is set (CI=%r)" % (what, os.environ.get("CI")),
                    pytrace=False)


def _skipped_reports(session):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    return list(reporter.stats.get("skipped", [])) if reporter is not None else []


def pytest_sessionfinish(session, exitstatus):
    if in_ci() and exitstatus == 0 and _skipped_reports(session):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not in_ci():
        return
    skipped = terminalreporter.stats.get("skipped", [])
    if skipped:
        terminalreporter.section("skipped under CI: the run fails", sep="=", red=True)
        for report in skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
            terminalreporter.write_line("%s: %s" % (report.nodeid, reason))
