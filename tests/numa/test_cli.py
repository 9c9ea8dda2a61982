"""hwaffinity numa explain / plan end to end."""
import json
import os
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings, strategies as st

from tacker_hwaffinity.cli.main import main

from .conftest import DATA

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, "samples", "numa")
PODS = os.path.join(SAMPLES, "pods.yaml")
MACHINE = os.path.join(SAMPLES, "machine.yaml")


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


POD = """
apiVersion: v1
kind: Pod
metadata:
  name: farm
  uid: 11111111-2222
  annotations:
    cri-resource-manager.intel.com/affinity: |
      peter:
      - match: {key: name, operator: Equals, values: [sheep]}
        weight: 5
    cri-resource-manager.intel.com/anti-affinity: |
      peter:
      - match: {key: name, operator: Equals, values: [wolf]}
        weight: 5
spec:
  containers:
  - name: peter
  - name: sheep
  - name: wolf
status:
  qosClass: BestEffort
  containerStatuses:
  - name: sheep
    containerID: containerd://abc123
"""
CLUSTER = """
apiVersion: v1
kind: Pod
metadata: {name: other, namespace: team}
spec:
  containers:
  - name: sheep
"""


def test_explain_json_schema(capsys, tmp_path):
    rc, out, err = run(capsys, "numa", "explain", write(tmp_path, "p.yaml", POD), "-o", "json")
    assert rc == 0, err
    rep = json.loads(out)
    assert list(rep) == ["apiVersion", "kind", "containers"]
    assert [c["container"] for c in rep["containers"]] == ["peter", "sheep", "wolf"]
    peter = rep["containers"][0]
    assert list(peter) == ["pod", "container", "affinities", "effective", "errors"]
    assert peter["pod"] == "default/farm" and peter["errors"] == []
    assert peter["affinities"] == [
        {"scope": {"key": "io.kubernetes.pod.name", "operator": "Equals", "values": ["farm"]},
         "match": {"key": "name", "operator": "Equals", "values": ["sheep"]}, "weight": 5},
        {"scope": {"key": "io.kubernetes.pod.name", "operator": "Equals", "values": ["farm"]},
         "match": {"key": "name", "operator": "Equals", "values": ["wolf"]}, "weight": -5}]
    assert peter["effective"] == [{"pod": "default/farm", "container": "sheep", "weight": 5},
                                  {"pod": "default/farm", "container": "wolf", "weight": -5}]
    assert rep["containers"][1]["affinities"] == [] and rep["containers"][1]["effective"] == []


def test_explain_subject_keys_from_objects(capsys, tmp_path):
    pod = POD.replace("key: name, operator: Equals, values: [sheep]",
                      "key: ':,:pod/uid,pod/qosclass,id', operator: Equals, "
                      "values: ['11111111-2222:BestEffort:abc123']")
    rc, out, _ = run(capsys, "numa", "explain", write(tmp_path, "p.yaml", pod), "-o", "json")
    eff = json.loads(out)["containers"][0]["effective"]
    assert {"pod": "default/farm", "container": "sheep", "weight": 5} in eff


def test_explain_cluster_and_pod_scope_by_name(capsys, tmp_path):
    pod = POD.replace("- match: {key: name, operator: Equals, values: [sheep]}",
                      "- scope: {key: name, operator: Equals, values: [sheep]}\n"
                      "        match: {operator: AlwaysTrue}")
    rc, out, _ = run(capsys, "numa", "explain", write(tmp_path, "p.yaml", pod),
                     "--cluster", write(tmp_path, "c.yaml", CLUSTER), "-o", "json")
    assert rc == 0
    eff = json.loads(out)["containers"][0]["effective"]
    assert {"pod": "team/other", "container": "sheep", "weight": 5} in eff


