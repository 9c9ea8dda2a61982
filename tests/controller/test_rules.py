"""RequiredDuringExecution: the annotation, violations, eviction order, forgiveness."""
import json
import time

import pytest

from tacker_hwaffinity.controller.rules import (
    Cluster, Forgiveness, Rules, RunningPod, eviction_order)
from tacker_hwaffinity.errors import InputError

ANTI = {"podAntiAffinity": [{"topologyKey": "CIS-node",
                             "labelSelector": {"matchLabels": {"app": "web"}}}]}


def pod(name, node, labels=None, rules=None, ns="default", created="2026-01-01T00:00:00Z",
        priority=0):
    parsed = Rules.parse(json.dumps(rules)) if rules is not None else None
    return RunningPod(ns, name, labels or {}, node, parsed, created, priority)


NODES = {"w1": {"CIS-node": "host-a", "zone": "z1"}, "w2": {"CIS-node": "host-b"},
         "w3": {"CIS-node": "host-b"}, "bare": {}}


def test_anti_affinity_is_violated_in_one_domain_and_names_the_other_pod():
    a = pod("a", "w2", {"app": "web"}, ANTI)
    b = pod("b", "w3", {"app": "web"}, ANTI)
    c = pod("c", "w1", {"app": "web"}, ANTI)
    vs = Cluster(NODES, [a, b, c]).violations()
    assert sorted(v.pod.key for v in vs) == ["default/a", "default/b"]
    assert "default/b" in vs[0].message() and "host-b" in vs[0].message()


def test_nodes_without_the_key_are_in_no_domain():
    a = pod("a", "bare", {"app": "web"}, ANTI)
    b = pod("b", "bare", {"app": "web"}, ANTI)
    assert Cluster(NODES, [a, b]).violations() == []


def test_affinity_needs_a_selected_pod_in_the_domain_except_for_the_first_of_a_group():
    rules = {"podAffinity": [{"topologyKey": "CIS-node",
                              "labelSelector": {"matchLabels": {"app": "db"}}}]}
    front = pod("front", "w1", {"app": "front"}, rules)
    db = pod("db", "w2", {"app": "db"})
    (v,) = Cluster(NODES, [front, db]).violations()
    assert v.kind == "podAffinity" and "host-a" in v.message()
    assert Cluster(NODES, [front, pod("db", "w1", {"app": "db"})]).violations() == []
    self_group = pod("first", "w1", {"app": "db"}, rules)
    assert Cluster(NODES, [self_group]).violations() == []


def test_node_affinity_and_gt_lt_terms():
    rules = {"nodeAffinity": [{"matchExpressions": [
        {"key": "CIS-node", "operator": "In", "values": ["host-a"]}]}]}
    assert Cluster(NODES, [pod("p", "w1", rules=rules)]).violations() == []
    (v,) = Cluster(NODES, [pod("p", "w2", rules=rules)]).violations()
    assert v.kind == "nodeAffinity" and "w2" in v.message()
    gt = {"podAntiAffinity": [{"topologyKey": "CIS-node", "labelSelector": {
        "matchExpressions": [{"key": "version", "operator": "Gt", "values": ["3"]}]}}]}
    old = pod("old", "w2", {"version": "2"})
    new = pod("new", "w3", {"version": "4"})
    (v,) = Cluster(NODES, [pod("p", "w2", {"version": "1"}, gt), old, new]).violations()
    assert [o.key for o in v.others] == ["default/new"]


def test_namespaces_scope_the_terms():
    a = pod("a", "w2", {"app": "web"}, ANTI, ns="one")
    b = pod("b", "w3", {"app": "web"}, ns="two")
    assert Cluster(NODES, [a, b]).violations() == []
    every = {"podAntiAffinity": [dict(ANTI["podAntiAffinity"][0], namespaceSelector={})]}
    (v,) = Cluster(NODES, [pod("a", "w2", {"app": "web"}, every, ns="one"), b],
                   {"one": {}, "two": {}}).violations()
    assert v.others[0].key == "two/b"


@pytest.mark.parametrize("text,field", [
    ("{", "hwaffinity.io/required-during-execution"),
    ('["x"]', "hwaffinity.io/required-during-execution"),
    ('{"podAntiAfinity": []}', "hwaffinity.io/required-during-execution"),
    ('{"podAntiAffinity": {}}', "podAntiAffinity"),
    ('{"podAntiAffinity": [{"labelSelector": {}}]}', "podAntiAffinity[0].topologyKey"),
    ('{"nodeAffinity": [{"matchExpressions": [{"key": "a", "operator": "Near"}]}]}',
     "nodeAffinity"),
])
def test_bad_annotations_name_the_field(text, field):
    with pytest.raises(InputError) as e:
        Rules.parse(text)
    assert field in e.value.field


