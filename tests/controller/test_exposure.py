"""The controller's exposure gauges (controller.exposure): on Nova's hosts, once per poll,
also in a dry run; bounded and cleaned up. The controller is run on plain objects as in
tests/controller/tick_world (its caches and Nova stand-ins)."""
import logging
import time

import pytest
from prometheus_client import CollectorRegistry

from tacker_hwaffinity.controller import exposure, runner
from tacker_hwaffinity.openstack.workers import MetadataWorkers
from tacker_hwaffinity.kube.evict import Eviction
from tacker_hwaffinity.labeling import params

from controller.tick_world import ANNOTATION, Cache, Poll, State, node, pod

W = ("default", "ReplicaSet", "web")


def _owned(name, node_name, created, rs="web"):
    """A web pod of ReplicaSet RS."""
    return pod(name, node_name, created, owner=("ReplicaSet", rs))


def _value(registry, metric, **labels):
    return registry.get_sample_value(metric, labels)


@pytest.fixture
def make(monkeypatch):
    calls = {"labels": [], "evict": []}

    def build(dry_run, max_workloads=exposure.MAX_WORKLOADS):
        nodes = Cache([node("w1", "10.0.0.1", "h1"), node("w2", "10.0.0.2", "h2"),
                       node("w3", "10.0.0.3", "h3")])
        pods = Cache([_owned("a", "w1", "2026-01-01T00:00:01Z"),
                      _owned("b", "w2", "2026-01-01T00:00:02Z")])

        def apply(conn, name, labels, uid=None):
            calls["labels"].append(name)
            nodes.objs[("", name)]["metadata"]["labels"].update(labels)

        def evict(conn, ns, name, uid=None):
            calls["evict"].append(name)
            pods.objs.pop((ns, name))
            return Eviction("evicted", "", None)
        monkeypatch.setattr("tacker_hwaffinity.kube.labels.apply_node_labels", apply)
        monkeypatch.setattr("tacker_hwaffinity.kube.evict.evict", evict)
        monkeypatch.setattr("tacker_hwaffinity.kube.events.record_event", lambda *a: None)
        registry, poll, now = CollectorRegistry(), Poll(), [0.0]
        hw = params.parse({})["hwaffinity"]
        settings = runner.Settings(hw, MetadataWorkers({"cluster": "c1"}), poll_interval=30,
                                   grace=0, eviction_interval=0, dry_run=dry_run)
        log = logging.getLogger("test.exposure")
        gauges = exposure.Exposure(exposure.ExposureMetrics(registry), "CIS-node",
                                   max_workloads, log=log)
        c = runner.Controller(None, poll, settings, nodes, pods, runner.Metrics(registry),
                              log=log, clock=lambda: now[0], exposure=gauges)
        return c, poll, registry, now, pods
    return build, calls


def _migrate(c, poll, now):
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]
    c.tick()
    poll.states = [State("1", "h2")]           # w1's VM now shares h2 with w2's
    now[0] += 30
    c.tick()


def test_a_dry_run_shows_the_migration_on_novas_hosts_and_acts_not(make):
    build, calls = make
    c, poll, registry, now, _ = build(dry_run=True)
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]
    c.tick()
    assert _value(registry, "hwaffinity_workload_host_loss_ratio", namespace="default",
                  kind="ReplicaSet", name="web") == 0.5
    assert _value(registry, "hwaffinity_workload_intent_met", namespace="default",
                  kind="ReplicaSet", name="web") == 1
    assert _value(registry, "hwaffinity_node_label_stale", node="w1") == 0
    poll.states = [State("1", "h2")]
    now[0] += 30
    c.tick()
    labels = dict(zip(("namespace", "kind", "name"), W))
    assert _value(registry, "hwaffinity_workload_host_loss_ratio", **labels) == 1.0
    assert _value(registry, "hwaffinity_workload_replicas_on_busiest_host", **labels) == 2
    assert _value(registry, "hwaffinity_workload_intent_met", **labels) == 0
    assert _value(registry, "hwaffinity_node_label_stale", node="w1") == 1
    assert _value(registry, "hwaffinity_node_label_stale", node="w2") == 0
    assert calls == {"labels": [], "evict": []}


