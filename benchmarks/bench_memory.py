"""Memory of the in-cluster components at --pods kubectl-shaped pods: bytes per cached
pod and each component's resident memory.

    python benchmarks/bench_memory.py [--pods 30000] [--nodes 1000] [--agent-pods 110]
                                      [--unpruned] [--capture]

How the pods are fed: each component's real informers (``kube.informer.Informer``,
built with the same projection and store settings as its CLI) and its real handlers
read a stand-in list call that answers exactly as the kubernetes client does (pages
of 500 as JSON bytes, then a watch of line-delimited events, a MODIFIED for one pod
in ten). The objects are copies, renamed per pod, of a Pod, a Node and a Namespace
captured from the real kube-apiserver v1.20.2 of the test harness
(``benchmarks/data/captured-*.json``: `kubectl get -o json` of the pod of a
Deployment applied with kubectl, scheduled by kube-scheduler, made Running by the
harness's kubelet stand-in, so with the managedFields of kube-controller-manager and
of the status writer); ``--capture`` captures them again (starts the control plane). Creating
30,000 pods through a real API server on a 2-core machine takes minutes and more
memory than the components: the API server is the source of the shape only.

Each component runs in its own process, twice: once for its resident memory (VmRSS
after the feed, VmHWM the peak), once with tracemalloc for the bytes its Python
objects hold per pod (held after the feed and a collection, minus before, divided by
the pods). The agent watches only its node's pods (a field selector): it is fed
--agent-pods pods of its node (the kubelet's default maxPods), whatever the cluster.
``--unpruned`` builds the informers as before projections (whole objects, a store
beside the webhook's own index), for comparison. Exit 1 when a target is missed:
every component under 200 MiB (peak), and under 3 KiB per pod for the caches that
grow with the cluster (controller, webhook); the agent's figure per pod also holds
its placement state of the pod's containers, for at most maxPods pods.
"""
import argparse
import copy
import gc
import json
import os
import subprocess
import sys
import threading
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
sys.path.insert(0, ROOT)
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
PAGE = 500
PER_POD_GOAL, RSS_GOAL = 3 * 1024, 200 * 2 ** 20


# -- the captured shapes ----------------------------------------------------------
def captured(kind):
    with open(os.path.join(DATA, "captured-%s.json" % kind.lower())) as f:
        return json.load(f)


