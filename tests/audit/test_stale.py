"""audit.stale: node host labels against the hosts Nova reports (pure part, and the
credential flags)."""
import argparse

from hypothesis import given
from hypothesis import strategies as st

from tacker_hwaffinity.audit import stale
from tacker_hwaffinity.openstack.servers import ServerState
from tests import fuzzing
from tests.builders import node


def _server(sid, ip, host, status="ACTIVE", task=None, host_id=None):
    return ServerState(sid, "vm-" + sid, status, task, host, host_id or "hid-" + (host or ""),
                       "2026-11-24T00:00:00Z", {}, (ip,))


def _node(name, ip, label=None, key="CIS-node"):
    return node(name, {key: label} if label else {}, ip=ip)


def _check(nodes, servers, key="CIS-node", source="auto"):
    return stale.check_nodes(stale.nodes_from_objects(nodes), servers, key, source)


def test_each_state_is_found_by_address_and_worst_comes_first():
    nodes = [_node("ok", "10.0.0.1", "h1"), _node("moved", "10.0.0.2", "h1"),
             _node("gone", "10.0.0.3", "h2"), _node("unlabelled", "10.0.0.4"),
             _node("migrating", "10.0.0.5", "h1"), _node("master", "10.0.0.9")]
    servers = [_server("a", "10.0.0.1", "h1"), _server("b", "10.0.0.2", "h2"),
               _server("d", "10.0.0.4", "h3"), _server("e", "10.0.0.5", "h1", "MIGRATING"),
               _server("x", "10.0.0.3", "h2", status="DELETED")]
    report = _check(nodes, servers)
    states = [(c.node, c.state) for c in report.checks]
    assert states == [("moved", "stale"), ("unlabelled", "stale"), ("gone", "unknown"),
                      ("migrating", "moving"), ("ok", "ok")]
    assert [c.node for c in report.problems()] == ["moved", "unlabelled", "gone"]
    moved = report.checks[0].to_json()
    assert (moved["label"], moved["novaHost"], moved["server"]) == ("h1", "h2", "b")
    text = "\n".join(report.text_lines())
    assert "node moved is labelled CIS-node=h1 but Nova has its VM vm-b on h2" in text
    assert "master" not in text
    assert report.nova_hosts() == {"moved": "h2", "unlabelled": "h3", "ok": "h1"}
    assert report.to_json()["counts"] == {"stale": 2, "unknown": 1, "moving": 1,
                                          "ambiguous": 0, "ok": 1}


def test_host_ids_for_users_who_cannot_see_hosts_and_for_the_host_id_key():
    nodes = [_node("n1", "10.0.0.1", "hid-h1"), _node("n2", "10.0.0.2", "hid-h1")]
    member = [_server("a", "10.0.0.1", None, host_id="hid-h1"),
              _server("b", "10.0.0.2", None, host_id="hid-h2")]
    report = _check(nodes, member)
    assert report.source == "hostId"
    assert [(c.node, c.state) for c in report.checks] == [("n2", "stale"), ("n1", "ok")]
    admin = [_server("a", "10.0.0.1", "h1"), _server("b", "10.0.0.2", "h2")]
    for key in stale.HOST_ID_KEYS:      # OCCM's and scs-0214's: hostIds, even for admin
        nodes = [_node("n1", "10.0.0.1", "hid-h1", key), _node("n2", "10.0.0.2", "hid-h2", key)]
        assert [c.state for c in _check(nodes, admin, key).checks] == ["ok", "ok"]


def test_host_names_are_compared_as_the_labels_write_them():
    host = "compute-1.example.org:rack/7"       # not a valid label value
    from tacker_hwaffinity.labeling.sanitize import label_value
    nodes = [_node("n1", "10.0.0.1", label_value(host))]
    assert _check(nodes, [_server("a", "10.0.0.1", host)]).checks[0].state == "ok"


def test_two_servers_with_one_address_are_not_judged():
    report = _check([_node("n1", "10.0.0.1", "h1")],
                    [_server("a", "10.0.0.1", "h1"), _server("b", "10.0.0.1", "h2")])
    assert [(c.state, c.server) for c in report.checks] == [("ambiguous", "a, b")]
    assert report.problems() == []


def test_the_flags_ask_for_nova_only_when_given():
    p = argparse.ArgumentParser()
    stale.register_openstack_args(p)
    assert not stale.wanted(p.parse_args([]))
    assert stale.wanted(p.parse_args(["--openstack"]))
    args = p.parse_args(["--os-cloud", "c", "--host-source", "hostId", "--nova-scope", "project"])
    assert stale.wanted(args) and args.host_source == "hostId" and args.nova_scope == "project"


