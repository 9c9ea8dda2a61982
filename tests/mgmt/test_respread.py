"""on_colocation respread: which workers move (labeling.colocation, pure) and how the
moves are bounded (mgmt.respread.converge over a scripted Nova; the real Nova runs in
test_driver_openstack.py)."""
import logging

import pytest
from hypothesis import given, strategies as st

from tacker_hwaffinity.labeling import colocation
from tacker_hwaffinity.labeling.plan import Worker
from tacker_hwaffinity.mgmt import respread
from tacker_hwaffinity.openstack import OpenStackError

LOG = logging.getLogger("test.respread")


def _w(name, host):
    return Worker(name, "id-" + name, ["10.0.0.%d" % (ord(name[-1]) % 200)], host=host,
                  host_id="hid-" + host if host else None)


def test_all_but_one_of_each_shared_host_move_and_a_settled_worker_stays():
    ws = [_w("w1", "h1"), _w("w2", "h1"), _w("w3", "h1"), _w("w4", "h2"), _w("w5", "h3"),
          _w("w6", "h3")]
    assert [w.name for w in colocation.movers(ws, "host", set())] == ["w2", "w3", "w6"]
    assert [w.name for w in colocation.movers(ws, "host", {"id-w3", "id-w6"})] == [
        "w1", "w2", "w5"]
    assert [w.name for w in colocation.movers(ws, "hostId", set())] == ["w2", "w3", "w6"]
    assert colocation.spread(ws, "host") == 3


def test_a_worker_whose_host_is_unknown_shares_nothing():
    ws = [_w("w1", None), _w("w2", None), _w("w3", "h1")]
    assert colocation.movers(ws, "host", set()) == [] and colocation.spread(ws, "host") == 1


@given(st.lists(st.sampled_from(["h1", "h2", "h3", None]), max_size=12),
       st.sets(st.integers(0, 11)))
def test_movers_leave_exactly_one_worker_on_every_host(hosts, settled_idx):
    ws = [_w("w%02d" % i, h) for i, h in enumerate(hosts)]
    settled = {ws[i].server_id for i in settled_idx if i < len(ws)}
    moving = {w.server_id for w in colocation.movers(ws, "host", settled)}
    staying = [w for w in ws if w.server_id not in moving and w.host]
    assert len({w.host for w in staying}) == len(staying) == colocation.spread(ws, "host")


class ScriptedNova:
    """Nova as the loop sees it: a live migration puts the server where DESTINATIONS
    say (None: the scheduler found no host; 'refuse': HTTP 403), after TASK_POLLS reads
    with the task 'migrating'."""

    def __init__(self, workers, destinations, task_polls=1, computes=None):
        self.computes = computes    # compute_hosts(): None (not said), a set or an error
        self.hosts = {w.server_id: w.host for w in workers}
        self.names = {w.server_id: w.name for w in workers}
        self.destinations, self.task_polls = list(destinations), task_polls
        self.migrations, self.polls = [], 0

    def live_migrate(self, server_id):
        to = self.destinations.pop(0)
        if to == "refuse":
            raise OpenStackError("Nova POST /servers/%s/action: HTTP 403 Forbidden" % server_id,
                                 status=403)
        self.migrations.append(server_id)
        self.pending, self.to, self.polls = server_id, to, 0

    def compute_hosts(self):
        if isinstance(self.computes, Exception):
            raise self.computes
        return self.computes

    def server(self, server_id):
        self.polls += 1
        if self.polls <= self.task_polls:
            return {"status": "MIGRATING", respread.TASK_ATTR: "migrating"}
        if self.to:
            self.hosts[server_id] = self.to
        return {"status": "ACTIVE", respread.TASK_ATTR: None}

    def workers(self):
        return [Worker(self.names[s], s, [], host=h) for s, h in self.hosts.items()]


def _converge(nova, ws, timeout=60.0, settled=()):
    clock = iter(range(0, 10000)).__next__
    return respread.converge(nova, ws, nova.workers, "host", set(settled), timeout, LOG,
                             clock=lambda: float(clock()), sleep=lambda s: None)


def test_moves_until_no_host_is_shared():
    ws = [_w("a", "h1"), _w("b", "h1"), _w("c", "h1")]
    nova = ScriptedNova(ws, ["h2", "h3"])
    done = _converge(nova, ws)
    assert done.error is None and nova.migrations == ["id-b", "id-c"]
    assert [(m["worker"], m["from"], m["to"]) for m in done.moves] == [
        ("b", "h1", "h2"), ("c", "h1", "h3")]
    assert colocation.spread(done.workers, "host") == 3