def test_after_the_relabel_and_the_eviction_the_exposure_is_gone(make):
    build, calls = make
    c, poll, registry, now, pods = build(dry_run=False)
    _migrate(c, poll, now)
    assert calls["labels"] == ["w1"] and calls["evict"] == ["a"]
    labels = dict(zip(("namespace", "kind", "name"), W))
    # the replacement is scheduled on the third host
    pods.objs[("default", "c")] = _owned("c", "w3", "2026-01-01T00:00:03Z")
    now[0] += 30
    c.tick()
    assert _value(registry, "hwaffinity_node_label_stale", node="w1") == 0
    assert _value(registry, "hwaffinity_workload_host_loss_ratio", **labels) == 0.5
    assert _value(registry, "hwaffinity_workload_intent_met", **labels) == 1


def test_series_are_capped_worst_first_and_removed_when_the_workload_goes(make):
    build, _ = make
    c, poll, registry, now, pods = build(dry_run=True, max_workloads=1)
    for name, nodes in (("spread", ("w1", "w2")), ("packed", ("w3", "w3"))):
        for i, n in enumerate(nodes):
            p = _owned("%s-%d" % (name, i), n, "2026-01-01T00:00:0%dZ" % i, name)
            p["metadata"]["annotations"] = {}
            pods.objs[("default", p["metadata"]["name"])] = p
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]
    c.tick()
    ratio = "hwaffinity_workload_host_loss_ratio"
    assert _value(registry, ratio, namespace="default", kind="ReplicaSet", name="packed") == 1
    assert _value(registry, ratio, namespace="default", kind="ReplicaSet", name="web") is None
    assert _value(registry, "hwaffinity_exposure_workloads_dropped") == 2
    for key in [k for k in pods.objs if k[1].startswith("packed")]:
        del pods.objs[key]
    now[0] += 30
    c.tick()
    assert _value(registry, ratio, namespace="default", kind="ReplicaSet", name="packed") is None
    # web and spread tie on loss (0.5); web's intent is unmet (the spread pods carry its
    # label app=web next to its own), so it goes first, in the audit's order
    assert _value(registry, ratio, namespace="default", kind="ReplicaSet", name="web") == 0.5
    assert _value(registry, "hwaffinity_workload_intent_met", namespace="default",
                  kind="ReplicaSet", name="web") == 0
    assert _value(registry, ratio, namespace="default", kind="ReplicaSet", name="spread") \
        is None
    assert _value(registry, "hwaffinity_exposure_workloads_dropped") == 1


def test_computed_once_per_poll_not_per_tick(make):
    build, _ = make
    c, poll, registry, now, _ = build(dry_run=True)
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]
    for _ in range(5):
        c.tick()
        now[0] += 1
    assert _value(registry, "hwaffinity_exposure_seconds_count") == 1


