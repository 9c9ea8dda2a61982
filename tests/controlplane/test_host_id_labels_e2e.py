"""The standard host-id labels kept true end to end (issue #41 item 2): the real control
plane, a Nova of three compute hosts (no Heat), `hwaffinity controller --cluster-nodes
--openstack-host-id-label --scs-host-id-label` and `hwaffinity audit --openstack` as
processes.

Three servers, one per compute host, each a node by its spec.providerID. One node starts
with the `topology.openstack.org/host-id` openstack-cloud-controller-manager would have
left after an earlier move (another host's hostId). The controller must write CIS-node
(the host) and both host-id labels (Nova's hostId, as `GET /servers/ID` gives it) on
every node, correct the stale one, and keep all three true through a live migration,
an evacuation and a confirmed resize; the audit must judge every key `ok`.
"""
import json
import os
import subprocess
import sys
import time
import uuid

import pytest

from tacker_hwaffinity.constants import OPENSTACK_HOST_ID_LABEL, SCS_HOST_ID_LABEL

from . import harness
from .test_controller_e2e import _kill, _start, osharness

pytestmark = [pytest.mark.controlplane, pytest.mark.openstack]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLAGS = ["--cluster-nodes", "--openstack-host-id-label", "--scs-host-id-label"]
KEYS = ("CIS-node", OPENSTACK_HOST_ID_LABEL, SCS_HOST_ID_LABEL)


@pytest.fixture(scope="module")
def cloud():
    """Nova with three compute hosts, for this module alone."""
    yield from osharness.own_cloud(3)


@pytest.fixture
def nodes(cloud, control_plane):
    """{node name: server id}: three servers, one per compute host, each a node named by
    its providerID."""
    tag = uuid.uuid4().hex[:4]
    hosts = sorted(cloud.hosts)[:3]
    out = {}
    with osharness.servers_on_hosts(cloud, ["hid-%s-%d" % (tag, i) for i in range(3)],
                                    hosts) as placed:
        try:
            for server_id, host, ip in placed:
                name = "hid-node-%s-%s" % (tag, host)
                control_plane.add_node(name, {"kubernetes.io/hostname": name}, address=ip)
                out[name] = server_id
                control_plane.admin.patch("/api/v1/nodes/" + name,
                                          {"spec": {"providerID": "openstack:///" + server_id}})
            yield out
        finally:
            for name in out:
                control_plane.delete_node(name)


def _labels(cp, node):
    labels = cp.admin.get("/api/v1/nodes/" + node)["metadata"]["labels"]
    return tuple(labels.get(k) for k in KEYS)


def _nova(cloud, server_id):
    """What the node's three labels must be: (host, hostId, hostId)."""
    s = cloud.server(server_id)
    return s[osharness.HOST_ATTR], s["hostId"], s["hostId"]


def _follows(cloud, cp, nodes, what, timeout=30):
    """Wait until every node's labels are what Nova says of its server now."""
    for node, server_id in nodes.items():
        want = _nova(cloud, server_id)
        assert len(want[1]) == 56 and want[1] != want[0]         # sha224 hex, not the name
        harness.wait_until(lambda n=node, w=want: _labels(cp, n) == w, timeout,
                           what="%s: node %s labelled %s" % (what, node, want))


def _resize(cloud, server_id, flavor="2"):
    """Resize SERVER_ID to FLAVOR and confirm it once Nova asks (VERIFY_RESIZE)."""
    cloud.compute("POST", "/servers/%s/action" % server_id, {"resize": {"flavorRef": flavor}})
    osharness.wait_for(lambda: cloud.server(server_id)["status"] == "VERIFY_RESIZE", 60,
                       what="server %s in VERIFY_RESIZE" % server_id)
    cloud.compute("POST", "/servers/%s/action" % server_id, {"confirmResize": None})
    osharness.wait_for(lambda: cloud.server(server_id)["status"] == "ACTIVE" and
                       cloud.server(server_id)[osharness.TASK_ATTR] is None, 60,
                       what="server %s resized" % server_id)


def _audit(cloud, cp, key):
    """({node: state}, stderr) of `hwaffinity audit --openstack` on KEY. The cluster is
    shared with other tests: their nodes have their own states, and may make the exit
    code 1 (stale labels), so the caller looks at its own nodes only."""
    p = subprocess.run(
        [sys.executable, "-m", "tacker_hwaffinity.cli.main", "audit", "--kubeconfig",
         cp.kubeconfig, "--openstack", "--topology-key", key, "--fail-on", "stale-labels",
         "-o", "json"],
        capture_output=True, text=True, env=osharness.cli_env(cloud), cwd=ROOT, timeout=120)
    assert p.returncode in (0, 1), p.stderr
    doc = json.loads(p.stdout)
    return {n["node"]: n["state"] for n in doc["staleLabels"]["nodes"]}, p.stderr


def test_the_host_id_labels_follow_a_live_migration_an_evacuation_and_a_resize(
        cloud, control_plane, nodes, tmp_path):
    cp = control_plane
    names = sorted(nodes)
    first, second, third = names
    stale = _nova(cloud, nodes[second])[1]          # OCCM's label from before a move
    cp.admin.patch("/api/v1/nodes/" + first, {"metadata": {"labels": {
        OPENSTACK_HOST_ID_LABEL: stale}}})
    proc, log = _start(cloud, cp, tmp_path, "hid-controller", select=FLAGS)
    try:
        _follows(cloud, cp, nodes, "start", timeout=60)
        assert "hostId kept in %s, %s" % (OPENSTACK_HOST_ID_LABEL, SCS_HOST_ID_LABEL) \
            in log.read_text()
        for key in KEYS:
            states, err = _audit(cloud, cp, key)
            assert {states.get(n) for n in nodes} == {"ok"}, (key, states, err)
            assert "disagree" not in err
        took = {}
        # live migration: the first VM onto the second's host
        t0 = time.monotonic()
        cloud.live_migrate(nodes[first], host=_nova(cloud, nodes[second])[0])
        _follows(cloud, cp, nodes, "live migration")
        took["live migration"] = time.monotonic() - t0
        # evacuation: the third's host fails, the scheduler picks another
        source = _nova(cloud, nodes[third])[0]
        try:
            t0 = time.monotonic()
            cloud.evacuate(nodes[third])
            _follows(cloud, cp, nodes, "evacuation")
            took["evacuation"] = time.monotonic() - t0
        finally:
            cloud.start_compute(source)
        # a confirmed resize (Nova's scheduler may keep or change the host)
        before = _nova(cloud, nodes[second])[0]
        t0 = time.monotonic()
        _resize(cloud, nodes[second])
        _follows(cloud, cp, nodes, "resize")
        took["resize"] = time.monotonic() - t0
        print("labels followed (asked -> all three true; polls every 2 s): %s; the resize "
              "%s the host" % (", ".join("%s %.1f s" % kv for kv in took.items()),
                               "kept" if _nova(cloud, nodes[second])[0] == before else
                               "changed"))
        states, err = _audit(cloud, cp, SCS_HOST_ID_LABEL)
        assert {states.get(n) for n in nodes} == {"ok"}, (states, err)
        assert proc.poll() is None, log.read_text()
    finally:
        _kill(proc)
