"""Measure the control-plane harness: start-up time and resident memory.

    python benchmarks/bench_controlplane.py [--nodes 6] [--pods 30]

Starts the stack, adds kubelet-less nodes, schedules pods, samples the
resident memory (VmRSS) of every process the harness started, prints the
figures, and stops everything. Exit 1 when a limit (15 s, 1 GiB) is broken.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                                "tests", "controlplane"))
import harness

STARTUP_LIMIT_S = 15.0
RSS_LIMIT_BYTES = 1024 ** 3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=6)
    ap.add_argument("--pods", type=int, default=30)
    args = ap.parse_args(argv)
    binaries = harness.find_binaries()
    if binaries is None:
        print(harness.BUILD_HINT, file=sys.stderr)
        return 2
    cp = harness.ControlPlane(binaries)
    ok = False
    peak = 0
    try:
        cp.start(timeout=60)
        peak = max(peak, cp.rss_bytes())
        t0 = time.monotonic()
        for i in range(args.nodes):
            cp.add_node("m-%d" % i, {"CIS-node": "host-%d" % (i % 3)}, wait=False)
        for i in range(args.nodes):
            cp.wait_node_schedulable("m-%d" % i)
        nodes_s = time.monotonic() - t0
        ns = cp.create_namespace("measure")
        for i in range(args.pods):
            cp.admin.create("/api/v1/namespaces/%s/pods" % ns, {
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p-%d" % i},
                "spec": {"automountServiceAccountToken": False,
                         "containers": [{"name": "c", "image": "registry.invalid/pause"}]}})
        harness.wait_until(lambda: all(
            p["status"].get("phase") == "Running" for p in cp.pods(ns)), 60,
            what="%d pods Running" % args.pods)
        for _ in range(10):
            peak = max(peak, cp.rss_bytes())
            time.sleep(0.5)
        per = cp.rss_by_component()
        print("start-up: %.1f s (limit %.0f s)" % (cp.startup_seconds, STARTUP_LIMIT_S))
        print("%d nodes schedulable in %.1f s; %d pods Running" % (args.nodes, nodes_s, args.pods))
        print("resident memory, peak sampled: %.0f MiB (limit %.0f MiB)"
              % (peak / 2 ** 20, RSS_LIMIT_BYTES / 2 ** 20))
        for name, rss in per.items():
            print("  %-24s %6.0f MiB" % (name, rss / 2 ** 20))
        ok = cp.startup_seconds < STARTUP_LIMIT_S and peak < RSS_LIMIT_BYTES
    finally:
        cp.stop(keep_logs=not ok)
        if not ok:
            print("logs kept in %s" % cp.log_dir, file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
