"""Each component's informers keep only the fields of its projection (kube.informer
``fields``): this runs the components' real handlers on objects that record every
key read, and fails when a reader reads a key its projection drops; then it runs
them again on pruned objects and checks that they decide the same.

Readers covered: the agent (agent.runner, agent.node, numa.subjects, objects.qos,
kube.events), the controller (controller.runner's relabel and RequiredDuringExecution
model with namespaces and eviction, kube.events) and the webhook's pod cache
(webhook.podcache).
"""
import copy
import importlib.util
import json
import logging
import os

import pytest
from prometheus_client import CollectorRegistry

from tacker_hwaffinity.agent import cgroupfs
from tacker_hwaffinity.agent.node import ANNOTATION, NodeState
from tacker_hwaffinity.agent.runner import Agent, Metrics
from tacker_hwaffinity.agent import daemon as agent_daemon
from tacker_hwaffinity.controller import daemon as controller_daemon
from tacker_hwaffinity.objects.pruning import pruner
from tacker_hwaffinity.objects.yamlio import parse_documents
from tacker_hwaffinity.numa.topology import machine_from_yaml
from tacker_hwaffinity.webhook.podcache import PodCache

from agent.test_agent_runner import make_dirs, make_layout

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location(
    "agent_podobjects", os.path.join(TESTS, "agent", "podobjects.py"))
podobjects = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(podobjects)
SERVER = os.path.join(TESTS, "numa", "data", "server.yaml")
MANAGED = [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}}}}]


def recorded(value, reads, path=()):
    """VALUE with every mapping in it recording the keys read (see Recorded)."""
    if type(value) is dict:
        return Recorded(value, reads, path)
    if type(value) is list:
        return [recorded(v, reads, path + ("[]",)) for v in value]
    return value


