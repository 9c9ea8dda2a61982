"""Upstream e2e topology-aware/n4c16/test03-simple-affinity, through the CLI.

cri-rm runs there with 750m of reserved CPU (one CPU, CPU 0).
"""
import json
import os

import yaml

from tacker_hwaffinity.cli.main import main

from tests.builders import container, pod

from .conftest import DATA

MACHINE = os.path.join(DATA, "n4c16.yaml")
CR = "cri-resource-manager.intel.com/"


def doc(name, count, cpu=1, limit=None, ns=None, annotations=None):
    """The YAML document of pod NAME in namespace NS with ANNOTATIONS and COUNT
    containers <NAME>c0, <NAME>c1, ... each requesting CPU and 100M, limited to LIMIT
    (default: CPU) and 100M."""
    return yaml.safe_dump(pod(name, ns=ns, annotations=annotations, containers=[
        container("%sc%d" % (name, i), requests={"cpu": cpu, "memory": "100M"},
                  limits={"cpu": cpu if limit is None else limit, "memory": "100M"})
        for i in range(count)]))


def guaranteed(name, count, affinities="", anti="", cpu=1, ns=None):
    """doc() with the cri-resource-manager (anti-)affinity annotations AFFINITIES and ANTI:
    "c0:c1,c2 c3:c4" keeps c0 with (or away from) c1 and c2, and c3 with c4."""
    ann = {}
    for key, spec in (("affinity", affinities), ("anti-affinity", anti)):
        if spec:
            ann[CR + key] = "".join("%s: [ %s ]\n" % (src, ", ".join(dst.split(",")))
                                    for src, dst in (pair.split(":") for pair in spec.split()))
    return doc(name, count, cpu, ns=ns, annotations=ann or None)


