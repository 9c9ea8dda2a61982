"""Probe: how many TCP (and so TLS) connections the real kube-scheduler opens to the extender.

Starts the test control plane (``tests/controlplane/harness.py``: kube-apiserver, etcd,
kube-scheduler v1.20.2 binaries), ``hwaffinity webhook serve`` as a process over HTTPS with
client certificates (as ``tests/controlplane/test_webhook.py`` runs it), and a second
kube-scheduler whose extender is that process (the shipped settings: ``nodeCacheCapable``,
``enableHTTPS``, a client certificate). Then it creates --pods pods for that scheduler, one
in --annotated-every with a preferred ``Gt`` term (so both /filter and /prioritize are asked),
waits for all of them to be bound, and counts, with ``ss``, the distinct client ports that
connected to the webhook's port (open or in TIME-WAIT on either side), against the
requests the webhook counted on its /metrics.

    python benchmarks/probe_extender_connections.py [--nodes 20] [--pods 60]

Kept-alive: one connection (or a few, Go's idle pool keeps two per host) for every pod;
one connection per request would show as about as many ports as requests.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
sys.path.insert(0, os.path.join(ROOT, "tests", "controlplane"))
import harness  # noqa: E402

SCHEDULER = "hw-probe"


def _ports(port):
    """The client ports of every TCP connection to PORT on 127.0.0.1 that ss still shows."""
    out = subprocess.run(["ss", "-tanH", "( sport = :%d or dport = :%d )" % (port, port)],
                         capture_output=True, text=True, check=True).stdout
    found = set()
    for line in out.splitlines():
        cols = line.split()
        if len(cols) < 5 or cols[0] == "LISTEN":
            continue
        local, peer = cols[3].rsplit(":", 1), cols[4].rsplit(":", 1)
        found.add(int(peer[1]) if int(local[1]) == port else int(local[1]))
    return found


def _requests(url, context):
    with urllib.request.urlopen(url + "/metrics", context=context, timeout=5) as r:
        text = r.read().decode()
    got = {}
    for path, n in re.findall(r'hwaffinity_webhook_requests_total\{outcome="[a-z]+",'
                              r'path="(/[a-z]+)"\} ([0-9.e+]+)', text):
        got[path] = got.get(path, 0) + int(float(n))
    return got


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--pods", type=int, default=60)
    ap.add_argument("--annotated-every", type=int, default=2)
    args = ap.parse_args(argv)
    binaries = harness.find_binaries()
    if binaries is None:
        print(harness.BUILD_HINT, file=sys.stderr)
        return 2
    cp = harness.ControlPlane(binaries)
    certs = tempfile.mkdtemp(prefix="probe-certs-")
    proc = None
    try:
        cp.start(timeout=90)
        r = subprocess.run([sys.executable, "-m", "tacker_hwaffinity.cli.main", "webhook",
                            "certs", "--out", certs, "--ip", "127.0.0.1"],
                           capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert r.returncode == 0, r.stderr
        for i in range(args.nodes):
            cp.add_node("probe-%d" % i, {"CIS-node": "h%d" % i, "zone": "z%d" % (i % 4)},
                        wait=False)
        proc, url, context = harness.serve_webhook(
            ["--kubeconfig", cp.kubeconfig, "--client-ca", os.path.join(certs, "ca.crt"),
             "--client-name", "system:kube-scheduler"],
            _Path(certs), _Path(certs) / "webhook.log", what="the webhook's caches synced")
        port = int(url.rsplit(":", 1)[1])
        sched = cp.start_scheduler(SCHEDULER, [{
            "urlPrefix": url, "filterVerb": "filter", "prioritizeVerb": "prioritize",
            "weight": 1, "nodeCacheCapable": True, "ignorable": False, "enableHTTPS": True,
            "httpTimeout": "5s", "tlsConfig": {
                "caFile": os.path.join(certs, "ca.crt"),
                "certFile": os.path.join(certs, "client.crt"),
                "keyFile": os.path.join(certs, "client.key")}}])
        for i in range(args.nodes):
            cp.wait_node_schedulable("probe-%d" % i)
        ns = cp.create_namespace("probe")
        before = _requests(url, context)
        earlier = _ports(port)              # start-up's probes and that /metrics read
        seen = set()
        pref = json.dumps({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {
                "matchExpressions": [{"key": "n", "operator": "Gt", "values": ["3"]}]}}}]}})
        t0 = time.monotonic()
        for i in range(args.pods):
            ann = {"hwaffinity.io/pod-affinity": pref} if i % args.annotated_every == 0 else {}
            cp.admin.create("/api/v1/namespaces/%s/pods" % ns, {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p-%d" % i, "labels": {"n": str(i)}, "annotations": ann},
                "spec": {"schedulerName": SCHEDULER, "automountServiceAccountToken": False,
                         "containers": [{"name": "c", "image": "registry.invalid/pause"}]}})
            seen |= _ports(port)
        harness.wait_until(lambda: all(p["spec"].get("nodeName") for p in cp.pods(ns)), 120,
                           what="%d pods bound" % args.pods)
        took = time.monotonic() - t0
        seen |= _ports(port)
        seen -= earlier
        after = _requests(url, context)
        asked = {p: after.get(p, 0) - before.get(p, 0) for p in ("/filter", "/prioritize")}
        print("kube-scheduler %s: %d pods bound in %.1f s; /filter %d, /prioritize %d requests"
              % (os.path.basename(binaries["kube-scheduler"]), args.pods, took,
                 asked["/filter"], asked["/prioritize"]))
        print("connections kube-scheduler opened to the webhook for them: %d" % len(seen))
        sched.stop()
        return 0
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(15)
        cp.stop(keep_logs=False)


class _Path(str):
    def __truediv__(self, name):
        return _Path(os.path.join(self, name))

    def read_text(self):
        with open(self) as f:
            return f.read()


if __name__ == "__main__":
    sys.exit(main())