def capture():
    """Capture a kubectl-applied Deployment's pod, its node and its namespace from the
    harness's real control plane into DATA."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "controlplane"))
    import harness
    binaries = harness.find_binaries()
    if binaries is None:
        print(harness.BUILD_HINT, file=sys.stderr)
        return 2
    cp = harness.ControlPlane(binaries)
    try:
        cp.start(timeout=60)
        cp.add_node("worker-1", {"topology.kubernetes.io/zone": "zone-a",
                                 "CIS-node": "compute-1"})
        ns = cp.create_namespace("shop")
        manifest = os.path.join(cp.run_dir, "web.json")
        with open(manifest, "w") as f:
            json.dump(DEPLOYMENT, f)
        cp.kubectl("apply", "-n", ns, "-f", manifest)
        harness.wait_until(lambda: [p for p in cp.pods(ns)
                                    if p["status"].get("phase") == "Running"], 60,
                           what="the Deployment's pod Running")
        pod = json.loads(cp.kubectl("get", "pods", "-n", ns, "-o", "json"))["items"][0]
        node = json.loads(cp.kubectl("get", "node", "worker-1", "-o", "json"))
        namespace = json.loads(cp.kubectl("get", "namespace", ns, "-o", "json"))
    finally:
        cp.stop(keep_logs=False)
    os.makedirs(DATA, exist_ok=True)
    for kind, obj in (("pod", pod), ("node", node), ("namespace", namespace)):
        with open(os.path.join(DATA, "captured-%s.json" % kind), "w") as f:
            json.dump(obj, f, indent=1, sort_keys=True)
            f.write("\n")
    print("captured a Pod (%d bytes of JSON), a Node and a Namespace into %s"
          % (len(json.dumps(pod)), DATA))
    return 0


DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app": "web", "tier": "frontend"}},
    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": {
        "metadata": {"labels": {"app": "web", "tier": "frontend", "version": "v1"},
                     "annotations": {"prometheus.io/scrape": "true",
                                     "prometheus.io/port": "9102"}},
        "spec": {"automountServiceAccountToken": False, "containers": [
            {"name": "web", "image": "registry.example.com/shop/web:1.4.2",
             "ports": [{"name": "http", "containerPort": 8080}],
             "env": [{"name": "LOG_LEVEL", "value": "info"},
                     {"name": "POD_NAME", "valueFrom": {"fieldRef": {
                         "fieldPath": "metadata.name"}}}],
             "resources": {"requests": {"cpu": "250m", "memory": "256Mi"},
                           "limits": {"cpu": "1", "memory": "512Mi"}},
             "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}},
             "volumeMounts": [{"name": "config", "mountPath": "/etc/web"}]},
            {"name": "metrics", "image": "registry.example.com/shop/exporter:0.9",
             "ports": [{"name": "metrics", "containerPort": 9102}],
             "resources": {"requests": {"cpu": "50m", "memory": "32Mi"},
                           "limits": {"memory": "64Mi"}}}],
            "volumes": [{"name": "config", "emptyDir": {}}]}}}}


# -- the objects fed ---------------------------------------------------------------
class Shape:
    """JSON text of copies of a captured object, renamed: the template is encoded once,
    with placeholders where the copies differ (cheap enough for 30,000 per page run)."""

    def __init__(self, template, **fields):
        t = copy.deepcopy(template)
        meta = t["metadata"]
        meta.update(name="@NAME@", uid="@UID@", resourceVersion="@RV@")
        if "namespace" in meta:
            meta["namespace"] = "@NS@"
        meta["labels"] = dict(meta.get("labels") or {}, **fields.pop("labels", {}))
        for k, v in meta["labels"].items():
            if v == "@":
                meta["labels"][k] = "@L_%s@" % k
        if "nodeName" in (t.get("spec") or {}):
            t["spec"]["nodeName"] = "@NODE@"
        for j, st in enumerate((t.get("status") or {}).get("containerStatuses") or []):
            st["containerID"] = "containerd://@CID%d@" % j
        self.text = json.dumps(t)

    def make(self, values):
        text = self.text
        for k, v in values.items():
            text = text.replace("@%s@" % k, v)
        return text


def pods_of(template, nodes, node=None):
    shape = Shape(template, labels={"app": "@"})

    def make(i):
        return shape.make({"NAME": "web-%05d" % i, "NS": "ns-%03d" % (i % 100),
                           "UID": "00000000-0000-4000-8000-%012d" % i, "RV": str(1000 + i),
                           "L_app": "app-%d" % (i % 300),
                           "NODE": node or "node-%04d" % (i % nodes),
                           "CID0": "%064x" % (2 * i), "CID1": "%064x" % (2 * i + 1)})
    return make


def named_of(template, prefix, labels):
    shape = Shape(template, labels=labels)

    def make(i):
        name = "%s%04d" % (prefix, i)
        return shape.make({"NAME": name, "UID": "uid-" + name, "RV": str(i + 1),
                           "L_kubernetes.io/hostname": name, "L_CIS-node": "host-%d" % (i % 500),
                           "L_team": "t%d" % (i % 7)})
    return make


class Response:
    def __init__(self, data=b"", lines=()):
        self.data, self.lines = data, lines

    def stream(self, amt=None, decode_content=True):
        yield from self.lines

    def close(self):
        pass

    def release_conn(self):
        pass


class ListCall:
    """A list method of the kubernetes client, over MAKE(i) for i < COUNT: pages of
    JSON, made as asked (the feed holds one page at a time), then one watch with a
    MODIFIED event for one object in ten, then empty watches."""

    def __init__(self, make, count):
        self.make, self.count, self.watches = make, count, 0
        self.watched = threading.Event()

    def __call__(self, watch=False, **kw):
        if watch:
            self.watches += 1
            if self.watches > 1:
                self.watched.set()
                return Response()
            return Response(lines=(('{"type": "MODIFIED", "object": %s}\n' % self.make(i))
                                   .encode() for i in range(0, self.count, 10)))
        start = int(kw.get("_continue") or 0)
        end = min(start + PAGE, self.count)
        head = json.dumps({"kind": "List", "apiVersion": "v1", "metadata": {
            "resourceVersion": "99999", "continue": str(end) if end < self.count else None}})
        items = ",".join(self.make(i) for i in range(start, end))
        return Response(('%s, "items": [%s]}' % (head[:-1], items)).encode())


# -- one component in this process ---------------------------------------------------
def rss():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) * 1024
    return out


def run_informers(informers):
    """Each informer's real loop in a thread until its list is in and its first watch
    read; then stop."""
    stop = threading.Event()
    threads = [threading.Thread(target=i.run, args=(stop,), daemon=True) for i in informers]
    for t in threads:
        t.start()
    for i in informers:
        if not i.list_call.watched.wait(600):
            raise SystemExit("%s: the feed did not finish" % i.kind)
    stop.set()
    for t in threads:
        t.join(30)


def component(name, pods, nodes, agent_pods, unpruned, traced):
    """Build NAME's informers as its CLI does, feed them; print one JSON line. Imports
    and the component's fixed parts are made before the measure starts."""
    import logging
    import tracemalloc

    from kubernetes import client

    from tacker_hwaffinity.kube.client import Connection
    from tacker_hwaffinity.kube.informer import Informer
    logging.disable(logging.WARNING)
    conn = Connection(client.ApiClient(), "https://bench.invalid")
    pod_t, node_t, ns_t = captured("Pod"), captured("Node"), captured("Namespace")
    node_obj = named_of(node_t, "node-", {"kubernetes.io/hostname": "@", "CIS-node": "@"})
    ns_obj = named_of(ns_t, "ns-", {"team": "@"})

    def informer(kind, make, count, handler, on_sync=None, fields=None, store=True,
                 indexers=None):
        return Informer(conn, ListCall(make, count), kind, kind.lower() + "s", handler,
                        on_sync=on_sync, fields=None if unpruned else fields,
                        store=True if unpruned else store, indexers=indexers)
    if name == "agent":
        from tacker_hwaffinity.agent.runner import pod_uid
        agent, fields = _agent()
        count = agent_pods
        informers = [informer("Pod", pods_of(pod_t, 1, "node-0000"), agent_pods,
                              agent.on_event, agent.on_sync, fields,
                              indexers={"uid": pod_uid})]
        agent.pods.informer = informers[0]   # as agent/daemon.py wires it
    elif name == "controller":
        from tacker_hwaffinity.controller import daemon
        count = pods
        informers = [informer("Node", node_obj, nodes, lambda *a: None, fields=daemon.NODE_FIELDS),
                     informer("Pod", pods_of(pod_t, nodes), pods, lambda *a: None,
                              fields=daemon.POD_FIELDS)]
    else:
        from tacker_hwaffinity.webhook.podcache import PodCache
        cache = PodCache()
        count = pods
        f = PodCache.FIELDS
        informers = [
            informer("Node", node_obj, nodes, cache.on_node, cache.sync_nodes, f["Node"],
                     store=False),
            informer("Namespace", ns_obj, 100, cache.on_namespace, cache.sync_namespaces,
                     f["Namespace"], store=False),
            informer("Pod", pods_of(pod_t, nodes), pods, cache.on_pod, cache.sync_pods,
                     f["Pod"], store=False)]
    gc.collect()
    if traced:
        tracemalloc.start()
    run_informers(informers)
    if name == "webhook":
        assert cache.stats()["pods"] == pods, cache.stats()
    gc.collect()
    out = {"component": name, "pods": count}
    if traced:
        out["bytes_per_pod"] = tracemalloc.get_traced_memory()[0] / count
        tracemalloc.stop()
    else:
        out.update(rss())
    print(json.dumps(out))
    return 0


