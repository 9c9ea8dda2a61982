"""The controller's rebalancing (--rebalance) on plain objects: a live migration puts two
replicas of a plain anti-affine workload on one host; after the relabel, the younger one
is evicted with descheduler's Event and metric; a budget, a refusal, a dry run and the
RequiredDuringExecution annotation each change that as documented. The API calls are
stand-ins here; tests/controlplane/test_controller_e2e.py runs it on the real parts."""
import json
import logging

import pytest
from prometheus_client import CollectorRegistry

from tacker_hwaffinity.controller import rebalance, runner
from tacker_hwaffinity.controller.rules import ANNOTATION
from tacker_hwaffinity.openstack.workers import MetadataWorkers
from tacker_hwaffinity.kube import evict as evictmod
from tacker_hwaffinity.kube import events, labels
from tacker_hwaffinity.kube.evict import Eviction
from tacker_hwaffinity.labeling import params
from tests import builders
from tests.controller.test_runner import object_errors
from tests.controller.tick_world import Cache, Poll, State

ANTI = builders.affinity(req_anti=[builders.term("CIS-node", {"app": "web"})])
RS = ("ReplicaSet", "web-abc")
STRATEGY = "RemovePodsViolatingInterPodAntiAffinity"


def node(name, ip, host):
    return builders.node(name, {"CIS-node": host}, ip=ip, uid="u-" + name,
                         alloc={"cpu": "8", "memory": "16Gi", "pods": "110"})


def pod(name, node_name, created, annotations=None):
    return builders.pod(name, {"app": "web"}, on=node_name, phase="Running", uid="u-" + name,
                        created=created, affinity=ANTI, owner=RS, annotations=annotations,
                        containers=[builders.container()])


@pytest.fixture
def world(monkeypatch):
    calls = {"evict": [], "events": []}
    nodes = Cache([node("w1", "10.0.0.1", "h1"), node("w2", "10.0.0.2", "h2"),
                   node("w3", "10.0.0.3", "h3")])
    pods = Cache([pod("web-abc-a", "w1", "2026-01-01T00:00:01Z"),
                  pod("web-abc-b", "w2", "2026-01-01T00:00:02Z")])
    pdbs = Cache([])

    def apply(conn, name, new, uid=None):
        nodes.objs[("", name)]["metadata"]["labels"].update(new)
    monkeypatch.setattr(labels, "apply_node_labels", apply)
    outcome = {"now": Eviction("evicted", "", None)}

    def evict(conn, ns, name, uid=None, dry_run=False):
        calls["evict"].append((name, dry_run))
        if outcome["now"].outcome == "evicted" and not dry_run:
            pods.objs.pop((ns, name))
        return outcome["now"]
    monkeypatch.setattr(evictmod, "evict", evict)
    monkeypatch.setattr(events, "record_event",
                        lambda conn, obj, kind, reason, msg, comp: calls["events"].append(
                            (obj["metadata"]["name"], kind, reason, msg)))
    registry = CollectorRegistry()
    poll, now = Poll(), [0.0]

    def make(dry_run=False, limit=1):
        settings = runner.Settings(params.parse({})["hwaffinity"],
                                   MetadataWorkers({"cluster": "c1"}), poll_interval=30,
                                   grace=60, eviction_interval=10, dry_run=dry_run)
        return runner.Controller(None, poll, settings, nodes, pods,
                                 runner.Metrics(registry),
                                 log=logging.getLogger("test.rebalance"), clock=lambda: now[0],
                                 rebalance=rebalance.RebalanceInputs(
                                     "CIS-node", limit, (), pdbs,
                                     rebalance.RebalanceMetrics(registry)))

    def migrate():
        """w1's VM settles on h2, where w2 runs: both replicas on one host."""
        poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]
        c = make.controller
        c.tick()
        poll.states = [State("1", "h2")]
        now[0] += 30
        c.tick()

    def counted(result):
        return registry.get_sample_value("hwaffinity_rebalance_pods_evicted_total", {
            "result": result, "strategy": STRATEGY, "namespace": "default",
            "node": "w1", "profile": "default-scheduler"}) or 0
    make.controller = None
    return make, migrate, pods, pdbs, calls, outcome, counted


