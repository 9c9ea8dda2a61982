"""InterPodAffinity and NodeAffinity scoring, normalisation and weights."""
import numpy as np

from tacker_hwaffinity.scheduling.plugins import default_normalize
from tacker_hwaffinity.scheduling.plugins.interpod import InterPodAffinity

from tests.builders import affinity, node, pod, term, weighted
from .helpers import SCORE_ONLY, config, run, scores

IPA, NA = "InterPodAffinity", "NodeAffinity"
NODES = [node("m1", {"region": "China"}), node("m2", {"region": "India"}),
         node("m3", {"az": "az1"})]


def test_preferred_affinity_scores_the_matching_domain():
    existing = [pod("e", {"security": "S1"}, on="m1")]
    incoming = pod("x", affinity=affinity(
        pref_aff=[weighted(5, term("region", {"security": "S1"}))]))
    assert scores(run(NODES, incoming, existing), IPA) == {"m1": 100, "m2": 0, "m3": 0}


def test_preferred_anti_affinity_is_negative_and_min_max_normalised():
    existing = [pod("e", {"security": "S1"}, on="m1")]
    incoming = pod("x", affinity=affinity(
        pref_anti=[weighted(5, term("region", {"security": "S1"}))]))
    assert scores(run(NODES, incoming, existing), IPA) == {"m1": 0, "m2": 100, "m3": 100}


def test_sums_over_several_pods_and_terms_normalise_by_min_max():
    nodes = [node("a", {"region": "r1", "zone": "z1"}), node("b", {"region": "r2", "zone": "z2"})]
    existing = [pod("e%d" % i, {"app": "x"}, on="a") for i in range(2)] + [
        pod("f", {"app": "x"}, on="b")]
    incoming = pod("x", affinity=affinity(pref_aff=[weighted(8, term("region", {"app": "x"})),
                                                    weighted(4, term("zone", {"app": "x"}))]))
    # raw: a = 2*8 + 2*4 = 24, b = 8 + 4 = 12
    assert scores(run(nodes, incoming, existing), IPA) == {"a": 100, "b": 0}


def test_normalisation_truncates_like_float64():
    # 100 * (29/100) is 28.999999999999996 in float64, truncated to 28
    raw = np.array([0, 29, 100], dtype=np.int64)
    out = InterPodAffinity.normalize(raw, np.ones(3, dtype=bool))
    assert out.tolist() == [0, 28, 100]


def test_equal_raw_scores_all_normalise_to_zero():
    raw = np.array([7, 7], dtype=np.int64)
    assert InterPodAffinity.normalize(raw, np.ones(2, dtype=bool)).tolist() == [0, 0]


def test_existing_required_affinity_adds_hard_weight():
    existing = [pod("e", on="m1", affinity=affinity(req_aff=[term("region", {"app": "x"})]))]
    incoming = pod("x", {"app": "x"})
    assert scores(run(NODES, incoming, existing), IPA) == {"m1": 100, "m2": 0, "m3": 0}
    cfg = config(plugin_config=[{"name": "InterPodAffinity",
                                 "args": {"hardPodAffinityWeight": 0}}])
    assert scores(run(NODES, incoming, existing, cfg=cfg), IPA) == {"m1": 0, "m2": 0, "m3": 0}


def test_existing_preferred_terms_score_symmetrically():
    existing = [pod("e", on="m2", affinity=affinity(
        pref_aff=[weighted(3, term("region", {"app": "x"}))])),
        pod("f", on="m1", affinity=affinity(pref_anti=[weighted(3, term("region", {"app": "x"}))]))]
    got = scores(run(NODES, pod("x", {"app": "x"}), existing), IPA)
    assert got == {"m1": 0, "m2": 100, "m3": 50}