def _agent():
    """The agent on node-0000 (the numa tests' 112-CPU server), writing nothing: its
    cgroup tree is a temporary one and the writer dry-runs. Returns (agent, fields)."""
    import tempfile

    from prometheus_client import CollectorRegistry

    from tacker_hwaffinity.agent import cgroupfs
    from tacker_hwaffinity.agent.node import NodeState
    from tacker_hwaffinity.agent.runner import Agent, Metrics, PodsByUid
    from tacker_hwaffinity.agent import daemon
    from tacker_hwaffinity.objects.yamlio import parse_documents
    from tacker_hwaffinity.numa.topology import machine_from_yaml
    server = os.path.join(ROOT, "tests", "numa", "data", "server.yaml")
    with open(server) as f:
        machine = machine_from_yaml(parse_documents(f.read(), server)[0], server)
    root = tempfile.mkdtemp(prefix="bench-memory-")
    base = os.path.join(root, "cpuset", "kubepods.slice")
    for sub in ("", "kubepods-burstable.slice", "kubepods-besteffort.slice"):
        os.makedirs(os.path.join(base, sub), exist_ok=True)
        for fname, v in (("cpuset.cpus", "0-111"), ("cpuset.mems", "0-5")):
            with open(os.path.join(base, sub, fname), "w") as f:
                f.write(v + "\n")
    layout = cgroupfs.detect(root)

    class Api:
        def annotate(self, obj, key, value):
            out = copy.deepcopy(obj)
            out["metadata"].setdefault("annotations", {})[key] = value
            return out

        def event(self, obj, reason, message):
            pass
    return Agent(Api(), "node-0000", NodeState(machine), layout,
                 cgroupfs.Writer(layout, dry_run=True), Metrics(CollectorRegistry()),
                 dry_run=True, pods=PodsByUid()), daemon.POD_FIELDS


