"""The host-unknown taint in the controller's tick (``controller.hosttruth``): lifted once
a node's labels are Nova's answer, kept with a Warning Event and the gauge's reason while
they cannot be. The API calls are stand-ins (``kube.taints.lift`` runs against the real
control plane in tests/controlplane/test_host_truth_e2e.py)."""
import pytest

from tacker_hwaffinity.constants import CONTROL_PLANE_TAINTS, HOST_UNKNOWN_TAINT
from tacker_hwaffinity.kube import taints
from tacker_hwaffinity.openstack.workers import ClusterNodeWorkers
from tests import builders

from .tick_world import State, make_world

UNKNOWN = {"key": HOST_UNKNOWN_TAINT, "effect": "NoSchedule"}
OTHER = {"key": "dedicated", "value": "cnf", "effect": "NoSchedule"}


@pytest.fixture
def world(monkeypatch):
    return make_world(monkeypatch)


@pytest.fixture
def lifts(world, monkeypatch):
    return _taint_calls(world, monkeypatch)


def _taint_calls(world, monkeypatch):
    """The calls of kube.taints.lift (and .add, as ("add", node, resourceVersion)),
    applied to the node cache; ``refuse`` makes the next lift find the node changed."""
    c, _poll, nodes, *_ = world
    calls, refuse = [], []

    def add(conn, name, uid, resource_version, current, taint):
        calls.append(("add", name, resource_version))
        obj = nodes.objs[("", name)]
        obj["spec"]["taints"] = list(current or []) + [dict(taint)]
        return True
    monkeypatch.setattr(taints, "add", add)

    def lift(conn, name, uid, current, key):
        calls.append((name, uid, list(current), key))
        if refuse:
            refuse.pop()
            return False
        obj = nodes.objs[("", name)]
        obj["spec"]["taints"] = [t for t in current if t.get("key") != key]
        return True
    monkeypatch.setattr(taints, "lift", lift)
    return calls, refuse


def _join(nodes, name, ip, labels=None):
    """A node registered with the taint (and another one), without a host label."""
    obj = builders.node(name, labels or {}, ip=ip, uid="u-" + name, taints=[OTHER, UNKNOWN])
    nodes.objs[("", name)] = obj
    return obj


def _gauge(c, reason):
    return c.metrics.nodes_host_unknown.labels(reason)._value.get()


def _events(calls, reason):
    return [(n, m) for n, r, m in calls["events"] if r == reason]


def test_a_new_worker_is_labelled_then_its_taint_lifted_the_others_kept(world, lifts):
    c, poll, nodes, _pods, calls, now, _ = world
    lifted, _ = lifts
    _join(nodes, "w4", "10.0.0.4")
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3"), State("4", "h1")]
    c.tick()
    assert calls["labels"] == [("w4", {"CIS-node": "h1"})]
    assert lifted == [("w4", "u-w4", [OTHER, UNKNOWN], HOST_UNKNOWN_TAINT)]
    assert nodes.get("", "w4")["spec"]["taints"] == [OTHER]
    assert _events(calls, "HostKnown") == [
        ("w4", "host h1 is Nova's answer for server 4: %s lifted" % HOST_UNKNOWN_TAINT)]
    assert [_gauge(c, r) for r in ("no-server", "unresolved", "moving", "not-ready",
                                   "unlabelled")] == [0, 0, 0, 0, 0]
    now[0] += 30
    c.tick()
    assert len(lifted) == 1                     # nothing left to lift


def test_a_node_no_worker_server_matches_keeps_it_and_says_why(world, lifts):
    c, poll, nodes, _pods, calls, now, _ = world
    lifted, _ = lifts
    _join(nodes, "stray", "10.9.9.9")
    ghost = _join(nodes, "ghost", "10.9.9.8")
    ghost["spec"]["providerID"] = "openstack:///0000-gone"
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]
    c.tick()
    assert lifted == [] and _gauge(c, "no-server") == 2
    assert sorted(_events(calls, "HostUnknown")) == [
        ("ghost", "%s stays: its providerID openstack:///0000-gone names no worker server "
                  "Nova lists to these credentials" % HOST_UNKNOWN_TAINT),
        ("stray", "%s stays: no worker server has its InternalIP (10.9.9.9)"
         % HOST_UNKNOWN_TAINT)]
    now[0] += 30
    c.tick()
    assert len(_events(calls, "HostUnknown")) == 2      # said once per node


