"""Nodes matched to Nova servers by spec.providerID first, InternalIP second, end to end
(issue #41 item 1): the real control plane, a Nova of three compute hosts (no Heat, no
server metadata), `hwaffinity controller --cluster-nodes` and `hwaffinity audit
--openstack` as processes.

Four servers, three of them nodes whose spec.providerID OCCM's way names their server
(both forms: ``openstack:///ID`` and ``openstack://RegionOne/ID``, the credentials' region
being unknown here). Node ``a`` carries ``c``'s address as its InternalIP (the address
reused), so by InternalIP alone ``c`` would match two nodes and ``a`` none; a fourth node,
``ghost``, names a server that no longer exists and has ``b``'s address. The controller
must take exactly the three servers that are nodes as its workers, label each node with
its own server's host, never label ``ghost``, and follow a live migration of ``a``'s VM;
the audit must judge each node against its own server.
"""
import json
import os
import subprocess
import sys
import uuid

import pytest

from . import harness
from .test_controller_e2e import _kill, _start, label, osharness

pytestmark = [pytest.mark.controlplane, pytest.mark.openstack]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SELECT = ["--cluster-nodes"]


@pytest.fixture(scope="module")
def cloud():
    """Nova with three compute hosts, for this module alone."""
    yield from osharness.own_cloud(3)


@pytest.fixture
def servers(cloud):
    """{role: (server id, host, address)}: a, b, c one per compute host; "spare" is no
    node of the cluster."""
    hosts = sorted(cloud.hosts)[:3]
    tag = uuid.uuid4().hex[:4]
    roles = ("a", "b", "c", "spare")
    with osharness.servers_on_hosts(cloud, ["pid-%s-%s" % (r, tag) for r in roles],
                                    hosts + hosts[:1]) as placed:
        yield dict(zip(roles, placed))


@pytest.fixture
def nodes(control_plane, servers):
    """{node: its server's role (None: ghost)}, created with their providerIDs."""
    tag = uuid.uuid4().hex[:4]
    layout = {  # node: (role of the server its providerID names, providerID form, address)
        "pid-a-" + tag: ("a", "openstack:///%s", servers["c"][2]),     # c's address
        "pid-b-" + tag: ("b", "openstack://RegionOne/%s", servers["b"][2]),
        "pid-c-" + tag: ("c", "openstack:///%s", servers["c"][2]),
        "pid-ghost-" + tag: (None, "openstack:///%s", servers["b"][2]),
    }
    out = {}
    try:
        for name, (role, form, ip) in layout.items():
            sid = servers[role][0] if role else str(uuid.uuid4())
            control_plane.add_node(name, {"kubernetes.io/hostname": name}, address=ip)
            out[name] = role
            control_plane.admin.patch("/api/v1/nodes/" + name,
                                      {"spec": {"providerID": form % sid}})
        yield out
    finally:
        for name in out:
            control_plane.delete_node(name)


def _audit(cloud, cp):
    """{node: (state, server id)} of `hwaffinity audit --openstack -o json`."""
    p = subprocess.run(
        [sys.executable, "-m", "tacker_hwaffinity.cli.main", "audit", "--kubeconfig",
         cp.kubeconfig, "--openstack", "--max-loss", "100%", "-o", "json"],
        capture_output=True, text=True, env=osharness.cli_env(cloud), cwd=ROOT, timeout=120)
    assert p.returncode in (0, 1), p.stderr
    doc = json.loads(p.stdout)
    return {n["node"]: (n["state"], n["server"]) for n in doc["staleLabels"]["nodes"]}


def test_each_node_is_labelled_with_its_own_servers_host(
        cloud, control_plane, servers, nodes, tmp_path):
    cp = control_plane
    proc, log = _start(cloud, cp, tmp_path, "pid-controller", select=SELECT)
    try:
        for name, role in nodes.items():
            if role:
                host = servers[role][1]
                harness.wait_until(lambda n=name, h=host: label(cp, n) == h, 60,
                                   what="node %s labelled %s" % (name, host))
        text = log.read_text()
        assert "workers are every server that is a node of this cluster" in text
        assert "Nova: 3 worker server(s)" in text, text
        ghost = next(n for n, r in nodes.items() if r is None)
        assert label(cp, ghost) is None
        # the audit matches as the controller does: each node against its own server
        found = _audit(cloud, cp)
        for name, role in nodes.items():
            if role:
                assert found[name] == ("ok", servers[role][0]), (name, found)
        assert ghost not in found         # unlabelled and no server: not a worker's node
        # a's VM moves to b's host: its node follows (matched by providerID, not by the
        # address it shares with c's node)
        node_a = next(n for n, r in nodes.items() if r == "a")
        cloud.live_migrate(servers["a"][0], host=servers["b"][1])
        harness.wait_until(lambda: label(cp, node_a) == servers["b"][1], 30,
                           what="node %s relabelled %s" % (node_a, servers["b"][1]))
        node_c = next(n for n, r in nodes.items() if r == "c")
        assert label(cp, node_c) == servers["c"][1]
        assert label(cp, ghost) is None
        assert proc.poll() is None, log.read_text()
    finally:
        _kill(proc)
