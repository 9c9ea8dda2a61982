"""Upstream e2e topology-aware/n4c16/test03-simple-affinity, through the CLI.

cri-rm runs there with 750m of reserved CPU (one CPU, CPU 0).
"""
import json
import os

from tacker_hwaffinity.cli.main import main

from .conftest import DATA

MACHINE = os.path.join(DATA, "n4c16.yaml")


def pod(name, count, affinities="", anti=""):
    ann = ""
    for key, spec in (("affinity", affinities), ("anti-affinity", anti)):
        if spec:
            ann += "    cri-resource-manager.intel.com/%s: |\n" % key
            for pair in spec.split():
                src, dst = pair.split(":")
                ann += "      %s: [ %s ]\n" % (src, ", ".join(dst.split(",")))
    ctrs = "".join(
        "  - name: %sc%d\n    resources:\n      requests: {cpu: 1, memory: 100M}\n"
        "      limits: {cpu: 1, memory: 100M}\n" % (name, i) for i in range(count))
    return ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  annotations:\n%s"
            "spec:\n  containers:\n%s" % (name, ann or "    {}\n", ctrs)).replace(
        "  annotations:\n    {}\n", "")


def plan(capsys, tmp_path, text):
    p = tmp_path / "pod.yaml"
    p.write_text(text)
    rc = main(["numa", "plan", "--machine", MACHINE, "--reserved-cpus", "750m",
               str(p), "-o", "json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return {c["container"]: set(c["mems"].split(",")) for c in json.loads(out)["containers"]}


def test_no_affinities_spread_over_numa_nodes(capsys, tmp_path):
    nodes = plan(capsys, tmp_path, pod("pod0", 4))
    assert nodes == {"pod0c0": {"1"}, "pod0c1": {"2"}, "pod0c2": {"3"}, "pod0c3": {"0"}}


def test_affinities_colocate_pairs(capsys, tmp_path):
    nodes = plan(capsys, tmp_path, pod("pod1", 4, "pod1c0:pod1c1 pod1c2:pod1c3"))
    assert nodes["pod1c0"] == nodes["pod1c1"] == {"1"}
    assert nodes["pod1c2"] == nodes["pod1c3"] == {"2"}


def test_anti_affinities_keep_apart(capsys, tmp_path):
    nodes = plan(capsys, tmp_path, pod("pod2", 6, anti="pod2c4:pod2c0,pod2c1,pod2c2 "
                                                       "pod2c5:pod2c0,pod2c2,pod2c3"))
    for a, others in (("pod2c4", ("pod2c0", "pod2c1", "pod2c2")),
                      ("pod2c5", ("pod2c0", "pod2c2", "pod2c3"))):
        for o in others:
            assert nodes[a].isdisjoint(nodes[o]), (a, o, nodes)
