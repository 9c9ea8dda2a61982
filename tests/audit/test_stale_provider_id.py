"""audit --openstack matches a node to its server as the planner does: spec.providerID
first, InternalIP second; a node whose providerID names a server Nova does not list is
unknown, not judged against the server that now has its address."""
from tacker_hwaffinity.audit import stale
from tacker_hwaffinity.openstack.servers import ServerState
from tests.builders import node

A = "aaaaaaaa-0000-4000-8000-000000000000"
B = "bbbbbbbb-0000-4000-8000-000000000000"
GONE = "dddddddd-0000-4000-8000-000000000000"


def _server(sid, ip, host):
    return ServerState(sid, "vm-" + sid[:1], "ACTIVE", None, host, "hid-" + host,
                       "2026-11-24T00:00:00Z", {}, (ip,))


def _node(name, ip, label, sid, region=""):
    return node(name, {"CIS-node": label}, ip=ip,
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
    assert states == {"a": ("ok", A), "b": ("stale", B), "old": ("unknown", None),
                      "by-ip": ("ok", "cccccccc-0000-4000-8000-000000000000")}
    assert "node old (labelled CIS-node=h1): no Nova server is its VM (none is " \
        "openstack:///%s" % GONE in "\n".join(report.text_lines())


def test_another_regions_node_is_not_judged():
    nodes = [_node("far", "10.0.0.1", "h9", A, region="RegionTwo")]
    servers = [_server(A, "10.0.0.1", "h1")]
    assert [c.state for c in _check(nodes, servers, region="RegionOne").checks] == ["unknown"]
    assert [c.state for c in _check(nodes, servers).checks] == ["stale"]