def test_stops_at_the_first_move_that_adds_no_host():
    ws = [_w("a", "h1"), _w("b", "h1"), _w("c", "h2"), _w("d", "h2")]
    nova = ScriptedNova(ws, ["h2", "h3"])      # b goes onto c's and d's host: no gain
    done = _converge(nova, ws)
    assert done.error is None and nova.migrations == ["id-b"]
    nova = ScriptedNova(ws, [None, "h3"])      # no valid host: b stays
    done = _converge(nova, ws)
    assert done.error is None and nova.migrations == ["id-b"]
    assert done.moves == [{"worker": "b", "server": "id-b", "from": "h1", "to": "h1"}]


def test_a_refused_move_is_the_error_and_nothing_more_is_tried():
    ws = [_w("a", "h1"), _w("b", "h1"), _w("c", "h1")]
    nova = ScriptedNova(ws, ["refuse", "h3"])
    done = _converge(nova, ws)
    assert done.moves == [] and nova.migrations == []
    assert done.error.startswith("respread: live migration of worker b (server id-b): ")
    assert "HTTP 403" in done.error


def test_a_move_that_does_not_end_in_time_is_the_error():
    ws = [_w("a", "h1"), _w("b", "h1")]
    nova = ScriptedNova(ws, ["h2"], task_polls=1000)
    done = _converge(nova, ws, timeout=30.0)
    assert "still migrating when hwaffinity_param.respread_timeout ran out" in done.error
    assert nova.polls <= 32


def test_a_server_that_goes_to_error_is_the_error():
    class Broken(ScriptedNova):
        def server(self, server_id):
            return {"status": "ERROR", "fault": {"message": "libvirt said no"}}
    ws = [_w("a", "h1"), _w("b", "h1")]
    done = _converge(Broken(ws, ["h2"]), ws)
    assert "the server went to ERROR: libvirt said no" in done.error


@pytest.mark.parametrize("count", [2, 5, 9])
def test_never_more_moves_than_workers(count):
    ws = [_w("w%d" % i, "h1") for i in range(count)]
    nova = ScriptedNova(ws, ["h%d" % (i + 2) for i in range(count)])
    done = _converge(nova, ws)
    assert len(nova.migrations) == count - 1 == len(done.moves)


def test_with_no_compute_host_free_of_workers_nothing_moves():
    """A move could only put the worker, and its pods, on another worker's host."""
    ws = [_w("a", "h1"), _w("b", "h1"), _w("c", "h2")]
    nova = ScriptedNova(ws, ["h2"], computes={"h1", "h2"})
    done = _converge(nova, ws)
    assert nova.migrations == [] and done.moves == [] and done.error is None


def test_a_free_compute_host_lets_it_move_and_none_said_leaves_it_to_the_move():
    ws = [_w("a", "h1"), _w("b", "h1"), _w("c", "h1")]
    nova = ScriptedNova(ws, ["h2", "h3"], computes={"h1", "h2"})
    done = _converge(nova, ws)     # b to the free h2; then none is free: c stays
    assert nova.migrations == ["id-b"] and done.error is None
    for said in (None, OpenStackError("Nova GET /os-hypervisors/detail: HTTP 503")):
        nova = ScriptedNova(ws, ["h2", "h3"], computes=said)
        assert _converge(nova, ws).error is None and nova.migrations == ["id-b", "id-c"]


def _heal_ctx(nova, hook, targets):
    """What lifecycle._respread reads of the hook's context."""
    from types import SimpleNamespace
    from tacker_hwaffinity.labeling import params
    hw = params.parse({"hwaffinity_param": {"on_colocation": "respread"}})
    return SimpleNamespace(openstack=nova, job=SimpleNamespace(
        hook=hook, target_servers=targets, params=hw))


def test_in_heal_end_the_healed_worker_moves_not_its_neighbour():
    """A healed worker's node survives its server and keeps the old server's label, so
    it looks settled; drained and cordoned, it carries no pods, and moving it is what
    keeps the neighbour's replicas where they are."""
    from tacker_hwaffinity.labeling.plan import KubeNode
    from tacker_hwaffinity.mgmt import lifecycle
    ws = [_w("a", "h1"), _w("b", "h1"), _w("c", "h2")]
    nodes = [KubeNode("node-" + w.name, w.addresses, {"CIS-node": "h9"}) for w in ws]
    for hook, targets, moved in (("heal_end", ["id-a"], ["id-a"]), ("scale_end", [], [])):
        nova = ScriptedNova(ws, ["h3"])
        done = lifecycle._respread(_heal_ctx(nova, hook, targets), ws, nova.workers, nodes,
                                   None, LOG)
        # (scale_end: both labelled, both may carry pods: neither moves)
        assert nova.migrations == moved and done.error is None, hook