def planned(capsys, tmp_path, text):
    """The containers of 'hwaffinity numa plan -o json' for pod TEXT on the n4c16 machine."""
    p = tmp_path / "pod.yaml"
    p.write_text(text)
    rc = main(["numa", "plan", "--machine", MACHINE, "--reserved-cpus", "750m",
               str(p), "-o", "json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)["containers"]


def plan(capsys, tmp_path, text):
    return {c["container"]: set(c["mems"].split(",")) for c in planned(capsys, tmp_path, text)}


def test_no_affinities_spread_over_numa_nodes(capsys, tmp_path):
    nodes = plan(capsys, tmp_path, guaranteed("pod0", 4))
    assert nodes == {"pod0c0": {"1"}, "pod0c1": {"2"}, "pod0c2": {"3"}, "pod0c3": {"0"}}


def test_affinities_colocate_pairs(capsys, tmp_path):
    nodes = plan(capsys, tmp_path, guaranteed("pod1", 4, "pod1c0:pod1c1 pod1c2:pod1c3"))
    assert nodes["pod1c0"] == nodes["pod1c1"] == {"1"}
    assert nodes["pod1c2"] == nodes["pod1c3"] == {"2"}


def test_anti_affinities_keep_apart(capsys, tmp_path):
    nodes = plan(capsys, tmp_path, guaranteed("pod2", 6, anti="pod2c4:pod2c0,pod2c1,pod2c2 "
                                                              "pod2c5:pod2c0,pod2c2,pod2c3"))
    for a, others in (("pod2c4", ("pod2c0", "pod2c1", "pod2c2")),
                      ("pod2c5", ("pod2c0", "pod2c2", "pod2c3"))):
        for o in others:
            assert nodes[a].isdisjoint(nodes[o]), (a, o, nodes)


def cpus_of(capsys, tmp_path, text):
    from tacker_hwaffinity.numa.cpuset import parse_list
    return {c["container"]: parse_list(c["cpus"]) for c in planned(capsys, tmp_path, text)}


def nodes_of(cpus):
    return {c // 4 for c in cpus}       # n4c16: 4 CPUs per NUMA node


def disjoint(*sets):
    return sum(len(s) for s in sets) == len(set().union(*sets))


def test_basic_placement_single_cpu_containers_spread(capsys, tmp_path):
    """e2e test00 pod0."""
    cpus = cpus_of(capsys, tmp_path, guaranteed("pod0", 4))
    assert all(len(c) == 1 for c in cpus.values())
    assert disjoint(*cpus.values())
    assert disjoint(*[nodes_of(c) for c in cpus.values()])


def test_basic_placement_three_cpu_containers_spread(capsys, tmp_path):
    """e2e test00 pod1: the fourth container lands in socket #0 but on node 0's CPUs."""
    text = guaranteed("pod1", 4, cpu=3)
    cpus = cpus_of(capsys, tmp_path, text)
    assert all(len(c) == 3 for c in cpus.values())
    assert disjoint(*cpus.values())
    assert disjoint(*[nodes_of(c) for c in cpus.values()])


def test_basic_placement_burstable_spread(capsys, tmp_path):
    """e2e test00 pod2: burstable 2/4 CPUs, one shared pool each."""
    cpus = cpus_of(capsys, tmp_path, doc("pod2", 4, cpu=2, limit=4))
    assert disjoint(*cpus.values())
    assert disjoint(*[nodes_of(c) for c in cpus.values()])


def _plan_cpus(capsys, tmp_path, text, *flags):
    p = tmp_path / "pods.yaml"
    p.write_text(text)
    rc = main(["numa", "plan", "--machine", MACHINE, "--reserved-cpus", "750m", str(p),
               "-o", "json"] + list(flags))
    out, err = capsys.readouterr()
    assert rc == 0, err
    return {c["container"]: c["cpus"] for c in json.loads(out)["containers"]}


def test_colocate_pods(capsys, tmp_path):
    """e2e test00 pod4 with ColocatePods."""
    text = guaranteed("pod4", 4, cpu="100m")
    cpus = _plan_cpus(capsys, tmp_path, text, "--colocate-pods")
    assert cpus["pod4c1"] == cpus["pod4c2"] == cpus["pod4c3"] == cpus["pod4c0"]
    spread = _plan_cpus(capsys, tmp_path, text)
    assert len(set(spread.values())) == 4          # without it they spread


def test_colocate_namespaces(capsys, tmp_path):
    """e2e test00 pod5-7 with ColocateNamespaces."""
    docs = []
    for name, n in (("pod5", 1), ("pod6", 1), ("pod7", 2)):
        docs.append(guaranteed(name, n, cpu="100m", ns="test-ns"))
    cpus = _plan_cpus(capsys, tmp_path, "---\n".join(docs), "--colocate-namespaces")
    assert cpus["pod6c0"] == cpus["pod7c0"] == cpus["pod7c1"] == cpus["pod5c0"]


def test_mixed_allocations(capsys, tmp_path):
    """e2e test07 (first three steps): shared, mixed and large fractional requests."""
    from tacker_hwaffinity.numa.cpuset import parse_list
    docs = [guaranteed("pod0", 2, cpu="500m"), guaranteed("pod1", 2, cpu="1500m"),
            guaranteed("pod2", 2, cpu="2400m")]
    p = tmp_path / "pods.yaml"
    out = {}
    for step in range(1, 4):
        p.write_text("---\n".join(docs[:step]))
        rc = main(["numa", "plan", "--machine", MACHINE, "--reserved-cpus", "750m", str(p),
                   "-o", "json"])
        text, err = capsys.readouterr()
        assert rc == 0, err
        rep = json.loads(text)["containers"]
        cpus = {c["container"]: parse_list(c["cpus"]) for c in rep}
        mems = {c["container"]: parse_list(c["mems"]) for c in rep}
        out[step] = (cpus, mems)
    cpus, mems = out[1]
    assert [len(m) for m in mems.values()] == [1, 1] and mems["pod0c0"] != mems["pod0c1"]
    assert len(cpus["pod0c0"]) == len(cpus["pod0c1"]) == 4
    cpus, mems = out[2]
    assert all(len(m) == 1 for m in mems.values())
    assert mems["pod1c0"] != mems["pod1c1"]
    assert sorted([len(cpus["pod0c0"]), len(cpus["pod0c1"])]) == [3, 4]
    assert len(cpus["pod1c0"]) == len(cpus["pod1c1"]) == 4
    assert len(cpus["pod1c1"] - cpus["pod0c0"] - cpus["pod0c1"]) == 1
    cpus, mems = out[3]
    assert all(len(m) == 1 for m in mems.values())

    def others(name):
        return set().union(*[v for k, v in cpus.items() if k != name])
    assert len(cpus["pod1c1"] - others("pod1c1")) == 1
    assert len(cpus["pod2c0"]) == 3 and len(cpus["pod2c0"] - others("pod2c0")) == 3
    assert len(cpus["pod2c1"]) == 4 and not (cpus["pod2c1"] - others("pod2c1"))
    assert mems["pod2c1"] in (mems["pod0c0"], mems["pod0c1"])


def test_isolcpus_preferences(capsys, tmp_path):
    """e2e test08-isolcpus with isolcpus=8,9."""
    from tacker_hwaffinity.numa.cpuset import parse_list
    m = tmp_path / "m.yaml"
    m.write_text(open(MACHINE).read() + 'isolated: "8-9"\n')
    key = "prefer-isolated-cpus.cri-resource-manager.intel.com/pod"

    def run(*docs):
        p = tmp_path / "pods.yaml"
        p.write_text("---\n".join(docs))
        rc = main(["numa", "plan", "--machine", str(m), "--reserved-cpus", "750m", str(p),
                   "-o", "json"])
        out, err = capsys.readouterr()
        assert rc == 0, err
        rep = json.loads(out)["containers"]
        return ({c["container"]: parse_list(c["cpus"]) for c in rep},
                {c["container"]: parse_list(c["mems"]) for c in rep})
    cpus, mems = run(doc("pod0", 1, annotations={key: "true"}),
                     doc("pod1", 1, annotations={key: "false"}), doc("pod2", 1))
    assert cpus["pod0c0"] in ({8}, {9}) and mems["pod0c0"] == {2}
    assert not cpus["pod1c0"] & {8, 9}
    assert cpus["pod2c0"] in ({8}, {9}) and cpus["pod2c0"] != cpus["pod0c0"]
    assert mems["pod2c0"] == {2}
    cpus, _ = run(doc("pod3", 1, "2000m", annotations={key: "true"}))
    assert cpus["pod3c0"] == {8, 9}
