"""Scheduling throughput on scheduler_perf-shaped clusters (pods/s, peak memory).

Each case builds ``nodes`` nodes (4 CPU, 32Gi, 110 pods, as scheduler_perf's
default node template), binds ``init`` pods of the case's template in
namespace sched-0 through the planner, then measures planning ``measured``
pods in sched-1. Upstream's thresholds (minimum pods/s in kube-scheduler's
performance job) are printed beside ours. Run: python benchmarks/bench_scheduling.py
[--quick]; each case runs once and is bounded by its pod count.
"""
import argparse
import os
import platform
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tacker_hwaffinity.scheduling import planner  # noqa: E402
from tacker_hwaffinity.scheduling.model import Node, Pod, PodSpecInfo  # noqa: E402
from tacker_hwaffinity.scheduling.profile import Profile  # noqa: E402
from tacker_hwaffinity.scheduling.state import ClusterState  # noqa: E402

GI = 1024 ** 3
RESOURCES = {"requests": {"cpu": "100m", "memory": "500Mi"}}


def _term(labels, key):
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key,
            "namespaces": ["sched-0", "sched-1"]}


TEMPLATES = {
    "anti-hostname": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        _term({"color": "green"}, "kubernetes.io/hostname")]}},
    "anti-zone": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        _term({"color": "green"}, "topology.kubernetes.io/zone")]}},
    "affinity-zone": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        _term({"color": "blue"}, "topology.kubernetes.io/zone")]}},
    "preferred-affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": _term({"color": "red"}, "kubernetes.io/hostname")}]}},
    "preferred-anti": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": _term({"color": "yellow"}, "kubernetes.io/hostname")}]}},
    "node-affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{
            "key": "topology.kubernetes.io/zone", "operator": "In",
            "values": ["zone1", "zone2"]}]}]}}},
}
COLORS = {"anti-hostname": "green", "anti-zone": "green", "affinity-zone": "blue",
          "preferred-affinity": "red", "preferred-anti": "yellow", "node-affinity": "none"}
# (name, template, nodes, zones, init pods, measured pods, upstream threshold pods/s)
CASES = (
    ("SchedulingPodAntiAffinity/hostname", "anti-hostname", 5000, 1, 1000, 2000, 60),
    ("SchedulingPodAntiAffinity/zone", "anti-zone", 5000, 100, 0, 2000, 60),
    ("SchedulingPodAffinity/zone", "affinity-zone", 5000, 1, 5000, 5000, 35),
    ("SchedulingPreferredPodAffinity", "preferred-affinity", 5000, 1, 5000, 5000, 90),
    ("SchedulingPreferredPodAntiAffinity", "preferred-anti", 5000, 1, 5000, 5000, 90),
    ("SchedulingNodeAffinity", "node-affinity", 5000, 1, 5000, 10000, 220),
)


def make_nodes(n, zones):
    return [Node("node-%05d" % i,
                 {"kubernetes.io/hostname": "node-%05d" % i,
                  "topology.kubernetes.io/zone": "zone%d" % (1 + i % zones)},
                 allocatable={"cpu": 4000, "memory": 32 * GI, "pods": 110})
            for i in range(n)]


def make_pods(template, namespace, count, prefix):
    spec = PodSpecInfo({"affinity": TEMPLATES[template],
                        "containers": [{"name": "c", "image": "pause", "resources": RESOURCES}]})
    labels = {"color": COLORS[template]}
    return [Pod(namespace, "%s-%d" % (prefix, i), labels, spec, created=False)
            for i in range(count)]


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_case(name, template, nodes, zones, init, measured, threshold, scale):
    init, measured = max(1, int(init * scale)) if init else 0, max(1, int(measured * scale))
    state = ClusterState(make_nodes(nodes, zones))
    fw = Profile().framework()
    planner.plan(state, fw, make_pods(template, "sched-0", init, "init"))
    pods = make_pods(template, "sched-1", measured, "pod")
    t0 = time.perf_counter()
    result = planner.plan(state, fw, pods)
    dt = time.perf_counter() - t0
    placed = sum(1 for p in result.placements if p.node)
    rate = measured / dt
    return {"case": name, "nodes": nodes, "init": init, "measured": measured, "placed": placed,
            "seconds": dt, "pods_per_s": rate, "threshold": threshold,
            "x_threshold": rate / threshold, "peak_rss_mib": peak_rss_mib()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a tenth of the pods (smoke run)")
    ap.add_argument("--case", help="run only cases whose name contains this")
    args = ap.parse_args(argv)
    scale = 0.1 if args.quick else 1.0
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor()) \
        if os.path.exists("/proc/cpuinfo") else platform.processor()
    print("machine: %d cores, %s, Python %s" % (os.cpu_count(), cpu, platform.python_version()))
    print("%-38s %6s %6s %6s %7s %9s %9s %7s %9s" % (
        "case", "nodes", "init", "pods", "placed", "pods/s", "upstream", "x", "peakMiB"))
    ok = True
    for case in CASES:
        if args.case and args.case not in case[0]:
            continue
        r = run_case(*case, scale=scale)
        ok = ok and r["x_threshold"] >= 10
        print("%-38s %6d %6d %6d %7d %9.0f %9d %7.1f %9.0f" % (
            r["case"], r["nodes"], r["init"], r["measured"], r["placed"], r["pods_per_s"],
            r["threshold"], r["x_threshold"], r["peak_rss_mib"]))
        sys.stdout.flush()
    print("target (>= 10x upstream threshold, peak < 1024 MiB): %s" % ("met" if ok else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
