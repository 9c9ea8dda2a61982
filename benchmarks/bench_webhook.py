"""Benchmark: the webhook's answers over real HTTPS, as kube-scheduler and the API server ask.

The server is the real one (``kube.serve.HealthServer`` with TLS, the CLI's routes,
metrics included) in this process, with the extender's cache filled as the informers
fill it (``sync_*``): --nodes nodes (one compute host each, 10 per zone) and 2 pods per
node, one in 25 of them carrying extended (anti-)affinity annotations. A client in
another process keeps one TLS connection open per kind of request (as Go's HTTP client
does: kube-scheduler v1.20 sends every extender call of a run over one,
``benchmarks/probe_extender_connections.py``) and times, per round:

* the extender: ``/filter`` then ``/prioritize`` for one pod with Gt/Lt terms over every
  node name (``nodeCacheCapable``), the pair timed as one (target p99 < 10 ms); the
  bodies are encoded as kube-scheduler's Go encoder writes them (no spaces, NodeNames
  last);
* the same for a plain pod (the pass-through path);
* admission: one ``/validate`` and one ``/mutate`` review of a typical pod (target
  p99 < 5 ms each).

Besides the client's times, the CPU the server spent per round: its connection's thread
(TLS, HTTP, handler) and, of it, the handlers (JSON in and out, the extender's logic,
metrics). ``--breakdown`` also runs the extender rounds over plain HTTP (the TLS share is
the difference) and times the handler's stages in-process.

    python benchmarks/bench_webhook.py [--nodes 5000] [--rounds 300] [--breakdown]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tacker_hwaffinity.kube.serve import HealthServer
from tacker_hwaffinity.webhook import admission, certs, daemon
from tacker_hwaffinity.webhook.extender import Extender, _json
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
out = {}
for name, pairs in b.items():
    # one connection per kind of request, its first round's handshake in the warm-up
    if cafile == "-":
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    else:
        conn = http.client.HTTPSConnection(
            "127.0.0.1", port, context=ssl.create_default_context(cafile=cafile), timeout=30)
    def post(path, body):
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        r = conn.getresponse(); data = r.read()
        assert r.status == 200, (path, r.status, data[:300])
        return data
    pairs = [(path, body.encode()) for path, body in pairs]
    times = []
    for i in range(rounds + 5):
        t0 = time.perf_counter()
        for path, body in pairs:
            post(path, body)
        if i >= 5:                               # warm-up rounds not counted
            times.append((time.perf_counter() - t0) * 1000)
    conn.close()
    times.sort()
    out[name] = [statistics.median(times), times[int(0.99 * (len(times) - 1))], rounds + 5]
print(json.dumps(out))
'''


class _CountedServer(HealthServer):
    """The server, recording for each connection in turn the CPU time of its thread and
    the handlers' total (HANDLER_CPU, a _HandlerCPU) when it ended."""

    def __init__(self, *args, handler_cpu, **kw):
        super().__init__(*args, **kw)
        self.handler_cpu = handler_cpu
        self.ended = []

    def serve_connection(self, sock):
        t0 = time.thread_time()
        try:
            super().serve_connection(sock)
        finally:
            self.ended.append((time.thread_time() - t0, self.handler_cpu.seconds))


class _HandlerCPU:
    """The CPU time of the handlers, summed for the thread that runs them."""

    def __init__(self):
        self.seconds = 0.0
        self._lock = threading.Lock()

    def wrap(self, handler):
        def timed(body):
            t0 = time.thread_time()
            try:
                return handler(body)
            finally:
                with self._lock:
                    self.seconds += time.thread_time() - t0
        return timed


def _run_client(server, cafile, rounds, bodies, tmp):
    """{request kind: (p50 ms, p99 ms, server CPU ms a round, of it handlers ms)}; the
    client's connections come one after the other, one per kind."""
    path = os.path.join(tmp, "bodies.json")
    with open(path, "w") as f:
        json.dump(bodies, f)
    del server.ended[:]
    start = server.handler_cpu.seconds
    r = subprocess.run([sys.executable, "-c", CLIENT, str(server.port), cafile, str(rounds),
                        path], capture_output=True, text=True, timeout=900)
    if r.returncode:
        sys.exit("client failed:\n" + r.stderr)
    got = json.loads(r.stdout)
    deadline = time.monotonic() + 10
    while len(server.ended) < len(got) and time.monotonic() < deadline:
        time.sleep(0.01)        # the last connection's thread ends after the client's exit
    out = {}
    for (name, (p50, p99, n)), (cpu, handlers) in zip(got.items(), server.ended):
        out[name] = (p50, p99, cpu / n * 1e3, (handlers - start) / n * 1e3)
        start = handlers
    return out


