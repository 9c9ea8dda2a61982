"""The labelling core's kubectl calls against the real API server and kubectl v1.20."""
import subprocess

import pytest

from tacker_hwaffinity.labeling import kubectl, params, plan

pytestmark = pytest.mark.controlplane


def run(cp, argv, stdin=None):
    exe = cp.bin["kubectl"]
    return subprocess.run([exe, "--kubeconfig", cp.kubeconfig] + argv[1:], input=stdin,
                          capture_output=True, text=True, timeout=60, check=True).stdout


def test_apply_labels_sets_overwrites_and_reads_back_in_one_call(control_plane):
    cp = control_plane
    cp.add_node("lbl-a", {"CIS-node": "stale-host"}, wait=False)
    cp.add_node("lbl-b", {}, wait=False)
    nodes = {name: ips for name, ips, _ in kubectl.parse_nodes(run(cp, kubectl.get_nodes()))}
    assert "lbl-a" in nodes and nodes["lbl-a"], "the harness gives nodes an InternalIP"
    workers = [plan.Worker("w-a", "srv-a", nodes["lbl-a"], host="compute@1"),
               plan.Worker("w-b", "srv-b", nodes["lbl-b"], host="compute-2")]
    current = [plan.KubeNode(n, ips, labels)
               for n, ips, labels in kubectl.parse_nodes(run(cp, kubectl.get_nodes()))]
    p = plan.plan(workers, current, params.parse({})["hwaffinity"])
    assert p.errors == []
    argv, stdin = kubectl.apply_labels(p.desired())
    back = {n: labels for n, _, labels in kubectl.parse_nodes(run(cp, argv, stdin))}
    assert back["lbl-a"]["CIS-node"] == "compute-1-" + p.mapping()[0]["host"][-8:]
    assert back["lbl-b"]["CIS-node"] == "compute-2"
    # idempotent: the same call again changes nothing and reads back the same
    again = {n: labels for n, _, labels in kubectl.parse_nodes(run(cp, argv, stdin))}
    assert again["lbl-a"] == back["lbl-a"] and again["lbl-b"] == back["lbl-b"]
    # other labels survive (the harness gives every node these three)
    for name in ("lbl-a", "lbl-b"):
        assert back[name]["kubernetes.io/hostname"] == name
        assert back[name]["kubernetes.io/os"] == "linux"
        assert back[name]["kubernetes.io/arch"] == "amd64"
    run(cp, kubectl.delete_nodes(["lbl-a", "lbl-b"]))
