"""The extender's filter/prioritize: the engine's InterPodAffinity over the annotation terms."""
import gc
import json
import logging
import threading
import weakref
import time

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

import fuzzing

from tacker_hwaffinity.scheduling import annotations
from tacker_hwaffinity.scheduling.framework import Cycle
from tacker_hwaffinity.scheduling.model import Pod
from tacker_hwaffinity.scheduling.plugins.interpod import (
    ERR_AFFINITY, ERR_ANTI, ERR_EXISTING_ANTI, InterPodAffinity)
from tacker_hwaffinity.scheduling.snapshot import cluster_from_objects
from tacker_hwaffinity.webhook import extender as extender_mod
from tacker_hwaffinity.webhook.extender import ERR_UNKNOWN_NODE, Extender
from tacker_hwaffinity.webhook.marking import Marking
from tacker_hwaffinity.webhook.podcache import FILTER, SCORE, PodCache
from tests.builders import affinity, marked, node, pod, term, weighted
from tests.scheduling.term_strategies import (
    H, NAMESPACES, Z, maybe, pod_labels, term_lists, weighted_lists)
from tests.webhook.test_podcache import waiting

NODES = [node("n1", {H: "h1", Z: "a"}), node("n2", {H: "h2", Z: "a"}),
         node("n3", {H: "h3", Z: "b"}), node("n4", {Z: "b"})]
NAMES = ["n1", "n2", "n3", "n4"]
V2 = pod("v2", {"version": "2", "app": "db"}, on="n1")
V5 = pod("v5", {"version": "5", "app": "db"}, on="n3")


def gt(key, value, topology=H):
    return term(topology, exprs=[{"key": key, "operator": "Gt", "values": [value]}])


def lt(key, value, topology=H):
    return term(topology, exprs=[{"key": key, "operator": "Lt", "values": [value]}])


def annotated(p, pa=None, rde=None):
    """P with extended terms, marked for the extender as the mutating webhook marks it."""
    marked(p)
    anns = p["metadata"].setdefault("annotations", {})
    if pa is not None:
        anns[annotations.POD_AFFINITY] = json.dumps(pa)
    if rde is not None:
        anns[annotations.REQUIRED_DURING_EXECUTION] = json.dumps(rde)
    return p


def make(pods=(), nodes=NODES, namespaces=(), **kw):
    cache = PodCache()
    cache.sync_nodes(nodes)
    cache.sync_namespaces(namespaces)
    cache.sync_pods(pods)
    kw.setdefault("pending_wait", 0.05)
    return cache, Extender(cache, **kw)


def filt(ext, incoming, names=NAMES):
    out = ext.filter({"Pod": incoming, "NodeNames": list(names)})
    assert out["Error"] == ""
    return out["NodeNames"], out["FailedNodes"]


def prio(ext, incoming, names=NAMES):
    return {h["Host"]: h["Score"] for h in ext.prioritize({"Pod": incoming, "NodeNames": names})}


# -- filter ----------------------------------------------------------------------------
def test_gt_affinity_lands_only_where_matching_pods_are():
    _, ext = make([V2, V5])
    keep, failed = filt(ext, annotated(pod("x"), affinity(req_aff=[gt("version", "3")])))
    assert keep == ["n3"]
    assert failed == {"n1": ERR_AFFINITY, "n2": ERR_AFFINITY, "n4": ERR_AFFINITY}
    # zone-wide: both zone b nodes (n4 has no hostname but has the zone)
    keep, _ = filt(ext, annotated(pod("x"), affinity(req_aff=[gt("version", "3", Z)])))
    assert keep == ["n3", "n4"]


def test_lt_anti_affinity_keeps_away_from_matching_pods():
    _, ext = make([V2, V5])
    keep, failed = filt(ext, annotated(pod("x"), rde={"podAntiAffinity": [lt("version", "3")]}))
    assert keep == ["n2", "n3", "n4"] and failed == {"n1": ERR_ANTI}
    keep, failed = filt(ext, annotated(pod("x"), affinity(req_anti=[lt("version", "3", Z)])))
    assert keep == ["n3", "n4"] and failed == {"n1": ERR_ANTI, "n2": ERR_ANTI}