def test_eviction_order_moved_nodes_first_then_priority_then_newest():
    a = pod("a", "w2", {"app": "web"}, ANTI, created="2026-01-01T00:00:01Z")
    b = pod("b", "w3", {"app": "web"}, ANTI, created="2026-01-01T00:00:02Z")
    vs = Cluster(NODES, [a, b]).violations()
    assert [v.pod.name for v in eviction_order(vs)] == ["b", "a"]          # newest first
    assert [v.pod.name for v in eviction_order(vs, moved_nodes={"w2"})] == ["a", "b"]
    low = pod("a", "w2", {"app": "web"}, ANTI, priority=-1)
    vs = Cluster(NODES, [low, b]).violations()
    assert eviction_order(vs)[0].pod.name == "a"


def test_affinity_waits_for_its_grace_and_a_heal_resets_it():
    now = [100.0]
    f = Forgiveness(60, lambda: now[0])
    rules = {"podAffinity": [{"topologyKey": "CIS-node",
                              "labelSelector": {"matchLabels": {"app": "db"}}}]}
    broken = Cluster(NODES, [pod("front", "w1", rules=rules), pod("db", "w2", {"app": "db"})])
    assert f.due(broken.violations()) == []
    now[0] += 59
    assert f.due(broken.violations()) == []
    now[0] += 2
    assert len(f.due(broken.violations())) == 1
    f.due([])                         # healed
    now[0] += 1
    assert f.due(broken.violations()) == []


def test_anti_affinity_is_due_at_once_the_grace_is_affinity_s_only():
    """The lifecycle's windows (tests/tacker_e2e/windows.py) count no grace for a moved
    node's anti-affinity: the replica is evicted at the poll that relabels it."""
    f = Forgiveness(60, lambda: 100.0)
    web = {"app": "web"}
    broken = Cluster(NODES, [pod("a", "w2", web, ANTI), pod("b", "w3", web, ANTI)])
    assert sorted(v.pod.name for v in f.due(broken.violations())) == ["a", "b"]


def test_5000_pods_after_one_node_label_change_evaluate_under_200_ms():
    nodes = {"w%d" % i: {"CIS-node": "host-%d" % (i // 10)} for i in range(500)}
    pods = []
    for i in range(5000):
        rules = ANTI if i % 10 == 0 else None
        pods.append(pod("p%d" % i, "w%d" % (i % 500), {"app": "web%d" % (i % 50)}, rules))
    cluster = Cluster(nodes, pods)
    nodes["w7"]["CIS-node"] = "host-0"
    t0 = time.perf_counter()
    affected = cluster.affected_by_node("w7", {"CIS-node"})
    cluster.violations(affected)
    assert time.perf_counter() - t0 < 0.2
    assert len(affected) == 500


def test_affinity_terms_need_one_pod_that_all_of_them_select_as_the_scheduler_does():
    # two terms on the same key: a db pod and a cache pod in the domain are not enough,
    # the scheduler (and now the controller) wants one pod both terms select
    rules = {"podAffinity": [
        {"topologyKey": "CIS-node", "labelSelector": {"matchLabels": {"app": "db"}}},
        {"topologyKey": "CIS-node", "labelSelector": {"matchLabels": {"tier": "hot"}}}]}
    front = pod("front", "w2", {"app": "front"}, rules)
    apart = [pod("db", "w3", {"app": "db"}), pod("cache", "w3", {"tier": "hot"})]
    (v,) = Cluster(NODES, [front] + apart).violations()
    assert v.field == "podAffinity[0]" and v.domain == "host-b"
    both = pod("hotdb", "w3", {"app": "db", "tier": "hot"})
    assert Cluster(NODES, [front, both]).violations() == []


def test_a_namespace_selector_on_the_name_label_works_without_the_label_in_the_map():
    # the API server labels every namespace with its name (1.21+); the 1.20 test server
    # and a namespace map read from elsewhere may not carry it: the engine defaults it
    by_name = {"podAntiAffinity": [dict(ANTI["podAntiAffinity"][0], namespaceSelector={
        "matchLabels": {"kubernetes.io/metadata.name": "two"}})]}
    a = pod("a", "w2", {"app": "web"}, by_name, ns="one")
    b = pod("b", "w3", {"app": "web"}, ns="two")
    (v,) = Cluster(NODES, [a, b], {"one": {}, "two": {}}).violations()
    assert v.pod.key == "one/a" and v.others[0].key == "two/b"
