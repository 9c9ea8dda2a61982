"""The integration pass's two workers (tests/xdist_groups.py) and the ports each takes
(controlplane.harness.free_port)."""
import os
import re
import socket

import pytest

from controlplane import harness

SAMPLE = ("tests/controlplane/test_kube_informer.py", "tests/controlplane/test_plain.py",
          "tests/ssh/test_session.py", "tests/realnode/test_vm_guest.py",
          "tests/tacker_e2e/test_lcm.py")


@pytest.fixture
def sample(pytester, monkeypatch):
    """A tree with the suite's layout, its conftest loading the groups plugin."""
    monkeypatch.setenv("PYTHONPATH", os.path.dirname(os.path.abspath(__file__)))
    pytester.makeini("[pytest]\n")
    pytester.makeconftest("pytest_plugins = ['xdist_groups']\n")
    for path in SAMPLE:
        target = pytester.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join("def test_%d():\n    pass\n\n" % i for i in range(3)))
    return pytester


def _ran(result):
    """[(worker, file)] in the order each worker ran its tests."""
    return re.findall(r"\[(gw\d)\] \[ *\d+%\] PASSED (\S+?)::", result.stdout.str())


def test_each_group_runs_in_one_worker_in_its_order(sample):
    result = sample.runpytest_subprocess("-p", "xdist", "-n", "2", "--by-group", "-v",
                                         "-p", "no:cacheprovider")
    result.assert_outcomes(passed=15)
    ran = _ran(result)
    workers = {}
    for worker, path in ran:
        workers.setdefault(worker, []).append(path)
    by_group = sorted(([p for i, p in enumerate(files) if i == 0 or files[i - 1] != p]
                       for files in workers.values()), key=len)
    assert by_group == [
        ["tests/realnode/test_vm_guest.py", "tests/ssh/test_session.py"],
        ["tests/controlplane/test_plain.py", "tests/tacker_e2e/test_lcm.py",
         "tests/controlplane/test_kube_informer.py"],
    ], ran


def test_without_the_flag_the_tests_spread_over_both_workers(sample):
    result = sample.runpytest_subprocess("-p", "xdist", "-n", "2", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=15)
    files_of = {}
    for worker, path in _ran(result):
        files_of.setdefault(path, set()).add(worker)
    assert any(len(w) == 2 for w in files_of.values())


@pytest.mark.parametrize("worker,band", [("", 0), ("gw0", 1), ("gw1", 2)])
def test_each_worker_takes_ports_from_its_own_band(monkeypatch, worker, band):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    start = harness.PORT_BASE + band * harness.PORT_BAND_WIDTH
    ports = [harness.free_port() for _ in range(5)]
    assert all(start <= p < start + harness.PORT_BAND_WIDTH for p in ports), ports
    assert len(set(ports)) == 5
    assert start + harness.PORT_BAND_WIDTH <= 32768    # below the kernel's ephemeral range


def test_a_port_in_use_is_never_handed_out(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    start = harness.PORT_BASE + 4 * harness.PORT_BAND_WIDTH
    held = []
    try:
        for port in range(start, start + harness.PORT_BAND_WIDTH):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                s.close()
                continue
            held.append((port, s))
        free = held.pop(len(held) // 2)
        free[1].close()
        assert harness.free_port() == free[0]
        s = socket.socket()
        s.bind(("127.0.0.1", free[0]))
        held.append((free[0], s))
        with pytest.raises(harness.HarnessError, match="no free port"):
            harness.free_port()
    finally:
        for _, s in held:
            s.close()
