"""Benchmark: the driver's instantiate_end with 200 workers and injected latency.

OpenStack: Keystone, Heat and Nova answers replayed over HTTP on 127.0.0.1
from JSON captured on the real harness (tests/mgmt/openstack_replay.py),
each answer delayed 20 ms. Kubernetes: a kubectl runner that charges 100 ms
per SSH connection set-up and 30 ms per remote command, and answers with
Node objects in kubectl's JSON (the cluster side is measured for real in
tests/mgmt; here only its round trips matter).

"ours" is ``lifecycle.run`` (the driver's code path: Heat resource list with
nested_depth=2, one Nova server list, one connection, get + one apply).
"reference" is the pattern of Tacker's sample driver under the same latency:
one connection, then per worker one Heat GET (the member's server resource)
and one ``kubectl label`` command. Goal: ours under 2 s. Exit 1 if over.

    python benchmarks/bench_mgmt.py [--workers 200] [--rounds 3]
"""
import argparse
import json
import logging
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from mgmt import openstack_replay as replay  # noqa: E402
from tacker_hwaffinity.labeling import params as parameters  # noqa: E402
from tacker_hwaffinity.mgmt import lifecycle  # noqa: E402
from tacker_hwaffinity.openstack import OpenStack, session  # noqa: E402

GOAL = 2.0
OS_LATENCY, SSH_CONNECT, SSH_COMMAND = 0.020, 0.100, 0.030


class SlowKubectl:
    """kubectl over a simulated SSH link: latency only, real JSON shapes."""

    where = "simulated SSH"

    def __init__(self, nodes):
        time.sleep(SSH_CONNECT)
        self.connections, self.commands = 1, 0
        self.nodes = nodes  # name -> (ip, labels)

    def _doc(self, names):
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": n, "labels": dict(self.nodes[n][1])},
             "status": {"addresses": [{"type": "InternalIP", "address": self.nodes[n][0]}]}}
            for n in names]})

    def run(self, argv, stdin=None, timeout=None):
        time.sleep(SSH_COMMAND)
        self.commands += 1
        if argv[1:3] == ["get", "nodes"]:
            return 0, self._doc(sorted(self.nodes)), ""
        if argv[1] == "apply":
            items = json.loads(stdin)["items"]
            for item in items:
                self.nodes[item["metadata"]["name"]][1].update(item["metadata"]["labels"])
            return 0, self._doc([i["metadata"]["name"] for i in items]), ""
        if argv[1] == "label":
            key, value = argv[4].split("=", 1)
            self.nodes[argv[3]][1][key] = value
            return 0, "node/%s labeled" % argv[3], ""
        return 1, "", "unexpected %s" % argv[1]

    def close(self):
        pass


def _nodes(servers):
    return {"node-%d" % i: (s["addresses"]["private"][0]["addr"], {})
            for i, s in enumerate(servers) if s["name"].startswith("worker-")}


def ours(cloud, params, servers, stack_id):
    runners = []

    def connect(ctx, inv):
        runners.append(SlowKubectl(_nodes(servers)))
        return runners[0]
    os_ = OpenStack(session(cloud.access()), retries=0)
    job = lifecycle.Job("instantiate_end", params, stack_id=stack_id)
    start = time.perf_counter()
    report = lifecycle.run(job, logging.getLogger("bench"), openstack=os_, connect=connect)
    took = time.perf_counter() - start
    assert len(report["workers"]) == len(_nodes(servers)) and not any(
        w["error"] for w in report["workers"])
    return took, os_.calls, runners[0].connections, runners[0].commands


def reference(cloud, params, servers, stack_id):
    """One connection; per worker a Heat GET of its server and a kubectl label."""
    from tacker_hwaffinity.labeling import inventory
    os_ = OpenStack(session(cloud.access()), retries=0)
    start = time.perf_counter()
    kube = SlowKubectl(_nodes(servers))
    top = os_.stack_resources(stack_id, nested_depth=0)
    group = next(r for r in top if r["resource_name"] == "worker_instance")
    members = os_.stack_resources(group["physical_resource_id"], nested_depth=0)
    by_ip = {ip: n for n, (ip, _) in kube.nodes.items()}
    nova = {s["id"]: s for s in servers}
    for m in members:
        server = os_.resource(m["physical_resource_id"], "workerNode")
        s = nova[server["physical_resource_id"]]  # attributes as Heat would show them
        ip = inventory.addresses(s)[0]
        kube.run(["kubectl", "label", "nodes", by_ip[ip], "CIS-node=%s" % s[
            "OS-EXT-SRV-ATTR:host"]])
    return time.perf_counter() - start, os_.calls, kube.connections, kube.commands


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    resources, servers, stack_id = replay.scaled(args.workers)  # one host each
    params = parameters.parse({"k8s_cluster_installation_param": {
        "worker_node": {"aspect_id": "worker_instance"}},
        "hwaffinity_param": {"openstack": {"retries": 0}}})
    print("machine: %s, %d cores, Python %s" % (platform.processor() or platform.machine(),
                                                os.cpu_count(), platform.python_version()))
    print("latency: %d ms per OpenStack call, %d ms per SSH connection, %d ms per command"
          % (OS_LATENCY * 1000, SSH_CONNECT * 1000, SSH_COMMAND * 1000))
    rows = {}
    with replay.ReplayCloud(resources, servers, stack_id, latency=OS_LATENCY) as cloud:
        for name, fn in (("ours", ours), ("reference", reference)):
            runs = [fn(cloud, params, servers, stack_id) for _ in range(args.rounds)]
            rows[name] = (statistics.median(r[0] for r in runs),) + runs[-1][1:]
    for name, (took, calls, conns, cmds) in rows.items():
        print("%-10s %d workers: %.3f s median of %d; OpenStack calls %d, SSH connections %d,"
              " remote commands %d" % (name, args.workers, took, args.rounds, calls, conns,
                                       cmds))
    ratio = rows["reference"][0] / rows["ours"][0]
    ok = rows["ours"][0] < GOAL
    print("reference/ours: %.1fx; goal ours < %.1f s: %s" % (ratio, GOAL, "OK" if ok
                                                               else "MISSED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
