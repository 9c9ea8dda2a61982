"""`hwaffinity audit --kubeconfig` reads the same cluster as a `kubectl get -o yaml`
snapshot of it: the JSON reports are equal (notes aside: the live reader says which
optional APIs the server lacks)."""
import json
import subprocess
import sys

import pytest
import yaml

from . import harness
from . import workloads as w

pytestmark = pytest.mark.controlplane
AUDIT_KINDS = ("nodes,pods,namespaces,services,replicationcontrollers,replicasets,"
               "statefulsets,deployments,daemonsets,jobs")


def hwaffinity(*args):
    return subprocess.run([sys.executable, "-m", "tacker_hwaffinity.cli.main"] + list(args),
                          capture_output=True, text=True, timeout=120)


def test_audit_live_equals_audit_of_a_snapshot(control_plane, host_nodes, namespace, tmp_path):
    cp, ns = control_plane, namespace
    labels = {"app": "audited"}
    dep = w.deployment("audited", ns, 4, labels,
                       aff=w.affinity("anti", "preferred", "CIS-node", labels))
    cp.admin.create("/apis/apps/v1/namespaces/%s/deployments" % ns, dep)
    harness.wait_until(lambda: len([p for p in cp.pods(ns)
                                    if p["status"].get("phase") == "Running"]) == 4,
                       60, what="4 pods Running")
    cp.wait_quiet()
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(cp.kubectl("get", AUDIT_KINDS, "-A", "-o", "yaml"))
    live = hwaffinity("audit", "--kubeconfig", cp.kubeconfig, "-o", "json")
    from_file = hwaffinity("audit", "--cluster", str(snapshot), "-o", "json")
    assert live.returncode == 0, live.stderr
    assert from_file.returncode == 0, from_file.stderr
    a, b = json.loads(live.stdout), json.loads(from_file.stdout)
    a.pop("notes"), b.pop("notes")
    assert a == b
    (mine,) = [x for x in a["workloads"] if x["namespace"] == ns]
    assert (mine["kind"], mine["name"], mine["desired"], mine["running"]) == \
        ("Deployment", "audited", 4, 4)
    assert mine["desiredFrom"] == "spec.replicas"
    assert sum(h["replicas"] for h in mine["hosts"]) == 4
    assert yaml.safe_load(snapshot.read_text())["items"]
