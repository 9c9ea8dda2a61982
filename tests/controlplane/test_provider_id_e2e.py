"""Nodes matched to Nova servers by spec.providerID first, InternalIP second, end to end
(issue #41 item 1, issue #55): the real control plane, a Nova of three compute hosts (no
Heat, no server metadata), `hwaffinity controller --cluster-nodes`, `hwaffinity relabel
--cluster-nodes` and `hwaffinity audit --openstack` as processes.

Four servers, three of them nodes whose spec.providerID OCCM's way names their server
(both forms: ``openstack:///ID`` and ``openstack://RegionOne/ID``, the credentials' region
being unknown here). Node ``a`` carries ``c``'s address as its InternalIP (the address
reused), so by InternalIP alone ``c`` would match two nodes and ``a`` none; a fourth node,
``ghost``, names a server that no longer exists and has ``b``'s address. The controller
must take exactly the three servers that are nodes as its workers, label each node with
its own server's host, never label ``ghost``, and follow a live migration of ``a``'s VM;
the audit must judge each node against its own server and name ``ghost``. `relabel
--cluster-nodes`, run by hand, must do what the controller does and name ``ghost`` (exit
1).
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


def _ghost(cp, nodes):
    """(the ghost node's name, the server id its providerID names)."""
    name = next(n for n, r in nodes.items() if r is None)
    return name, cp.admin.get("/api/v1/nodes/" + name)["spec"]["providerID"].rsplit("/", 1)[1]


def _relabel(cloud, cp, *argv):
    """`hwaffinity relabel --cluster-nodes ARGV` as a process: (exit status, stdout,
    stderr)."""
    p = subprocess.run(
        [sys.executable, "-m", "tacker_hwaffinity.cli.main", "relabel", "--cluster-nodes",
         "--kubeconfig", cp.kubeconfig] + list(argv),
        capture_output=True, text=True, env=osharness.cli_env(cloud), cwd=ROOT, timeout=120)
    return p.returncode, p.stdout, p.stderr


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
        ghost, ghost_server = _ghost(cp, nodes)
        assert label(cp, ghost) is None
        # the audit matches as the controller does: each node against its own server
        found = _audit(cloud, cp)
        for name, role in nodes.items():
            if role:
                assert found[name] == ("ok", servers[role][0]), (name, found)
        # unlabelled, but its providerID names a server Nova does not list: named
        assert found[ghost] == ("unknown", ghost_server), found
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


def test_relabel_without_a_stack_labels_each_node_and_names_the_ghost(
        cloud, control_plane, servers, nodes):
    """No Heat: `relabel --cluster-nodes` takes the servers that are nodes as workers,
    labels each node with its own server's host, names the node whose server Nova lacks
    (exit 1, the others labelled), and follows a live migration when run again."""
    cp = control_plane
    ghost, ghost_server = _ghost(cp, nodes)
    named = ("node %s (providerID openstack:///%s): no such server in Nova (or these "
             "credentials cannot see it)" % (ghost, ghost_server))
    status, out, err = _relabel(cloud, cp, "-o", "json")
    assert status == 1, err
    doc = json.loads(out)
    assert doc["errors"] == [named], doc
    assert sorted((w["node"], w["server"], w["host"]) for w in doc["workers"]) == sorted(
        (n, servers[r][0], servers[r][1]) for n, r in nodes.items() if r)
    for name, role in nodes.items():
        assert label(cp, name) == (servers[role][1] if role else None), name
    # a's VM moves to b's host; run again: a's node follows, the others stay
    node_a = next(n for n, r in nodes.items() if r == "a")
    cloud.live_migrate(servers["a"][0], host=servers["b"][1])
    status, out, err = _relabel(cloud, cp)
    assert status == 1, err
    assert "error: %s\n" % named in out
    assert "1 node(s) changed" in out, out
    assert label(cp, node_a) == servers["b"][1]
    for name, role in nodes.items():
        if role != "a":
            assert label(cp, name) == (servers[role][1] if role else None), name
    # the audit names the ghost too, and finds no stale label
    found = _audit(cloud, cp)
    assert found[ghost] == ("unknown", ghost_server)
    assert {found[n][0] for n, r in nodes.items() if r} == {"ok"}, found
