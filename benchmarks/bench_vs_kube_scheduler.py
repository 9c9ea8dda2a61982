"""The real kube-scheduler and `hwaffinity plan`, side by side, on one cluster.

    python benchmarks/bench_vs_kube_scheduler.py [--nodes 500 5000] [--replicas 2000]

For each N: starts the test suite's real control plane (Kubernetes v1.20.2,
tools/build-kube.sh), registers N Ready nodes (4 CPU, 32Gi, 110 pods; no
kubelet: the node-lifecycle controller is off so they stay schedulable;
client rate limits raised as in scheduler_perf),
takes the `kubectl get nodes,pods,namespaces -A -o yaml` snapshot, then
creates a Deployment of REPLICAS pods with required anti-affinity on
kubernetes.io/hostname (upstream scheduler_perf's case) and measures the real
scheduler's pods/s from its binding events (the eventTime of the first and
last ``Scheduled`` event). Then it runs the whole `hwaffinity plan` command, cold, on the same
snapshot and Deployment, and prints both rates and the ratio. Bounded: each
phase gives up after its timeout and says so.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "tests", "controlplane"))
import harness  # noqa: E402  (the test suite's control-plane harness)

NS = "bench"
LABELS = {"app": "anti"}
SCHEDULE_TIMEOUT_S = 900
# Client rate limits of kube-scheduler and kube-controller-manager (defaults
# 50 and 20 requests/s) raised, as upstream's scheduler_perf does, so that
# the figure is the scheduler's and not the ReplicaSet controller's pace.
API_QPS = 5000


def deployment(replicas):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "anti", "namespace": NS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": LABELS},
                     "template": {"metadata": {"labels": LABELS}, "spec": {
                         "automountServiceAccountToken": False,
                         "affinity": {"podAntiAffinity": {
                             "requiredDuringSchedulingIgnoredDuringExecution": [{
                                 "labelSelector": {"matchLabels": LABELS},
                                 "topologyKey": "kubernetes.io/hostname"}]}},
                         "containers": [{"name": "c", "image": "registry.invalid/pause",
                                         "resources": {"requests": {"cpu": "100m",
                                                                    "memory": "500Mi"}}}]}}}}


def real_scheduler(cp, replicas, expected):
    """(pods/s, seconds, bound) of the real scheduler for the Deployment, once
    EXPECTED pods (all that anti-affinity lets fit) are bound."""
    cp.admin.create("/apis/apps/v1/namespaces/%s/deployments" % NS, deployment(replicas))
    t0 = time.monotonic()
    first = last = None
    deadline = t0 + SCHEDULE_TIMEOUT_S
    bound = 0
    while time.monotonic() < deadline:
        pods = cp.admin.get("/api/v1/namespaces/%s/pods" % NS)["items"]
        now = time.monotonic()
        if pods and first is None:
            first = now
        newly = sum(1 for p in pods if p["spec"].get("nodeName"))
        if newly > bound:
            bound, last = newly, now
        if bound >= expected:
            break
        time.sleep(0.25)
    if first is None or last is None:
        return 0.0, None, bound
    times = binding_times(cp)
    if len(times) >= 2:
        seconds = times[-1] - times[0]
        return (len(times) - 1) / seconds, seconds, bound
    seconds = max(last - first, 1e-6)    # too few events: the polled figure
    return bound / seconds, seconds, bound


def binding_times(cp):
    """The scheduler's Scheduled events' eventTime (microseconds), sorted."""
    events = cp.admin.get("/apis/events.k8s.io/v1/namespaces/%s/events" % NS,
                          fieldSelector="reason=Scheduled")["items"]
    out = []
    for e in events:
        stamp = e.get("eventTime")
        if stamp:
            out.append(datetime.datetime.strptime(
                stamp.rstrip("Z")[:26], "%Y-%m-%dT%H:%M:%S.%f").timestamp())
    return sorted(out)


def plan_command(snapshot, workload):
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "tacker_hwaffinity.cli.main", "plan",
                          "--cluster", snapshot, workload, "-o", "json"],
                         capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - t0
    if out.returncode not in (0, 1):
        raise SystemExit("plan failed: %s" % out.stderr.strip())
    placed = sum(1 for p in json.loads(out.stdout)["placements"] if p["node"])
    return placed / seconds, seconds, placed


def run(n, replicas, binaries):
    cp = harness.ControlPlane(binaries, node_lifecycle=False, api_qps=API_QPS)
    try:
        cp.start(timeout=90)
        t0 = time.monotonic()
        cp.add_static_nodes(["node-%05d" % i for i in range(n)], lambda name: {})
        nodes_s = time.monotonic() - t0
        cp.create_namespace(NS)
        with tempfile.TemporaryDirectory() as tmp:
            snapshot = os.path.join(tmp, "cluster.yaml")
            with open(snapshot, "w") as f:
                f.write(cp.kubectl("get", "nodes,pods,namespaces", "-A", "-o", "yaml",
                                   timeout=600))
            workload = os.path.join(tmp, "deploy.json")
            with open(workload, "w") as f:
                json.dump(deployment(replicas), f)
            real_rate, real_s, real_bound = real_scheduler(cp, replicas, min(n, replicas))
            ours_rate, ours_s, ours_placed = plan_command(snapshot, workload)
    finally:
        cp.stop(keep_logs=False)
    expected = min(n, replicas)
    print("N=%d nodes (registered in %.0f s), %d replicas, required anti-affinity on hostname"
          % (n, nodes_s, replicas))
    print("  kube-scheduler v%s: %d/%d bound in %s -> %.0f pods/s"
          % (harness.KUBE_VERSION, real_bound, expected,
             "%.1f s" % real_s if real_s else "(none bound)", real_rate))
    print("  hwaffinity plan (whole command, cold): %d/%d placed in %.1f s -> %.0f pods/s"
          % (ours_placed, expected, ours_s, ours_rate))
    if real_rate:
        print("  ratio plan / kube-scheduler: %.1fx" % (ours_rate / real_rate))
    return real_bound == expected and ours_placed == expected


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[500, 5000])
    ap.add_argument("--replicas", type=int, default=2000)
    args = ap.parse_args(argv)
    binaries = harness.find_binaries()
    if binaries is None:
        print(harness.BUILD_HINT, file=sys.stderr)
        return 2
    print("machine: %d cores, %s, Python %s" % (os.cpu_count() or 0, platform.machine(),
                                                platform.python_version()))
    ok = True
    for n in args.nodes:
        ok = run(n, args.replicas, binaries) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
