"""The labelling core's kubectl calls against the real API server and kubectl v1.20."""
import subprocess

import pytest

from tacker_hwaffinity.labeling import kubectl, params, plan

pytestmark = pytest.mark.controlplane


def run(cp, argv, stdin=None):
    exe = cp.bin["kubectl"]
    return subprocess.run([exe, "--kubeconfig", cp.kubeconfig] + argv[1:], input=stdin,
                          capture_output=True, text=True, timeout=60, check=True).stdout


SRV_B = "b0b0b0b0-0000-4000-8000-000000000000"


def test_apply_labels_sets_overwrites_and_reads_back_in_one_call(control_plane):
    cp = control_plane
    cp.add_node("lbl-a", {"CIS-node": "stale-host"}, wait=False)
    cp.add_node("lbl-b", {}, wait=False)
    cp.admin.patch("/api/v1/nodes/lbl-b", {"spec": {"providerID": "openstack:///" + SRV_B}})
    current = kubectl.parse_nodes(run(cp, kubectl.get_nodes()))
    nodes = {n.name: n for n in current}
    assert "lbl-a" in nodes and nodes["lbl-a"].internal_ips, "the harness gives an InternalIP"
    assert nodes["lbl-b"].provider_id == SRV_B and nodes["lbl-a"].provider_id is None
    workers = [plan.Worker("w-a", "srv-a", nodes["lbl-a"].internal_ips, host="compute@1"),
               plan.Worker("w-b", SRV_B, ["192.0.2.1"], host="compute-2")]   # by providerID
    p = plan.plan(workers, current, params.parse({})["hwaffinity"])
    assert p.errors == []
    argv, stdin = kubectl.apply_labels(p.desired())
    back = {n.name: n.labels for n in kubectl.parse_nodes(run(cp, argv, stdin))}
    assert back["lbl-a"]["CIS-node"] == "compute-1-" + p.mapping()[0]["host"][-8:]
    assert back["lbl-b"]["CIS-node"] == "compute-2"
    # idempotent: the same call again changes nothing and reads back the same
    again = {n.name: n.labels for n in kubectl.parse_nodes(run(cp, argv, stdin))}
    assert again["lbl-a"] == back["lbl-a"] and again["lbl-b"] == back["lbl-b"]
    # other labels survive (the harness gives every node these three)
    for name in ("lbl-a", "lbl-b"):
        assert back[name]["kubernetes.io/hostname"] == name
        assert back[name]["kubernetes.io/os"] == "linux"
        assert back[name]["kubernetes.io/arch"] == "amd64"
    run(cp, kubectl.delete_nodes(["lbl-a", "lbl-b"]))