def test_ignore_preferred_terms_of_existing_pods_skips_pods_without_preferences():
    existing = [pod("e", on="m2", affinity=affinity(
        pref_aff=[weighted(3, term("region", {"app": "x"}))]))]
    cfg = config(plugin_config=[{"name": "InterPodAffinity",
                                 "args": {"ignorePreferredTermsOfExistingPods": True}}])
    assert set(scores(run(NODES, pod("x", {"app": "x"}), existing, cfg=cfg), IPA).values()) == {0}
    # with a preference of its own the pod scores as usual, existing preferences included
    incoming = pod("x", {"app": "x"}, affinity=affinity(
        pref_aff=[weighted(1, term("region", {"app": "none"}))]))
    assert scores(run(NODES, incoming, existing, cfg=cfg), IPA)["m2"] == 100


def test_existing_required_anti_affinity_does_not_score():
    existing = [pod("e", on="m1", affinity=affinity(req_anti=[term("az", {"app": "x"})]))]
    assert set(scores(run(NODES, pod("x", {"app": "x"}), existing), IPA).values()) == {0}


def test_only_feasible_nodes_are_scored():
    existing = [pod("e", {"app": "a"}, on="m1")]
    incoming = pod("x", nodeSelector={"region": "India"}, affinity=affinity(
        pref_aff=[weighted(5, term("region", {"app": "a"}))]))
    r = run(NODES, incoming, existing)
    assert r["m1"]["scores"] == {} and r["m1"]["total"] is None
    assert {k: r["m2"]["scores"][k] for k in (IPA, NA)} == {IPA: 0, NA: 0}


def test_with_all_filters_disabled_every_node_is_scored():
    incoming = pod("x", nodeSelector={"region": "nowhere"})
    r = run(NODES, incoming, cfg=config(plugins=SCORE_ONLY))
    assert sorted(n for n in r if n and r[n]["feasible"]) == ["m1", "m2", "m3"]


def node_pref(*weights_and_exprs):
    return {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": w, "preference": {"matchExpressions": [e]}} for w, e in weights_and_exprs]}


def test_node_affinity_preferred_weights_normalise_with_integer_division():
    nodes = [node("a", {"x": "1"}), node("b", {"y": "1"}), node("c", {"x": "1", "y": "1"}),
             node("d")]
    incoming = pod("p", affinity=affinity(node=node_pref(
        (2, {"key": "x", "operator": "Exists"}), (9, {"key": "y", "operator": "Exists"}))))
    # raw a=2, b=9, c=11, d=0 -> 100*raw//11
    assert scores(run(nodes, incoming), NA) == {"a": 18, "b": 81, "c": 100, "d": 0}


def test_default_normalize_reverse_and_zero_max():
    f = np.ones(2, dtype=bool)
    assert default_normalize(np.array([0, 0]), f).tolist() == [0, 0]
    assert default_normalize(np.array([0, 0]), f, reverse=True).tolist() == [100, 100]
    assert default_normalize(np.array([1, 4]), f, reverse=True).tolist() == [75, 0]


def test_added_preferred_affinity_adds_to_the_score():
    nodes = [node("a", {"disk": "ssd"}), node("b")]
    cfg = config(plugin_config=[{"name": "NodeAffinity", "args": {"addedAffinity": node_pref(
        (5, {"key": "disk", "operator": "In", "values": ["ssd"]}))}}])
    assert scores(run(nodes, pod("p"), cfg=cfg), NA) == {"a": 100, "b": 0}


def test_weights_multiply_into_the_total():
    nodes = [node("a", {"disk": "ssd"}), node("b")]
    incoming = pod("p", affinity=affinity(node=node_pref(
        (5, {"key": "disk", "operator": "In", "values": ["ssd"]}))))
    r = run(nodes, incoming)
    assert r["a"]["scores"][NA] == 100 and r["b"]["scores"][NA] == 0
    assert r["a"]["total"] - r["b"]["total"] == 200  # default weight 2, the rest equal
    cfg = config(plugins={"score": {"enabled": [{"name": "NodeAffinity", "weight": 7}]}})
    r = run(nodes, incoming, cfg=cfg)
    assert r["a"]["total"] - r["b"]["total"] == 700
    off = config(plugins={"score": {"disabled": [{"name": "NodeAffinity"}]}})
    assert NA not in run(nodes, incoming, cfg=off)["a"]["scores"]
