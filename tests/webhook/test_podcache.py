"""PodCache: the index the extender reads, and assume / confirm / expire of pending pods."""
import inspect
import json
import logging
import threading
import time

import pytest
from prometheus_client import CollectorRegistry

from tacker_hwaffinity.scheduling import annotations
from tacker_hwaffinity.scheduling.terms import RawTerm
from tacker_hwaffinity.webhook import extender, marking
from tacker_hwaffinity.webhook.podcache import PodCache
from tests.builders import affinity, namespace, node, pod, term

H = "kubernetes.io/hostname"


def sel(ns="default", labels=None, exprs=None, **extra):
    """An incoming pod's resolved term in NS."""
    return RawTerm.parse(term(H, labels, exprs, **extra), "t", False).resolve(ns, {}, True)


def gt(key, value, ns="default"):
    return sel(ns, exprs=[{"key": key, "operator": "Gt", "values": [value]}])


def described(c, obj):
    """The PodRecord the cache C's read view makes of the Pod OBJ."""
    return c.reader().describe_pod(obj)


def with_anti(p, *terms):
    p["metadata"].setdefault("annotations", {})[annotations.POD_AFFINITY] = json.dumps(
        affinity(req_anti=list(terms)))
    return p


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def watched_and_assumed(c, p):
    """Assume pod P after the watch showed it unbound (the pending record is verified)."""
    c.on_pod("ADDED", p)
    c.assume(p)


def waiting(c, monkeypatch):
    """A threading.Event set once a wait_for_pending on cache C blocks (waits on its
    pending records' condition): a confirmation after it is one that must wake it."""
    blocked = threading.Event()
    real_wait = c.assumed.cond.wait
    monkeypatch.setattr(c.assumed.cond, "wait",
                        lambda timeout=None: blocked.set() or real_wait(timeout))
    return blocked


def moved(p, **changes):
    p = json.loads(json.dumps(p))
    if "labels" in changes:
        p["metadata"]["labels"] = changes["labels"]
    if "on" in changes:
        p["spec"]["nodeName"] = changes["on"]
    if "phase" in changes:
        p["status"] = {"phase": changes["phase"]}
    return p


def test_index_follows_add_modify_delete():
    c = PodCache()
    a = pod("a", {"app": "db", "ver": "5"}, on="n1")
    c.on_pod("ADDED", a)
    c.on_pod("ADDED", pod("b", {"app": "db", "ver": "2"}, on="n2"))
    c.on_pod("ADDED", pod("c", {"app": "db", "ver": "9"}, ns="other", on="n1"))
    c.on_pod("ADDED", pod("unbound", {"app": "db", "ver": "7"}))
    assert c.reader().select([sel(labels={"app": "db"})]) == {"n1": 1, "n2": 1}
    assert c.reader().select([gt("ver", "3")]) == {"n1": 1}
    assert c.reader().select([gt("ver", "3", "other")]) == {"n1": 1}
    assert c.reader().select([sel(labels={"app": "db"}), gt("ver", "3")]) == {"n1": 1}
    # labels changed
    c.on_pod("MODIFIED", moved(a, labels={"app": "db", "ver": "1"}))
    assert c.reader().select([gt("ver", "3")]) == {}
    assert c.reader().select([sel(exprs=[{"key": "ver", "operator": "Lt", "values": ["3"]}])]) == \
        {"n1": 1, "n2": 1}
    # node changed
    c.on_pod("MODIFIED", moved(a, labels={"app": "db", "ver": "8"}, on="n3"))
    assert c.reader().select([gt("ver", "3")]) == {"n3": 1}
    assert c.reader().select([sel(labels={"app": "db"})]) == {"n2": 1, "n3": 1}
    # terminal phase leaves the index, deletion too
    c.on_pod("MODIFIED", moved(pod("b", {"app": "db", "ver": "2"}, on="n2"), phase="Succeeded"))
    assert c.reader().select([sel(labels={"app": "db"})]) == {"n3": 1}
    c.on_pod("DELETED", a)
    assert c.reader().select([sel(labels={"app": "db"})]) == {}
    assert c.stats()["bound"] == 1 and c._by_ns.keys() == {"other"}


