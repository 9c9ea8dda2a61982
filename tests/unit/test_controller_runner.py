"""The controller's tick on plain objects: relabel after a settled move, evict the seed's
violator, PDB blocks, Nova failures keep the labels. The API calls are stand-ins here
(kube.labels, kube.evict and kube.events are tested against the real control plane)."""
import json
import logging

import pytest
from prometheus_client import CollectorRegistry

from tacker_hwaffinity.controller import runner
from tacker_hwaffinity.controller.rules import ANNOTATION
from tacker_hwaffinity.controller.workers import MetadataWorkers
from tacker_hwaffinity.kube.evict import Eviction
from tacker_hwaffinity.labeling import params


class Cache:
    def __init__(self, objs):
        self.objs = {(o["metadata"].get("namespace") or "", o["metadata"]["name"]): o
                     for o in objs}

    def list(self):
        return list(self.objs.values())

    def get(self, ns, name):
        return self.objs.get((ns or "", name))


class State:
    def __init__(self, id, host, status="ACTIVE", ip=None):
        self.id, self.name, self.status, self.task_state = id, "vm-" + id, status, None
        self.host, self.host_id, self.updated = host, "hid-" + host, ""
        self.metadata, self.addresses = {"cluster": "c1"}, [ip or "10.0.0.%s" % id]


class Poll:
    def __init__(self):
        self.states, self.fail = [], False

    def poll(self):
        if self.fail:
            raise RuntimeError("Nova: HTTP 503")
        out, self.states = self.states, []
        return out


def node(name, ip, host):
    return {"metadata": {"name": name, "uid": "u-" + name, "labels": {"CIS-node": host}},
            "status": {"addresses": [{"type": "InternalIP", "address": ip}]}}


ANTI = json.dumps({"podAntiAffinity": [{"topologyKey": "CIS-node",
                                        "labelSelector": {"matchLabels": {"app": "web"}}}]})


def pod(name, node_name, created):
    return {"metadata": {"name": name, "namespace": "default", "uid": "u-" + name,
                         "labels": {"app": "web"}, "creationTimestamp": created,
                         "annotations": {ANNOTATION: ANTI}},
            "spec": {"nodeName": node_name}, "status": {"phase": "Running"}}


@pytest.fixture
def world(monkeypatch):
    calls = {"labels": [], "evict": [], "events": []}
    nodes = Cache([node("w1", "10.0.0.1", "h1"), node("w2", "10.0.0.2", "h2"),
                   node("w3", "10.0.0.3", "h3")])
    pods = Cache([pod("a", "w1", "2026-01-01T00:00:01Z"), pod("b", "w2", "2026-01-01T00:00:02Z")])

    def apply(conn, name, labels, uid=None):
        calls["labels"].append((name, labels))
        nodes.objs[("", name)]["metadata"]["labels"].update(labels)
    monkeypatch.setattr(runner.labels, "apply_node_labels", apply)
    outcome = {"now": Eviction("evicted", "", None)}

    def evict(conn, ns, name, uid=None):
        calls["evict"].append(name)
        if outcome["now"].outcome == "evicted":
            pods.objs.pop((ns, name))
        return outcome["now"]
    monkeypatch.setattr(runner.evictmod, "evict", evict)
    monkeypatch.setattr(runner.events, "record_event",
                        lambda conn, obj, kind, reason, msg, comp: calls["events"].append(
                            (obj["metadata"]["name"], reason, msg)))
    poll, now = Poll(), [0.0]
    hw = params.parse({})["hwaffinity"]
    settings = runner.Settings(hw, MetadataWorkers({"cluster": "c1"}), poll_interval=30,
                               grace=60,
                               eviction_interval=10)
    c = runner.Controller(None, poll, settings, nodes, pods,
                          runner.Metrics(CollectorRegistry()),
                          log=logging.getLogger("test.controller"), clock=lambda: now[0])
    return c, poll, nodes, pods, calls, now, outcome


def test_a_live_migration_relabels_once_and_evicts_the_moved_nodes_pod(world):
    c, poll, nodes, pods, calls, now, _ = world
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]
    c.tick()
    assert calls["labels"] == [] and calls["evict"] == []     # labels already true
    poll.states = [State("1", "h2", status="MIGRATING")]
    now[0] += 30
    c.tick()
    assert calls["labels"] == []                             # wait: in progress
    poll.states = [State("1", "h2")]
    now[0] += 30
    c.tick()
    assert calls["labels"] == [("w1", {"CIS-node": "h2"})]
    assert calls["evict"] == ["a"]                            # on the node that moved
    assert any(r == "HostLabelChanged" and "from host h1 to h2" in m
               for _, r, m in calls["events"])
    now[0] += 30
    c.tick()
    assert calls["evict"] == ["a"]                            # b is fine now


def test_a_pdb_blocks_with_an_event_and_the_eviction_is_retried(world):
    c, poll, nodes, pods, calls, now, outcome = world
    poll.states = [State("1", "h1"), State("2", "h2")]
    c.tick()
    nodes.objs[("", "w1")]["metadata"]["labels"]["CIS-node"] = "h2"
    outcome["now"] = Eviction("blocked", "The disruption budget web needs 2 healthy pods", None)
    now[0] += 11
    c.tick()
    (blocked,) = [e for e in calls["events"] if e[1] == "EvictionBlocked"]
    assert "disruption budget" in blocked[2]
    n = len(calls["evict"])
    now[0] += 5
    c.tick()
    assert len(calls["evict"]) == n                           # waits before retrying
    outcome["now"] = Eviction("evicted", "", None)
    now[0] += 11
    c.tick()
    assert len(calls["evict"]) == n + 1


def test_nova_failures_keep_the_labels(world):
    c, poll, nodes, pods, calls, now, _ = world
    poll.fail = True
    c.tick()
    assert calls["labels"] == [] and c.metrics.poll_errors._value.get() == 1


def test_a_bad_annotation_is_an_event_not_an_eviction(world):
    c, poll, nodes, pods, calls, now, _ = world
    pods.objs[("default", "a")]["metadata"]["annotations"][ANNOTATION] = "{"
    poll.states = [State("1", "h1")]
    c.tick()
    assert [e[1] for e in calls["events"]] == ["RequiredDuringExecutionInvalid"]
    assert calls["evict"] == []


def test_the_host_id_label_follows_the_server_too(world):
    c, poll, nodes, pods, calls, now, _ = world
    c.s.host_id_label = "topology.openstack.org/host-id"
    poll.states = [State("1", "h1"), State("2", "h2")]
    c.tick()
    assert ("w1", {"CIS-node": "h1", "topology.openstack.org/host-id": "hid-h1"}) \
        in calls["labels"]


def test_a_notification_about_a_worker_polls_at_the_next_tick(world):
    c, poll, nodes, pods, calls, now, outcome = world
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]
    c.tick()                                             # first poll at t=0
    now[0] = 5.0
    poll.states = [State("1", "h3")]                     # moved; next poll due at t=30
    c.tick()
    assert calls["labels"] == []
    c.notified("instance.live_migration_post_dest.end", "not-a-worker")
    c.tick()
    assert calls["labels"] == []                         # someone else's VM: no poll
    c.notified("instance.live_migration_post_dest.end", "1")
    c.tick()
    assert calls["labels"] == [("w1", {"CIS-node": "h3"})]
    c.notified("instance.create.end", "new-vm")          # a new VM may be a worker
    assert c.next_poll == 0.0
