"""What the scheduler extender costs the real kube-scheduler (issue #40).

    python benchmarks/bench_extender_cost.py [--nodes 1000] [--pods 300] [--pairs 5]
                                             [--mutual] [--versus-both-verbs]
                                             [--versus-floor]
    python benchmarks/bench_extender_cost.py --quick       # 100 nodes, 40 pods, 1 pair

Starts the test suite's control plane (Kubernetes v1.20.2, tools/build-kube.sh; client rate
limits raised as in scheduler_perf), registers NODES Ready API-only nodes (4 per CIS-node
value), runs `hwaffinity webhook serve` as a process (certificates of `hwaffinity webhook
certs`, --client-ca and --client-name system:kube-scheduler, the API identity of
deploy/webhook/rbac.yaml's ClusterRole) with deploy/webhook/webhooks.yaml registered for the
benchmark's namespaces.

Then PAIRS interleaved pairs (which side goes first alternates): for each kind of pod
(`plain`: no annotation, nothing selects them; `annotated`: a preferred Gt podAffinity term in
hwaffinity.io/pod-affinity, selecting none of them; with --mutual, all of them), a ReplicaSet
of PODS pods in a fresh namespace, all created (through the admission webhooks) before a
kube-scheduler of their own starts: one with no extender, one with the extender entries of
deploy/webhook/scheduler-config-v1beta1.yaml as shipped (every entry and key; only urlPrefix
and the tlsConfig data point at the process), qps/burst raised. (The annotated pods' terms
are preferred ones: the webhook marks them for /prioritize alone; --versus-both-verbs adds,
in each pair of annotated runs, one through a single entry that calls both verbs for every
mark, the configuration before the mark per verb; --versus-floor one through a do-nothing
extender on the same server stack, which answers [] at once, and one through the same in Go
(floor_extender/, built with the Go toolchain tools/build-kube.sh installs, when found): the
floor of the cost.) So the rate is the
scheduler's over a full queue, not the pace of the pods' creation; it is taken from the first
to the last `Scheduled` event. The webhook's /filter and /prioritize requests and their time
come from its /metrics, its CPU from /proc, both counted while the scheduler runs. Prints each
run, then per kind the medians and ranges and PASS/FAIL against the goals: plain pods keep
>= 95 % of the rate without the extender, annotated pods >= 70 % (median of the pairs'
ratios).
Exit 0: every goal met; 1: a goal missed; 2: not measured.
"""
import argparse
import base64
import copy
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent import futures
from pathlib import Path

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "controlplane"))
import harness  # noqa: E402  (the test suite's control-plane harness)

DEPLOY = os.path.join(ROOT, "deploy", "webhook")
# Client rate limits of every scheduler and of kube-controller-manager, raised (as upstream's
# scheduler_perf does) so that throttling of their API clients does not hide the cost.
API_QPS = 5000
HOST_LABEL = "CIS-node"
NODES_PER_HOST = 4
WEBHOOK_LABEL = "hwaffinity-bench"      # the namespaces the admission webhooks see
PLAIN, EXTENDED = "plain", "extended"   # the two scheduler configurations
# each side's schedulerName: the webhook marks the pods of the extended side's scheduler
# (webhook serve --scheduler-name), as it marks a cluster's scheduler that calls it
SCHEDULERS = {PLAIN: "bench-" + PLAIN, EXTENDED: "bench-" + EXTENDED}
SIDES = {PLAIN: "no extender", EXTENDED: "the shipped extender"}
# --versus-both-verbs: a third side for annotated pods, the shipped entries made one that
# calls both verbs for every mark (the configuration before the mark per verb), under the
# extended side's schedulerName (the webhook marks its pods; one scheduler runs at a time)
BOTH = "both-verbs"
SCHEDULERS[BOTH] = SCHEDULERS[EXTENDED]
SIDES[BOTH] = "one entry, both verbs"
# --versus-floor: another side for annotated pods, the shipped entries pointed at a process
# that answers /prioritize with [] on the webhook's own server (kube.serve: TLS with the same
# certificates and client check, the HTTP reader, the depth check) and does nothing else:
# what any extender on this stack costs the scheduler here, before a decode or a lookup
FLOOR = "floor"
SCHEDULERS[FLOOR] = SCHEDULERS[EXTENDED]
SIDES[FLOOR] = "do-nothing extender"
# and, where a Go toolchain is found, the same in Go (floor_extender/main.go: net/http, TLS,
# HTTP/1.1): the floor whatever an extender is written in
GO_FLOOR = "go-floor"
SCHEDULERS[GO_FLOOR] = SCHEDULERS[EXTENDED]
SIDES[GO_FLOOR] = "do-nothing extender, Go"
GO_FLOOR_SOURCE = os.path.join(HERE, "floor_extender")
KINDS = ("plain", "annotated")          # the two kinds of pod
GOALS = {"plain": 0.95, "annotated": 0.70}
# Preferred affinity to pods whose `rank` is above 3, on the CIS-node: an extended term (Gt),
# so only the extender evaluates it. The annotated pods carry no rank (--mutual: rank 5, so
# that they select each other and /prioritize waits for the binding of the one before).
PREFERRED_GT = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
    "weight": 50, "podAffinityTerm": {
        "topologyKey": HOST_LABEL,
        "labelSelector": {"matchExpressions": [
            {"key": "rank", "operator": "Gt", "values": ["3"]}]}}}]}}