def test_explain_qos_computed_when_status_absent(capsys, tmp_path):
    pod = """
apiVersion: v1
kind: Pod
metadata:
  name: q
  annotations:
    resource-policy.nri.io/affinity: |
      a:
      - match: {key: qosclass, operator: Equals, values: [Guaranteed]}
spec:
  containers:
  - name: a
    resources: {limits: {cpu: "1", memory: 1Gi}}
  - name: b
    resources: {limits: {cpu: "1", memory: 1Gi}}
"""
    rc, out, _ = run(capsys, "numa", "explain", write(tmp_path, "q.yaml", pod), "-o", "json")
    assert json.loads(out)["containers"][0]["effective"] == [
        {"pod": "default/q", "container": "b", "weight": 1}]


def test_explain_annotation_error_per_container_exit_2(capsys, tmp_path):
    bad = POD.replace("weight: 5\n    cri", "weigth: 5\n    cri")
    rc, out, err = run(capsys, "numa", "explain", write(tmp_path, "p.yaml", bad), "-o", "json")
    assert rc == 2
    rep = json.loads(out)
    for c in rep["containers"]:
        assert len(c["errors"]) == 1 and "weigth" in c["errors"][0]
        assert c["affinities"] == []
    assert "p.yaml" in err and "Pod default/farm" in err and "container 'peter'" in err
    assert "Traceback" not in err


def test_explain_text(capsys):
    rc, out, _ = run(capsys, "numa", "explain", PODS)
    assert rc == 0
    assert "demo/bench/memtier" in out and "+10  demo/redis-0/redis" in out
    assert "[cri-resource-manager.intel.com/anti-affinity]" in out


@pytest.mark.parametrize("content,needle", [
    ("kind: Pod\nmetadata: {name: x}\n", "spec.containers"),
    ("kind: Service\nmetadata: {name: x}\nspec: {}\n", "kind"),
    ("kind: Pod\nmetadata: {name: x, labels: {a: 1}}\nspec: {containers: [{name: c}]}\n",
     "metadata.labels.a"),
    ("kind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c}, {name: c}]}\n",
     "duplicate container"),
    ("kind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, resources: "
     "{requests: {cpu: lots}}}]}\n", "resources.requests.cpu"),
    ("a: [\n", "malformed YAML"),
    ("kind: Pod\nmetadata: {name: x}\nstatus: {qosClass: Gold}\nspec: {containers: [{name: c}]}\n",
     "status.qosClass"),
])
def test_bad_pod_files_exit_2_with_location(capsys, tmp_path, content, needle):
    path = write(tmp_path, "bad.yaml", content)
    rc, out, err = run(capsys, "numa", "explain", path)
    assert rc == 2 and needle in err and "bad.yaml" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_unknown_container_names_warn(capsys, tmp_path):
    pod = POD.replace("    cri-resource-manager.intel.com/affinity: |\n      peter:",
                      "    cri-resource-manager.intel.com/affinity: |\n      petr:")
    rc, out, err = run(capsys, "numa", "explain", write(tmp_path, "p.yaml", pod))
    assert rc == 0 and "'petr'" in err and "warning" in err


def test_missing_file(capsys):
    rc, _, err = run(capsys, "numa", "explain", "/nonexistent/p.yaml")
    assert rc == 2 and "/nonexistent/p.yaml" in err


def test_plan_json(capsys):
    rc, out, err = run(capsys, "numa", "plan", "--machine", MACHINE, PODS, "-o", "json")
    assert rc == 0, err
    rep = json.loads(out)
    assert rep["machine"]["sockets"] == 2 and rep["machine"]["numaNodes"] == 4
    assert [p["name"] for p in rep["pools"]][-1] == "root"
    by = {(c["pod"], c["container"]): c for c in rep["containers"]}
    redis, memtier = by[("demo/redis-0", "redis")], by[("demo/bench", "memtier")]
    assert memtier["pool"] == redis["pool"]             # pulled next to redis
    assert memtier["poolAffinity"][redis["pool"]] == 10
    assert set(memtier["exclusiveCpus"].split(",")).isdisjoint(redis["exclusiveCpus"].split(","))
    ranks = [s["rank"] for s in memtier["scores"]]
    assert ranks == list(range(1, len(ranks) + 1))
    assert memtier["scores"][0]["pool"] == memtier["pool"]


