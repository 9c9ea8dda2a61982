"""The controller's exposure gauges (controller.exposure): on Nova's hosts, once per poll,
also in a dry run; bounded and cleaned up. The controller is run on plain objects as in
test_controller_runner (its caches and Nova stand-ins)."""
import logging
import time

import pytest
from prometheus_client import CollectorRegistry

from tacker_hwaffinity.controller import exposure, runner
from tacker_hwaffinity.controller.workers import MetadataWorkers
from tacker_hwaffinity.kube.evict import Eviction
from tacker_hwaffinity.labeling import params

from unit.test_controller_runner import Cache, Poll, State, node, pod

W = ("default", "ReplicaSet", "web")


def _owned(p, rs="web"):
    p["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": rs, "controller": True}]
    return p


def _value(registry, metric, **labels):
    return registry.get_sample_value(metric, labels)


@pytest.fixture
def make(monkeypatch):
    calls = {"labels": [], "evict": []}

    def build(dry_run, max_workloads=exposure.MAX_WORKLOADS):
        nodes = Cache([node("w1", "10.0.0.1", "h1"), node("w2", "10.0.0.2", "h2"),
                       node("w3", "10.0.0.3", "h3")])
        pods = Cache([_owned(pod("a", "w1", "2026-01-01T00:00:01Z")),
                      _owned(pod("b", "w2", "2026-01-01T00:00:02Z"))])

        def apply(conn, name, labels, uid=None):
            calls["labels"].append(name)
            nodes.objs[("", name)]["metadata"]["labels"].update(labels)

        def evict(conn, ns, name, uid=None):
            calls["evict"].append(name)
            pods.objs.pop((ns, name))
            return Eviction("evicted", "", None)
        monkeypatch.setattr(runner.labels, "apply_node_labels", apply)
        monkeypatch.setattr(runner.evictmod, "evict", evict)
        monkeypatch.setattr(runner.events, "record_event", lambda *a: None)
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
    pods.objs[("default", "c")] = _owned(pod("c", "w3", "2026-01-01T00:00:03Z"))
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
            p = pod("%s-%d" % (name, i), n, "2026-01-01T00:00:0%dZ" % i)
            p["metadata"]["annotations"] = {}
            pods.objs[("default", p["metadata"]["name"])] = _owned(p, name)
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
    # web and spread tie (0.5): the first by name is exported
    assert _value(registry, ratio, namespace="default", kind="ReplicaSet", name="spread") == 0.5
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
    """Figure for the report: one computation over 5,000 pods on 500 nodes (printed)."""
    nodes = [node("n%d" % i, "10.1.%d.%d" % (i // 250, i % 250), "h%d" % (i // 2))
             for i in range(500)]
    pods = []
    for i in range(5000):
        p = _owned(pod("p%d" % i, "n%d" % (i * 7 % 500), "2026-01-01T00:00:00Z"),
                   "rs%d" % (i // 5))
        p["metadata"]["annotations"] = {}
        pods.append(p)
    registry = CollectorRegistry()
    gauges = exposure.Exposure(exposure.ExposureMetrics(registry), "CIS-node")
    t0 = time.perf_counter()
    chosen = gauges.update(nodes, pods, {}, {"n%d" % i: False for i in range(500)})
    took = time.perf_counter() - t0
    assert len(chosen) == 500 and _value(registry, "hwaffinity_exposure_workloads_dropped") \
        == 500
    with capsys.disabled():
        print("\nexposure gauges: 5000 pods, 500 nodes, 1000 workloads: %.3f s" % took)


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
