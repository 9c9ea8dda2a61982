"""Exposure to one physical host failing, end to end (issue #27 item 3): the real control
plane (real kube-scheduler and controller-manager), a Nova of three compute hosts (no Heat:
the workers are found by --worker-metadata), `hwaffinity audit` and `hwaffinity controller`
as processes.

A Deployment of two replicas is kept on different hosts (required anti-affinity on CIS-node,
and the same term as RequiredDuringExecution). Live-migrating one worker's VM onto the
other's host must show, before anything acts:

* in `hwaffinity audit --openstack` (text and JSON): the stale label of the moved node;
* in the gauges of a `--dry-run` controller, the same figures as the audit's: the
  Deployment's loss ratio 1 (both replicas on one host), its intent not met, the node's
  label stale; and nothing relabelled or
  evicted;

and all of it must go once a (non-dry-run) controller relabels the node and evicts the
replica, whose replacement the scheduler puts on the third host.
"""
import json
import os
import re
import subprocess
import sys
import urllib.request
import uuid

import pytest

from . import harness
from .test_controller_e2e import _deployment, _kill, _placed, _start, label, osharness

pytestmark = [pytest.mark.controlplane, pytest.mark.openstack]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
META = ("hwaffinity-test", "audit-" + uuid.uuid4().hex[:6])
SELECT = ["--worker-metadata", "%s=%s" % META]


@pytest.fixture(scope="module")
def cloud():
    """Nova with three compute hosts, for this module alone."""
    yield from osharness.own_cloud(3)


@pytest.fixture
def workers(cloud, control_plane):
    """{node: (server id, host)}: three worker VMs (the metadata the controllers select),
    one per compute host, and a node per VM, labelled with its host as the MgmtDriver
    labels it (its InternalIP the VM's address)."""
    hosts = sorted(cloud.hosts)[:3]
    names = ["au-w%d-%s" % (i, uuid.uuid4().hex[:4]) for i in range(3)]
    out = {}
    with osharness.servers_on_hosts(cloud, names, hosts, meta=dict([META])) as placed:
        try:
            for i, (server_id, host, ip) in enumerate(placed):
                node = "au-w%d-%s" % (i, uuid.uuid4().hex[:4])
                control_plane.add_node(node, {"kubernetes.io/hostname": node,
                                              "CIS-node": host}, address=ip)
                out[node] = (server_id, host)
            yield out
        finally:
            for node in out:
                control_plane.delete_node(node)


def audit(cloud, cp, *flags):
    """(exit status, stdout, stderr) of `hwaffinity audit --kubeconfig ... --openstack`;
    no exposure fails it (other tests' workloads may be there): only what FLAGS ask."""
    p = subprocess.run(
        [sys.executable, "-m", "tacker_hwaffinity.cli.main", "audit",
         "--kubeconfig", cp.kubeconfig, "--openstack", "--max-loss", "100%"] + list(flags),
        capture_output=True, text=True, env=osharness.cli_env(cloud), cwd=ROOT, timeout=120)
    assert p.returncode in (0, 1), p.stderr
    return p.returncode, p.stdout, p.stderr


def _rde(doc, namespace):
    """The Deployment's entry in the audit's JSON."""
    (w,) = [w for w in doc["workloads"] if (w["namespace"], w["kind"], w["name"])
            == (namespace, "Deployment", "rde")]
    return w


def _stale_nodes(doc):
    return {n["node"]: n for n in doc["staleLabels"]["nodes"] if n["state"] == "stale"}


def _gauges(log):
    """{(metric, ((label, value), ...)): value} of the hwaffinity_workload_* and
    hwaffinity_node_* samples of the controller whose log is LOG."""
    port = re.search(r"metrics on [^\s:]+:(\d+)", log.read_text()).group(1)
    with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=5) as r:
        text = r.read().decode()
    out = {}
    for name, labels, value in re.findall(
            r"^(hwaffinity_(?:workload|node)_\w+)\{([^}]*)\} (\S+)$", text, re.M):
        out[(name, tuple(sorted(re.findall(r'(\w+)="([^"]*)"', labels))))] = float(value)
    return out


def _workload(gauges, metric, namespace):
    return gauges.get((metric, (("kind", "Deployment"), ("name", "rde"),
                                ("namespace", namespace))))


def _node(gauges, node):
    return gauges.get(("hwaffinity_node_label_stale", (("node", node),)))


def _wait_gauges(log, what, ok):
    seen = {}

    def check():
        try:
            seen["g"] = _gauges(log)
        except (OSError, AttributeError):
            return False        # not serving yet
        return ok(seen["g"])
    harness.wait_until(check, 60, what=what)
    return seen["g"]


