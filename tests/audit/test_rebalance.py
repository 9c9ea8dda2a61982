"""audit.rebalance: the fewest evictions that restore a workload's intent on the host key,
each only where the scheduler would put the replacement somewhere that keeps it, never
past a PodDisruptionBudget, at most LIMIT, a workload still settling left alone."""
from hypothesis import given, settings, strategies as st

from tacker_hwaffinity.audit import core, rebalance
from tacker_hwaffinity.scheduling.profile import Profile

from tests import fuzzing
from tests.audit.helpers import anti, node, pdb, pod

KEY = "CIS-node"
# w2 was live-migrated onto h1, where w1 runs: h2 is free, h3 carries w4
NODES = [node("w1", "h1"), node("w2", "h1"), node("w3", "h2"), node("w4", "h3")]
FRAMEWORK = Profile().framework()
WEB = ("ReplicaSet", "web-abc")


def replica(i, on, created, affinity=None, spread=None, labels=None):
    p = pod("web-abc-%d" % i, on, labels or {"app": "web"}, WEB,
            affinity=affinity if affinity is not None else anti("web"), spread=spread)
    p["metadata"]["creationTimestamp"] = created
    p["metadata"]["uid"] = "uid-%d" % i
    return p


def plan(pods, limit=1, **kw):
    return rebalance.plan(NODES, pods, KEY, FRAMEWORK, limit=limit, **kw)


def moved(pods, eviction):
    """PODS with the evicted replica replaced by one on its predicted node."""
    out = [p for p in pods if p["metadata"]["name"] != eviction.name]
    gone = next(p for p in pods if p["metadata"]["name"] == eviction.name)
    new = dict(gone, metadata=dict(gone["metadata"], name=eviction.name + "-new"),
               spec=dict(gone["spec"], nodeName=eviction.to_node))
    return out + [new]


def intent_met(pods):
    (w,) = [w for w in core.audit(NODES, pods, KEY).workloads if w.name == "web-abc"]
    return w.intent_met


def test_two_replicas_on_one_host_the_younger_moves_to_a_free_host_and_the_intent_holds():
    pods = [replica(0, "w1", "2026-01-01T00:00:00Z"), replica(1, "w2", "2026-01-02T00:00:00Z"),
            replica(2, "w4", "2026-01-01T00:00:00Z")]
    assert intent_met(pods) is False
    r = plan(pods)
    (e,) = r.evictions
    assert (e.name, e.node, e.to_node, e.strategy) == (
        "web-abc-1", "w2", "w3", rebalance.ANTI_AFFINITY)
    assert e.workload == ("default", "ReplicaSet", "web-abc")
    assert "didn't match pod anti-affinity rules" in e.message()
    assert r.held == []
    assert intent_met(moved(pods, e)) is True


def test_preferred_anti_affinity_is_rebalanced_too():
    pref = anti("web", preferred=True)
    pods = [replica(0, "w1", "2026-01-01T00:00:00Z", pref),
            replica(1, "w2", "2026-01-02T00:00:00Z", pref)]
    (e,) = plan(pods).evictions
    assert e.name == "web-abc-1" and e.to_node in ("w3", "w4")
    assert intent_met(moved(pods, e)) is True


def test_no_host_free_for_the_replacement_holds_the_workload_and_evicts_nothing():
    pods = [replica(0, "w1", "2026-01-01T00:00:00Z"), replica(1, "w2", "2026-01-02T00:00:00Z"),
            replica(2, "w3", "2026-01-01T00:00:00Z"), replica(3, "w4", "2026-01-01T00:00:00Z")]
    r = plan(pods)
    assert r.evictions == []
    (h,) = r.held
    assert h.workload == ("default", "ReplicaSet", "web-abc")
    assert "no replica can move where the intent holds" in h.reason
    assert "didn't match pod anti-affinity rules" in h.reason


def test_a_budget_that_allows_no_disruption_holds_the_workload():
    pods = [replica(0, "w1", "2026-01-01T00:00:00Z"), replica(1, "w2", "2026-01-02T00:00:00Z")]
    budget = pdb("web", {"matchLabels": {"app": "web"}}, max_unavailable=0)
    r = plan(pods, pdbs=[budget])
    assert r.evictions == []
    (h,) = r.held
    assert h.pod["metadata"]["name"] == "web-abc-1"
    assert h.reason.startswith("PodDisruptionBudget default/web: 2 healthy, 2 required")
    ok = pdb("web", {"matchLabels": {"app": "web"}}, max_unavailable=1)
    assert [e.name for e in plan(pods, pdbs=[ok]).evictions] == ["web-abc-1"]


