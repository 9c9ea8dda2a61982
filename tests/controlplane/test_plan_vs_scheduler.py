"""`hwaffinity plan` must predict what the real kube-scheduler does.

For each scenario: set up existing pods, take a snapshot exactly as
`kubectl get nodes,pods,namespaces -A -o yaml` prints it, run the CLI on the
snapshot and the workload files, then create the same workloads in the real
cluster and compare. kube-scheduler breaks score ties at random and names
controller pods at random, so the comparison is by pod count per compute host
and by which (bare) pods stay Pending; nodes are compared only where the
rules leave one choice.
"""
import collections
import json
import os
import subprocess
import sys

import pytest
import yaml

from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL

from . import harness
from . import workloads as w

pytestmark = pytest.mark.controlplane

KEY = DEFAULT_HOST_LABEL
HOSTNAME = "kubernetes.io/hostname"


def _anti(mode, labels, key=KEY):
    return w.affinity("anti", mode, key, labels)


def _aff(mode, labels, key=KEY):
    return w.affinity("affinity", mode, key, labels)


def _node_affinity_in(values):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": KEY, "operator": "In", "values": list(values)}]}]}}}


def _pods(ns, prefix, n, labels, **kw):
    return [w.pod("%s-%d" % (prefix, i), ns, labels, **kw) for i in range(n)]


# Each scenario: (setup pods pinned to a node, workload objects, expectation)
# expectation: counts {host: n}, pending count, optional unique nodes.
def scenario_required_anti_pods(ns):
    return [], _pods(ns, "spread", 4, {"app": "spread"}, aff=_anti("required", {"app": "spread"}))


def scenario_required_anti_deployment(ns):
    labels = {"app": "web"}
    return [], [w.deployment("web", ns, 4, labels, aff=_anti("required", labels))]


def scenario_required_anti_existing_pod(ns):
    setup = [w.pod("blocker", ns, {"app": "db"}, node_selector={HOSTNAME: "worker-1"})]
    return setup, _pods(ns, "db", 3, {"app": "db"}, aff=_anti("required", {"app": "db"}))


def scenario_required_affinity(ns):
    setup = [w.pod("db", ns, {"app": "db"}, node_selector={HOSTNAME: "worker-2"})]
    return setup, _pods(ns, "front", 3, {"app": "front"}, aff=_aff("required", {"app": "db"}))


def scenario_required_affinity_same_node(ns):
    setup = [w.pod("db", ns, {"app": "db"}, node_selector={HOSTNAME: "worker-3"})]
    return setup, _pods(ns, "cache", 2, {"app": "cache"},
                        aff=_aff("required", {"app": "db"}, key=HOSTNAME))


def scenario_required_affinity_no_match(ns):
    return [], _pods(ns, "orphan", 2, {"app": "orphan"}, aff=_aff("required", {"app": "nothing"}))


def scenario_preferred_anti(ns):
    return [], _pods(ns, "soft", 3, {"app": "soft"}, aff=_anti("preferred", {"app": "soft"}))


def scenario_preferred_affinity(ns):
    setup = [w.pod("db", ns, {"app": "db"}, node_selector={HOSTNAME: "worker-3"})]
    return setup, _pods(ns, "near", 3, {"app": "near"}, aff=_aff("preferred", {"app": "db"}))


def scenario_anti_with_node_affinity(ns):
    aff = _anti("required", {"app": "pair"})
    aff.update(_node_affinity_in(["host-a", "host-b"]))
    return [], _pods(ns, "pair", 3, {"app": "pair"}, aff=aff)


def scenario_spread_deployment(ns):
    labels = {"app": "amf"}
    return [], [w.deployment("amf", ns, 6, labels, spread=[w.spread(KEY, labels)])]


def scenario_spread_existing_pods(ns):
    """Two pods already on host-a count: the four new replicas go 2/2 to host-b and host-c."""
    old = {"app": "sp", "role": "old"}
    setup = [w.pod("old-%d" % i, ns, old, node_selector={HOSTNAME: "worker-1"})
             for i in range(2)]
    new = {"app": "sp", "role": "new"}
    return setup, [w.deployment("sp", ns, 4, new, spread=[w.spread(KEY, {"app": "sp"})])]


def scenario_spread_with_node_affinity(ns):
    """Only host-a and host-b pass the node affinity, so only they are domains."""
    labels = {"app": "na"}
    return [], _pods(ns, "na", 4, labels, aff=_node_affinity_in(["host-a", "host-b"]),
                     spread=[w.spread(KEY, labels)])