def test_selectors_without_a_positive_requirement_and_namespaces():
    c = PodCache()
    c.sync_namespaces([namespace("default", {"env": "prod"}), namespace("other", {"env": "dev"})])
    c.sync_pods([pod("a", {"app": "x"}, on="n1"), pod("b", {}, on="n2"),
                 pod("c", {"app": "y"}, ns="other", on="n3")])
    assert c.reader().select([sel(labels={})]) == {"n1": 1, "n2": 1}
    assert c.reader().select(
        [sel(exprs=[{"key": "app", "operator": "DoesNotExist"}])]) == {"n2": 1}
    assert c.reader().select(
        [sel(exprs=[{"key": "app", "operator": "NotIn", "values": ["x"]}])]) == {"n2": 1}
    assert c.reader().select([sel(exprs=[{"key": "app", "operator": "Exists"}],
                         ns_selector={})]) == {"n1": 1, "n3": 1}
    assert c.reader().select(
        [sel(labels={}, ns_selector={"matchLabels": {"env": "dev"}})]) == {"n3": 1}
    by_name = {"matchLabels": {"kubernetes.io/metadata.name": "other"}}
    assert c.reader().select([sel(labels={}, ns_selector=by_name)]) == {"n3": 1}
    assert c.reader().select([sel(labels={}, namespaces=["other", "nowhere"])]) == {"n3": 1}
    assert c.reader().select([]) == {}


def test_terminating_pods_stay_as_in_the_engine():
    c = PodCache()
    c.on_pod("ADDED", pod("a", {"app": "x"}, on="n1", deleting=True))
    assert c.reader().select([sel(labels={"app": "x"})]) == {"n1": 1}


def test_status_only_update_keeps_the_record():
    c = PodCache()
    p = pod("a", {"app": "x"}, on="n1")
    c.on_pod("ADDED", p)
    rec = c._pods["default/a"]
    c.on_pod("MODIFIED", moved(p, phase="Running"))
    assert c._pods["default/a"] is rec


def test_sync_replaces_everything():
    c = PodCache()
    c.on_pod("ADDED", pod("old", {"app": "x"}, on="n1"))
    c.on_pod("ADDED", with_anti(pod("oldg", {"app": "g"}, on="n1"), term(H, {"app": "x"})))
    c.sync_pods([pod("new", {"app": "x"}, on="n2")])
    assert c.reader().select([sel(labels={"app": "x"})]) == {"n2": 1}
    assert c.reader().matching_groups("required_anti", described(c, pod("x", {"app": "x"}))) == []
    c.sync_nodes([node("n1", {H: "h1"})])
    view = c.reader().node_table()
    c.sync_nodes([node("n2", {H: "h2"}), node("n3")])
    assert set(c.reader().node_table().index) == {"n2", "n3"}
    assert c.reader().node_table() is not view
    assert c.reader().node_labels("n1") is None and c.reader().node_labels("n2") == {H: "h2"}