def test_symmetry_existing_extended_anti_affinity_keeps_a_plain_pod_away():
    guard = annotated(pod("guard", {"app": "guard"}, on="n2"),
                      affinity(req_anti=[gt("version", "3", Z)]))
    _, ext = make([V2, guard])
    keep, failed = filt(ext, pod("plain", {"version": "7"}))
    assert keep == ["n3", "n4"]
    assert failed == {"n1": ERR_EXISTING_ANTI, "n2": ERR_EXISTING_ANTI}
    # a plain pod the term does not select passes through untouched
    names = list(NAMES)
    out = ext.filter({"Pod": pod("plain", {"version": "2"}), "NodeNames": names})
    assert out["NodeNames"] is names and out["FailedNodes"] == {}


def test_first_pod_of_a_group_with_affinity_to_itself():
    aff = affinity(req_aff=[gt("version", "3")])
    _, ext = make([V2])
    keep, failed = filt(ext, annotated(pod("first", {"version": "9"}), aff))
    assert keep == ["n1", "n2", "n3"] and failed == {"n4": ERR_AFFINITY}   # n4: no hostname
    keep, _ = filt(ext, annotated(pod("other", {"version": "1"}), aff))   # not in its group
    assert keep == []
    _, ext = make([V2, V5])     # a member is bound: the rule no longer applies
    keep, _ = filt(ext, annotated(pod("second", {"version": "9"}), aff))
    assert keep == ["n3"]


def test_reason_precedence_affinity_over_anti_over_existing_anti():
    guard = annotated(pod("guard", {"app": "guard"}, on="n1"),
                      affinity(req_anti=[term(Z, {"app": "web"})]))
    _, ext = make([V2, V5, guard])
    incoming = annotated(pod("w", {"app": "web"}),
                         affinity(req_aff=[term(H, {"app": "db"})],
                                  req_anti=[lt("version", "3", Z)]))
    keep, failed = filt(ext, incoming)
    assert keep == ["n3"]
    # n1: anti + existing anti, n2: all three, n4: affinity only (no hostname)
    assert failed == {"n1": ERR_ANTI, "n2": ERR_AFFINITY, "n4": ERR_AFFINITY}
    incoming = annotated(pod("w", {"app": "web"}), affinity(req_anti=[lt("version", "3", Z)]))
    keep, failed = filt(ext, incoming)
    assert failed == {"n1": ERR_ANTI, "n2": ERR_ANTI} and keep == ["n3", "n4"]
    keep, failed = filt(ext, pod("w", {"app": "web"}))
    assert failed == {"n1": ERR_EXISTING_ANTI, "n2": ERR_EXISTING_ANTI}


def test_plain_pod_passes_through_unchanged():
    cache, ext = make([V2, V5])
    names = ["n1", "n2", "nowhere"]
    args = {"Pod": pod("plain", {"app": "x"}), "NodeNames": names}
    out = ext.filter(args)
    assert out == {"Nodes": None, "NodeNames": names, "FailedNodes": {}, "Error": ""}
    assert out["NodeNames"] is names
    nodelist = {"apiVersion": "v1", "kind": "NodeList", "items": list(NODES)}
    out = ext.filter({"Pod": pod("plain2"), "Nodes": nodelist})
    assert out["Nodes"] is nodelist and out["NodeNames"] is None and out["FailedNodes"] == {}
    assert prio(ext, pod("plain"), names) == {"n1": 0, "n2": 0, "nowhere": 0}


def test_nodes_form_returns_the_surviving_node_objects():
    _, ext = make([V2, V5])
    nodelist = {"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": list(NODES)}
    out = ext.filter({"Pod": annotated(pod("x"), affinity(req_anti=[lt("version", "3", Z)])),
                      "Nodes": nodelist})
    assert out["Error"] == "" and out["NodeNames"] is None
    assert out["Nodes"]["kind"] == "NodeList"
    assert [n["metadata"]["name"] for n in out["Nodes"]["items"]] == ["n3", "n4"]
    assert out["Nodes"]["items"][0] is NODES[2]
    assert out["FailedNodes"] == {"n1": ERR_ANTI, "n2": ERR_ANTI}
    assert len(nodelist["items"]) == 4  # the request is not modified


def test_unknown_node_fails_with_its_own_reason():
    _, ext = make([V2, V5])
    keep, failed = filt(ext, annotated(pod("x"), affinity(req_anti=[lt("version", "3")])),
                        ["n1", "ghost", "n2"])
    assert keep == ["n2"] and failed == {"n1": ERR_ANTI, "ghost": ERR_UNKNOWN_NODE}