def test_plan_text_and_svg(capsys):
    rc, out, _ = run(capsys, "numa", "plan", "--machine", MACHINE, PODS)
    assert rc == 0 and "demo/bench/memtier -> NUMA node #1" in out
    rc, out, _ = run(capsys, "numa", "plan", "--machine", MACHINE, PODS, "-o", "svg")
    assert rc == 0
    svg = ET.fromstring(out)
    assert svg.tag.endswith("svg")
    texts = "".join(t.text or "" for t in svg.iter() if t.tag.endswith("text"))
    assert "socket 1" in texts and "NUMA node 3" in texts and "demo/redis-0/redis" in texts


def test_plan_same_pod_twice_is_an_error(capsys):
    rc, _, err = run(capsys, "numa", "plan", "--machine", MACHINE, "--existing", PODS, PODS)
    assert rc == 2 and "given twice" in err


def test_plan_sysfs_root(capsys, sysfs, tmp_path):
    root = sysfs("sysfs-2socket.txt")
    ks = write(tmp_path, "ks.yaml", "kind: Pod\nmetadata: {name: dns, namespace: kube-system}\n"
               "spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}\n")
    rc, out, err = run(capsys, "numa", "plan", "--sysfs-root", root, "--reserved-cpus", "0",
                       "--existing", PODS, ks, "-o", "json")
    assert rc == 0, err
    rep = json.loads(out)
    assert rep["machine"]["online"] == "0-30"
    dns = rep["containers"][-1]
    assert dns["pool"] == "root" and dns["cpus"] == "0" and dns["request"]["class"] == "reserved"
    assert all(c["replayed"] for c in rep["containers"][:-1])


def test_plan_capacity_failure_exit_1(capsys, tmp_path):
    big = write(tmp_path, "big.yaml", "kind: Pod\nmetadata: {name: big}\nspec: {containers: "
                "[{name: c, resources: {limits: {cpu: '500', memory: 1Gi}}}]}\n")
    rc, out, err = run(capsys, "numa", "plan", "--machine", MACHINE, big)
    assert rc == 1 and "NOT PLACED" in out and "default/big/c not placed" in err


def test_plan_bad_machine(capsys, tmp_path):
    m = write(tmp_path, "m.yaml", "sockets: []\n")
    rc, _, err = run(capsys, "numa", "plan", "--machine", m, PODS)
    assert rc == 2 and "m.yaml" in err and "sockets" in err
    rc, _, err = run(capsys, "numa", "plan", "--sysfs-root", str(tmp_path), PODS)
    assert rc == 2 and "no CPUs" in err


def test_plan_annotation_error_exit_2_other_pods_placed(capsys, tmp_path):
    bad = write(tmp_path, "bad.yaml", POD.replace("operator: Equals", "operator: Bogus", 1))
    rc, out, err = run(capsys, "numa", "plan", "--machine", MACHINE, PODS, bad, "-o", "json")
    assert rc == 2 and "unknown operator" in err
    rep = json.loads(out)
    assert all(c["pool"] for c in rep["containers"] if c["pod"] != "default/farm")
    assert all(c["error"] for c in rep["containers"] if c["pod"] == "default/farm")


def test_plan_reports_cgroup_dirs(capsys, tmp_path):
    rc, out, err = run(capsys, "numa", "plan", "--machine", MACHINE, "-o", "json",
                       "--cgroup-driver", "cgroupfs", write(tmp_path, "p.yaml", POD))
    assert rc == 0, err
    by = {c["container"]: c for c in json.loads(out)["containers"]}
    assert by["sheep"]["cgroup"] == "kubepods/besteffort/pod11111111-2222/abc123"
    assert by["peter"]["cgroup"] is None          # no container id yet


