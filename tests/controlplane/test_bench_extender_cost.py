"""benchmarks/bench_extender_cost.py --quick runs end to end and prints every figure.

The structure of its report, not the goals: those are the benchmark's own verdict, on
1000 nodes (doc/benchmarks.md), and a 100-node smoke run on a shared machine says nothing
about them.
"""
import os
import re
import subprocess
import sys

import pytest

from ci_policy import unavailable

from . import harness

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NUMBER = r"-?\d+(?:\.\d+)?"    # added per pod is negative when a run with the extender
                                  # happens to be the faster one
SPREAD = r"(?:{0} \[{0}-{0}\]|-)".format(NUMBER)    # median [min-max], or - when none


SIDES = ("no extender", "the shipped extender")
FLOORS = ("do-nothing extender", "do-nothing extender, Go")


def test_the_quick_run_measures_both_kinds_through_every_side():
    if harness.find_binaries() is None:
        unavailable(harness.BUILD_HINT)
    done = subprocess.run([sys.executable, os.path.join("benchmarks", "bench_extender_cost.py"),
                           "--quick", "--versus-floor"], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, env=dict(os.environ, PYTHONPATH=ROOT))
    out = done.stdout
    assert done.returncode in (0, 1), out + done.stderr       # 2: not measured
    assert re.search(r"^machine: \d+ cores, .*Python [\d.]+, kube-scheduler v1\.20\.2",
                     out, re.M), out
    # the Go floor where the Go toolchain (tools/build-kube.sh's) is found
    floors = FLOORS if "no Go toolchain" not in out else FLOORS[:1]
    total = 4 + len(floors)
    runs = re.findall(r"^run (\d)/%d \(pair 1\) (plain|annotated) pods, (%s): ({0}) pods/s "
                      r".*; /filter ({0})/pod, /prioritize ({0})/pod; mean /filter (.*), "
                      r"/prioritize (.*)$".format(NUMBER) % (
                          total, "|".join(map(re.escape, SIDES + floors))), out, re.M)
    assert [int(r[0]) for r in runs] == list(range(1, total + 1)), out
    assert {(kind, side) for _, kind, side, *_ in runs} == {
        (k, s) for k in ("plain", "annotated") for s in SIDES} | {
        ("annotated", f) for f in floors}
    for _, kind, side, rate, filters, prioritizes, filter_ms, prioritize_ms in runs:
        assert float(rate) > 0
        if side != "the shipped extender" or kind == "plain":   # never sent to the webhook:
            assert (filters, prioritizes, filter_ms) == ("0.00", "0.00", "-"), out  # no mark
        elif kind == "annotated":   # preferred terms alone: one /prioritize each, no /filter
            assert (filters, prioritizes, filter_ms) == ("0.00", "1.00", "-"), out
            assert prioritize_ms.endswith(" ms"), out
    for kind, goal in (("plain", 95), ("annotated", 70)):
        block = out.split("%s pods (median [min-max] over 1 pairs):" % kind, 1)[1]
        for label in ("rate without the extender", "rate with the extender",
                      "ratio with/without", "added per pod"):
            assert re.search(r"^  %s: +%s" % (re.escape(label), SPREAD), block, re.M), out
        assert re.search(r"^  webhook, the shipped extender: +CPU %s ms/pod" % SPREAD, block,
                         re.M), out
        assert re.search(r"^  goal: median ratio >= %d %%: (PASS|FAIL)$" % goal, block,
                         re.M), out
    for floor in floors:        # each floor against the no-extender side and the shipped one
        assert re.search(r"^  %s: ratio %s %%, added per pod %s ms; the shipped extender's rate "
                         r"against it %s %%$" % (re.escape(floor), SPREAD, SPREAD, SPREAD),
                         out, re.M), out
    assert re.search(r"^result: (PASS|FAIL)$", out, re.M)
    assert ("PASS" in out.rsplit("result: ", 1)[1]) == (done.returncode == 0)
