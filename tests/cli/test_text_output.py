"""The text of explain, plan, audit and numa plan fits 100 columns on the samples, with
long reasons wrapped under their row, notes with a hanging indent, and column headers."""
import os

import pytest

from tacker_hwaffinity import table
from tacker_hwaffinity.cli import explain, progress
from tacker_hwaffinity.cli.main import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, "samples")
CLUSTER = os.path.join(SAMPLES, "cluster.yaml")
SMF = os.path.join(SAMPLES, "cnf", "smf-preferred.yaml")
UPF = os.path.join(SAMPLES, "cnf", "upf-required.yaml")

COMMANDS = {
    "explain": ["explain", "--cluster", CLUSTER, "--pod", SMF],
    "plan": ["plan", "--cluster", CLUSTER, UPF, SMF],
    "audit": ["audit", "--cluster", os.path.join(SAMPLES, "audit", "cluster.yaml"),
              "--max-loss", "10%", "--all"],
    "numa plan": ["numa", "plan", "--machine", os.path.join(SAMPLES, "numa", "machine.yaml"),
                  os.path.join(SAMPLES, "numa", "pods.yaml")],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_line_fits_100_columns(name, capsys):
    main(COMMANDS[name])
    out = capsys.readouterr().out
    assert out.strip()
    too_long = [ln for ln in out.splitlines() if len(ln) > table.WIDTH]
    assert not too_long


def test_explain_wraps_scores_and_reasons_under_their_row(capsys):
    main(COMMANDS["explain"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["NODE", "FEASIBLE", "TOTAL", "SCORES", "/", "REASONS"]
    column = lines[1].index("SCORES")
    assert lines[2] == "master-0  no        -      node(s) had untolerated taint " \
                       "{node-role.kubernetes.io/control-plane: }"
    worker = lines.index(next(ln for ln in lines if ln.startswith("worker-0 ")))
    assert lines[worker][column:].startswith("TaintToleration=100 ")
    assert lines[worker + 1].startswith(" " * column + "PodTopologySpread=")
    assert all(len(ln) <= 100 for ln in lines)


def test_explain_unwrapped_is_one_line_per_node():
    result = {"pod": "ns/p", "selected": "n1", "summary": None, "notes": ["x " * 80],
              "nodes": [{"name": "n1", "feasible": True, "reasons": [], "total": 7,
                         "scores": {"Plugin%d" % i: i for i in range(30)}}]}
    lines = explain.render_text(result, width=None).splitlines()
    assert len(lines) == 5 and len(lines[2]) > 300
    assert all(len(ln) <= 100 for ln in explain.render_text(result).splitlines())


def test_numa_plan_has_column_headers(capsys):
    main(COMMANDS["numa plan"])
    lines = capsys.readouterr().out.splitlines()
    heads = [i for i, ln in enumerate(lines) if ln.split() == ["RANK", "POOL", "AFFINITY",
                                                                "FREE", "SHARED", "COLOCATED"]]
    placed = [i for i, ln in enumerate(lines) if " -> " in ln]
    assert heads and len(heads) == len(placed)
    first = lines[heads[0] + 1]
    assert first.split()[:1] == ["1"] and first.endswith("m  0")


def _read_until_erased(fd, deadline=10.0):
    """What the terminal FD shows, read until the status is erased (a line of spaces
    between two carriage returns ends it) or DEADLINE seconds: a pty hands what was
    written to its reader a moment later, not at once."""
    import select
    import time
    shown, end = "", time.monotonic() + deadline
    while time.monotonic() < end:
        tail = shown.rsplit("\r", 2)
        if len(tail) == 3 and tail[-1] == "" and tail[-2] and not tail[-2].strip():
            break
        if select.select([fd], [], [], 0.1)[0]:
            shown += os.read(fd, 1 << 16).decode()
    return shown


def test_a_command_on_a_terminal_shows_its_status_on_stderr_only(monkeypatch, capsys):
    """plan with stderr a terminal (and no delay): the status reaches the terminal and is
    erased; standard output is the same as without it."""
    import pty
    controller, follower = pty.openpty()
    os.set_blocking(controller, False)
    with os.fdopen(follower, "w") as terminal:
        main(COMMANDS["plan"])
        plain = capsys.readouterr().out
        monkeypatch.setattr(progress, "DELAY", 0)
        monkeypatch.setattr("sys.stderr", terminal)
        main(COMMANDS["plan"])
        terminal.flush()
        shown = _read_until_erased(controller)
    os.close(controller)
    assert capsys.readouterr().out == plain
    assert "hwaffinity plan: placing pods 9/9" in shown
    last = shown.rsplit("\r", 2)
    assert last[-1] == "" and last[-2].strip() == ""