# Seconds each phase may take before the benchmark gives up and says what it waited for.
START_TIMEOUT = 120
NODES_TIMEOUT = 600
SCHEDULE_TIMEOUT = 300
EVENTS_TIMEOUT = 60
NAMESPACE_GONE_TIMEOUT = 180


def cli(*args):
    done = subprocess.run([sys.executable, "-m", "tacker_hwaffinity.cli.main"] + list(args),
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    if done.returncode != 0:
        raise harness.HarnessError("hwaffinity %s failed: %s" % (" ".join(args), done.stderr))
    return done.stdout


# --------------------------------------------------------------------------
# The cluster: nodes, the webhook, its registrations, the two schedulers

def register_nodes(cp, count):
    """COUNT Ready nodes (no kubelet: the node-lifecycle controller is off), 4 per CIS-node
    value, created in parallel; the not-ready taint admission puts on them removed."""
    def one(i):
        name = "node-%05d" % i
        cp.admin.create("/api/v1/nodes", harness.node_object(
            name, {HOST_LABEL: "host-%04d" % (i // NODES_PER_HOST)},
            "127.2.%d.%d" % (i // 250, i % 250 + 1), "4", "32Gi", "110"))
        cp.admin.patch("/api/v1/nodes/" + name, {"spec": {"taints": None}})
    with futures.ThreadPoolExecutor(8) as pool:
        jobs = [pool.submit(one, i) for i in range(count)]
        done, late = futures.wait(jobs, timeout=NODES_TIMEOUT)
        if late:
            for job in late:
                job.cancel()
            raise harness.HarnessError("timed out after %ds registering %d nodes (%d done)"
                                       % (NODES_TIMEOUT, count, len(done)))
        for job in done:
            job.result()


def start_webhook(cp, certs, log):
    """The webhook process as a user bound to deploy/webhook/rbac.yaml's ClusterRole, once its
    caches synced: (process, URL, SSL context)."""
    with open(os.path.join(DEPLOY, "rbac.yaml")) as f:
        role = next(d for d in yaml.safe_load_all(f) if d["kind"] == "ClusterRole")
    cp.admin.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", role,
                     ok=(201, 409))
    kubeconfig = cp.user_kubeconfig("hwaffinity-webhook", "hwaffinity-webhook")
    return harness.serve_webhook(
        ["--kubeconfig", kubeconfig, "--allowed-anti-affinity-key", "kubernetes.io/hostname",
         "--client-ca", str(certs / "ca.crt"), "--client-name", "system:kube-scheduler",
         "--scheduler-name", SCHEDULERS[EXTENDED]],
        certs, log, what="the webhook's caches synced", timeout=START_TIMEOUT)


def start_floor(certs, log):
    """The do-nothing extender (see FLOOR) as a process: (process, https URL)."""
    port = harness.free_port()
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve-floor",
                             str(port), str(certs)], stdout=open(log, "wb"),
                            stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)
    wait_listening(proc, port, log, "the do-nothing extender")
    return proc, "https://127.0.0.1:%d" % port


def start_go_floor(certs, workdir, log):
    """The do-nothing extender in Go as a process: (process, https URL), or None when no
    Go toolchain is found."""
    go = shutil.which("go") or next(iter(sorted(Path("/usr/lib").glob("go-*/bin/go"),
                                                reverse=True)), None)
    if go is None:
        print("no Go toolchain: the Go floor is not measured", flush=True)
        return None
    binary = workdir / "floor_extender"
    done = subprocess.run([str(go), "build", "-o", str(binary), "."], cwd=GO_FLOOR_SOURCE,
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, GOFLAGS="-mod=mod", GO111MODULE="on"))
    if done.returncode != 0:
        raise harness.HarnessError("go build of %s failed: %s" % (GO_FLOOR_SOURCE,
                                                                  done.stderr[-2000:]))
    port = harness.free_port()
    proc = subprocess.Popen([str(binary), str(certs), "127.0.0.1:%d" % port],
                            stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    wait_listening(proc, port, log, "the do-nothing extender in Go")
    return proc, "https://127.0.0.1:%d" % port


def wait_listening(proc, port, log, what):
    def listening():
        assert proc.poll() is None, Path(log).read_text()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False
    harness.wait_until(listening, START_TIMEOUT, what=what)


def serve_floor(port, certs):
    """Answer POST /prioritize with [] on kube.serve's server, as `webhook serve` would
    serve it (its certificates, client CA and name), until killed."""
    sys.path.insert(0, ROOT)
    from tacker_hwaffinity.kube.serve import HealthServer, Route
    certs = Path(certs)
    HealthServer(port, tls=(str(certs / "tls.crt"), str(certs / "tls.key")),
                 client_ca=str(certs / "ca.crt"), client_names=("system:kube-scheduler",),
                 posts={"/prioritize": Route(lambda body: (200, "application/json", b"[]"),
                                             1 << 20, client_cert=True)}).start()
    while True:
        signal.pause()          # SIGTERM (stop_process) ends it


def pointed_at(url, entries):
    """ENTRIES (extenders) with their urlPrefix set to URL."""
    entries = copy.deepcopy(entries)
    for entry in entries:
        entry["urlPrefix"] = url
    return entries


def shipped_extenders(url, certs):
    """The extenders of deploy/webhook/scheduler-config-v1beta1.yaml, every entry and key
    as shipped, their urlPrefix and tlsConfig data pointed at the webhook process."""
    with open(os.path.join(DEPLOY, "scheduler-config-v1beta1.yaml")) as f:
        entries = copy.deepcopy(yaml.safe_load(f)["extenders"])
    data = {"caData": "ca.crt", "certData": "client.crt", "keyData": "client.key"}
    tls = {key: base64.b64encode((certs / name).read_bytes()).decode()
           for key, name in data.items()}
    for entry in entries:
        entry["tlsConfig"] = dict(tls)
    return pointed_at(url, entries)


def scheduler_version(cp):
    out = subprocess.run([cp.bin["kube-scheduler"], "--version"], capture_output=True,
                         text=True, timeout=30).stdout.strip()
    return out.split()[-1] if out else "unknown"


# --------------------------------------------------------------------------
# One run: a ReplicaSet of pods of one kind through one scheduler

def pod_object(name, scheduler, annotations=None, labels=None):
    """A pod as upstream's scheduler_perf makes them (100m, 500Mi), deleted at once."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": dict(labels or {}),
                         "annotations": dict(annotations or {})},
            "spec": {"schedulerName": scheduler, "automountServiceAccountToken": False,
                     "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "registry.invalid/pause",
                                     "resources": {"requests": {"cpu": "100m",
                                                                "memory": "500Mi"}}}]}}


def replica_set(kind, scheduler, replicas, mutual):
    labels = {"app": "bench-" + kind}
    annotations = {}
    if kind == "annotated":
        if mutual:
            labels["rank"] = "5"
        annotations["hwaffinity.io/pod-affinity"] = json.dumps(PREFERRED_GT)
    template = pod_object(None, scheduler, annotations, labels)
    del template["metadata"]["name"]
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "bench"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": labels["app"]}},
                     "template": {"metadata": template["metadata"], "spec": template["spec"]}}}


class Webhook:
    """The webhook process's counters: its /metrics and its CPU time."""

    def __init__(self, proc, url, context):
        self.proc, self.url, self.context = proc, url, context

    def sample(self):
        """{name: value}: requests per path, /filter's summed seconds, CPU seconds."""
        with urllib.request.urlopen(self.url + "/metrics", context=self.context,
                                    timeout=10) as r:
            text = r.read().decode()
        out = {"cpu": cpu_seconds(self.proc.pid)}
        for line in text.splitlines():
            m = re.match(r'hwaffinity_webhook_(requests_total|request_seconds_sum|'
                         r'request_seconds_count)\{(.*)\} (\S+)$', line)
            if m:
                path = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))["path"]
                key = (m.group(1), path)
                out[key] = out.get(key, 0.0) + float(m.group(3))
        return out


def cpu_seconds(pid):
    """utime + stime of process PID (seconds)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scheduled_times(cp, ns):
    """The Scheduled events' eventTime (seconds), sorted."""
    events = cp.admin.get("/apis/events.k8s.io/v1/namespaces/%s/events" % ns,
                          fieldSelector="reason=Scheduled")["items"]
    return sorted(datetime.datetime.strptime(e["eventTime"].rstrip("Z")[:26],
                                             "%Y-%m-%dT%H:%M:%S.%f").timestamp()
                  for e in events if e.get("eventTime"))


def all_scheduled(cp, ns, pods):
    """The Scheduled events' times once there is one per pod, else None."""
    times = scheduled_times(cp, ns)
    return times if len(times) >= pods else None


def wait_bound(cp, ns, pods, scheduler):
    def bound():
        items = cp.pods(ns)
        return sum(1 for p in items if p["spec"].get("nodeName")) >= pods
    try:
        harness.wait_until(bound, SCHEDULE_TIMEOUT, interval=0.25,
                           what="%d pods bound by %s in %s" % (pods, scheduler, ns))
    except harness.HarnessError as e:
        raise harness.HarnessError("%s; %s" % (e, pending_reason(cp, ns))) from None


def pending_reason(cp, ns):
    """How many pods wait, and why one of them does (its PodScheduled condition)."""
    items = cp.pods(ns)
    waiting = [p for p in items if not p["spec"].get("nodeName")]
    for p in waiting:
        for c in p.get("status", {}).get("conditions") or []:
            if c["type"] == "PodScheduled" and c["status"] == "False":
                return "%d of %d pods pending, e.g. %s: %s" % (
                    len(waiting), len(items), p["metadata"]["name"], c.get("message"))
    return "%d of %d pods pending (no condition yet)" % (len(waiting), len(items))


def delete_namespace(cp, ns):
    cp.delete_namespace(ns)

    def gone():
        status, _ = cp.admin.request("GET", "/api/v1/namespaces/" + ns, ok=(200, 404))
        return status == 404
    harness.wait_until(gone, NAMESPACE_GONE_TIMEOUT, interval=0.5,
                       what="namespace %s deleted" % ns)


def run(cp, webhook, kind, side, extenders, pods, name, mutual):
    """One ReplicaSet of PODS pods of KIND in a fresh namespace NAME, all created first, then
    scheduled by a kube-scheduler of their own (SIDE's schedulerName, with EXTENDERS) started
    once they are: {rate, seconds, cpu_ms, filter, prioritize (per pod), filter_ms,
    prioritize_ms (their mean time in the handler)}."""
    ns = cp.create_namespace(name, labels={WEBHOOK_LABEL: "yes"})
    scheduler = None
    try:
        cp.admin.create("/apis/apps/v1/namespaces/%s/replicasets" % ns,
                        replica_set(kind, SCHEDULERS[side], pods, mutual))
        harness.wait_until(lambda: len(cp.pods(ns)) >= pods, SCHEDULE_TIMEOUT, interval=0.25,
                           what="%d pods created in %s" % (pods, ns))
        before = webhook.sample()
        scheduler = cp.start_scheduler(SCHEDULERS[side], extenders, START_TIMEOUT, API_QPS,
                                       API_QPS)
        wait_bound(cp, ns, pods, SCHEDULERS[side])
        after = webhook.sample()
        times = harness.wait_until(lambda: all_scheduled(cp, ns, pods), EVENTS_TIMEOUT,
                                   what="%d Scheduled events in %s" % (pods, ns))
    finally:
        if scheduler is not None:
            scheduler.stop()
        delete_namespace(cp, ns)

    def grew(key):
        return after.get(key, 0.0) - before.get(key, 0.0)

    def mean_ms(path):
        count = grew(("request_seconds_count", path))
        return grew(("request_seconds_sum", path)) * 1000 / count if count else None
    seconds = max(times[-1] - times[0], 1e-6)
    return {"rate": (len(times) - 1) / seconds, "seconds": seconds,
            "cpu_ms": grew("cpu") * 1000 / pods,
            "filter": grew(("requests_total", "/filter")) / pods,
            "prioritize": grew(("requests_total", "/prioritize")) / pods,
            "filter_ms": mean_ms("/filter"), "prioritize_ms": mean_ms("/prioritize")}


# --------------------------------------------------------------------------
# Report

def spread(values, fmt="%.0f"):
    """'median [min-max]' of VALUES."""
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return (fmt + " [" + fmt + "-" + fmt + "]") % (statistics.median(values), min(values),
                                                   max(values))


def describe(result):
    def ms(value):
        return "-" if value is None else "%.2f ms" % value
    return ("%.0f pods/s (%.2f s first to last Scheduled); webhook CPU %.2f ms/pod; /filter "
            "%.2f/pod, /prioritize %.2f/pod; mean /filter %s, /prioritize %s"
            % (result["rate"], result["seconds"], result["cpu_ms"], result["filter"],
               result["prioritize"], ms(result["filter_ms"]), ms(result["prioritize_ms"])))


def summarize(kind, pairs):
    """Print KIND's summary over PAIRS ([{plain: result, extended: result}]); True when its
    goal holds."""
    without = [p[PLAIN]["rate"] for p in pairs]
    with_ = [p[EXTENDED]["rate"] for p in pairs]
    ratios = [w / wo * 100 for w, wo in zip(with_, without)]
    added = [1000 / w - 1000 / wo for w, wo in zip(with_, without)]
    ok = statistics.median(ratios) >= GOALS[kind] * 100
    print("%s pods (median [min-max] over %d pairs):" % (kind, len(pairs)))
    print("  rate without the extender: %s pods/s" % spread(without))
    print("  rate with the extender:    %s pods/s" % spread(with_))
    print("  ratio with/without:        %s %%" % spread(ratios))
    print("  added per pod:             %s ms" % spread(added, "%.2f"))
    for side in (s for s in (PLAIN, EXTENDED, BOTH, FLOOR, GO_FLOOR) if s in pairs[0]):
        runs = [p[side] for p in pairs]
        print("  webhook, %-21s CPU %s ms/pod; /filter %s/pod, /prioritize %s/pod; "
              "mean /filter %s ms, /prioritize %s ms"
              % tuple([SIDES[side] + ":"] + [spread([r[key] for r in runs], "%.2f") for key in
                                             ("cpu_ms", "filter", "prioritize", "filter_ms",
                                              "prioritize_ms")]))
    for side in (s for s in (BOTH, FLOOR, GO_FLOOR) if s in pairs[0]):
        other = [p[side]["rate"] for p in pairs]
        print("  %s: ratio %s %%, added per pod %s ms; the shipped extender's rate against "
              "it %s %%" % (SIDES[side], spread([b / wo * 100 for b, wo in zip(other, without)]),
                            spread([1000 / b - 1000 / wo for b, wo in zip(other, without)],
                                   "%.2f"),
                            spread([w / b * 100 for w, b in zip(with_, other)])))
    print("  goal: median ratio >= %.0f %%: %s" % (GOALS[kind] * 100, "PASS" if ok else "FAIL"))
    return ok


# --------------------------------------------------------------------------
# The benchmark

def both_verbs(shipped):
    """SHIPPED's entries as one entry that calls /filter and /prioritize for every mark."""
    (entry,) = [copy.deepcopy(e) for e in shipped if "filterVerb" in e and "prioritizeVerb" in e]
    entry["managedResources"] = [m for e in shipped for m in e["managedResources"]]
    return [entry]


def measure(cp, webhook, shipped, args, floors=()):
    """{kind: [{plain: result, extended: result[, both-verbs: result][, floor: result,
    go-floor: result]}, ...]}, the runs interleaved (which side goes first turns with each
    pair). FLOORS: {floor side: its do-nothing extender's URL}, for --versus-floor."""
    extenders = {PLAIN: [], EXTENDED: shipped, BOTH: both_verbs(shipped)}
    for side, url in dict(floors).items():
        extenders[side] = pointed_at(url, shipped)
    for kind in KINDS:                       # warm-up of the webhook; not counted
        run(cp, webhook, kind, EXTENDED, extenders[EXTENDED], min(args.pods, 20),
            "warm-" + kind, args.mutual)
    print("warm-up done (20 pods of each kind through the extender)", flush=True)
    results = {kind: [] for kind in KINDS}
    sides = {kind: (PLAIN, EXTENDED) for kind in KINDS}
    if args.versus_both_verbs:
        sides["annotated"] += (BOTH,)
    sides["annotated"] += tuple(side for side in (FLOOR, GO_FLOOR) if side in floors)
    count, total = 0, args.pairs * sum(len(s) for s in sides.values())
    for i in range(args.pairs):
        for kind in KINDS:
            turn = i % len(sides[kind])
            order = sides[kind][turn:] + sides[kind][:turn]
            pair = {}
            for side in order:
                count += 1
                pair[side] = result = run(cp, webhook, kind, side, extenders[side], args.pods,
                                          "run-%d-%s-%s" % (i + 1, kind, side), args.mutual)
                print("run %d/%d (pair %d) %s pods, %s: %s"
                      % (count, total, i + 1, kind, SIDES[side], describe(result)), flush=True)
            results[kind].append(pair)
    return results


def benchmark(args, binaries, workdir):
    cp = harness.ControlPlane(binaries, run_dir=str(workdir / "controlplane"),
                              node_lifecycle=False, api_qps=API_QPS)
    webhook, floors, processes = None, {}, []
    try:
        cp.start(timeout=START_TIMEOUT)
        t0 = time.monotonic()
        register_nodes(cp, args.nodes)
        print("%d nodes registered in %.0f s" % (args.nodes, time.monotonic() - t0), flush=True)
        certs = workdir / "certs"
        bundle = cli("webhook", "certs", "--ip", "127.0.0.1", "--out", str(certs)).strip()
        bundle = bundle.split("caBundle: ", 1)[1]
        proc, url, context = start_webhook(cp, certs, workdir / "webhook.log")
        webhook = Webhook(proc, url, context)
        harness.register_webhooks(cp, url, bundle, {WEBHOOK_LABEL: "yes"})
        print("machine: %d cores, %s, Python %s, kube-scheduler %s; webhook pid %d"
              % (os.cpu_count() or 0, platform.machine(), platform.python_version(),
                 scheduler_version(cp), proc.pid), flush=True)
        if args.versus_floor:
            for side, start in ((FLOOR, lambda: start_floor(certs, workdir / "floor.log")),
                                (GO_FLOOR, lambda: start_go_floor(certs, workdir,
                                                                  workdir / "go-floor.log"))):
                started = start()
                if started is not None:
                    processes.append(started[0])
                    floors[side] = started[1]
        return measure(cp, webhook, shipped_extenders(url, certs), args, floors)
    finally:
        if webhook is not None:
            stop_process(webhook.proc)
        for proc in processes:
            stop_process(proc)
        cp.stop(keep_logs=False)


def stop_process(proc):
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(15)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=300, help="pods per run")
    ap.add_argument("--pairs", type=int, default=5, help="interleaved pairs per kind of pod")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke test: 100 nodes, 40 pods, 1 pair (overrides the three)")
    ap.add_argument("--mutual", action="store_true",
                    help="annotated pods select each other (their /prioritize waits for the "
                         "binding of the pods before them)")
    ap.add_argument("--versus-both-verbs", action="store_true",
                    help="annotated pods also through one entry that calls both verbs for "
                         "every mark (the configuration before the mark per verb), "
                         "interleaved with the other sides")
    ap.add_argument("--versus-floor", action="store_true",
                    help="annotated pods also through a do-nothing extender on the same "
                         "server stack (answers [] at once) and one in Go (when a Go toolchain "
                         "is found), interleaved with the other sides")
    args = ap.parse_args(argv)
    if args.quick:
        args.nodes, args.pods, args.pairs = 100, 40, 1
    if args.pods < 2 or args.pairs < 1 or args.nodes < 1:
        ap.error("need --pods >= 2, --pairs >= 1 and --nodes >= 1")
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve-floor"]:           # the do-nothing extender's process
        return serve_floor(int(argv[1]), argv[2])
    args = parse_args(argv)
    binaries = harness.find_binaries()
    if binaries is None:
        print(harness.BUILD_HINT, file=sys.stderr)
        return 2
    # SIGTERM ends the run like Ctrl-C: the finally blocks stop every process
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))
    print("measuring: %d nodes (%d per %s value), %d pods per run, created before their "
          "kube-scheduler starts; %d interleaved pairs per kind of pod (%s), each a run with no "
          "extender and one with deploy/webhook/scheduler-config-v1beta1.yaml's; client "
          "qps/burst %d; annotated pods %s" % (
              args.nodes, NODES_PER_HOST, HOST_LABEL, args.pods, args.pairs, ", ".join(KINDS),
              API_QPS, "select each other" if args.mutual else "select none of the pods"),
          flush=True)
    workdir = Path(tempfile.mkdtemp(prefix="hwaffinity-bench-extender-"))
    try:
        results = benchmark(args, binaries, workdir)
    except harness.HarnessError as e:
        print("not measured: %s" % e, file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    ok = [summarize(kind, results[kind]) for kind in KINDS]
    print("result: %s" % ("PASS" if all(ok) else "FAIL"))
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