@pytest.mark.parametrize("name,value", [
    (annotations.POD_AFFINITY, "{"),
    (annotations.POD_AFFINITY, json.dumps({"podAffinity": {"required": []}})),
    (annotations.REQUIRED_DURING_EXECUTION, json.dumps({"podAntiAffinity": [{}]})),
    (annotations.POD_AFFINITY, json.dumps(affinity(req_aff=[term(
        H, exprs=[{"key": "v", "operator": "Gt", "values": ["x"]}])]))),
])
def test_malformed_annotation_is_an_error_with_the_engines_message(name, value):
    cache, ext = make([V2])
    p = pod("bad")
    p["metadata"]["annotations"] = {name: value}
    out = ext.filter({"Pod": p, "NodeNames": NAMES})
    assert out["Error"] == annotations.malformed({name: value})
    assert out["Error"].startswith("field metadata.annotations[" + name)
    assert cache.pending() == 0
    assert prio(ext, p) == {n: 0 for n in NAMES}


def test_filter_assumes_the_pod_and_the_next_one_sees_it_once_bound(monkeypatch):
    cache, ext = make([], pending_wait=5.0)
    anti = affinity(req_anti=[term(H, {"app": "web"})])
    first = annotated(pod("web-1", {"app": "web"}), anti)
    cache.on_pod("ADDED", first)     # the watch shows it: its pending record is verified
    keep, _ = filt(ext, first)
    assert keep == NAMES and cache.pending() == 1
    blocked = waiting(cache, monkeypatch)

    def bind():
        blocked.wait(5)             # the next filter waits for web-1's binding
        bound = json.loads(json.dumps(first))
        bound["spec"]["nodeName"] = "n2"
        cache.on_pod("MODIFIED", bound)

    t = threading.Thread(target=bind)
    t.start()
    started = time.monotonic()
    keep, failed = filt(ext, annotated(pod("web-2", {"app": "web"}), anti))
    t.join()
    assert blocked.is_set() and time.monotonic() - started < 4.0
    assert keep == ["n1", "n3", "n4"] and failed == {"n2": ERR_ANTI}
    assert cache.pending() == 1  # web-2 now


def test_no_node_left_assumes_nothing():
    cache, ext = make([V2])
    keep, _ = filt(ext, annotated(pod("x"), affinity(req_aff=[gt("version", "3")])))
    assert keep == [] and cache.pending() == 0


def test_unbound_relevant_pending_pod_bounds_the_wait(monkeypatch):
    cache, ext = make([], pending_wait=0.1)
    waits = []      # the timeouts of the filter's waits (counted: load cannot change them)
    real_wait = cache.assumed.cond.wait
    monkeypatch.setattr(cache.assumed.cond, "wait",
                        lambda timeout=None: waits.append(timeout) or real_wait(timeout))
    anti = affinity(req_anti=[term(H, {"app": "web"})])
    cache.on_pod("ADDED", annotated(pod("web-1", {"app": "web"}), anti))
    filt(ext, annotated(pod("web-1", {"app": "web"}), anti))
    filt(ext, annotated(pod("web-1", {"app": "web"}), anti))   # its own record: no wait
    filt(ext, pod("db-1", {"app": "db"}))                       # unrelated: no wait
    filt(ext, annotated(pod("db-2", {"app": "db"}), affinity(req_anti=[term(H, {"a": "b"})])))
    assert waits == []
    started = time.monotonic()
    keep, _ = filt(ext, annotated(pod("web-2", {"app": "web"}), anti))
    assert 0.1 <= time.monotonic() - started < 2.0
    assert waits and max(waits) <= 0.1     # it waited, never asking beyond pending_wait
    assert keep == NAMES   # decided without it
    assert cache.pending() == 4


def test_a_forged_filter_call_slows_no_later_filter():
    """One POST of a pod nobody created, with required anti-affinity over every pod of
    every namespace: its pending record delays no later /filter (2 s each before)."""
    cache, ext = make([V2, V5], pending_wait=2.0)
    forged = annotated(pod("forged", {"app": "f"}), affinity(req_anti=[
        term(H, {}, namespaceSelector={})]))
    status = ext.handle("filter", json.dumps({"Pod": forged, "NodeNames": NAMES}).encode()).status
    assert status == 200 and cache.pending() == 1
    took = []
    for i in range(20):
        incoming = pod("p%d" % i, {"app": "a%d" % i}, ns="ns%d" % (i % 3))
        if i % 2:
            annotated(incoming, affinity(req_anti=[term(H, {"app": "a%d" % i})]))
        cache.on_pod("ADDED", incoming)
        body = json.dumps({"Pod": incoming, "NodeNames": NAMES}).encode()
        started = time.monotonic()
        status, out, _ = ext.handle("filter", body)
        took.append(time.monotonic() - started)
        assert status == 200 and json.loads(out)["Error"] == ""
    assert max(took) < 0.1, took