class Recorded(dict):
    """A mapping that records in READS the path of every key read: ``path + (key,)``,
    ``path + ("*",)`` for a read of all of it by iteration; items of lists are under
    ``"[]"``. Mappings inside are Recorded too."""

    def __init__(self, data, reads, path=()):
        super().__init__({k: recorded(v, reads, path + (k,)) for k, v in data.items()})
        self._reads, self._path = reads, path

    def _read(self, key):
        self._reads.add(self._path + (key,))

    def __getitem__(self, key):
        self._read(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._read(key)
        return super().get(key, default)

    def __contains__(self, key):
        self._read(key)
        return super().__contains__(key)

    def __iter__(self):
        self._read("*")
        return super().__iter__()

    def keys(self):
        self._read("*")
        return super().keys()

    def items(self):
        self._read("*")
        return super().items()

    def values(self):
        self._read("*")
        return super().values()


def plain(value):
    """VALUE without recording (what a stand-in for the API server copies)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in dict.items(value)}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def dropped(reads, fields):
    """The reads of keys that FIELDS (a kept-fields table of one kind) drops."""
    out = []
    for r in sorted(reads):
        if len(r) < 2 or r[0] not in fields:
            continue
        kept = {k if type(k) is str else k[0]: None if type(k) is str else set(k[1])
                for k in fields[r[0]]}
        if r[1] not in kept:
            out.append(r)
            continue
        sub, rest = kept[r[1]], [k for k in r[2:] if k != "[]"]
        if sub is not None and rest and rest[0] not in sub:
            out.append(r)
    return out


def kubectl_shaped(obj):
    """OBJ as the API server prints it: more fields than any reader needs."""
    obj = copy.deepcopy(obj)
    obj.setdefault("apiVersion", "v1")
    meta = obj.setdefault("metadata", {})
    meta.update({"managedFields": MANAGED, "resourceVersion": "7", "selfLink": "/x",
                 "generateName": "web-", "ownerReferences": [{"kind": "ReplicaSet"}]})
    spec = obj.setdefault("spec", {})
    spec.update({"volumes": [{"name": "token"}], "dnsPolicy": "ClusterFirst",
                 "tolerations": [{"key": "k"}], "schedulerName": "default-scheduler"})
    status = obj.setdefault("status", {})
    status.update({"conditions": [{"type": "Ready"}], "hostIP": "10.0.0.1",
                   "podIP": "10.1.0.1", "startTime": "2026-01-01T00:00:00Z"})
    return obj


def pruned(obj, kind, fields):
    obj = copy.deepcopy(obj)
    obj.setdefault("kind", kind)
    pruner({kind: fields})(obj)
    return obj


# -- the agent ----------------------------------------------------------------------
class AgentApi:
    def __init__(self):
        self.annotations, self.events = {}, []

    def annotate(self, obj, key, value):
        self.annotations[obj["metadata"]["name"]] = value
        out = plain(obj)
        out["metadata"].setdefault("annotations", {})[key] = value
        return out

    def event(self, obj, reason, message):
        self.events.append((obj["metadata"]["name"], obj["metadata"]["uid"], reason, message))


@pytest.fixture
def layout(tmp_path):
    return make_layout(tmp_path / "a")


def _agent_run(layout, wrap):
    """The agent's handlers over a sync, events and a restart; what it decided."""
    def machine():
        with open(SERVER) as f:
            return machine_from_yaml(parse_documents(f.read(), SERVER)[0], SERVER)

    def agent(api):
        return Agent(api, "n1", NodeState(machine()), layout, cgroupfs.Writer(layout),
                     Metrics(CollectorRegistry()), log=logging.getLogger("test.projection"))
    po = podobjects
    pods = [po.pod_object("a", created="2026-01-01T00:00:01Z"),
            po.pod_object("b", cpu="1500m", qos="Burstable", created="2026-01-01T00:00:02Z",
                          annotations=po.anti("a")),
            po.pod_object("c", qos="BestEffort", created="2026-01-01T00:00:03Z"),
            po.pod_object("d", created="2026-01-01T00:00:04Z", annotations=po.pull("a")),
            po.pod_object("e", cpu="500", created="2026-01-01T00:00:05Z"),   # cannot fit
            po.pod_object("f", created="2026-01-01T00:00:06Z",
                          annotations={po.CR + "affinity": "not: [yaml"})]
    for p in pods:
        make_dirs(layout, p)
    api = AgentApi()
    first = agent(api)
    first.on_sync([wrap(pods[0])])
    for p in pods[1:]:
        first.on_event("ADDED", wrap(p))
    first.on_event("MODIFIED", wrap(pods[1]))
    first.resync()
    first.on_event("DELETED", wrap(pods[2]))
    recorded = []
    for p in pods[:2] + pods[3:]:                # a restarted agent restores the grants
        p = copy.deepcopy(p)
        value = api.annotations.get(p["metadata"]["name"])
        if value is not None:
            p["metadata"]["annotations"][ANNOTATION] = value
        recorded.append(wrap(p))
    again = AgentApi()
    second = agent(again)
    second.on_sync(recorded)
    second.resync()
    return (api.annotations, sorted(api.events), again.annotations, sorted(again.events),
            {k: (v[0], sorted(v[1]), sorted(v[2])) for k, v in second.applied.items()})


def test_the_agent_reads_no_pod_field_its_projection_drops(layout):
    reads = set()
    _agent_run(layout, lambda p: recorded(kubectl_shaped(p), reads))
    assert ("spec", "containers") in reads and ("status", "containerStatuses") in reads
    assert dropped(reads, agent_daemon.POD_FIELDS) == [], sorted(reads)


def test_the_agent_decides_the_same_on_pruned_pods(layout, tmp_path):
    full = _agent_run(layout, kubectl_shaped)
    lean = _agent_run(make_layout(tmp_path / "b"),
                      lambda p: pruned(kubectl_shaped(p), "Pod", agent_daemon.POD_FIELDS))
    assert full[0] and full[1]                  # annotations written, events sent
    assert lean == full


# -- the controller -----------------------------------------------------------------
class Store:
    """An informer's store (what the test reads of its objects is not recorded)."""

    def __init__(self, objs):
        self.objs = {}
        for o in objs:
            meta = dict.__getitem__(o, "metadata")
            self.objs[(dict.get(meta, "namespace") or "", dict.__getitem__(meta, "name"))] = o

    def list(self):
        return list(self.objs.values())

    def get(self, ns, name):
        return self.objs.get((ns or "", name))


def _controller_run(monkeypatch, wrap_node, wrap_pod, wrap_ns=lambda n: n):
    from tacker_hwaffinity.controller import runner
    from tacker_hwaffinity.controller.rules import ANNOTATION
    from tacker_hwaffinity.openstack.workers import MetadataWorkers
    from tacker_hwaffinity.kube.evict import Eviction
    from tacker_hwaffinity.labeling import params

    calls = []

    def apply(conn, name, labels, uid=None):
        calls.append(("label", name, labels, uid))
        nodes.objs[("", name)]["metadata"]["labels"].update(labels)
    monkeypatch.setattr("tacker_hwaffinity.kube.labels.apply_node_labels", apply)
    monkeypatch.setattr("tacker_hwaffinity.kube.evict.evict",
                        lambda conn, ns, name, uid=None: calls.append(("evict", name, uid))
                        or Eviction("evicted", "", None))
    monkeypatch.setattr("tacker_hwaffinity.kube.events.record_event",
                        lambda conn, obj, kind, reason, message, component: calls.append(
                            ("event", obj["metadata"]["name"], obj["metadata"].get("uid"),
                             obj["metadata"].get("resourceVersion"), reason)))

    def node(name, ip, host):
        return {"kind": "Node", "metadata": {"name": name, "uid": "u-" + name,
                                             "labels": {"CIS-node": host}},
                "spec": {"podCIDR": "10.244.0.0/24", "taints": []},
                "status": {"addresses": [{"type": "InternalIP", "address": ip}],
                           "images": [{"names": ["x"], "sizeBytes": 1}]}}
    anti = json.dumps({"podAntiAffinity": [{"topologyKey": "CIS-node", "labelSelector": {
        "matchLabels": {"app": "web"}}}]})

    def pod(name, node_name, created, annotations=None):
        return {"kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "uid": "u-" + name,
                             "labels": {"app": "web"}, "creationTimestamp": created,
                             "annotations": annotations or {ANNOTATION: anti}},
                "spec": {"nodeName": node_name, "priority": 0}, "status": {"phase": "Running"}}
    nodes = Store([wrap_node(kubectl_shaped(node("w%d" % i, "10.0.0.%d" % i, "h%d" % i)))
                   for i in (1, 2, 3)])
    pods = Store([wrap_pod(kubectl_shaped(p)) for p in (
        pod("a", "w1", "2026-01-01T00:00:01Z"), pod("b", "w2", "2026-01-01T00:00:02Z"),
        pod("bad", "w3", "2026-01-01T00:00:03Z", {ANNOTATION: "{not json"}))])

    class State:
        def __init__(self, id, host, status="ACTIVE"):
            self.id, self.name, self.status, self.task_state = id, "vm-" + id, status, None
            self.host, self.host_id, self.updated = host, "hid-" + host, ""
            self.metadata, self.addresses = {"cluster": "c1"}, ["10.0.0.%s" % id]

    class Poll:
        def __init__(self):
            self.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]

        def poll(self):
            out, self.states = self.states, []
            return out
    clock = [1000.0]
    settings = runner.Settings(params.parse({})["hwaffinity"], MetadataWorkers({"cluster": "c1"}),
                               poll_interval=30, grace=60, eviction_interval=10)
    poll = Poll()
    namespaces = Store([wrap_ns(kubectl_shaped(
        {"kind": "Namespace", "metadata": {"name": "default", "uid": "u-default",
                                           "labels": {"team": "web"}},
         "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}))])
    ctl = runner.Controller(None, poll, settings, nodes, pods,
                            runner.Metrics(CollectorRegistry()), clock=lambda: clock[0],
                            log=logging.getLogger("test.projection"), namespaces=namespaces)
    ctl.tick()
    # w1's VM moves to h2, where b runs: relabel, then a is evicted
    for states in ([State("1", "h2", status="MIGRATING")], [State("1", "h2")], []):
        poll.states = states
        clock[0] += 30
        ctl.tick()
    return calls


def test_the_controller_reads_no_node_or_pod_field_its_projection_drops(monkeypatch):
    node_reads, pod_reads, ns_reads = set(), set(), set()
    calls = _controller_run(monkeypatch, lambda n: recorded(n, node_reads),
                            lambda p: recorded(p, pod_reads), lambda n: recorded(n, ns_reads))
    assert any(c[0] == "evict" for c in calls) and any(c[0] == "label" for c in calls)
    assert ("status", "addresses") in node_reads and ("spec", "nodeName") in pod_reads
    assert dropped(node_reads, controller_daemon.NODE_FIELDS) == []
    assert dropped(pod_reads, controller_daemon.POD_FIELDS) == []
    assert ("metadata", "labels") in ns_reads
    assert dropped(ns_reads, controller_daemon.NAMESPACE_FIELDS) == []


def test_the_controller_acts_the_same_on_pruned_objects(monkeypatch):
    full = _controller_run(monkeypatch, lambda n: n, lambda p: p)
    lean = _controller_run(
        monkeypatch, lambda n: pruned(n, "Node", controller_daemon.NODE_FIELDS),
        lambda p: pruned(p, "Pod", controller_daemon.POD_FIELDS),
        lambda n: pruned(n, "Namespace", controller_daemon.NAMESPACE_FIELDS))
    assert full and lean == full


# -- the webhook's pod cache --------------------------------------------------------
def _webhook_objects():
    from tacker_hwaffinity.scheduling import annotations as term_annotations
    terms = json.dumps({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "CIS-node", "labelSelector": {"matchLabels": {"app": "web"}}}]}})
    pods = [{"metadata": {"name": "p%d" % i, "namespace": "ns", "uid": "u%d" % i,
                          "labels": {"app": "web" if i % 2 else "db"},
                          "annotations": {term_annotations.POD_AFFINITY: terms} if i == 1
                          else {}},
             "spec": {"nodeName": "n%d" % (i % 3) if i < 5 else ""},
             "status": {"phase": "Failed" if i == 4 else "Running"}} for i in range(6)]
    nodes = [{"metadata": {"name": "n%d" % i, "labels": {"CIS-node": "h%d" % i}},
              "status": {"images": [{"names": ["x"]}]}} for i in range(3)]
    namespaces = [{"metadata": {"name": "ns", "labels": {"team": "a"}},
                   "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}]
    return ([kubectl_shaped(p) for p in pods], [kubectl_shaped(n) for n in nodes],
            [kubectl_shaped(n) for n in namespaces])


def _webhook_run(wrap):
    pods, nodes, namespaces = _webhook_objects()
    cache = PodCache()
    cache.sync_nodes([wrap(n, "Node") for n in nodes[:2]])
    cache.on_node("ADDED", wrap(nodes[2], "Node"))
    cache.sync_namespaces([wrap(n, "Namespace") for n in namespaces])
    cache.on_namespace("MODIFIED", wrap(namespaces[0], "Namespace"))
    cache.sync_pods([wrap(p, "Pod") for p in pods[:3]])
    for p in pods[3:]:
        cache.on_pod("ADDED", wrap(p, "Pod"))
    cache.on_pod("DELETED", wrap(pods[2], "Pod"))
    view = cache.reader().node_table()
    groups = [(g.kind, sorted(g.per_node.items())) for kind in ("anti", "affinity")
              for g in cache._groups.get(kind, {}).values()]
    return (cache.stats(), sorted(view.index), cache.reader().ns_labels("ns"),
            sorted((k, sorted((r.name, r.node, r.live) for r in idx.items))
                   for k, idx in cache._by_ns.items()), groups,
            sorted(cache._extended))


def test_the_webhook_cache_reads_no_field_its_projection_drops():
    reads = {kind: set() for kind in PodCache.FIELDS}
    _webhook_run(lambda obj, kind: recorded(obj, reads[kind]))
    assert ("metadata", "annotations") in reads["Pod"] and ("spec", "nodeName") in reads["Pod"]
    for kind, fields in PodCache.FIELDS.items():
        assert dropped(reads[kind], fields) == [], kind


def test_the_webhook_cache_holds_the_same_view_of_pruned_objects():
    full = _webhook_run(lambda obj, kind: obj)
    lean = _webhook_run(lambda obj, kind: pruned(obj, kind, PodCache.FIELDS[kind]))
    assert full[0]["bound"] == 3 and full[0]["extended"] == 1
    assert lean == full


def test_the_agent_forgets_what_it_reported_about_pods_that_are_gone(layout):
    with open(SERVER) as f:
        machine = machine_from_yaml(parse_documents(f.read(), SERVER)[0], SERVER)
    api = AgentApi()
    agent = Agent(api, "n1", NodeState(machine), layout, cgroupfs.Writer(layout),
                  Metrics(CollectorRegistry()), log=logging.getLogger("test.projection"))
    po = podobjects
    bad = [po.pod_object("bad-%d" % i, annotations={po.CR + "affinity": "not: [yaml"})
           for i in range(3)]
    for p in bad:
        make_dirs(layout, p)
    agent.on_sync(bad)
    assert {r[0] for r in agent.reported} == {p["metadata"]["uid"] for p in bad}
    agent.on_event("DELETED", bad[0])                 # a watch event
    assert {r[0] for r in agent.reported} == {p["metadata"]["uid"] for p in bad[1:]}
    agent.on_sync(bad[2:])                            # a relist without bad-1
    assert {r[0] for r in agent.reported} == {bad[2]["metadata"]["uid"]}
    assert len(api.events) == 3                       # each reported once


def test_nested_kept_keys_prune_mappings_and_lists_of_mappings():
    prune = pruner({"Pod": {"spec": ("nodeName", ("containers", ("name", "resources")),
                                     ("securityContext", ("runAsUser",)))}})
    pod = {"kind": "Pod", "spec": {
        "nodeName": "n1", "dnsPolicy": "ClusterFirst",
        "containers": [{"name": "c", "image": "x", "resources": {"limits": {"cpu": "1"}}},
                       "not a mapping"],
        "securityContext": {"runAsUser": 0, "fsGroup": 2}}}
    prune(pod)
    assert pod == {"kind": "Pod", "spec": {
        "nodeName": "n1",
        "containers": [{"name": "c", "resources": {"limits": {"cpu": "1"}}}, "not a mapping"],
        "securityContext": {"runAsUser": 0}}}
