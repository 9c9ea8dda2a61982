"""The suite's CI policy (tests/ci_policy.py), run on small pytest sessions."""
import os

import pytest

import ci_policy

HERE = os.path.dirname(os.path.abspath(__file__))
SKIPPING = """
import pytest

def test_passes():
    assert True

def test_skips():
    pytest.skip("no frobnicator here")
"""


def _run(pytester, monkeypatch, ci, source, *args):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    monkeypatch.setenv("PYTHONPATH", HERE)
    pytester.makepyfile(test_sample=source)
    return pytester.runpytest_subprocess("-p", "ci_policy", "-p", "no:cacheprovider", *args)


@pytest.mark.parametrize("ci", ["true", "TRUE", "1", "yes", "on", " True "])
def test_any_true_value_of_ci_counts(monkeypatch, ci):
    monkeypatch.setenv("CI", ci)
    assert ci_policy.in_ci()


@pytest.mark.parametrize("ci", [None, "", "false", "0", "no", "off"])
def test_other_values_of_ci_do_not(monkeypatch, ci):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    assert not ci_policy.in_ci()


def test_a_skip_fails_the_run_under_ci(pytester, monkeypatch):
    result = _run(pytester, monkeypatch, "Yes", SKIPPING)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*skipped under CI: the run fails*",
                                 "*test_sample.py::test_skips*no frobnicator here*"])


def test_a_skip_is_only_a_skip_outside_ci(pytester, monkeypatch):
    result = _run(pytester, monkeypatch, "false", SKIPPING)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, skipped=1)


def test_a_failing_run_keeps_its_own_exit_status_under_ci(pytester, monkeypatch):
    result = _run(pytester, monkeypatch, "true", "def test_x():\n    assert False\n")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=1)


def test_an_empty_parametrisation_is_a_collection_error(pytester, monkeypatch):
    source = ("import pytest\n\n@pytest.mark.parametrize('x', [])\n"
              "def test_nothing(x):\n    assert x\n")
    pytester.makeini("[pytest]\nempty_parameter_set_mark = fail_at_collect\n")
    result = _run(pytester, monkeypatch, None, source)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*Empty parameter set*"])


def test_the_project_config_makes_empty_parametrisation_an_error(pytestconfig):
    assert pytestconfig.getini("empty_parameter_set_mark") == "fail_at_collect"


def test_unavailable_fails_under_ci_and_skips_elsewhere(monkeypatch):
    monkeypatch.setenv("CI", "Yes")
    with pytest.raises(pytest.fail.Exception, match="no etcd"):
        ci_policy.unavailable("no etcd")
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="no etcd"):
        ci_policy.unavailable("no etcd")


def test_rewriting_expectations_is_refused_under_ci(monkeypatch):
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="rewriting golden files is refused"):
        ci_policy.refuse_in_ci("rewriting golden files")
    monkeypatch.delenv("CI")
    ci_policy.refuse_in_ci("rewriting golden files")   # no exception outside CI