# -- prioritize ------------------------------------------------------------------------
def test_prioritize_preferred_terms_scaled_to_0_10():
    _, ext = make([V2, V5, pod("v4", {"version": "4"}, on="n2")])
    incoming = annotated(pod("x"), affinity(pref_aff=[weighted(10, gt("version", "3"))],
                                            pref_anti=[weighted(5, lt("version", "3", Z))]))
    # raw: n1 -5, n2 10-5=5, n3 10, n4 0 -> (min -5, max 10) 0, 66, 100, 33
    assert prio(ext, incoming) == {"n1": 0, "n2": 7, "n3": 10, "n4": 3}
    scores = prio(ext, incoming, ["n2", "n4"])     # normalised over the given nodes only
    assert scores == {"n2": 10, "n4": 0}
    assert prio(ext, incoming, ["n1", "ghost"]) == {"n1": 0, "ghost": 0}


def test_prioritize_existing_pods_terms_and_hard_weight():
    hard = annotated(pod("h", {"app": "h"}, on="n1"), affinity(req_aff=[term(Z, {"app": "w"})]))
    soft = annotated(pod("s", {"app": "s"}, on="n3"),
                     affinity(pref_anti=[weighted(3, term(H, {"app": "w"}))]))
    _, ext = make([hard, soft], hard_pod_affinity_weight=2)
    # raw: zone a +2 (n1, n2), n3 -3
    assert prio(ext, pod("w", {"app": "w"})) == {"n1": 10, "n2": 10, "n3": 0, "n4": 6}
    _, ext = make([hard, soft], hard_pod_affinity_weight=0)
    assert prio(ext, pod("w", {"app": "w"})) == {"n1": 10, "n2": 10, "n3": 0, "n4": 10}
    for scores in (prio(ext, pod("w", {"app": "other"})), prio(ext, pod("y"), NAMES[:1])):
        assert set(scores.values()) == {0}


# -- handle ----------------------------------------------------------------------------
def test_prioritize_reuses_the_filters_decoding_of_the_same_bytes(monkeypatch):
    """kube-scheduler sends /filter and /prioritize the same bytes for a pod: decoded
    once, and the answers are those of two decodings; other bytes are decoded anew."""
    _, ext = make([V2, V5])
    decoded = []
    real = extender_mod._LastNodes._decode
    monkeypatch.setattr(extender_mod._LastNodes, "_decode",
                        lambda self, b: decoded.append(b) or real(self, b))
    incoming = annotated(pod("x"), affinity(pref_aff=[weighted(5, gt("version", "4"))]))
    body = json.dumps({"Pod": incoming, "Nodes": None, "NodeNames": NAMES}).encode()
    assert ext.handle("filter", body).status == 200
    scores = json.loads(ext.handle("prioritize", bytes(bytearray(body))).body)
    assert len(decoded) == 1
    assert {h["Host"]: h["Score"] for h in scores} == {
        n: s for n, s in prio(ext, incoming).items() if s} == {"n3": 10}
    other = json.dumps({"Pod": incoming, "Nodes": None, "NodeNames": NAMES[:2]}).encode()
    assert json.loads(ext.handle("prioritize", other).body) == [
        h for h in scores if h["Host"] in NAMES[:2]]
    assert len(decoded) == 2


def test_handle_round_trip_and_errors(monkeypatch, caplog):
    _, ext = make([V2, V5])
    body = json.dumps({"Pod": annotated(pod("x"), affinity(req_anti=[lt("version", "3")])),
                       "NodeNames": NAMES, "Nodes": None}).encode()
    status, out, outcome = ext.handle("filter", body)
    assert (status, outcome) == (200, "answered")
    assert json.loads(out) == {"Nodes": None, "NodeNames": ["n2", "n3", "n4"],
                               "FailedNodes": {"n1": ERR_ANTI}, "Error": ""}
    status, out, outcome = ext.handle("prioritize", body)
    assert (status, outcome) == (200, "answered")
    assert json.loads(out) == []        # no node scores above 0: none is listed
    for bad in (b"{", b"\xff\xfe", b""):
        status, out, outcome = ext.handle("filter", bad)
        assert (status, outcome) == (400, "error")
        assert json.loads(out)["Error"].startswith("request body is not JSON")
    status, out, outcome = ext.handle("prioritize", b"[]")
    assert (status, outcome) == (400, "error") and "JSON object" in json.loads(out)["Error"]
    status, out, outcome = ext.handle("filter", b'{"NodeNames": []}')
    assert (status, outcome) == (200, "error") and "no Pod" in json.loads(out)["Error"]
    status, out, outcome = ext.handle("prioritize",
                                      b'{"Pod": {"metadata": {}}, "NodeNames": "n1"}')
    assert (status, outcome) == (400, "error") and "NodeNames" in json.loads(out)["Error"]
    unknown = ext.handle("bind", body)
    assert (unknown.status, unknown.outcome) == (404, "error")

    def boom(*a):
        raise RuntimeError("kaputt")

    monkeypatch.setattr(extender_mod.Extender, "_codes", boom)
    with caplog.at_level(logging.ERROR, logger=extender_mod.LOG.name):
        status, out, outcome = ext.handle("filter", body)
    assert (status, outcome) == (500, "error")
    assert [r.getMessage() for r in caplog.records] == ["extender filter failed"]
    assert json.loads(out) == {"Error": "internal error in the hwaffinity extender: "
                                        "RuntimeError: kaputt"}