def test_upstream_server_no_affinities_with_reserved_quantity(capsys, tmp_path):
    """Upstream TestAffinities 'no affinities': full 3 CPUs, 750m reserved -> NUMA node #2."""
    m = open(os.path.join(DATA, "server.yaml")).read().replace('reserved: "0"\n', "")
    pod = write(tmp_path, "p.yaml", "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c,"
                " resources: {limits: {cpu: '3', memory: 10k}}}]}\n")
    rc, out, err = run(capsys, "numa", "plan", "--machine", write(tmp_path, "m.yaml", m),
                       "--reserved-cpus", "750m", pod, "-o", "json")
    assert rc == 0, err
    rep = json.loads(out)
    assert rep["machine"]["reserved"] == "0"
    assert rep["containers"][0]["pool"] == "NUMA node #2"
    rc, out, err = run(capsys, "numa", "plan", "--machine", MACHINE, "--reserved-cpus", "x", pod)
    assert rc == 2 and "--reserved-cpus" in err


def test_sysfs_without_numa_nodes(capsys, sysfs):
    import shutil
    root = sysfs("sysfs-1socket.txt")
    shutil.rmtree(os.path.join(root, "devices/system/node"))
    rc, out, err = run(capsys, "numa", "plan", "--sysfs-root", root, PODS, "-o", "json")
    assert rc in (0, 1), err
    assert json.loads(out)["machine"]["numaNodes"] == 1


def test_plan_bad_preference_annotation_exit_2(capsys, tmp_path):
    bad = write(tmp_path, "bad.yaml", "kind: Pod\nmetadata:\n  name: b\n  annotations:\n"
                "    prefer-shared-cpus.resource-policy.nri.io/pod: 'sometimes'\n"
                "spec: {containers: [{name: c, resources: {limits: {cpu: '1', memory: 1Gi}}}]}\n")
    rc, out, err = run(capsys, "numa", "plan", "--machine", MACHINE, bad)
    assert rc == 2 and "prefer-shared-cpus" in err and "bad.yaml" in err and "Pod default/b" in err


_leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=6),
                  st.sampled_from(["1", "500m", "1Gi", "Guaranteed", "c", "containerd://x"]))
_obj = st.recursive(_leaf, lambda ch: st.one_of(
    st.lists(ch, max_size=3),
    st.dictionaries(st.sampled_from(["name", "containers", "resources", "requests", "limits",
                                     "cpu", "memory", "labels", "annotations", "uid",
                                     "qosClass", "containerStatuses", "containerID",
                                     "namespace", "initContainers"]), ch, max_size=4)),
    max_leaves=25)


@settings(max_examples=200, deadline=None)
@given(st.one_of(
    st.fixed_dictionaries({"kind": st.just("Pod"), "metadata": _obj, "spec": _obj,
                           "status": _obj}),
    st.fixed_dictionaries({
        "kind": st.just("Pod"),
        "metadata": st.fixed_dictionaries({"name": st.just("p")}, optional={
            "labels": _obj, "annotations": _obj, "uid": _leaf, "namespace": _leaf}),
        "spec": st.fixed_dictionaries({"containers": st.lists(st.fixed_dictionaries(
            {"name": st.sampled_from(["a", "b", "c"])}, optional={"resources": _obj}),
            max_size=3)}, optional={"initContainers": _obj}),
        "status": _obj})))
def test_fuzz_pod_objects_only_input_errors(obj):
    from tacker_hwaffinity.errors import InputError
    from tacker_hwaffinity.numa.report import explain
    from tacker_hwaffinity.numa.subjects import pod_from_object
    try:
        pod = pod_from_object(obj, "fuzz.yaml")
    except InputError as e:
        assert "fuzz.yaml" in str(e)
        return
    rep, _, _ = explain([pod])
    assert len(rep["containers"]) == len(pod.containers)


# -- one placement configuration: the offline plan is the agent's decision ------------
SERVER = os.path.join(DATA, "server.yaml")
PLACEMENT_FLAGS = ([], ["--no-prefer-isolated"], ["--colocate-pods"],
                   ["--colocate-namespaces"],
                   ["--no-prefer-isolated", "--colocate-pods", "--colocate-namespaces"])