def _shipped(path):
    """The Deployments of a shipped manifest, moved to the test's namespace."""
    def build(ns):
        with open(os.path.join(ROOT, path)) as f:
            docs = [d for d in yaml.safe_load_all(f) if d and d.get("kind") == "Deployment"]
        for d in docs:
            d["metadata"]["namespace"] = ns
        return [], docs
    return build


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCENARIOS = {
    # name: (builder, expected counts per host, expected pending, unique nodes)
    "required-anti-pods": (scenario_required_anti_pods,
                           {"host-a": 1, "host-b": 1, "host-c": 1}, ["spread-3"], None),
    "required-anti-deployment": (scenario_required_anti_deployment,
                                 {"host-a": 1, "host-b": 1, "host-c": 1}, 1, None),
    "required-anti-existing-pod": (scenario_required_anti_existing_pod,
                                   {"host-b": 1, "host-c": 1}, ["db-2"], None),
    "required-affinity": (scenario_required_affinity, {"host-b": 3}, [], None),
    "required-affinity-same-node": (scenario_required_affinity_same_node, {"host-c": 2}, [],
                                    {"cache-0": "worker-3", "cache-1": "worker-3"}),
    "required-affinity-no-match": (scenario_required_affinity_no_match, {},
                                   ["orphan-0", "orphan-1"], None),
    "preferred-anti": (scenario_preferred_anti, {"host-a": 1, "host-b": 1, "host-c": 1}, [], None),
    "preferred-affinity": (scenario_preferred_affinity, {"host-c": 3}, [], None),
    "anti-with-node-affinity": (scenario_anti_with_node_affinity,
                                {"host-a": 1, "host-b": 1}, ["pair-2"], None),
    # PodTopologySpread DoNotSchedule: the counts per domain are the rule's, not luck's
    "spread-deployment": (scenario_spread_deployment,
                          {"host-a": 2, "host-b": 2, "host-c": 2}, 0, None),
    "spread-existing-pods": (scenario_spread_existing_pods, {"host-b": 2, "host-c": 2}, 0,
                             None),
    "spread-with-node-affinity": (scenario_spread_with_node_affinity,
                                  {"host-a": 2, "host-b": 2}, [], None),
    # the shipped manifests: the VNF-B package's AMF (spread) and the README's samples
    "spread-vnf-b-amf": (_shipped("csar/cnf/Files/kubernetes/amf.yaml"),
                         {"host-a": 2, "host-b": 2, "host-c": 2}, 0, None),
    "sample-upf-required": (_shipped("samples/cnf/upf-required.yaml"),
                            {"host-a": 1, "host-b": 1, "host-c": 1}, 0, None),
    "sample-smf-preferred": (_shipped("samples/cnf/smf-preferred.yaml"),
                             {"host-a": 2, "host-b": 2, "host-c": 2}, 0, None),
}


def run_plan(cluster_file, workload_files):
    cmd = [sys.executable, "-m", "tacker_hwaffinity.cli.main", "plan",
           "--cluster", cluster_file] + list(workload_files) + [
           "--topology-key", KEY, "-o", "json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), "hwaffinity plan exited %s: %s" % (
        proc.returncode, proc.stderr[-2000:])
    try:
        return proc.returncode, json.loads(proc.stdout)
    except ValueError:
        pytest.fail("hwaffinity plan printed no JSON: %r / %s" % (proc.stdout[:500],
                                                                  proc.stderr[-1000:]))


def plan_summary(result, namespace, skip_names):
    counts = collections.Counter()
    pending, nodes = [], {}
    for p in result["placements"]:
        ns, _, name = p["pod"].partition("/")
        if ns != namespace or name in skip_names:
            continue
        if p["node"]:
            counts[p["domain"]] += 1
            nodes[name] = p["node"]
        else:
            pending.append(name)
    return dict(counts), sorted(pending), nodes


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_plan_matches_real_scheduler(name, control_plane, host_nodes, namespace, tmp_path):
    cp = control_plane
    builder, want_counts, want_pending, unique_nodes = SCENARIOS[name]
    setup, objs = builder(namespace)
    for obj in setup:
        assert w.create_and_wait(cp, obj).startswith("bound:"), obj["metadata"]["name"]

    cluster_file = tmp_path / "cluster.yaml"
    cluster_file.write_text(cp.snapshot_yaml())
    files = []
    for i, obj in enumerate(objs):
        f = tmp_path / ("%02d-%s.yaml" % (i, obj["metadata"]["name"]))
        f.write_text(yaml.safe_dump(obj, sort_keys=False))
        files.append(str(f))

    # The real scheduler, same order as the files.
    real_pods = []
    for obj in objs:
        if obj["kind"] == "Pod":
            w.create_and_wait(cp, obj)
        else:
            w.create(cp, obj)
            match = obj["spec"]["selector"]["matchLabels"]
            selector = ",".join("%s=%s" % kv for kv in match.items())
            real_pods += w.settle(cp, namespace, selector, obj["spec"]["replicas"])
    setup_names = {o["metadata"]["name"] for o in setup}
    real_pods += [p for p in cp.pods(namespace)
                  if p["metadata"].get("ownerReferences") is None
                  and p["metadata"]["name"] not in setup_names]
    real_counts, real_pending = w.domains_of(real_pods, host_nodes)
    real_nodes = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in real_pods}

    # First: the real scheduler behaves as the scenario says (so the scenario
    # really is decided by the affinity rules) ...
    real = "scenario %s: real %s pending %s" % (name, real_counts, real_pending)
    assert real_counts == want_counts, real
    if isinstance(want_pending, int):          # controller pods: names are random
        assert len(real_pending) == want_pending, real
    else:
        assert real_pending == want_pending, real
    for pod_name, node in (unique_nodes or {}).items():
        assert real_nodes[pod_name] == node, real
    for pod_name in real_pending:
        harness.wait_until(lambda: cp.events(namespace, "FailedScheduling", pod_name), 20,
                           what="FailedScheduling event for %s" % pod_name)

    # ... then: the plan, made from the snapshot taken before, predicts it.
    code, result = run_plan(str(cluster_file), files)
    plan_counts, plan_pending, plan_nodes = plan_summary(result, namespace, setup_names)
    detail = "%s; plan %s pending %s" % (real, plan_counts, plan_pending)
    assert plan_counts == real_counts, detail
    if isinstance(want_pending, int):
        assert len(plan_pending) == len(real_pending), detail
    else:
        assert plan_pending == real_pending, detail
    assert code == (1 if real_pending else 0), detail
    for pod_name, node in (unique_nodes or {}).items():
        assert plan_nodes.get(pod_name) == node, detail
    domains = result.get("domains")
    assert isinstance(domains, dict), result
    for value, pods in domains.items():
        mine = [p for p in pods if p.startswith(namespace + "/")
                and p.split("/", 1)[1] not in setup_names]
        assert len(mine) == real_counts.get(value, 0), detail + "; domains %s" % domains
