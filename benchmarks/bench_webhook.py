"""Benchmark: the webhook's answers over real HTTPS, as kube-scheduler and the API server ask.

The server is the real one (``kube.serve.HealthServer`` with TLS, the CLI's routes,
metrics included) in this process, with the extender's cache filled as the informers
fill it (``sync_*``): --nodes nodes (one compute host each, 10 per zone) and 2 pods per
node, one in 25 of them carrying extended (anti-)affinity annotations. A client in
another process keeps one TLS connection open (as Go's HTTP client does) and times,
per round:

* the extender: ``/filter`` then ``/prioritize`` for one pod with Gt/Lt terms over every
  node name (``nodeCacheCapable``), the pair timed as one (target p99 < 10 ms);
* the same for a plain pod (the pass-through path);
* admission: one ``/validate`` and one ``/mutate`` review of a typical pod (target
  p99 < 5 ms each).

    python benchmarks/bench_webhook.py [--nodes 5000] [--rounds 300]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tacker_hwaffinity.kube.serve import HealthServer
from tacker_hwaffinity.webhook import admission, certs, daemon
from tacker_hwaffinity.webhook.extender import Extender
from tacker_hwaffinity.webhook.podcache import PodCache

EXTENDER_GOAL_MS, ADMISSION_GOAL_MS = 10.0, 5.0
PA = "hwaffinity.io/pod-affinity"


def _pod(name, labels, node=None, annotations=None, ns="default"):
    spec = {"containers": [{"name": "c", "image": "registry.example.com/app:1",
                            "resources": {"requests": {"cpu": "100m"}}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": "uid-" + name,
                         "labels": labels, "annotations": annotations or {}},
            "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


def _terms(kind, key, expr, weight=None):
    term = {"topologyKey": key, "labelSelector": {"matchExpressions": [expr]}}
    if weight:
        return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": weight, "podAffinityTerm": term}]}}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def cluster(n_nodes):
    nodes = [{"metadata": {"name": "n%05d" % i, "uid": "n%d" % i, "labels": {
        "CIS-node": "host-%d" % i, "topology.kubernetes.io/zone": "zone-%d" % (i // 10),
        "kubernetes.io/hostname": "n%05d" % i}}} for i in range(n_nodes)]
    pods = []
    for i in range(2 * n_nodes):
        ann = None
        if i % 25 == 0:
            ann = {PA: json.dumps(_terms("podAntiAffinity", "CIS-node", {
                "key": "tier", "operator": "Lt", "values": ["%d" % (i % 7)]}))}
        pods.append(_pod("p%d" % i, {"app": "a%d" % (i % 50), "version": str(i % 10),
                                     "tier": str(i % 5)}, node="n%05d" % (i // 2),
                         annotations=ann))
    spaces = [{"metadata": {"name": "default", "labels": {}}}]
    return nodes, pods, spaces


def incoming():
    terms = _terms("podAffinity", "topology.kubernetes.io/zone",
                   {"key": "version", "operator": "Gt", "values": ["8"]})
    terms.update(_terms("podAntiAffinity", "CIS-node",
                        {"key": "app", "operator": "In", "values": ["a7"]}, weight=50))
    return _pod("x", {"app": "x", "tier": "9"}, annotations={PA: json.dumps(terms)})


def review(obj, operation="CREATE"):
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "r1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                        "resource": {"group": "", "version": "v1", "resource": "pods"},
                        "namespace": "default", "operation": operation, "object": obj}}


CLIENT = r'''
import http.client, json, ssl, statistics, sys, time
port, cafile, rounds, bodies = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
with open(bodies) as f:
    b = json.load(f)
ctx = ssl.create_default_context(cafile=cafile)
conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=30)
def post(path, body):
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse(); data = r.read()
    assert r.status == 200, (path, r.status, data[:300])
    return data
out = {}
for name, pairs in b.items():
    times = []
    for i in range(rounds + 5):
        t0 = time.perf_counter()
        for path, body in pairs:
            post(path, body.encode())
        if i >= 5:                               # warm-up rounds not counted
            times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    out[name] = [statistics.median(times), times[int(0.99 * (len(times) - 1))]]
print(json.dumps(out))
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=300)
    args = ap.parse_args()
    t0 = time.perf_counter()
    nodes, pods, spaces = cluster(args.nodes)
    cache = PodCache()
    cache.sync_nodes(nodes)
    cache.sync_namespaces(spaces)
    cache.sync_pods(pods)
    built = time.perf_counter() - t0
    daemon.settle_heap()                  # what `webhook serve` does once its caches synced
    from prometheus_client import CollectorRegistry
    metrics = daemon.Metrics(CollectorRegistry())
    ext = Extender(cache, pending_wait=0.0)
    posts = {"/" + v: daemon.route("/" + v, lambda b, v=v: ext.handle(v, b), metrics)
             for v in ("filter", "prioritize")}
    posts["/validate"] = daemon.route("/validate", lambda b: admission.handle("validate", b),
                                     metrics)
    posts["/mutate"] = daemon.route("/mutate", lambda b: admission.handle("mutate", b), metrics)
    names = [n["metadata"]["name"] for n in nodes]
    with tempfile.TemporaryDirectory() as tmp:
        ca, crt, key = certs.issue([], ["127.0.0.1"])[:3]
        paths = {}
        for name, data in (("ca.crt", ca), ("tls.crt", crt), ("tls.key", key)):
            paths[name] = os.path.join(tmp, name)
            with open(paths[name], "wb") as f:
                f.write(data)
        server = HealthServer(0, host="127.0.0.1", posts=posts,
                              tls=(paths["tls.crt"], paths["tls.key"])).start()
        plain = _pod("y", {"app": "y", "tier": "9"})
        rde = _pod("z", {"app": "z"}, annotations={
            "hwaffinity.io/required-during-execution": json.dumps({"podAntiAffinity": [
                {"topologyKey": "CIS-node", "labelSelector": {"matchLabels": {"app": "z"}}}]})})
        bodies = {
            "extender, Gt/Lt pod": [(p, json.dumps({"Pod": incoming(), "NodeNames": names}))
                                    for p in ("/filter", "/prioritize")],
            "extender, plain pod": [(p, json.dumps({"Pod": plain, "NodeNames": names}))
                                    for p in ("/filter", "/prioritize")],
            "validate": [("/validate", json.dumps(review(rde)))],
            "mutate": [("/mutate", json.dumps(review(rde)))],
        }
        with open(os.path.join(tmp, "bodies.json"), "w") as f:
            json.dump(bodies, f)
        try:
            r = subprocess.run([sys.executable, "-c", CLIENT, str(server.port),
                                paths["ca.crt"], str(args.rounds),
                                os.path.join(tmp, "bodies.json")],
                               capture_output=True, text=True, timeout=600)
        finally:
            server.stop()
        if r.returncode:
            sys.exit("client failed:\n" + r.stderr)
        got = json.loads(r.stdout)
    print("machine: %s, %d cores, Python %s" % (platform.processor() or platform.machine(),
                                               os.cpu_count(), platform.python_version()))
    print("cache: %d nodes, %d pods (%d annotated), filled in %.2f s" % (
        len(nodes), len(pods), sum(1 for p in pods if p["metadata"]["annotations"]), built))
    ok = True
    for name, (p50, p99) in got.items():
        goal = EXTENDER_GOAL_MS if name.startswith("extender") else ADMISSION_GOAL_MS
        ok = ok and p99 < goal
        print("%-22s p50 %6.2f ms  p99 %6.2f ms  (goal p99 < %.0f ms, %d rounds, HTTPS "
              "keep-alive)" % (name, p50, p99, goal, args.rounds))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