class _Nova:
    """The one Nova read, answered from a list (or refused)."""

    def __init__(self, servers=None, error=None):
        self.servers, self.error, self.paths = servers or [], error, []

    def get_json(self, service, name, path):
        self.paths.append(path)
        if self.error:
            raise self.error
        return {"servers": self.servers}


def _args(*argv):
    p = argparse.ArgumentParser()
    stale.register_openstack_args(p)
    return p.parse_args(list(argv) or ["--openstack"])


def test_check_makes_one_nova_call_and_reads_addresses():
    nova = _Nova([{"id": "a", "name": "vm-a", "status": "ACTIVE", "hostId": "x",
                   "OS-EXT-SRV-ATTR:host": "h2", "updated": "2026-11-24T00:00:00Z",
                   "addresses": {"net": [{"addr": "10.0.0.1", "OS-EXT-IPS:type": "fixed"}]}}])
    report = stale.check(_args(), [_node("n1", "10.0.0.1", "h1")], "CIS-node", openstack=nova)
    assert len(nova.paths) == 1 and nova.paths[0].startswith("/servers/detail?")
    assert [(c.node, c.state, c.expected) for c in report.checks] == [("n1", "stale", "h2")]
    assert report.scope == "all-projects"


def test_nova_failing_is_one_line_of_bad_input():
    import pytest

    from tacker_hwaffinity.errors import InputError
    from tacker_hwaffinity.openstack.api import OpenStackError
    nova = _Nova(error=OpenStackError("Nova: Keystone refused the VIM credentials"))
    with pytest.raises(InputError) as e:
        stale.check(_args(), [_node("n1", "10.0.0.1", "h1")], "CIS-node", openstack=nova)
    assert str(e.value) == ("field --os-cloud: Nova: Nova: Keystone refused the VIM "
                            "credentials")


def test_an_unlabelled_master_that_no_pod_may_land_on_is_not_judged():
    """The MgmtDriver labels workers only: a kubeadm master (tainted) with its VM known is
    not "stale"; untainted, or labelled, it is judged as any node."""
    taint = [{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]
    objs = [node("m1", {}, ip="10.0.0.1", taints=taint),
            node("m2", {}, ip="10.0.0.2", taints=[
                {"key": "node-role.kubernetes.io/control-plane", "effect": "NoExecute"}]),
            node("m3", {}, ip="10.0.0.3", taints=[
                {"key": "node-role.kubernetes.io/master", "effect": "PreferNoSchedule"}]),
            node("m4", {"CIS-node": "h1"}, ip="10.0.0.4", taints=taint),
            node("w", {}, ip="10.0.0.5")]
    servers = [_server(s, "10.0.0.%d" % i, "h%d" % i) for i, s in enumerate("abcde", 1)]
    report = stale.check_nodes(stale.nodes_from_objects(objs), servers, "CIS-node",
                               masters=stale.tainted_masters(objs))
    assert [(c.node, c.state) for c in report.checks] == [
        ("m3", "stale"), ("m4", "stale"), ("w", "stale")]
    assert stale.tainted_masters(objs) == {"m1", "m2", "m4"}


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=40),
                     lambda c: st.lists(c, max_size=5) | st.dictionaries(st.text(max_size=40),
                                                                       c, max_size=5),
                     max_leaves=20)
_TAINT = st.fixed_dictionaries({}, optional={
    "key": st.sampled_from(stale.CONTROL_PLANE_TAINTS) | _JSON,
    "effect": st.sampled_from(("NoSchedule", "NoExecute", "PreferNoSchedule")) | _JSON})


_SPEC = st.one_of(_JSON, st.fixed_dictionaries({}, optional={
    "taints": st.one_of(_JSON, st.lists(st.one_of(_TAINT, _JSON), max_size=5))}))
_NODE = st.fixed_dictionaries({"metadata": st.fixed_dictionaries({
    "name": st.text(min_size=1, max_size=20)})}, optional={"spec": _SPEC})


@given(st.lists(_NODE, max_size=5))
def test_fuzz_tainted_masters_reads_any_node_spec(objs):
    """A snapshot's node specs are the user's: any shape gives a set of names."""
    assert fuzzing.bounded(stale.tainted_masters, objs) <= {o["metadata"]["name"]
                                                            for o in objs}