def test_a_colocating_migration_shows_in_audit_and_gauges_and_goes_after_the_controller(
        cloud, control_plane, workers, namespace, tmp_path):
    cp = control_plane
    names = sorted(workers)
    cp.admin.create("/apis/apps/v1/namespaces/%s/deployments" % namespace,
                    _deployment(namespace, names))
    harness.wait_until(lambda: len(_placed(cp, namespace)) == 2, 60, what="two replicas")
    before = _placed(cp, namespace)
    moving, staying = sorted(before.values())
    third = (set(names) - {moving, staying}).pop()
    victim = next(p for p, n in before.items() if n == moving)
    target = workers[staying][1]

    # a dry-run controller: the gauges are true before the migration
    dry, dry_log = _start(cloud, cp, tmp_path, "audit-dry", "--dry-run", select=SELECT)
    try:
        loss = "hwaffinity_workload_host_loss_ratio"
        _wait_gauges(dry_log, "the dry-run controller's gauges", lambda g: _workload(
            g, loss, namespace) == 0.5 and _node(g, moving) == 0)
        status, out, _ = audit(cloud, cp, "-o", "json", "--fail-on", "stale-labels")
        doc = json.loads(out)
        assert status == 0 and moving not in _stale_nodes(doc)
        assert _rde(doc, namespace)["worstLoss"] == 1 and _rde(doc, namespace)["intentMet"]

        cloud.live_migrate(workers[moving][0], host=target)

        g = _wait_gauges(dry_log, "the migration in the dry-run gauges", lambda g: _workload(
            g, loss, namespace) == 1.0 and _node(g, moving) == 1 and _workload(
            g, "hwaffinity_workload_intent_met", namespace) == 0)
        assert _workload(g, "hwaffinity_workload_replicas_on_busiest_host", namespace) == 2
        assert _node(g, staying) == 0 and _node(g, third) == 0
        # ... and in the audit, with the stale label
        status, out, _ = audit(cloud, cp, "-o", "json", "--fail-on", "stale-labels")
        doc = json.loads(out)
        stale = _stale_nodes(doc)
        assert status == 1 and set(stale) == {moving}
        # counted on Nova's host: both replicas on one
        assert (_rde(doc, namespace)["worstLoss"], _rde(doc, namespace)["lossRatio"]) == (2, 1)
        # the gauges are the audit's figures (its core, on the controller's caches)
        rde = _rde(doc, namespace)
        assert (rde["running"], rde["desired"], rde["worstLoss"], rde["lossRatio"],
                int(rde["intentMet"])) == tuple(_workload(g, m, namespace) for m in (
                    "hwaffinity_workload_replicas", "hwaffinity_workload_desired_replicas",
                    "hwaffinity_workload_replicas_on_busiest_host", loss,
                    "hwaffinity_workload_intent_met"))
        assert (stale[moving]["label"], stale[moving]["novaHost"]) \
            == (workers[moving][1], target)
        status, text, _ = audit(cloud, cp, "--fail-on", "stale-labels")
        assert status == 1
        assert "node %s is labelled CIS-node=%s but Nova has its VM" % (
            moving, workers[moving][1]) in text and target in text
        assert "rde" in text
        # nothing acted
        assert label(cp, moving) == workers[moving][1] and _placed(cp, namespace) == before
    finally:
        _kill(dry)

    # the controller relabels and evicts; the replacement goes to the third host
    proc, log = _start(cloud, cp, tmp_path, "audit-act", select=SELECT)
    try:
        harness.wait_until(lambda: label(cp, moving) == target, 60, what="the relabel")
        harness.wait_until(lambda: victim not in _placed(cp, namespace), 60, what="eviction")
        harness.wait_until(lambda: third in _placed(cp, namespace).values(), 60,
                           what="the replacement on %s" % third)
        # (waited for together: a scrape may come in the middle of an update)
        g = _wait_gauges(log, "the exposure gone from the gauges", lambda g: _workload(
            g, loss, namespace) == 0.5 and _node(g, moving) == 0 and _workload(
            g, "hwaffinity_workload_intent_met", namespace) == 1)
        assert _workload(g, "hwaffinity_workload_replicas_on_busiest_host", namespace) == 1
        status, out, _ = audit(cloud, cp, "-o", "json", "--fail-on", "stale-labels")
        doc = json.loads(out)
        assert status == 0 and not _stale_nodes(doc)
        assert _rde(doc, namespace)["worstLoss"] == 1 and _rde(doc, namespace)["intentMet"]
    finally:
        _kill(proc)
