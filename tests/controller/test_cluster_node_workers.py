"""The worker set "every server that is a node of this cluster" (--cluster-nodes): a
server is a worker when a node's spec.providerID names it, else when a node without a
providerID has its address; a server whose node joins later becomes a worker then, and
the controller labels its node at that poll."""
import logging

import pytest
from prometheus_client import CollectorRegistry

from tacker_hwaffinity.controller import runner
from tacker_hwaffinity.openstack.workers import ClusterNodeWorkers
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.kube import events, labels
from tacker_hwaffinity.labeling import params
from tacker_hwaffinity.openstack.servers import ServerState
from tests import builders
from tests.controller.tick_world import Cache, Poll

S = ["%d%d%d%d%d%d%d%d-0000-4000-8000-000000000000" % ((i,) * 8) for i in range(1, 6)]


def state(i, host="h1", ip=None, status="ACTIVE"):
    return ServerState(S[i], "vm-%d" % i, status, None, host, "hid-" + host,
                       "2026-01-01T00:00:0%dZ" % i, {}, (ip or "10.0.0.%d" % i,))


def node(name, ip, sid=None, labels=None):
    return builders.node(name, labels, ip=ip, uid="u-" + name,
                         provider_id="openstack:///" + sid if sid else None)


def test_servers_named_by_a_node_or_on_its_address_are_the_workers():
    objs = [node("by-id", "10.9.9.9", S[0]),          # its IP is nobody's
            node("by-ip", "10.0.0.1"),                 # no providerID
            node("old", "10.0.0.2", S[4]),             # S[2] got the old VM's address
            {"metadata": {}}]                          # unreadable: skipped
    w = ClusterNodeWorkers(lambda: objs)
    chosen = w.select([state(0), state(1), state(2), state(3, ip="10.0.0.8")])
    assert sorted(s.id for s in chosen) == [S[0], S[1]]
    assert "node of this cluster" in w.describe()
    # S[2]'s own node joins: it is a worker at the next poll, though Nova lists no change
    objs.append(node("new", "10.0.0.2", S[2]))
    assert [s.id for s in w.select([])] == [S[2]]
    assert w.select([state(3, status="DELETED")]) == [] and S[3] not in w.others


def test_the_controller_labels_a_node_that_joins_after_the_first_poll(monkeypatch):
    nodes = Cache([node("n0", "10.0.0.7", S[0]), node("n1", "10.0.0.0", S[1])])  # reused IP
    labelled = []
    monkeypatch.setattr(labels, "apply_node_labels",
                        lambda conn, name, wanted, uid=None: labelled.append((name, wanted)))
    monkeypatch.setattr(events, "record_event", lambda *args: None)
    poll, now = Poll(), [0.0]
    settings = runner.Settings(params.parse({})["hwaffinity"], ClusterNodeWorkers(nodes.list),
                               poll_interval=30)
    c = runner.Controller(None, poll, settings, nodes, Cache([]),
                          runner.Metrics(CollectorRegistry()),
                          log=logging.getLogger("test.controller"), clock=lambda: now[0])
    poll.states = [state(0, "h0", ip="10.0.0.0"), state(1, "h1", ip="10.0.0.1"),
                   state(2, "h2")]
    c.tick()
    assert sorted(labelled) == [("n0", {"CIS-node": "h0"}), ("n1", {"CIS-node": "h1"})]
    nodes.objs[("", "n2")] = node("n2", "10.0.0.2", S[2])
    now[0] += 30
    c.tick()                    # no server changed; S[2]'s node joined
    assert labelled[2:] == [("n2", {"CIS-node": "h2"})]


def _config(flags):
    from tacker_hwaffinity.cli import controller as cli_controller
    from tacker_hwaffinity.cli.main import build_parser
    args = build_parser("controller").parse_args(["controller"] + flags)
    return cli_controller.config(args)


def test_the_flag_gives_the_cluster_node_selector_and_excludes_the_others():
    select = _config(["--cluster-nodes"]).select_workers
    w = select(None, lambda: [node("n", "10.0.0.1", S[0])], "RegionOne")
    assert isinstance(w, ClusterNodeWorkers) and w.region == "RegionOne"
    assert [s.id for s in w.select([state(0)])] == [S[0]]
    for other in (["--worker-metadata", "a=b"], ["--stack", "s", "--aspect", "a"]):
        with pytest.raises(InputError, match="give one of --cluster-nodes, --worker-metadata"):
            _config(["--cluster-nodes"] + other)