def test_a_moving_server_s_node_waits_until_it_settles(world, lifts):
    c, poll, nodes, _pods, calls, now, _ = world
    lifted, _ = lifts
    _join(nodes, "w4", "10.0.0.4")
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3"),
                   State("4", "h2", status="BUILD")]
    c.tick()
    assert lifted == [] and _gauge(c, "moving") == 1
    poll.states = [State("4", "h2")]
    now[0] += 30
    c.tick()
    assert [name for name, *_ in lifted] == ["w4"] and _gauge(c, "moving") == 0
    assert nodes.get("", "w4")["metadata"]["labels"]["CIS-node"] == "h2"


def test_a_node_that_changed_meanwhile_is_judged_again(world, lifts):
    c, poll, nodes, _pods, _calls, now, _ = world
    lifted, refuse = lifts
    _join(nodes, "w4", "10.0.0.4", labels={"CIS-node": "h3"})
    refuse.append(True)
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3"), State("4", "h3")]
    c.tick()
    assert len(lifted) == 1 and _gauge(c, "unlabelled") == 1
    assert UNKNOWN in nodes.get("", "w4")["spec"]["taints"]
    now[0] += 30
    c.tick()
    assert len(lifted) == 2 and _gauge(c, "unlabelled") == 0
    assert nodes.get("", "w4")["spec"]["taints"] == [OTHER]


def test_nova_failing_lifts_nothing(world, lifts):
    c, poll, nodes, *_ = world
    lifted, _ = lifts
    _join(nodes, "w4", "10.0.0.4", labels={"CIS-node": "h1"})
    poll.fail = True
    c.tick()
    assert lifted == [] and UNKNOWN in nodes.get("", "w4")["spec"]["taints"]


def test_a_dry_run_lifts_nothing(world, lifts):
    c, poll, nodes, *_ = world
    lifted, _ = lifts
    c.s.dry_run = True
    c.hosts.truth.dry_run = True
    _join(nodes, "w4", "10.0.0.4", labels={"CIS-node": "h1"})
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3"), State("4", "h1")]
    c.tick()
    assert lifted == [] and UNKNOWN in nodes.get("", "w4")["spec"]["taints"]


def _ready(obj, status):
    obj["status"]["conditions"] = [{"type": "Ready", "status": status}]
    obj["metadata"]["resourceVersion"] = "rv-%s" % status


def test_a_worker_that_goes_down_is_tainted_until_nova_s_host_is_read_again(world, lifts):
    """Its Node survives a reboot or an evacuation: nothing registers it again."""
    c, poll, nodes, _pods, calls, now, _ = world
    lifted, _ = lifts
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]
    c.tick()
    w1 = nodes.get("", "w1")
    _ready(w1, "Unknown")
    now[0] += 30
    c.tick()
    assert lifted == [("add", "w1", "rv-Unknown")]
    assert UNKNOWN in w1["spec"]["taints"] and _gauge(c, "not-ready") == 1
    assert [r for _n, r, _m in calls["events"]] == ["HostUnverified"]
    now[0] += 30
    c.tick()                                    # still down: kept, not added again
    assert len(lifted) == 1 and _gauge(c, "not-ready") == 1
    _ready(w1, "True")                          # back, on another host
    poll.states = [State("1", "h3")]
    now[0] += 30
    c.tick()
    assert w1["metadata"]["labels"]["CIS-node"] == "h3" and UNKNOWN not in w1["spec"]["taints"]
    assert [entry[0] for entry in lifted] == ["add", "w1"] and _gauge(c, "not-ready") == 0


def test_a_node_that_is_no_worker_s_is_not_tainted_when_it_goes_down(world, lifts):
    c, poll, nodes, *_ = world
    lifted, _ = lifts
    stray = builders.node("stray", {}, ip="10.9.9.9", uid="u-stray")
    _ready(stray, "False")
    nodes.objs[("", "stray")] = stray
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]
    c.tick()
    assert lifted == [] and not stray["spec"].get("taints")