def _stages(ext, bodies, metrics, repeat=300):
    """Median ms in-process, per stage of the handlers, for the extender pairs."""
    from tacker_hwaffinity.objects import jsondepth

    def median_ms(fn):
        fn()
        times = []
        for _ in range(repeat):
            t0 = time.thread_time()
            fn()
            times.append(time.thread_time() - t0)
        return statistics.median(times) * 1e3
    out = {}
    for name, pairs in bodies.items():
        if not name.startswith("extender"):
            continue
        body = pairs[0][1].encode()
        args = ext._last.args(body)
        result = ext.filter(args)
        prio = ext.priorities(args)
        out[name] = [
            ("depth check", median_ms(lambda: jsondepth.nesting(body))),
            ("decode (args)", median_ms(lambda: ext._last.args(body))),
            ("decode (json.loads)", median_ms(lambda: json.loads(body))),
            ("filter()", median_ms(lambda: ext.filter(args))),
            ("filter JSON", median_ms(lambda: ext._filter_json(result))),
            ("filter JSON (json.dumps)", median_ms(lambda: _json(result))),
            ("priorities()", median_ms(lambda: ext.priorities(args))),
            ("prioritize JSON", median_ms(lambda: ext._priorities_json(*prio))),
            ("metrics", median_ms(lambda: (metrics.seconds.labels("/filter").observe(1e-3),
                                           metrics.requests.labels("/filter", "answered")
                                           .inc())))]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--breakdown", action="store_true",
                    help="also plain HTTP for the extender, and the handler's stages")
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
    handler_cpu = _HandlerCPU()
    posts = {"/" + v: handler_cpu.wrap(daemon.route("/" + v, lambda b, v=v: ext.handle(v, b),
                                                    metrics))
             for v in ("filter", "prioritize")}
    for verb in ("validate", "mutate"):
        posts["/" + verb] = handler_cpu.wrap(daemon.route(
            "/" + verb, lambda b, v=verb: admission.handle(v, b), metrics))
    names = [n["metadata"]["name"] for n in nodes]
    plain = _pod("y", {"app": "y", "tier": "9"})
    rde = _pod("z", {"app": "z"}, annotations={
        "hwaffinity.io/required-during-execution": json.dumps({"podAntiAffinity": [
            {"topologyKey": "CIS-node", "labelSelector": {"matchLabels": {"app": "z"}}}]})})

    def go(pod):            # as kube-scheduler's json.Marshal writes ExtenderArgs
        return json.dumps({"Pod": pod, "Nodes": None, "NodeNames": names},
                          separators=(",", ":"))
    bodies = {
        "extender, Gt/Lt pod": [(p, go(incoming())) for p in ("/filter", "/prioritize")],
        "extender, plain pod": [(p, go(plain)) for p in ("/filter", "/prioritize")],
        "validate": [("/validate", json.dumps(review(rde)))],
        "mutate": [("/mutate", json.dumps(review(rde)))],
    }
    extender_bodies = {k: v for k, v in bodies.items() if k.startswith("extender")}
    with tempfile.TemporaryDirectory() as tmp:
        ca, crt, key = certs.issue([], ["127.0.0.1"])[:3]
        paths = {}
        for name, data in (("ca.crt", ca), ("tls.crt", crt), ("tls.key", key)):
            paths[name] = os.path.join(tmp, name)
            with open(paths[name], "wb") as f:
                f.write(data)
        runs = [("HTTPS", (paths["tls.crt"], paths["tls.key"]), paths["ca.crt"], bodies)]
        if args.breakdown:
            runs.append(("HTTP", None, "-", extender_bodies))
        got = {}
        for label, tls, cafile, which in runs:
            server = _CountedServer(0, host="127.0.0.1", posts=posts, tls=tls,
                                    handler_cpu=handler_cpu).start()
            try:
                got[label] = _run_client(server, cafile, args.rounds, which, tmp)
            finally:
                server.stop()
    print("machine: %s, %d cores, Python %s" % (platform.processor() or platform.machine(),
                                               os.cpu_count(), platform.python_version()))
    print("cache: %d nodes, %d pods (%d annotated), filled in %.2f s" % (
        len(nodes), len(pods), sum(1 for p in pods if p["metadata"]["annotations"]), built))
    ok = True
    for name, (p50, p99, cpu, handled) in got["HTTPS"].items():
        goal = EXTENDER_GOAL_MS if name.startswith("extender") else ADMISSION_GOAL_MS
        ok = ok and p99 < goal
        print("%-22s p50 %6.2f ms  p99 %6.2f ms  (goal p99 < %.0f ms, %d rounds, HTTPS "
              "keep-alive); server CPU %.2f ms a round, handlers %.2f ms" % (
                  name, p50, p99, goal, args.rounds, cpu, handled))
    if args.breakdown:
        print("extender over plain HTTP (TLS's share: the difference):")
        for name, (p50, p99, cpu, handled) in got["HTTP"].items():
            print("  %-20s p50 %6.2f ms  p99 %6.2f ms  server CPU %.2f ms a round, "
                  "handlers %.2f ms" % (name, p50, p99, cpu, handled))
        print("handler stages in-process (median thread CPU, ms; filter and prioritize "
              "each decode the body):")
        for name, stages in _stages(ext, extender_bodies, metrics).items():
            print("  %-20s %s" % (name, ", ".join("%s %.3f" % kv for kv in stages)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