def measure(name, args):
    """Run NAME in fresh processes (RSS, then tracemalloc); its figures."""
    out = {}
    for traced in (False, True):
        cmd = [sys.executable, os.path.abspath(__file__), "--component", name,
               "--pods", str(args.pods), "--nodes", str(args.nodes),
               "--agent-pods", str(args.agent_pods)]
        cmd += ["--unpruned"] if args.unpruned else []
        cmd += ["--traced"] if traced else []
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if r.returncode:
            raise SystemExit("%s: %s" % (name, r.stderr.strip().splitlines()[-1:]))
        out.update(json.loads(r.stdout.strip().splitlines()[-1]))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=30000)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--agent-pods", type=int, default=110)
    ap.add_argument("--unpruned", action="store_true",
                    help="informers as before projections: whole objects, always a store")
    ap.add_argument("--capture", action="store_true",
                    help="capture the Pod/Node/Namespace shapes from the real control plane")
    ap.add_argument("--component", choices=("agent", "controller", "webhook"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.capture:
        return capture()
    if args.component:
        return component(args.component, args.pods, args.nodes, args.agent_pods,
                         args.unpruned, args.traced)
    pod = captured("Pod")
    print("captured pod: %d bytes of JSON, %d of them metadata.managedFields; %s"
          % (len(json.dumps(pod)), len(json.dumps(pod["metadata"].get("managedFields"))),
             "informers UNPRUNED (as before)" if args.unpruned else
             "informers with the components' projections"))
    failed = False
    for name in ("agent", "controller", "webhook"):
        t0 = time.monotonic()
        m = measure(name, args)
        ok = m["VmHWM"] < RSS_GOAL and (name == "agent" or m["bytes_per_pod"] < PER_POD_GOAL)
        failed |= not ok
        print("%-10s %6d pods: %6.0f bytes per cached pod; RSS %5.0f MiB, peak %5.0f MiB "
              "(%.0f s)%s" % (name, m["pods"], m["bytes_per_pod"], m["VmRSS"] / 2 ** 20,
                              m["VmHWM"] / 2 ** 20, time.monotonic() - t0,
                              "" if ok else "  <- above the target"))
    print("targets: under %d bytes per cached pod (controller, webhook), every component "
          "under %.0f MiB" % (PER_POD_GOAL, RSS_GOAL / 2 ** 20))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