def test_an_extender_keeps_nothing_once_it_is_gone(monkeypatch):
    """The last request's node positions and score texts belong to the Extender: once
    it and its cache are dropped, their node table is freed (a process-wide cache kept
    the last one alive)."""
    from tacker_hwaffinity.webhook import podcache

    class Table(podcache.NodeTable):      # no __slots__: can be weakly referenced
        pass
    monkeypatch.setattr(podcache, "NodeTable", Table)
    cache, ext = make([V2, V5])
    body = json.dumps({"Pod": annotated(pod("x"), affinity(
        req_anti=[lt("version", "3")], pref_aff=[weighted(1, gt("version", "3"))])),
        "NodeNames": NAMES}).encode()
    assert [ext.handle(verb, body).outcome for verb in ("filter", "prioritize")] == [
        "answered", "answered"]
    table = weakref.ref(cache.reader().node_table())
    del cache, ext
    gc.collect()
    assert table() is None


# -- the engine, property-based --------------------------------------------------------
@st.composite
def pod_affinity_annotation(draw):
    return affinity(req_aff=draw(maybe(term_lists(2, 1))),
                    req_anti=draw(maybe(term_lists(2, 1), 2)),
                    pref_aff=draw(weighted_lists(min_size=draw(st.integers(0, 1)))) or None,
                    pref_anti=draw(weighted_lists()) or None)


@st.composite
def scenario(draw, score_only=False):
    """(nodes, bound pods, incoming pod, hardPodAffinityWeight, pods to move). SCORE_ONLY:
    the incoming pod has preferred terms only (every node feasible, scores to compare)."""
    node_labels = st.fixed_dictionaries(
        {}, optional={H: st.sampled_from(["h1", "h2", "h3", "h4", "h5"]),
                      Z: st.sampled_from(["a", "b"])})
    nodes = [node("n%d" % i, draw(st.one_of(
        node_labels, st.builds(lambda z: {H: "h%d" % i, Z: z}, st.sampled_from("ab")))))
        for i in range(draw(st.integers(2, 6)))]
    names = [n["metadata"]["name"] for n in nodes]
    pods = []
    for i in range(draw(st.integers(0, 12) | st.integers(5, 12))):
        where = draw(st.sampled_from(names * 3 + ["ghost"]))
        p = pod("e%d" % i, draw(pod_labels), ns=draw(st.sampled_from(["default"] * 3 + ["other"])),
                on=where, phase=draw(st.sampled_from([None, None, None, "Running", "Succeeded"])),
                deleting=draw(st.integers(0, 4)) == 0)
        kind = draw(st.sampled_from(["plain", "plain", "anti", "anti", "aff", "pa", "rde"]))
        if kind == "anti":
            annotated(p, affinity(req_anti=draw(term_lists(1, 1))))
        elif kind == "aff":
            annotated(p, affinity(req_aff=draw(term_lists(1, 1)),
                                  pref_anti=draw(weighted_lists()) or None))
        elif kind == "pa":
            annotated(p, draw(pod_affinity_annotation()))
        elif kind == "rde":
            annotated(p, rde={"podAntiAffinity": draw(term_lists(1)),
                              "podAffinity": draw(term_lists(1))})
        pods.append(p)
    incoming = pod("in", draw(pod_labels), ns=draw(st.sampled_from(["default"] * 3 + ["other"])))
    if score_only:
        annotated(incoming, affinity(pref_aff=draw(weighted_lists(1)),
                                     pref_anti=draw(weighted_lists()) or None))
    elif draw(st.integers(0, 5)):
        annotated(incoming, draw(pod_affinity_annotation()),
                  draw(maybe(st.builds(lambda a, n: {"podAffinity": a, "podAntiAffinity": n},
                                       term_lists(1), term_lists(1)))))
    hard = draw(st.sampled_from([0, 1, 5]))
    moves = draw(st.lists(st.integers(0, 11), max_size=3))
    return nodes, pods, incoming, hard, moves


