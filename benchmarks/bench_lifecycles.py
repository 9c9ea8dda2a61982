"""Benchmark: the random lifecycle at length, with the controller's shipped timings.

The story's ``test_random_lifecycles_keep_one_replica_a_host`` (tests/tacker_e2e:
``lifecycles.py`` drives the events, ``windows.py`` judges them), run through
``tools/test.sh`` on the real harness (Nova and Heat, Tacker, the control plane), with
the controller at its defaults (``--poll-interval 30 --grace 60 --eviction-interval
10``), EVENTS events within BUDGET minutes, and VNF-A's terminate after it. A checker
reads Nova's servers and the CNF's pods every second while the events run.

It prints, per event kind, the table the README quotes: the events, the violations
inside the kind's window (two upf replicas on one physical host; upf is
RequiredDuringExecution), those outside every window (goal: 0), the longest exposure, and
udr's held colocations (IgnoredDuringExecution) with the longest time until the
controller's gauge said so; then every upf colocation's length, and that of the one the
sequence ends with and leaves to the controller. Exit status: pytest's (1 when a
violation lies outside its window).

    python benchmarks/bench_lifecycles.py [--events 40] [--budget-min 50] [--seed N]
                                          [--report PATH]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEST = "tests/tacker_e2e/test_tacker_cnf.py"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=40)
    p.add_argument("--budget-min", type=float, default=50.0)
    p.add_argument("--seed", type=int, help="replay a sequence (default: drawn, printed)")
    p.add_argument("--report", metavar="PATH",
                   help="keep the run's JSON report there (events, every violation judged)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.abspath(args.report) if args.report else os.path.join(
            tmp, "lifecycle.json")
        if os.path.exists(report):
            os.remove(report)       # an earlier run's is no judgement of this one
        env = dict(os.environ, HWAFFINITY_LIFECYCLE_TIMINGS="shipped",
                   HWAFFINITY_LIFECYCLE_EVENTS=str(args.events),
                   HWAFFINITY_LIFECYCLE_BUDGET_S=str(args.budget_min * 60),
                   HWAFFINITY_LIFECYCLE_REPORT=report)
        if args.seed is not None:
            env["HWAFFINITY_LIFECYCLE_SEED"] = str(args.seed)
        t0 = time.monotonic()
        status = subprocess.call(
            ["bash", "tools/test.sh", TEST, "-k", "random_lifecycles or terminate_vnf_a",
             "-s", "-p", "no:cacheprovider"], cwd=ROOT, env=env)
        wall = time.monotonic() - t0
        if not os.path.exists(report):
            print("no report: the test did not reach its judgement (exit %d)" % status)
            return status or 1
        with open(report) as f:
            doc = json.load(f)
    events = doc["events"]
    span = events[-1]["end"] - events[0]["start"] if events else 0.0
    print("\n%s, Python %s, %d cores; seed %d; timings %s" % (
        platform.machine(), platform.python_version(), os.cpu_count(), doc["seed"],
        doc["timings"]))
    print("%d events over %.1f min (the run, harness included: %.1f min); %d samples of "
          "Nova's truth, the longest gap between two %.1f s; errors %s" % (
              len(events), span / 60, wall / 60, doc["samples"], doc["longest_gap"],
              doc["errors"] or "none"))
    print(doc["table"])
    evicted = sorted(j["seconds"] for j in doc["judged"] if not j["held"])
    print("upf's colocations (RequiredDuringExecution), s: %s" % (
        ", ".join("%.0f" % x for x in evicted) or "none"))
    last = events[-1] if events else None
    if last and last["detail"].endswith("(left alone)"):
        alone = [j for j in doc["judged"] if not j["held"] and j["start"] >= last["start"]]
        print("the colocation left alone (nothing after it but the controller): %s" % (
            ", ".join("%s on %s %.0f s" % (j["workload"], j["host"], j["seconds"])
                      for j in alone) or "not seen"))
    outside = [j for j in doc["judged"] if not j["inside"]]
    for j in outside:
        print("outside: %s on %s: %s" % (j["workload"], j["host"], j["why"]))
    return status


if __name__ == "__main__":
    sys.exit(main())