def test_a_deployments_pods_count_under_the_deployment():
    meta = {"name": "web-7d9f-x", "labels": {"pod-template-hash": "7d9f"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-7d9f", "controller": True}]}
    assert exposure.owner_of(meta) == ("Deployment", "web")
    assert exposure.owner_of({"name": "solo"}) == ("Pod", "solo")
    meta = {"name": "db-0", "ownerReferences": [{"kind": "StatefulSet", "name": "db",
                                                 "controller": True}]}
    assert exposure.owner_of(meta) == ("StatefulSet", "db")


def test_cost_at_5000_pods(capsys):
    """Figure for the report: one computation over 5,000 pods on 500 nodes, 1,000
    workloads of which 200 declare anti-affinity on the host key (printed)."""
    nodes = [node("n%d" % i, "10.1.%d.%d" % (i // 250, i % 250), "h%d" % (i // 2))
             for i in range(500)]
    pods = []
    for i in range(5000):
        rs = "rs%d" % (i // 5)
        p = _owned("p%d" % i, "n%d" % (i * 7 % 500), "2026-01-01T00:00:00Z", rs)
        p["metadata"]["annotations"] = {}
        p["metadata"]["labels"] = {"app": rs}
        if i // 5 % 5 == 0:
            p["spec"]["affinity"] = {"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"app": rs}},
                    "topologyKey": "CIS-node"}]}}
        pods.append(p)
    registry = CollectorRegistry()
    gauges = exposure.Exposure(exposure.ExposureMetrics(registry), "CIS-node")
    t0 = time.perf_counter()
    chosen = gauges.update(nodes, pods, {}, {"n%d" % i: False for i in range(500)})
    took = time.perf_counter() - t0
    assert len(chosen) == 500 and _value(registry, "hwaffinity_exposure_workloads_dropped") \
        == 500
    judged = [w for w in chosen if w.intent]
    assert judged and all(w.intent_met is not None for w in judged)
    with capsys.disabled():
        print("\nexposure gauges: 5000 pods, 500 nodes, 1000 workloads (200 with an "
              "intent): %.3f s" % took)


def test_a_leader_that_stands_down_exports_no_exposure(make):
    build, _ = make
    c, poll, registry, now, _ = build(dry_run=True)
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]
    c.tick()
    labels = dict(zip(("namespace", "kind", "name"), W))
    assert _value(registry, "hwaffinity_workload_host_loss_ratio", **labels) == 0.5
    c.stand_down()
    assert _value(registry, "hwaffinity_workload_host_loss_ratio", **labels) is None
    assert _value(registry, "hwaffinity_node_label_stale", node="w1") is None
    now[0] += 30
    c.tick()                                    # a new term: exported again
    assert _value(registry, "hwaffinity_workload_host_loss_ratio", **labels) == 0.5


def test_the_gauges_are_the_audits_figures_on_novas_hosts():
    """Owners (desired counts), budgets and spec anti-affinity go through hwaffinity
    audit's core: each gauge equals the audit's JSON for the same objects, with the
    hosts Nova reports (w1's VM moved to h2) for the counts and for the intent."""
    from tacker_hwaffinity.audit import core
    from tests.audit.helpers import anti, node as anode, owner, pdb, pod as apod
    nodes = [anode("w1", "h1"), anode("w2", "h2"), anode("w3", "h3")]
    pods = [apod("db-%d" % i, n, {"app": "db"}, ("StatefulSet", "db"), affinity=anti("db"))
            for i, n in enumerate(("w1", "w2", "w3"))]
    pods += [apod("web-%d" % i, n, {"app": "web"}, ("ReplicaSet", "web-1"))
             for i, n in enumerate(("w1", "w2"))]
    owners = [owner("StatefulSet", "db", replicas=4), owner("Deployment", "web", replicas=5),
              owner("ReplicaSet", "web-1", replicas=5, up=("Deployment", "web"))]
    budgets = [pdb("db", {"matchLabels": {"app": "db"}}, min_available=2)]
    nova = {"w1": "h2", "w2": "h2", "w3": "h3"}

    class Listed:
        def __init__(self, objs):
            self.objs = objs

        def list(self):
            return list(self.objs)
    registry = CollectorRegistry()
    gauges = exposure.Exposure(exposure.ExposureMetrics(registry), "CIS-node",
                               owners=[Listed(owners)], pdbs=Listed(budgets))
    gauges.update(nodes, pods, nova, {"w1": True, "w2": False, "w3": False})
    report = core.audit(nodes, pods, "CIS-node", owners=owners, pdbs=budgets,
                        host_override=nova).to_json()
    expected = {(w["kind"], w["name"]): w for w in report["workloads"]}
    assert set(expected) == {("StatefulSet", "db"), ("Deployment", "web")}
    for (kind, name), w in expected.items():
        labels = {"namespace": "default", "kind": kind, "name": name}
        assert _value(registry, "hwaffinity_workload_replicas", **labels) == w["running"]
        assert _value(registry, "hwaffinity_workload_desired_replicas", **labels) == \
            w["desired"]
        assert _value(registry, "hwaffinity_workload_replicas_on_busiest_host", **labels) \
            == w["worstLoss"]
        assert _value(registry, "hwaffinity_workload_host_loss_ratio", **labels) == \
            pytest.approx(w["lossRatio"], abs=1e-4)
        intent = _value(registry, "hwaffinity_workload_intent_met", **labels)
        assert intent == (None if not w["intent"] else int(w["intentMet"]))
        holds = _value(registry, "hwaffinity_workload_pdb_holds_after_host_loss", **labels)
        assert holds == (None if w["pdbHoldsAfterWorstHost"] is None
                         else int(w["pdbHoldsAfterWorstHost"]))
    db = expected[("StatefulSet", "db")]
    # on Nova's hosts db-0 and db-1 share h2: 2 of the 4 desired, intent unmet, and the
    # budget (minAvailable 2) is left with 1 running
    assert (db["desired"], db["worstLoss"], db["intentMet"], db["pdbHoldsAfterWorstHost"]) \
        == (4, 2, False, False)
    assert expected[("Deployment", "web")]["desired"] == 5


def test_a_pod_with_a_malformed_annotation_does_not_stop_the_gauges():
    """Hostile input: any pod creator can write a broken RequiredDuringExecution or
    pod-affinity annotation; the gauges of every other workload are still set."""
    nodes = [node("w1", "10.0.0.1", "h1"), node("w2", "10.0.0.2", "h1")]
    pods = [_owned("a", "w1", "2026-01-01T00:00:01Z"),
            _owned("b", "w2", "2026-01-01T00:00:02Z")]
    evil = _owned("evil", "w1", "2026-01-01T00:00:03Z", "evil")
    evil["metadata"]["annotations"] = {"hwaffinity.io/pod-affinity": "[[[",
                                       ANNOTATION: "{CIS-node"}
    registry = CollectorRegistry()
    gauges = exposure.Exposure(exposure.ExposureMetrics(registry), "CIS-node")
    gauges.update(nodes, pods + [evil], {}, {})
    labels = dict(zip(("namespace", "kind", "name"), W))
    assert _value(registry, "hwaffinity_workload_host_loss_ratio", **labels) == 1.0
    assert _value(registry, "hwaffinity_workload_intent_met", **labels) == 0


def test_one_workload_whose_evaluation_raises_is_left_out_counted_and_the_rest_exported(
        monkeypatch, caplog):
    from tacker_hwaffinity.audit import core
    registry = CollectorRegistry()
    gauges = exposure.Exposure(exposure.ExposureMetrics(registry), "CIS-node",
                               log=logging.getLogger("test.exposure"))
    desired = core.ownersmod.desired

    def broken(index, namespace, kind, name, running):
        if name == "bad":
            raise ValueError("replicas: 'many'")
        return desired(index, namespace, kind, name, running)
    monkeypatch.setattr(core.ownersmod, "desired", broken)
    nodes = [node("w1", "10.0.0.1", "h1"), node("w2", "10.0.0.2", "h2")]
    pods = [_owned(n, w, "2026-01-01T00:00:01Z", rs)
            for n, w, rs in (("a", "w1", "web"), ("b", "w2", "web"), ("c", "w1", "bad"),
                             ("d", "w2", "bad"))]
    pods.append({"metadata": "not a mapping", "kind": "Pod", "spec": {"nodeName": "w1"}})
    with caplog.at_level(logging.WARNING, logger="test.exposure"):
        chosen = gauges.update(nodes, pods, {}, {})
    assert [w.key for w in chosen] == [W]
    assert _value(registry, "hwaffinity_workload_replicas", namespace="default",
                  kind="ReplicaSet", name="web") == 2
    assert _value(registry, "hwaffinity_workload_replicas", namespace="default",
                  kind="ReplicaSet", name="bad") is None
    assert _value(registry, "hwaffinity_exposure_failures_total", reason="ValueError") == 1
    assert _value(registry, "hwaffinity_exposure_failures_total", reason="AttributeError") == 1
    assert "workload default/ReplicaSet/bad left out: ValueError" in caplog.text