def engine(nodes, pods, incoming, hard):
    snap = cluster_from_objects([(o, "t") for o in nodes + pods + NAMESPACES])
    state = snap.state()
    plugin = InterPodAffinity(hard_pod_affinity_weight=hard)
    cycle = Cycle(state, Pod.parse(incoming, created=True))
    rejection = plugin.filter(cycle)
    failed = {}
    for i, n in enumerate(state.nodes):
        if rejection is not None and rejection.failed[i]:
            failed[n.name] = rejection.reasons(i)[0]
    feasible = ~rejection.failed if rejection is not None else state.hundreds > 0
    scores = plugin.scores(cycle, feasible)
    return failed, {n.name: int(scores[i]) for i, n in enumerate(state.nodes) if feasible[i]}


def fed_cache(nodes, pods, moves):
    """A cache fed the way informers do: a list, then watch events (a few pods first
    appear elsewhere with other labels and are then moved to where they belong)."""
    cache = PodCache()
    cache.sync_namespaces(NAMESPACES[:1])
    cache.on_namespace("ADDED", NAMESPACES[1])
    for n in nodes:
        cache.on_node("ADDED", n)
    cache.sync_pods(pods[: len(pods) // 2])
    moved = {m for m in moves if m < len(pods)}
    for i, p in enumerate(pods[len(pods) // 2:], start=len(pods) // 2):
        if i in moved:
            decoy = json.loads(json.dumps(p))
            decoy["metadata"]["labels"] = {"app": "x", "ver": "99"}
            decoy["spec"]["nodeName"] = nodes[0]["metadata"]["name"]
            cache.on_pod("ADDED", decoy)
            cache.on_pod("MODIFIED", p)
        else:
            cache.on_pod("ADDED", p)
    cache.on_pod("ADDED", pod("gone", {"app": "x"}, on=nodes[-1]["metadata"]["name"]))
    cache.on_pod("DELETED", pod("gone"))
    return cache


PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@PROPERTY
@given(scenario())
def test_extender_equals_the_engine(sc):
    check_against_engine(*sc)


@pytest.mark.slow
@PROPERTY
@given(scenario(score_only=True))
def test_extender_scores_equal_the_engine(sc):
    check_against_engine(*sc)


@pytest.mark.slow
@PROPERTY
@given(st.one_of(scenario(), scenario(score_only=True)))
def test_a_verb_the_webhook_does_not_mark_a_pod_for_changes_nothing(sc):
    """The marks are sound: kube-scheduler skips the verbs a pod is not marked for, and
    what they would have answered is what skipping them gives (every node passes; every
    node scores 0)."""
    nodes, pods, incoming, hard, moves = sc
    cache = fed_cache(nodes, pods, moves)
    verbs = Marking(cache, hard).needed_verbs(incoming)
    ext = Extender(cache, hard_pod_affinity_weight=hard, pending_wait=0)
    names = [n["metadata"]["name"] for n in nodes]
    if FILTER not in verbs:
        assert ext.filter({"Pod": incoming, "NodeNames": names})["FailedNodes"] == {}
    if SCORE not in verbs:
        assert set(prio(ext, incoming, names).values()) == {0}


def check_against_engine(nodes, pods, incoming, hard, moves):
    want_failed, want_scores = engine(nodes, pods, incoming, hard)
    cache = fed_cache(nodes, pods, moves)
    ext = Extender(cache, hard_pod_affinity_weight=hard, pending_wait=0)
    names = [n["metadata"]["name"] for n in nodes]
    out = ext.filter({"Pod": incoming, "NodeNames": names})
    assert out["Error"] == ""
    assert out["FailedNodes"] == want_failed
    assert out["NodeNames"] == [n for n in names if n not in want_failed]
    if out["NodeNames"]:
        got = prio(ext, incoming, out["NodeNames"])
        assert got == {n: (s + 5) // 10 for n, s in want_scores.items()}


def test_the_priority_list_lists_the_nodes_that_score_as_json_would_encode_them():
    """kube-scheduler adds each listed node's score and nothing for the others: the
    nodes that score 0 are left out of the answer."""
    _, ext = make()
    for names in (["n1", "a.b-c", "n3"], ["n1", "a.b-c", "n3"], ["Odd\"Name", "x"]):
        scores = list(range(len(names)))
        got = ext._priorities_json(list(names), scores)
        assert got == json.dumps([{"Host": n, "Score": s} for n, s in zip(names, scores)
                                  if s], separators=(",", ":")).encode()
    assert ext._priorities_json([], []) == ext._priorities_json(["n1"], [0]) == b"[]"
    # the entries' starts are kept per node list: the same list with other scores, then
    # another list, each answered as json.dumps would
    first, second = ["n1", "n2", "n3"], ["m1", "m2"]
    for names, scores in ((first, [10, 0, 3]), (first, [1, 2, 0]), (second, [0, 7]),
                          (first, [5, 5, 5])):
        assert ext._priorities_json(names, scores) == json.dumps(
            [{"Host": n, "Score": s} for n, s in zip(names, scores) if s],
            separators=(",", ":")).encode()


def go(args):
    """ExtenderArgs as kube-scheduler's json.Marshal writes them: no spaces, Pod, Nodes,
    NodeNames in that order."""
    return json.dumps({"Pod": args.get("Pod"), "Nodes": args.get("Nodes"),
                       "NodeNames": args.get("NodeNames")}, separators=(",", ":")).encode()


def test_a_node_list_sent_again_is_not_decoded_again_and_its_answers_are_kept():
    _, ext = make([V2, V5])
    plain = go({"Pod": pod("plain", {"app": "x"}), "NodeNames": NAMES})
    first = ext._last.args(plain)
    again = ext._last.args(plain)
    assert first == again == json.loads(plain)
    assert again["NodeNames"] is first["NodeNames"]          # decoded once
    other = go({"Pod": pod("other", {"app": "y"}), "NodeNames": NAMES})
    assert ext._last.args(other)["NodeNames"] is first["NodeNames"]
    assert ext._last.args(go({"Pod": pod("p"), "NodeNames": NAMES[:3]}))["NodeNames"] == \
        NAMES[:3]
    # the answers that depend on the list alone, kept, equal json.dumps's
    for body in (plain, plain, other):
        for verb in ("filter", "prioritize"):
            got = ext.handle(verb, body).body
            args = json.loads(body)
            want = ext.filter(args) if verb == "filter" else []     # nothing scores
            assert got == json.dumps(want, separators=(",", ":")).encode()
    # a pod with terms: its own answers, formatted directly, still json.dumps's
    gt_pod = go({"Pod": annotated(pod("x"), affinity(req_anti=[lt("version", "3")],
                                                     pref_aff=[weighted(1, gt("version", "3"))])),
                 "NodeNames": NAMES})
    assert json.loads(ext.handle("filter", gt_pod).body) == {
        "Nodes": None, "NodeNames": ["n2", "n3", "n4"], "FailedNodes": {"n1": ERR_ANTI},
        "Error": ""}
    assert ext.handle("filter", gt_pod).body == json.dumps(
        ext.filter(json.loads(gt_pod)), separators=(",", ":")).encode()
    assert json.loads(ext.handle("prioritize", gt_pod).body) == [{"Host": "n3", "Score": 10}]


@pytest.mark.parametrize("body", [
    # the key inside the pod, as a label: the top level's NodeNames comes later
    b'{"Pod":{"metadata":{"labels":{"NodeNames":"x"}}},"NodeNames":["n1","n2"]}',
    # a nested NodeNames last, the top level's first: never taken for the top level's
    b'{"NodeNames":["n1"],"Pod":{"metadata":{"x":{"a":1,"NodeNames":["n1","n2"]}}}}',
    b'{"Pod":{"metadata":{}},"NodeNames":["n9"],"NodeNames":["n1","n2"]}',   # last wins
    b'{,"NodeNames":["n1","n2"]}',                      # no member before: not JSON
    b'{"Pod":{"metadata":{}},"NodeNames":["n1","n2"]}}',
    b'{"Pod":{"metadata":{}} "x","NodeNames":["n1","n2"]}',
    b'["Pod","NodeNames":["n1","n2"]}',
    b'{"Pod":"a\\","NodeNames":["n1","n2"]}',
    b'{"Pod":"a\\","NodeNames":["n1","n2"]}"}',
])
def test_args_from_a_known_node_list_are_json_loads_s_or_its_error(body):
    known = b'{"Pod":{"metadata":{}},"Nodes":null,"NodeNames":["n1","n2"]}'
    last = extender_mod._LastNodes()
    last.args(known)
    assert last._array[0] == b'["n1","n2"]'
    assert decoded(last.args, body) == decoded(json.loads, body)


def decoded(decode, body):
    try:
        return decode(body)
    except ValueError as e:
        return "ValueError: %s" % e


GO_BODIES = [go(a) for a in (
    {"Pod": pod("z", {"version": "4"}), "NodeNames": NAMES},
    {"Pod": annotated(pod("x", {"app": "web"}), affinity(req_aff=[gt("version", "3")])),
     "NodeNames": NAMES[:2]})]


@given(st.sampled_from(GO_BODIES), st.lists(st.tuples(
    st.integers(0, 3000), st.integers(0, 30),
    st.sampled_from([b'"', b"\\", b"{", b"}", b"[", b"]", b",", b":", b"null", b" ",
                     b',"NodeNames":[', b'"NodeNames"', b'"n1"', b"\xff"])
    | st.binary(max_size=6)), max_size=4))
def test_args_from_an_edited_body_are_json_loads_s(body, edits):
    last = extender_mod._LastNodes()
    last.args(body)
    changed = edited(body, edits)
    assert decoded(last.args, changed) == decoded(json.loads, changed)
    assert decoded(last.args, body) == json.loads(body)


# -- fuzzing: an ExtenderArgs body gives a 200 or a 400 with an Error, never a 500, in
# at most 250 ms of CPU and 32 MiB for bodies up to 64 KB (four nodes' cache)
ARGS_CPU_S, ARGS_MIB = 0.25, 32
LONG_NUMBER = "9" * 4400
VALID_ARGS = [
    {"Pod": annotated(pod("x", {"app": "web"}), affinity(req_aff=[gt("version", "3")],
                                                         req_anti=[lt("version", "9")])),
     "NodeNames": NAMES},
    {"Pod": annotated(pod("y", {"app": "db"}), rde={"podAntiAffinity": [gt("version", "1")]}),
     "Nodes": {"items": [{"metadata": {"name": n}} for n in NAMES]}},
    {"Pod": pod("z", {"version": "4"}), "NodeNames": NAMES[:2]},
]
ARGS_BODIES = [json.dumps(a).encode() for a in VALID_ARGS] + [
    json.dumps(a, separators=(",", ":")).encode() for a in VALID_ARGS]    # as Go writes
FUZZ_CACHE = make([V2, V5, annotated(pod("g", {"app": "g"}, on="n2"),
                                     affinity(req_anti=[gt("version", "0")]))],
                  pending_wait=0.0)[1]


def edited(body, edits):
    for pos, cut, insert in edits:
        pos %= len(body) + 1
        body = body[:pos] + insert + body[pos + cut:]
    return body


def extender_answer(verb, body):
    status, out, outcome = FUZZ_CACHE.handle(verb, body)
    doc = json.loads(out)
    assert status in (200, 400), (status, doc)
    if status == 400 or isinstance(doc, dict):
        assert isinstance(doc, dict) and isinstance(doc.get("Error", ""), str)
    assert outcome == ("answered" if status == 200 and not (
        isinstance(doc, dict) and doc["Error"]) else "error"), (outcome, status, doc)
    return status


@given(st.sampled_from(["filter", "prioritize"]), st.one_of(
    st.binary(max_size=300),
    st.builds(edited, st.sampled_from(ARGS_BODIES), st.lists(st.tuples(
        st.integers(0, 3000), st.integers(0, 30),
        st.sampled_from([b'"', b"{", b"}", b"[", b"]", b"null", b"1e999", b"[" * 200,
                         LONG_NUMBER.encode(), b'"Gt"', b'"Lt"', b'"NodeNames"', b"\xff"])
        | st.binary(max_size=6)), max_size=6))))
@example("filter", json.dumps({"Pod": annotated(pod("big"), affinity(req_anti=[
    gt("version", LONG_NUMBER)])), "NodeNames": NAMES}).encode())
@example("filter", json.dumps({"Pod": {"metadata": {"annotations": {
    annotations.POD_AFFINITY: "[" * 3000 + "]" * 3000}}}, "NodeNames": NAMES}).encode())
@example("prioritize", json.dumps({"Pod": {"metadata": {"annotations": {
    annotations.REQUIRED_DURING_EXECUTION: "[" * 3000 + "]" * 3000}}},
    "NodeNames": NAMES}).encode())
@example("filter", b'{"Pod": ' + b"[" * 3000 + b"]" * 3000 + b"}")
def test_fuzz_extender_bodies(verb, body):
    fuzzing.bounded(extender_answer, verb, body, seconds=ARGS_CPU_S, mib=ARGS_MIB)