def test_node_events_rebuild_the_view_only_on_label_changes():
    c = PodCache()
    c.on_node("ADDED", node("n1", {H: "h1"}))
    view = c.reader().node_table()
    status_only = node("n1", {H: "h1"})
    status_only["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    c.on_node("MODIFIED", status_only)
    assert c.reader().node_table() is view
    c.on_node("MODIFIED", node("n1", {H: "h1", "zone": "a"}))
    assert c.reader().node_table() is not view
    assert c.reader().node_table().domains("zone").values == ["a"]
    c.on_node("DELETED", node("n1"))
    assert len(c.reader().node_table()) == 0


def test_extended_terms_are_grouped_and_counted_per_node():
    c = PodCache()
    t = term(H, {"app": "web"})
    g1 = with_anti(pod("g1", {"app": "g"}, on="n1"), t)
    g2 = with_anti(pod("g2", {"app": "g"}, on="n1"), t)
    c.on_pod("ADDED", g1)
    c.on_pod("ADDED", g2)
    c.on_pod("ADDED", with_anti(pod("g3", {"app": "g"}, on="n2"), t))
    web = c.reader().describe_pod(pod("w", {"app": "web"}))
    [group] = c.reader().matching_groups("required_anti", web)
    assert group.per_node == {"n1": 2, "n2": 1}
    assert c.reader().matching_groups("required_anti", described(c, pod("w", {"app": "db"}))) == []
    assert c.reader().selected_by(("required_anti",), web)
    c.on_pod("DELETED", g1)
    assert group.per_node == {"n1": 1, "n2": 1}
    c.on_pod("MODIFIED", moved(g2, on="n3"))
    assert group.per_node == {"n2": 1, "n3": 1}
    assert c.stats()["extended"] == 2
    c.on_pod("DELETED", g2)
    c.on_pod("DELETED", pod("g3"))
    assert c.reader().matching_groups("required_anti", web) == [] and c.stats()["extended"] == 0
    assert not c.reader().selected_by(("required_anti",), web)


def test_namespace_label_change_refreshes_symmetry_matches():
    c = PodCache()
    c.sync_namespaces([namespace("team", {"env": "dev"})])
    t = term(H, {"app": "web"}, ns_selector={"matchLabels": {"env": "prod"}})
    c.on_pod("ADDED", with_anti(pod("g", {"app": "g"}, on="n1"), t))
    web = c.reader().describe_pod(pod("w", {"app": "web"}, ns="team"))
    assert c.reader().matching_groups("required_anti", web) == []
    c.on_namespace("MODIFIED", namespace("team", {"env": "prod"}))
    assert len(c.reader().matching_groups("required_anti", web)) == 1
    c.on_namespace("DELETED", namespace("team"))
    assert c.reader().matching_groups("required_anti", web) == []


def test_malformed_annotation_on_a_bound_pod_is_ignored():
    c = PodCache()
    p = pod("bad", {"app": "x"}, on="n1")
    p["metadata"]["annotations"] = {annotations.POD_AFFINITY: "{"}
    c.on_pod("ADDED", p)
    assert c.reader().select([sel(labels={"app": "x"})]) == {"n1": 1}
    assert c.stats()["extended"] == 0


# -- assume / confirm / expire ---------------------------------------------------------
def test_assume_then_confirm_by_the_watch():
    c = PodCache()
    p = pod("p", {"app": "x"})
    c.on_pod("ADDED", p)
    c.assume(p)
    assert c.pending() == 1
    c.on_pod("MODIFIED", moved(p, phase="Pending"))   # still unbound
    assert c.pending() == 1
    c.on_pod("MODIFIED", moved(p, on="n1"))
    assert c.pending() == 0 and c.reader().select([sel(labels={"app": "x"})]) == {"n1": 1}
    c.assume(moved(p, on="n1"))                       # already bound: nothing to wait for
    assert c.pending() == 0


def test_assume_then_deleted_or_failed_or_listed_bound():
    c = PodCache()
    c.assume(pod("a"))
    c.on_pod("DELETED", pod("a"))
    c.assume(pod("b"))
    c.on_pod("MODIFIED", moved(pod("b"), phase="Failed"))
    c.assume(pod("c"))
    c.assume(pod("d"))
    c.sync_pods([pod("c", on="n1"), pod("d")])
    assert c.pending() == 1 and list(c.assumed.keys()) == ["default/d"]


def test_pending_records_expire():
    clock = Clock()
    c = PodCache(clock=clock, pending_ttl=30)
    c.assume(pod("a"))
    clock.now += 20
    c.assume(pod("b"))
    clock.now += 15
    assert c.pending() == 1
    c.assume(pod("b"))     # assumed again: a fresh record
    clock.now += 29
    assert c.pending() == 1
    clock.now += 1
    assert c.pending() == 0


def test_wait_for_pending_returns_when_the_watch_confirms(monkeypatch):
    c = PodCache()
    web = pod("web-1", {"app": "web"})
    watched_and_assumed(c, web)
    watched_and_assumed(c, pod("other", {"app": "db"}))
    incoming = c.reader().describe_pod(pod("web-2", {"app": "web"}))
    terms = {"required_anti": (sel(labels={"app": "web"}),)}
    blocked = waiting(c, monkeypatch)

    def confirm():
        blocked.wait(5)
        c.on_pod("MODIFIED", moved(web, on="n1"))

    t = threading.Thread(target=confirm)
    started = time.monotonic()
    t.start()
    assert c.wait_for_pending(incoming, terms, timeout=5) == 0
    t.join()
    # it blocked, and the confirmation woke it long before its timeout
    assert blocked.is_set() and time.monotonic() - started < 4
    assert c.pending() == 1  # "other" is irrelevant and still pending


def test_wait_for_pending_times_out_and_counts():
    c = PodCache()
    watched_and_assumed(c, pod("web-1", {"app": "web"}))
    watched_and_assumed(c, pod("web-3", {"app": "web"}))
    terms = {"preferred_affinity": (sel(labels={"app": "web"}),)}
    started = time.monotonic()
    assert c.wait_for_pending(pod("web-2", {"app": "web"}), terms, timeout=0.1) == 2
    assert 0.1 <= time.monotonic() - started < 2
    # its own record is never waited for; an unrelated pod does not wait at all
    started = time.monotonic()
    assert c.wait_for_pending(pod("web-1", {"app": "web"}), None, timeout=1) == 0
    assert c.wait_for_pending(pod("x", {"app": "db"}), {}, timeout=1) == 0
    assert time.monotonic() - started < 0.5


def test_a_pending_pods_own_terms_make_it_relevant():
    c = PodCache()
    guard = with_anti(pod("guard", {"app": "g"}), term(H, {"app": "web"}))
    watched_and_assumed(c, guard)
    assert c.wait_for_pending(pod("w", {"app": "web"}), None, timeout=0.05) == 1
    assert c.reader().selected_by(("required_anti",), described(c, pod("w", {"app": "web"})))
    assert not c.reader().selected_by(("preferred_anti",), described(c, pod("w", {"app": "web"})))
    assert c.wait_for_pending(pod("w", {"app": "db"}), None, timeout=0.05) == 0


def test_wait_wakes_when_a_relevant_record_expires(monkeypatch):
    clock = Clock()
    c = PodCache(clock=clock, pending_ttl=30)
    watched_and_assumed(c, pod("web-1", {"app": "web"}))
    terms = {"required_anti": (sel(labels={"app": "web"}),)}
    blocked = waiting(c, monkeypatch)
    result = []
    t = threading.Thread(target=lambda: result.append(
        c.wait_for_pending(pod("web-2", {"app": "web"}), terms, timeout=5)))
    t.start()
    assert blocked.wait(5)
    clock.now += 31
    assert c.pending() == 0   # any look at the pending records drops it and wakes the waiter
    t.join(4)
    assert result == [0]


# -- one pod is that pod's problem -----------------------------------------------------
def errors(registry, reason):
    return registry.get_sample_value("hwaffinity_webhook_cache_pod_errors_total",
                                     {"reason": reason}) or 0


LONG_GT = json.dumps(affinity(req_aff=[term(H, exprs=[
    {"key": "v", "operator": "Gt", "values": ["9" * 4400]}])]))
DEEP = "[" * 3000 + "]" * 3000


@pytest.mark.parametrize("name,value", [(annotations.POD_AFFINITY, LONG_GT),
                                        (annotations.POD_AFFINITY, DEEP),
                                        (annotations.REQUIRED_DURING_EXECUTION, DEEP)])
def test_a_pod_with_a_bad_annotation_is_kept_without_terms_counted_and_logged_once(
        name, value, caplog):
    registry = CollectorRegistry()
    c = PodCache(registry=registry)
    bad = pod("bad", {"app": "web"}, on="n1")
    bad["metadata"]["annotations"] = {name: value}
    good = with_anti(pod("good", {"app": "web"}, on="n2"), term(H, {"app": "web"}))
    with caplog.at_level(logging.WARNING, logger="tacker_hwaffinity.webhook.podcache"):
        c.sync_pods([bad, good])                    # the list after a restart
        c.on_pod("MODIFIED", moved(bad, phase="Running"))    # the watch, then a relist
        c.on_pod("ADDED", pod("later", {"app": "web"}, on="n3"))
        c.sync_pods([bad, good, pod("later", {"app": "web"}, on="n3")])
    assert c.reader().select([sel(labels={"app": "web"})]) == {"n1": 1, "n2": 1, "n3": 1}
    assert c.stats()["extended"] == 1               # good's terms; bad's are dropped
    assert c.reader().matching_groups("required_anti", described(c, pod("x", {"app": "web"})))
    assert errors(registry, "malformed_annotation") == 1
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and lines[0].startswith(
        "pod default/bad kept without its extended terms: field metadata.annotations[%s]"
        % name), lines


def test_a_pod_that_cannot_be_indexed_is_skipped_and_the_rest_goes_on(monkeypatch, caplog):
    registry = CollectorRegistry()
    c = PodCache(registry=registry)
    describe = c.reader().describe_pod

    def broken(obj, strict=False):
        if obj["metadata"]["name"] == "boom":
            raise RuntimeError("a bug")
        return describe(obj, strict)
    monkeypatch.setattr(c.reader(), "describe_pod", broken)
    with caplog.at_level(logging.ERROR, logger="tacker_hwaffinity.webhook.podcache"):
        c.sync_pods([pod("a", {"app": "x"}, on="n1"), pod("boom", {"app": "x"}, on="n1"),
                     pod("b", {"app": "x"}, on="n2")])
        c.on_pod("ADDED", pod("boom", {"app": "x"}, on="n3"))
        c.on_pod("ADDED", pod("c", {"app": "x"}, on="n3"))
        c.on_pod("ADDED", "not a pod")
    assert c.reader().select([sel(labels={"app": "x"})]) == {"n1": 1, "n2": 1, "n3": 1}
    assert errors(registry, "internal") == 3
    assert "pod default/boom (LISTED) not indexed: RuntimeError: a bug" in caplog.text


# -- pending records are bounded -------------------------------------------------------
def test_a_forged_pods_record_delays_no_filter():
    c = PodCache()
    forged = with_anti(pod("forged", {"app": "f"}), term(H, {}, ns_selector={}))
    c.assume(forged)                        # the watch never shows it
    assert c.pending() == 1
    started = time.monotonic()
    for i in range(20):
        assert c.wait_for_pending(pod("p%d" % i, {"app": str(i)}, ns="ns%d" % i), None,
                                  timeout=2) == 0
        assert not c.reader().selected_by(("required_anti",), described(c, pod("q", {"app": "q"})))
    assert time.monotonic() - started < 1.0


def test_a_verified_record_delays_filters_for_one_wait_at_most():
    c = PodCache()
    watched_and_assumed(c, with_anti(pod("guard", {"app": "g"}), term(H, {}, ns_selector={})))
    started = time.monotonic()
    assert c.wait_for_pending(pod("w1", {"app": "web"}), None, timeout=0.1) == 1
    assert 0.1 <= time.monotonic() - started
    started = time.monotonic()
    for i in range(20):
        assert c.wait_for_pending(pod("w%d" % i, {"app": "web"}), None, timeout=2) == 0
    assert time.monotonic() - started < 1.0
    assert c.pending() == 1                 # still pending: the watch decides when it goes


def test_pending_records_are_capped_oldest_unverified_first_and_counted():
    registry = CollectorRegistry()
    c = PodCache(registry=registry, max_pending=3)
    watched_and_assumed(c, pod("real"))
    for i in range(5):
        c.assume(pod("forged-%d" % i))
    assert list(c.assumed.keys()) == ["default/real", "default/forged-3", "default/forged-4"]
    assert registry.get_sample_value("hwaffinity_webhook_pending_dropped_total",
                                      {"reason": "cap"}) == 3


# -- readers apart from writers ---------------------------------------------------------
def _members(protocol):
    return [name for name, value in vars(protocol).items()
            if callable(value) and not name.startswith("_")]


@pytest.mark.parametrize("protocol, serves", [
    (extender.CacheReads, lambda c: c.reader()), (marking.MarkingReads, lambda c: c.reader()),
    (extender.ExtenderCache, lambda c: c), (marking.MarkingCache, lambda c: c)])
def test_the_cache_and_its_read_view_serve_what_their_readers_declare(protocol, serves):
    """The extender and the marking read the cache through its read view, whose methods
    take the cache's lock themselves: each member they declare is there, with the
    parameters declared."""
    got = serves(PodCache())
    assert _members(protocol)
    for name in _members(protocol):
        declared = list(inspect.signature(getattr(protocol, name)).parameters)
        assert list(inspect.signature(getattr(type(got), name)).parameters) == declared, name
