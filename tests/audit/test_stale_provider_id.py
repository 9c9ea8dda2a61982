"""audit --openstack matches a node to its server as the planner does: spec.providerID
first, InternalIP second; a node whose providerID names a server Nova does not list is
unknown (labelled or not: its host cannot be read), not judged against the server that
now has its address."""
from tacker_hwaffinity.audit import core, stale, thresholds
from tacker_hwaffinity.openstack.servers import ServerState
from tests.builders import node

A = "aaaaaaaa-0000-4000-8000-000000000000"
B = "bbbbbbbb-0000-4000-8000-000000000000"
GONE = "dddddddd-0000-4000-8000-000000000000"


def _server(sid, ip, host):
    return ServerState(sid, "vm-" + sid[:1], "ACTIVE", None, host, "hid-" + host,
                       "2026-11-24T00:00:00Z", {}, (ip,))


def _node(name, ip, label, sid, region="", taints=None):
    return node(name, {"CIS-node": label} if label else {}, ip=ip, taints=taints,
                provider_id="openstack://%s/%s" % (region, sid) if sid else None)


def _check(nodes, servers, region=None):
    return stale.check_nodes(stale.nodes_from_objects(nodes), servers, "CIS-node", "auto",
                             region=region)


def test_provider_id_first_and_a_reused_address_is_not_the_nodes_server():
    nodes = [_node("a", "10.0.0.2", "h1", A),        # has B's address; its providerID: A
             _node("b", "10.0.0.2", "h2", B),
             _node("old", "10.0.0.1", "h1", GONE),   # A has the old VM's address now
             _node("by-ip", "10.0.0.3", "h3", None)]
    servers = [_server(A, "10.0.0.1", "h1"), _server(B, "10.0.0.2", "h1"),
               _server("cccccccc-0000-4000-8000-000000000000", "10.0.0.3", "h3")]
    report = _check(nodes, servers)
    states = {c.node: (c.state, c.server) for c in report.checks}
    assert states == {"a": ("ok", A), "b": ("stale", B), "old": ("unknown", GONE),
                      "by-ip": ("ok", "cccccccc-0000-4000-8000-000000000000")}
    assert "node old (labelled CIS-node=h1): providerID openstack:///%s: no such server " \
        "in Nova (or these credentials cannot see it)" % GONE in "\n".join(report.text_lines())


def test_another_regions_node_is_not_judged():
    nodes = [_node("far", "10.0.0.1", "h9", A, region="RegionTwo")]
    servers = [_server(A, "10.0.0.1", "h1")]
    assert [c.state for c in _check(nodes, servers, region="RegionOne").checks] == ["unknown"]
    assert [c.state for c in _check(nodes, servers).checks] == ["stale"]


def test_an_unlabelled_node_whose_server_nova_lacks_is_named_and_fails_stale_labels():
    """No label, and a providerID naming a server Nova does not list (deleted, or
    another project's): unknown, with the server it names; --fail-on stale-labels
    fails on it. Without such a providerID an unlabelled node with no server is left
    out, as before."""
    deleted = _server(B, "10.0.0.5", "h1")._replace(status="DELETED")
    objs = [_node("ghost", "10.0.0.2", None, GONE),
            _node("ghost-regional", "10.0.0.3", None, GONE.replace("d", "e"),
                  region="RegionOne"),
            _node("deleted", "10.0.0.5", None, B),
            _node("plain", "10.0.0.4", None, None),
            node("aws", {}, ip="10.0.0.6", provider_id="aws:///eu-west-1a/i-0abc"),
            _node("a", "10.0.0.1", "h1", A)]
    report = _check(objs, [_server(A, "10.0.0.1", "h1"), deleted])
    states = {c.node: (c.state, c.label, c.server) for c in report.checks}
    assert states == {"a": ("ok", "h1", A), "ghost": ("unknown", None, GONE),
                      "ghost-regional": ("unknown", None, GONE.replace("d", "e")),
                      "deleted": ("unknown", None, B)}
    text = "\n".join(report.text_lines())
    assert "  unknown   node ghost (no CIS-node label): providerID openstack:///%s: no such " \
        "server in Nova (or these credentials cannot see it)" % GONE in text
    assert "providerID openstack://RegionOne/%s:" % GONE.replace("d", "e") in text
    assert [c.node for c in report.problems()] == ["deleted", "ghost", "ghost-regional"]
    entry = next(n for n in report.to_json()["nodes"] if n["node"] == "ghost")
    assert entry == {"node": "ghost", "state": "unknown", "label": None, "novaHost": None,
                     "server": GONE, "serverName": None, "serverStatus": None}
    nodes = [n for n in objs if n["metadata"]["labels"]]
    audit = core.audit(nodes, [], "CIS-node", host_override=report.nova_hosts())
    assert thresholds.findings(audit, None, ("stale-labels",), report) == [
        "node %s: host label stale or VM unknown to Nova" % n
        for n in ("deleted", "ghost", "ghost-regional")]


def test_a_node_whose_server_nova_lacks_is_judged_even_as_a_tainted_master():
    """An unlabelled control-plane node is not the labels' (left out when its VM is
    known), but one whose providerID names no server Nova lists is named: its host
    cannot be read either."""
    taint = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    objs = [_node("m-known", "10.0.0.1", None, A, taints=taint),
            _node("m-ghost", "10.0.0.2", None, GONE, taints=taint)]
    report = stale.check_nodes(stale.nodes_from_objects(objs), [_server(A, "10.0.0.1", "h1")],
                               "CIS-node", masters=stale.tainted_masters(objs))
    assert [(c.node, c.state) for c in report.checks] == [("m-ghost", "unknown")]


def test_another_regions_unlabelled_node_is_left_out():
    """Its providerID names another cloud's server: not these credentials' to judge."""
    objs = [_node("far", "10.0.0.1", None, GONE, region="RegionTwo")]
    assert _check(objs, [], region="RegionOne").checks == []
    assert [c.state for c in _check(objs, []).checks] == ["unknown"]
