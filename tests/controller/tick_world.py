"""The controller's tick on plain objects (``tests/controller/test_runner.py`` and
``test_host_truth.py``): node and pod caches, a Nova poll whose answers a test sets, and
the API calls recorded instead of made."""
import json
import logging

from prometheus_client import CollectorRegistry

from tacker_hwaffinity.controller import runner
from tacker_hwaffinity.controller.rules import ANNOTATION
from tacker_hwaffinity.openstack.workers import MetadataWorkers
from tacker_hwaffinity.kube import evict as evictmod
from tacker_hwaffinity.kube import events, labels
from tacker_hwaffinity.kube.evict import Eviction
from tacker_hwaffinity.labeling import params
from tests import builders


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
    return builders.node(name, {"CIS-node": host}, ip=ip, uid="u-" + name)


ANTI = json.dumps({"podAntiAffinity": [{"topologyKey": "CIS-node",
                                        "labelSelector": {"matchLabels": {"app": "web"}}}]})


def pod(name, node_name, created, owner=None):
    """A running web pod with the anti-affinity rule; OWNER: (kind, name) of its controller."""
    return builders.pod(name, {"app": "web"}, on=node_name, phase="Running", uid="u-" + name,
                        created=created, annotations={ANNOTATION: ANTI}, owner=owner)


def make_world(monkeypatch, workers=None):
    """(controller, poll, nodes, pods, calls, now, outcome): three workers w1-w3 on h1-h3,
    pods a (on w1) and b (on w2) with the anti-affinity rule. WORKERS(nodes): the worker
    selector for the node cache (default: the servers with metadata cluster=c1)."""
    calls = {"labels": [], "evict": [], "events": []}
    nodes = Cache([node("w1", "10.0.0.1", "h1"), node("w2", "10.0.0.2", "h2"),
                   node("w3", "10.0.0.3", "h3")])
    pods = Cache([pod("a", "w1", "2026-01-01T00:00:01Z"), pod("b", "w2", "2026-01-01T00:00:02Z")])

    def apply(conn, name, labels, uid=None):
        calls["labels"].append((name, labels))
        nodes.objs[("", name)]["metadata"]["labels"].update(labels)
    monkeypatch.setattr(labels, "apply_node_labels", apply)
    outcome = {"now": Eviction("evicted", "", None)}

    def evict(conn, ns, name, uid=None):
        calls["evict"].append(name)
        if outcome["now"].outcome == "evicted":
            pods.objs.pop((ns, name))
        return outcome["now"]
    monkeypatch.setattr(evictmod, "evict", evict)
    monkeypatch.setattr(events, "record_event",
                        lambda conn, obj, kind, reason, msg, comp: calls["events"].append(
                            (obj["metadata"]["name"], reason, msg)))
    poll, now = Poll(), [0.0]
    hw = params.parse({})["hwaffinity"]
    settings = runner.Settings(hw, workers(nodes) if workers else MetadataWorkers(
        {"cluster": "c1"}), poll_interval=30, grace=60, eviction_interval=10,
        region="RegionOne")
    c = runner.Controller(None, poll, settings, nodes, pods,
                          runner.Metrics(CollectorRegistry()),
                          log=logging.getLogger("test.controller"), clock=lambda: now[0])
    return c, poll, nodes, pods, calls, now, outcome