def _node_pods():
    """Pods of one node, in creation order: 1-CPU Guaranteed ones (isolated CPUs or
    not), and Burstable pods of two containers in two namespaces (colocation)."""
    from agent.podobjects import pod_object
    out = []
    for i in range(3):
        out.append(pod_object("one-%d" % i, cpu="1", memory="256Mi",
                              created="2026-01-01T00:00:0%dZ" % i))
    for i, ns in enumerate(("red", "red", "blue", "blue")):
        p = pod_object("two-%d" % i, containers=("a", "b"), cpu="500m", memory="128Mi",
                       ns=ns, qos="Burstable", created="2026-01-01T00:01:0%dZ" % i)
        for c in p["spec"]["containers"]:
            c["resources"]["limits"] = {}
        out.append(p)
    return out


def _decisions(rep):
    return {(c["pod"], c["container"]): (c["pool"], c["cpus"], c["exclusiveCpus"],
                                         c["mems"], c["error"]) for c in rep["containers"]}


@pytest.mark.parametrize("flags", PLACEMENT_FLAGS, ids=" ".join)
def test_numa_plan_and_the_agent_decide_alike_for_the_same_flags(capsys, tmp_path, flags):
    import argparse

    import yaml

    from tacker_hwaffinity.agent.node import NodeState
    from tacker_hwaffinity.numa import config, report
    from tacker_hwaffinity.numa.topology import machine_from_yaml
    from tacker_hwaffinity.objects.yamlio import parse_documents

    pods = _node_pods()
    path = write(tmp_path, "pods.yaml", yaml.safe_dump_all(pods))
    rc, out, err = run(capsys, "numa", "plan", "--machine", SERVER, path, "-o", "json", *flags)
    assert rc == 0, err
    planned = _decisions(json.loads(out))

    agent_parser = argparse.ArgumentParser()   # the flags as the agent's parser takes them
    config.add_placement_arguments(agent_parser)
    with open(SERVER) as f:
        machine = machine_from_yaml(parse_documents(f.read(), SERVER)[0], SERVER)
    state = NodeState(machine, config=config.from_args(agent_parser.parse_args(flags)))
    state.sync(list(reversed(pods)))           # the agent places in creation order
    assert not state.errors and not state.pod_errors
    assert _decisions(report.plan_report(state.placer)) == planned
    assert len(planned) == 11


def test_placement_flags_change_the_decisions(capsys, tmp_path):
    """The test above compares decisions that the flags do change."""
    path = write(tmp_path, "pods.yaml", __import__("yaml").safe_dump_all(_node_pods()))
    seen = []
    for flags in PLACEMENT_FLAGS[:3]:
        rc, out, err = run(capsys, "numa", "plan", "--machine", SERVER, path, "-o", "json",
                           *flags)
        assert rc == 0, err
        seen.append(_decisions(json.loads(out)))
    assert seen[0] != seen[1] and seen[0] != seen[2]


def test_the_agent_takes_the_placement_flags():
    """``hwaffinity agent`` parses the flags ``numa plan`` does (``add_placement_arguments``)."""
    from tacker_hwaffinity.cli.main import build_parser
    from tacker_hwaffinity.numa.config import PlacementConfig, from_args
    args = build_parser("agent").parse_args(
        ["agent", "--no-prefer-isolated", "--colocate-pods", "--colocate-namespaces"])
    assert from_args(args) == PlacementConfig(prefer_isolated=False, colocate_pods=True,
                                              colocate_namespaces=True)


def test_namespace_less_pods_land_where_n_puts_them_as_kubectl(tmp_path, capsys):
    pod = write(tmp_path, "pod.yaml", POD)
    rc, out, _err = run(capsys, "numa", "explain", pod, "-o", "json")
    assert rc == 0 and "default/farm" in out
    rc, out, _err = run(capsys, "numa", "explain", pod, "-n", "kube-system", "-o", "json")
    assert rc == 0 and "kube-system/farm" in out and "default/farm" not in out
    rc, _out, err = run(capsys, "numa", "explain", PODS, "-n", "cnf")
    assert rc == 2 and "You must pass '--namespace=demo'" in err