def test_a_colocating_migration_evicts_the_younger_replica_with_descheduler_conventions(
        world):
    make, migrate, pods, _, calls, _, counted = world
    make.controller = make()
    pods.objs[("default", "web-abc-a")]["metadata"]["creationTimestamp"] = "2026-01-02T00:00:00Z"
    migrate()
    assert calls["evict"] == [("web-abc-a", False)]     # the younger, on the moved node
    (event,) = [e for e in calls["events"] if e[2] == STRATEGY]
    assert event[:2] == ("web-abc-a", "Normal")
    assert event[3].startswith("pod eviction from w1 node by hwaffinity-controller: "
                               "ReplicaSet web-abc: node(s) didn't match pod anti-affinity")
    assert event[3].endswith("its replacement fits on node w3")
    assert counted("success") == 1


def test_without_the_flag_plain_anti_affinity_is_only_reported(world, monkeypatch):
    make, migrate, _, _, calls, _, _ = world
    c = make()
    c.rebalancer = None
    make.controller = c
    migrate()
    assert calls["evict"] == []


def test_a_budget_that_allows_nothing_means_no_attempt_and_a_warning(world):
    make, migrate, _, pdbs, calls, _, _ = world
    pdbs.objs[("default", "web")] = {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "web"}}}}
    make.controller = make()
    migrate()
    assert calls["evict"] == []
    (event,) = [e for e in calls["events"] if e[2] == "EvictionFailed"]
    assert event[1] == "Warning"
    assert "by hwaffinity-controller not attempted: PodDisruptionBudget default/web: " \
           "2 healthy, 2 required" in event[3]


def test_a_refused_eviction_is_a_warning_and_counted(world):
    make, migrate, _, _, calls, outcome, _ = world
    outcome["now"] = Eviction("blocked", "Cannot evict pod as it would violate the pod's "
                                         "disruption budget.", None)
    make.controller = make()
    migrate()
    (name, _), = calls["evict"]
    (event,) = [e for e in calls["events"] if e[2] == "EvictionFailed"]
    assert event[0] == name and "failed: Cannot evict pod" in event[3]


def test_a_dry_run_asks_the_server_and_changes_nothing(world):
    make, migrate, pods, _, calls, _, _ = world
    make.controller = make(dry_run=True)
    migrate()
    assert [dry for _, dry in calls["evict"]] == [True]
    assert len(pods.list()) == 2
    assert calls["events"] == []


def test_a_workload_under_required_during_execution_is_left_to_its_enforcement(world):
    make, migrate, pods, _, calls, _, _ = world
    rule = json.dumps({"podAntiAffinity": [{"topologyKey": "CIS-node",
                                            "labelSelector": {"matchLabels": {"app": "web"}}}]})
    for p in pods.list():
        p["metadata"]["annotations"] = {ANNOTATION: rule}
    make.controller = make()
    migrate()
    assert [name for name, _ in calls["evict"]] == ["web-abc-a"]      # once: enforcement's
    assert not [e for e in calls["events"] if e[2] == STRATEGY]


def test_with_the_exposure_gauges_the_plan_reuses_their_audit(world, monkeypatch):
    from tacker_hwaffinity.audit import core
    from tacker_hwaffinity.controller.exposure import Exposure, ExposureMetrics
    make, migrate, _, _, calls, _, _ = world
    audits = []
    real = core.audit
    monkeypatch.setattr(core, "audit", lambda *a, **kw: audits.append(1) or real(*a, **kw))
    c = make()
    c.exposure = Exposure(ExposureMetrics(CollectorRegistry()), "CIS-node", keep_engine=True)
    make.controller = c
    migrate()
    assert len(calls["evict"]) == 1
    assert len(audits) == 2                 # one per poll (two polls), not one per use
    assert c.exposure.report is None        # not kept from one poll to the next


def test_without_the_gauges_snapshot_the_plan_audits_again(world, monkeypatch):
    from tacker_hwaffinity.controller.exposure import Exposure, ExposureMetrics
    make, migrate, _, _, calls, _, _ = world
    c = make()
    c.exposure = Exposure(ExposureMetrics(CollectorRegistry()), "CIS-node")
    make.controller = c
    migrate()
    assert len(calls["evict"]) == 1


def test_a_failure_before_the_gauges_is_counted_and_nothing_is_evicted(world, monkeypatch):
    make, migrate, _, _, calls, _, _ = world
    c = make()

    def broken(key):
        raise RuntimeError("a bug in matching nodes to servers")
    monkeypatch.setattr(c.hosts, "nova_hosts", broken)
    make.controller = c
    migrate()
    assert calls["evict"] == []
    # once per poll, and the tick went on
    assert (object_errors(c, "exposure"), object_errors(c, "tick")) == (2, 0)