# -- a node that registered without the taint (before the webhook's configuration) -------

GONE = "0b1c2d3e-0000-4000-8000-00000000000a"


def _every_node(monkeypatch):
    """The world with the workers every node of the cluster (--cluster-nodes)."""
    return make_world(monkeypatch, workers=lambda nodes: ClusterNodeWorkers(
        nodes.list, "RegionOne"))


def _untainted(nodes, name, ip, provider=None, taints=None):
    obj = builders.node(name, {}, ip=ip, uid="u-" + name, provider_id=provider,
                        taints=taints)
    nodes.objs[("", name)] = obj
    return obj


def test_with_every_node_a_worker_a_node_naming_a_server_nova_lacks_is_tainted(
        monkeypatch):
    world = _every_node(monkeypatch)
    c, poll, nodes, _pods, calls, now, _ = world
    lifted, _ = _taint_calls(world, monkeypatch)
    old = _untainted(nodes, "old", "10.0.0.9", "openstack:///" + GONE)
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]
    c.tick()
    assert lifted == [("add", "old", None)] and UNKNOWN in old["spec"]["taints"]
    text = ("%s added: its providerID openstack:///%s names server %s, which Nova does not "
            "list to these credentials" % (HOST_UNKNOWN_TAINT, GONE, GONE))
    assert _events(calls, "HostUnknown") == [("old", text)]
    assert _gauge(c, "no-server") == 1
    now[0] += 30
    c.tick()                        # kept (no second add), still counted
    assert len(lifted) == 1 and _gauge(c, "no-server") == 1
    # its server shows up (the credentials now see it): labelled, then lifted
    poll.states = [State(GONE, "h2", ip="10.0.0.9")]
    now[0] += 30
    c.tick()
    assert old["metadata"]["labels"]["CIS-node"] == "h2" and UNKNOWN not in old["spec"]["taints"]
    assert _gauge(c, "no-server") == 0


def test_with_every_node_a_worker_bare_metal_masters_and_other_regions_are_left_alone(
        monkeypatch):
    """A node with no OpenStack providerID may be bare metal (no Nova server stands
    behind it), a control-plane node runs no replicas, and another region's node is not
    this cloud's to judge."""
    world = _every_node(monkeypatch)
    c, poll, nodes, *_ = world
    lifted, _ = _taint_calls(world, monkeypatch)
    _untainted(nodes, "metal", "192.0.2.7")
    _untainted(nodes, "metal-aws", "192.0.2.8", "aws:///eu-west-1a/i-0abc")
    _untainted(nodes, "master", "10.0.0.10", "openstack:///" + GONE,
               taints=[{"key": CONTROL_PLANE_TAINTS[0], "effect": "NoSchedule"}])
    _untainted(nodes, "far", "10.0.0.11", "openstack://RegionTwo/" + GONE)
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]
    c.tick()
    assert lifted == [] and _gauge(c, "no-server") == 0


def test_with_chosen_workers_a_node_naming_another_server_is_left_alone(world, lifts):
    """--stack or --worker-metadata: a node outside the selection (a master, another
    pool) names a server that is no worker, which says nothing of its host."""
    c, poll, nodes, *_ = world
    lifted, _ = lifts
    _untainted(nodes, "pool-b", "10.0.1.1", "openstack:///" + GONE)
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]
    c.tick()
    assert lifted == [] and _gauge(c, "no-server") == 0


def test_a_dry_run_says_what_it_would_add(monkeypatch, caplog):
    world = _every_node(monkeypatch)
    c, poll, nodes, *_ = world
    lifted, _ = _taint_calls(world, monkeypatch)
    c.hosts.truth.dry_run = True
    old = _untainted(nodes, "old", "10.0.0.9", "openstack:///" + GONE)
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]
    with caplog.at_level("INFO"):
        c.tick()
    assert lifted == [] and not old["spec"].get("taints")
    assert "node old: a dry run, not done: %s added: its providerID" % HOST_UNKNOWN_TAINT \
        in caplog.text