def test_three_on_one_host_need_two_evictions_within_the_limit():
    nodes = NODES + [node("w5", "h1"), node("w6", "h4")]
    pods = [replica(0, "w1", "2026-01-01T00:00:00Z"), replica(1, "w2", "2026-01-02T00:00:00Z"),
            replica(2, "w5", "2026-01-03T00:00:00Z")]
    r = rebalance.plan(nodes, pods, KEY, FRAMEWORK, limit=5)
    assert sorted(e.name for e in r.evictions) == ["web-abc-1", "web-abc-2"]
    assert len({e.to_node for e in r.evictions}) == 2
    one = rebalance.plan(nodes, pods, KEY, FRAMEWORK, limit=1)
    assert [e.name for e in one.evictions] == ["web-abc-2"]           # the youngest first


def test_topology_spread_moves_the_fewest_replicas_to_restore_the_skew():
    spread = [{"maxSkew": 1, "topologyKey": KEY, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    nodes = NODES + [node("w5", "h1")]
    pods = [replica(i, n, "2026-01-0%dT00:00:00Z" % (i + 1), {}, spread)
            for i, n in enumerate(["w1", "w2", "w5", "w3"])]
    r = rebalance.plan(nodes, pods, KEY, FRAMEWORK, limit=5)
    (e,) = r.evictions                      # h1: 3, h2: 1, h3: 0 -> 2, 1, 1
    assert (e.node in ("w1", "w2", "w5"), e.to_node, e.strategy) == (
        True, "w4", rebalance.TOPOLOGY_SPREAD)


def test_a_workload_with_a_replica_on_its_way_is_left_alone():
    pods = [replica(0, "w1", "2026-01-01T00:00:00Z"), replica(1, "w2", "2026-01-02T00:00:00Z"),
            replica(2, None, "2026-01-03T00:00:00Z")]
    assert plan(pods).evictions == []
    pods[2]["spec"]["nodeName"] = "w4"
    pods[2]["metadata"]["deletionTimestamp"] = "2026-01-03T00:00:01Z"
    assert plan(pods).evictions == []


def test_met_intent_and_no_intent_plan_nothing():
    pods = [replica(0, "w1", "2026-01-01T00:00:00Z"), replica(1, "w3", "2026-01-02T00:00:00Z")]
    assert plan(pods).evictions == [] and plan(pods).held == []
    plain = [replica(0, "w1", "2026-01-01T00:00:00Z", {}),
             replica(1, "w2", "2026-01-02T00:00:00Z", {})]
    assert plan(plain).evictions == []


@given(st.integers(2, 5), st.lists(st.integers(0, 9), min_size=2, max_size=5))
@settings(max_examples=60, deadline=None)
def test_moves_are_the_fewest_and_restore_required_anti_affinity_when_hosts_suffice(
        n_hosts, spots):
    """N_HOSTS hosts of two nodes each; replica i on node SPOTS[i] % nodes. The plan moves
    one replica per replica too many on a host, each to a host without one, as long as
    there is such a host; then the audit of the moved cluster finds the intent met, else
    the workload is held (the replicas left together have nowhere to go)."""
    nodes = [node("n%d" % i, "h%d" % (i // 2)) for i in range(2 * n_hosts)]
    pods = [replica(i, "n%d" % (s % len(nodes)), "2026-01-%02dT00:00:00Z" % (i + 1))
            for i, s in enumerate(spots)]
    per_host = {}
    for s in spots:
        h = (s % len(nodes)) // 2
        per_host[h] = per_host.get(h, 0) + 1
    r = rebalance.plan(nodes, pods, KEY, FRAMEWORK, limit=10)
    extra = sum(c - 1 for c in per_host.values())
    free = n_hosts - len(per_host)
    assert len(r.evictions) == min(extra, free)
    assert len(r.held) == (1 if extra > free else 0)
    moved_pods, hosts = pods, set(per_host)
    for e in r.evictions:
        host = int(e.to_node[1:]) // 2
        assert host not in hosts                # a host without a replica, once each
        hosts.add(host)
        moved_pods = moved(moved_pods, e)
    (w,) = core.audit(nodes, moved_pods, KEY).workloads
    assert w.intent_met is (extra <= free)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)


@given(st.sampled_from(["affinity", "topologySpreadConstraints", "containers", "nodeName"]),
       JSON, st.sampled_from(["labels", "annotations", "ownerReferences", "deletionTimestamp"]),
       JSON)
def test_a_pod_creators_fields_give_a_plan_or_an_input_error_within_bounds(
        spec_field, spec_value, meta_field, meta_value):
    """What a pod creator writes in one replica's spec and metadata: the plan is made or
    the project's input error is raised, within the fuzz bounds (tests/fuzzing.py)."""
    pods = [replica(0, "w1", "2026-01-01T00:00:00Z"), replica(1, "w2", "2026-01-02T00:00:00Z"),
            replica(2, "w4", "2026-01-03T00:00:00Z")]
    pods[1]["spec"][spec_field] = spec_value
    pods[1]["metadata"][meta_field] = meta_value
    fuzzing.bounded(rebalance.plan, NODES, pods, KEY, FRAMEWORK, limit=2, seconds=0.5)
