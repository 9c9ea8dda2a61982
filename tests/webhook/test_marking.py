"""Which pods kube-scheduler sends to the extender, and to which verb (issue #40): the
marks the mutating webhook adds, the validating webhook's rules that keep them true, the
filter's order for pods that exist without its mark, and what /prioritize does for the
pods the filter never sees."""
import base64
import json
import threading
import time

import pytest
from hypothesis import given, settings, strategies as st
from prometheus_client import CollectorRegistry

from tacker_hwaffinity.constants import (EXTENDER_FILTER_RESOURCE, EXTENDER_RESOURCE,
                                         EXTENDER_SCORE_RESOURCE)
from tacker_hwaffinity.webhook import admission, extender as extender_mod, patches, podcache
from tacker_hwaffinity.webhook.extender import Extender
from tacker_hwaffinity.webhook.marking import Marking
from tacker_hwaffinity.webhook.podcache import PodCache
from tests.builders import affinity, container, marked, node, pod, term, weighted
from tests.webhook.test_admission import apply_patch
from tests.webhook.test_extender import annotated, filt
from tests.webhook.test_podcache import waiting

H = "CIS-node"
NODES = [node("n1", {H: "h1"}), node("n2", {H: "h2"}), node("n3", {H: "h3"})]
NAMES = ["n1", "n2", "n3"]
ANTI_WEB = affinity(req_anti=[term(H, {"app": "web"})])


def cache_of(pods=(), clock=time.monotonic, registry=None):
    c = PodCache(clock=clock, registry=registry)
    c.sync_nodes(NODES)
    c.sync_namespaces([])
    c.sync_pods(list(pods))
    return c


def review(obj, operation="CREATE", old=None, namespace="default"):
    req = {"uid": "u1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
           "operation": operation, "namespace": namespace, "object": obj}
    if old is not None:
        req["oldObject"] = old
    return req


def mark_ops(cache, obj, **kw):
    resp = admission.mutate(review(obj, **kw), Marking(cache)).response
    return json.loads(base64.b64decode(resp["patch"])) if "patch" in resp else []


def verbs_of(obj):
    return podcache.marked_verbs(obj["spec"])


FILTER, SCORE = podcache.FILTER, podcache.SCORE
BOTH = {FILTER, SCORE}
ONLY_FILTER, ONLY_SCORE = (EXTENDER_FILTER_RESOURCE,), (EXTENDER_SCORE_RESOURCE,)


# --- the mutating webhook marks exactly the pods the extender can place differently -----

def created(p):
    """P as a client creates it: its first container without resources."""
    p["spec"]["containers"][0].pop("resources", None)
    return p


def only(p, resources):
    """P marked with RESOURCES alone."""
    return marked(created(p), resources)


PREF_DB = affinity(pref_aff=[weighted(1, term(H, {"app": "db"}))])


@pytest.mark.parametrize("terms, verbs", [
    (PREF_DB, {SCORE}),
    (affinity(pref_anti=[weighted(1, term(H, {"app": "db"}))]), {SCORE}),
    (ANTI_WEB, {FILTER}),
    (affinity(req_aff=[term(H, {"app": "db"})]), {FILTER}),
    (affinity(req_anti=[term(H, {"app": "db"})],
              pref_aff=[weighted(1, term(H, {"app": "db"}))]), BOTH)])
def test_a_pod_is_marked_for_the_verbs_its_own_terms_need(terms, verbs):
    """Preferred terms are the score's, required ones the filter's: a pod with preferred
    terms alone costs kube-scheduler one call."""
    c = cache_of([annotated(pod("db", {"app": "db"}, on="n1"), ANTI_WEB)])
    p = created(annotated(pod("x", {"app": "x"}, annotations={}), terms))
    after = apply_patch(p, mark_ops(c, p))
    assert verbs_of(after) == verbs
    names = {podcache.MARKS[v][0]: "1" for v in verbs}
    assert after["spec"]["containers"][0]["resources"] == {"limits": names, "requests": names}
    plain = pod("plain", {"app": "plain"}, containers=[container()])
    assert mark_ops(c, plain) == []


def test_the_pods_marked_before_the_split_still_reach_both_verbs():
    assert verbs_of(marked(pod("p"), (EXTENDER_RESOURCE,))) == BOTH
    assert verbs_of(marked(pod("p"), ONLY_SCORE)) == {SCORE}
    init = container("init", resources={"requests": {EXTENDER_FILTER_RESOURCE: "1"}})
    assert verbs_of(pod("p", containers=[container()], initContainers=[init])) == {FILTER}
    assert verbs_of(pod("p", containers=[container()])) == set()


@pytest.mark.parametrize("kind, weight, expected", [
    ("req_anti", 1, {FILTER}), ("pref_aff", 1, {SCORE}), ("pref_anti", 1, {SCORE}),
    ("req_aff", 1, {SCORE}), ("req_aff", 0, set())])
def test_a_plain_pod_an_existing_extended_term_selects_is_marked(kind, weight, expected):
    """The kinds the extender applies to incoming pods: required anti-affinity (filter
    symmetry), preferred terms and, with a hard weight, required affinity (score)."""
    t = term(H, {"app": "web"})
    existing = annotated(pod("e", {"app": "e"}, on="n1"),
                         affinity(**{kind: [weighted(5, t) if kind.startswith("pref") else t]}))
    c = cache_of([existing])
    plain = pod("web-1", {"app": "web"}, containers=[container()])
    after = apply_patch(plain, json.loads(base64.b64decode(admission.mutate(
        review(plain), Marking(c, weight)).response.get("patch") or "W10=")))
    assert verbs_of(after) == expected


def test_a_pending_extended_pod_marks_the_pods_it_selects():
    """Not yet bound, not yet filtered: it may be placed before them."""
    c = cache_of([annotated(pod("e", {"app": "e"}), ANTI_WEB)])
    assert mark_ops(c, pod("web-1", {"app": "web"}, containers=[container()]))
    assert not mark_ops(c, pod("db-1", {"app": "db"}, containers=[container()]))


def test_the_request_namespace_counts_when_the_object_has_none():
    c = cache_of([annotated(pod("e", {"app": "e"}, ns="a", on="n1"), ANTI_WEB)])
    p = pod("web-1", {"app": "web"}, ns=None, containers=[container()])
    assert mark_ops(c, p, namespace="a")
    assert not mark_ops(c, p, namespace="b")


def test_without_the_extender_nothing_is_marked():
    p = annotated(pod("x", {}, containers=[container()]), ANTI_WEB)
    p["spec"]["containers"][0].pop("resources")
    assert "patch" not in admission.mutate(review(p)).response


# --- the patch ----------------------------------------------------------------------------

@pytest.mark.parametrize("resources", [
    None, {}, {"limits": {"cpu": "1"}}, {"requests": {"cpu": "1"}},
    {"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}}])
def test_the_mark_joins_what_the_first_container_has(resources):
    c0 = container(resources=resources) if resources is not None else container()
    spec = {"containers": [c0, container("side")]}
    marks = (EXTENDER_FILTER_RESOURCE, EXTENDER_SCORE_RESOURCE)
    after = apply_patch({"spec": spec}, patches.mark_patch(spec, marks))
    got = after["spec"]["containers"][0]["resources"]
    for part in ("limits", "requests"):
        assert {k: got[part][k] for k in marks} == dict.fromkeys(marks, "1")
        assert {k: v for k, v in got[part].items() if k not in marks} == \
            ((resources or {}).get(part) or {})
    assert after["spec"]["containers"][1] == spec["containers"][1]


def test_a_pod_that_names_the_resource_already_is_left_alone():
    init = container("init", resources={"limits": {EXTENDER_SCORE_RESOURCE: "1"}})
    spec = {"containers": [container()], "initContainers": [init]}
    assert patches.mark_patch(spec, ONLY_SCORE) == []
    assert patches.mark_patch(marked(pod("p"))["spec"], ONLY_FILTER + ONLY_SCORE) == []
    assert patches.mark_patch(spec, ONLY_FILTER + ONLY_SCORE) == [
        {"op": "add", "path": "/spec/containers/0/resources",
         "value": {"limits": {EXTENDER_FILTER_RESOURCE: "1"},
                   "requests": {EXTENDER_FILTER_RESOURCE: "1"}}}]


@pytest.mark.parametrize("spec", [
    None, {}, {"containers": []}, {"containers": "x"}, {"containers": [1]},
    {"containers": [{"name": "c", "resources": []}]},
    {"containers": [{"name": "c", "resources": {"limits": []}}]}])
def test_a_pod_the_api_server_would_refuse_gets_no_mark(spec):
    with pytest.raises(patches.Unpatchable):
        patches.mark_patch(spec, ONLY_FILTER)


_quantities = st.dictionaries(st.sampled_from(["cpu", "memory", "example.com/gpu"]),
                              st.sampled_from(["1", "100m", "2Gi"]), max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.fixed_dictionaries({}, optional={
    "limits": _quantities, "requests": _quantities}), min_size=1, max_size=3),
    st.booleans())
def test_any_container_set_is_marked_once_and_keeps_what_it_had(resources, bare):
    containers = [container("c%d" % i, resources=r) for i, r in enumerate(resources)]
    if bare:
        containers[0].pop("resources", None)
    spec = {"containers": containers}
    marks = ONLY_FILTER + ONLY_SCORE
    after = apply_patch({"spec": spec}, patches.mark_patch(spec, marks))
    assert podcache.marked_verbs(after["spec"]) == BOTH
    assert patches.mark_patch(after["spec"], marks) == []
    for before, now in zip(containers, after["spec"]["containers"]):
        for part, amounts in (before.get("resources") or {}).items():
            assert {k: v for k, v in now["resources"][part].items()
                    if k not in marks} == amounts


# --- the validating webhook keeps the mark true -------------------------------------------

def _denied(req, marking):
    verdict = admission.validate(req, marking=marking)
    return None if verdict.response["allowed"] else verdict.response["status"]["message"]


def test_a_pod_with_extended_terms_but_no_mark_is_refused():
    m = Marking(cache_of())
    p = annotated(pod("x", {"app": "x"}), ANTI_WEB)
    assert _denied(review(p), m) is None                 # marked, as mutate leaves it
    p["spec"]["containers"][0].pop("resources")
    message = _denied(review(p), m)
    assert message.startswith("Pod x: metadata.annotations[hwaffinity.io/pod-affinity]: ")
    assert EXTENDER_FILTER_RESOURCE in message and "mutate.hwaffinity.io" in message
    assert _denied(review(p), None) is None              # no extender: no mark needed


@pytest.mark.parametrize("terms, has, missing", [
    (ANTI_WEB, ONLY_SCORE, EXTENDER_FILTER_RESOURCE),
    (PREF_DB, ONLY_FILTER, EXTENDER_SCORE_RESOURCE),
    (affinity(req_anti=[term(H, {"app": "db"})], pref_aff=[weighted(1, term(H, {}))]),
     ONLY_FILTER, EXTENDER_SCORE_RESOURCE)])
def test_a_pod_without_the_mark_of_a_verb_its_terms_need_is_refused(terms, has, missing):
    m = Marking(cache_of())
    p = only(annotated(pod("x", {"app": "x"}), terms), has)
    assert missing in _denied(review(p), m)
    assert _denied(review(marked(p)), m) is None
    assert _denied(review(marked(created(p), (EXTENDER_RESOURCE,))), m) is None  # both


def test_an_annotation_with_no_terms_needs_no_mark():
    p = created(annotated(pod("x", {"app": "x"}), {}))
    assert _denied(review(p), Marking(cache_of())) is None
    assert mark_ops(cache_of(), p) == []


def test_an_update_that_makes_a_pending_unmarked_pod_the_extenders_is_refused():
    c = cache_of([annotated(pod("e", {"app": "e"}, on="n1"), ANTI_WEB)])
    m = Marking(c)
    old = pod("p", {"app": "db"}, containers=[container()])
    new = pod("p", {"app": "web"}, containers=[container()])
    message = _denied(review(new, "UPDATE", old), m)
    assert message.startswith("Pod p: metadata: the change makes this pending pod one the "
                              "hwaffinity extender's /filter must place")
    assert EXTENDER_FILTER_RESOURCE in message
    bound_old, bound_new = (dict(x, spec=dict(x["spec"], nodeName="n2")) for x in (old, new))
    assert _denied(review(bound_new, "UPDATE", bound_old), m) is None   # placed already
    assert _denied(review(marked(new), "UPDATE", marked(old)), m) is None
    assert _denied(review(new, "UPDATE", new), m) is None    # needed before: not this change
    other = pod("p", {"app": "db", "tier": "1"}, containers=[container()])
    assert _denied(review(other, "UPDATE", old), m) is None  # nothing selects it
    with_terms = annotated(pod("p", {"app": "db"}, containers=[container()]), ANTI_WEB)
    with_terms["spec"]["containers"][0].pop("resources")
    assert "must place" in _denied(review(with_terms, "UPDATE", old), m)


def test_an_update_that_makes_a_pod_need_the_verb_it_lacks_is_refused():
    """Marked for the filter alone, then selected by a preferred term: the score's."""
    c = cache_of([annotated(pod("e", {"app": "e"}, on="n1"),
                            affinity(pref_aff=[weighted(3, term(H, {"app": "web"}))]))])
    m = Marking(c)
    old = only(annotated(pod("p", {"app": "db"}), ANTI_WEB), ONLY_FILTER)
    new = only(annotated(pod("p", {"app": "web"}), ANTI_WEB), ONLY_FILTER)
    message = _denied(review(new, "UPDATE", old), m)
    assert "extender's /prioritize must place" in message
    assert EXTENDER_SCORE_RESOURCE in message
    assert _denied(review(marked(new), "UPDATE", marked(old)), m) is None


# --- the filter places an extended pod after the unmarked pods its anti-affinity selects --

def test_an_extended_pod_waits_for_unmarked_pending_pods_it_repels():
    unmarked = pod("web-0", {"app": "web"}, containers=[container()])
    c = cache_of([unmarked])
    ext = Extender(c, pending_wait=0.05)
    incoming = annotated(pod("e", {"app": "e"}), ANTI_WEB)
    out = ext.filter({"Pod": incoming, "NodeNames": NAMES})
    assert out["NodeNames"] == [] and out["Error"] == ""
    assert set(out["FailedNodes"].values()) == {extender_mod.ERR_UNMARKED_PENDING % (
        1, "default/web-0")}
    # unrelated incoming pods are not held up
    keep, _ = filt(ext, annotated(pod("f", {"app": "f"}),
                                  affinity(req_anti=[term(H, {"app": "db"})])), NAMES)
    assert keep == NAMES
    c.on_pod("MODIFIED", dict(unmarked, spec=dict(unmarked["spec"], nodeName="n2")))
    keep, failed = filt(ext, incoming, NAMES)
    assert keep == ["n1", "n3"] and list(failed) == ["n2"]


def bound_once_waited_for(name, labels, node):
    """(cache, extender, thread): a cache holding the unmarked pending pod NAME (LABELS),
    and a started thread that binds it to NODE once a filter waits for it."""
    unmarked = pod(name, labels, containers=[container()])
    c = cache_of([unmarked])
    blocked = threading.Event()
    real_wait = c._unmarked_placed.wait
    c._unmarked_placed.wait = lambda timeout=None: blocked.set() or real_wait(timeout)

    def bind():
        assert blocked.wait(5), "no filter waited"
        c.on_pod("MODIFIED", dict(unmarked, spec=dict(unmarked["spec"], nodeName=node)))
    t = threading.Thread(target=bind)
    t.start()
    return c, Extender(c, pending_wait=5.0), t


def test_the_wait_ends_when_the_unmarked_pod_is_placed():
    c, ext, t = bound_once_waited_for("web-0", {"app": "web"}, "n3")
    started = time.monotonic()
    keep, _ = filt(ext, annotated(pod("e", {"app": "e"}), ANTI_WEB), NAMES)
    t.join()
    assert time.monotonic() - started < 4.0
    assert keep == ["n1", "n2"]


def test_an_unmarked_pod_pending_past_the_grace_is_no_longer_waited_for(caplog):
    clock = [1000.0]
    registry = CollectorRegistry()
    c = cache_of([pod("web-0", {"app": "web"}, containers=[container()])],
                 clock=lambda: clock[0], registry=registry)
    ext = Extender(c, pending_wait=0.0)
    incoming = annotated(pod("e", {"app": "e"}), ANTI_WEB)
    assert filt(ext, incoming, NAMES)[0] == []
    clock[0] += podcache.UNMARKED_GRACE_S + 1
    assert filt(ext, incoming, NAMES)[0] == NAMES
    assert filt(ext, incoming, NAMES)[0] == NAMES
    assert registry.get_sample_value("hwaffinity_extender_unmarked_stuck_total") == 1
    assert "default/web-0: pending for over 60s" in caplog.text


def test_a_relist_keeps_when_an_unmarked_pod_was_first_seen():
    clock = [1000.0]
    p = pod("web-0", {"app": "web"}, containers=[container()])
    c = cache_of([p], clock=lambda: clock[0])
    clock[0] += podcache.UNMARKED_GRACE_S + 1
    c.sync_pods([p])
    ext = Extender(c, pending_wait=0.0)
    assert filt(ext, annotated(pod("e", {"app": "e"}), ANTI_WEB), NAMES)[0] == NAMES


def test_marked_deleted_and_finished_pods_hold_nothing_up():
    pods = [marked(pod("web-0", {"app": "web"})),
            pod("web-1", {"app": "web"}, containers=[container()], phase="Succeeded"),
            pod("web-2", {"app": "web"}, containers=[container()])]
    c = cache_of(pods)
    c.on_pod("DELETED", pods[2])
    ext = Extender(c, pending_wait=0.0)
    assert filt(ext, annotated(pod("e", {"app": "e"}), ANTI_WEB), NAMES)[0] == NAMES


# --- a pod marked for /prioritize alone: what the filter does for the others --------------

def prio(ext, incoming):
    return {h["Host"]: h["Score"] for h in ext.prioritize({"Pod": incoming, "NodeNames": NAMES})}


def bind(c, p, node):
    c.on_pod("MODIFIED", dict(p, spec=dict(p["spec"], nodeName=node)))


def test_prioritize_takes_a_score_only_pod_as_placed_and_the_next_filter_waits_for_it(
        monkeypatch):
    c = cache_of()
    ext = Extender(c, pending_wait=5.0)
    first = only(annotated(pod("web-1", {"app": "web"}), PREF_DB), ONLY_SCORE)
    c.on_pod("ADDED", first)
    assert prio(ext, first) == dict.fromkeys(NAMES, 0) and c.pending() == 1
    blocked = waiting(c, monkeypatch)
    t = threading.Thread(target=lambda: blocked.wait(5) and bind(c, first, "n2"))
    t.start()
    keep, failed = filt(ext, only(annotated(pod("e", {"app": "e"}), ANTI_WEB), ONLY_FILTER),
                        NAMES)
    t.join()
    assert blocked.is_set() and keep == ["n1", "n3"] and list(failed) == ["n2"]


def test_prioritize_of_a_score_only_pod_waits_for_the_pods_its_terms_select(monkeypatch):
    c = cache_of()
    ext = Extender(c, pending_wait=5.0)
    db = only(annotated(pod("db-0", {"app": "db"}), PREF_DB), ONLY_SCORE)
    c.on_pod("ADDED", db)
    prio(ext, db)                                       # db-0 let through, not yet bound
    blocked = waiting(c, monkeypatch)
    t = threading.Thread(target=lambda: blocked.wait(5) and bind(c, db, "n3"))
    t.start()
    scores = prio(ext, only(annotated(pod("x", {"app": "x"}), PREF_DB), ONLY_SCORE))
    t.join()
    assert blocked.is_set() and scores == {"n1": 0, "n2": 0, "n3": 10}


def test_prioritize_leaves_the_pods_the_filter_saw_to_the_filter():
    c = cache_of()
    ext = Extender(c, pending_wait=5.0)
    for resources in (None, (EXTENDER_RESOURCE,)):     # both verbs, today's and before
        p = only(annotated(pod("w", {"app": "web"}), PREF_DB), resources)
        c.on_pod("ADDED", p)
        prio(ext, p)
        assert c.pending() == 0
    unmarked = annotated(pod("u", {"app": "web"}), PREF_DB)
    created(unmarked)           # no managedResources: kube-scheduler calls both verbs
    prio(ext, unmarked)
    assert c.pending() == 0


def test_a_pending_score_only_pod_is_one_the_filter_orders_after():
    """Never filtered, it would not learn of a later pod's anti-affinity: placed first."""
    c = cache_of([only(annotated(pod("web-0", {"app": "web"}), PREF_DB), ONLY_SCORE)])
    out = Extender(c, pending_wait=0.05).filter(
        {"Pod": only(annotated(pod("e", {"app": "e"}), ANTI_WEB), ONLY_FILTER),
         "NodeNames": NAMES})
    assert set(out["FailedNodes"].values()) == {extender_mod.ERR_UNMARKED_PENDING % (
        1, "default/web-0")}


# --- only the pods of the schedulers that call the extender -------------------------------

def test_pods_of_another_scheduler_are_never_marked_and_get_a_warning_for_their_terms():
    c = cache_of([annotated(pod("e", {"app": "e"}, on="n1"), ANTI_WEB)])
    m = Marking(c, schedulers=("hwaffinity-scheduler",))
    ours = pod("web-1", {"app": "web"}, containers=[container()],
               schedulerName="hwaffinity-scheduler")
    theirs = pod("web-2", {"app": "web"}, containers=[container()])    # default-scheduler
    assert m.patch(ours) and m.patch(theirs) == []
    extended = annotated(pod("x", {}, containers=[container()]), ANTI_WEB)
    extended["spec"]["containers"][0].pop("resources")
    assert m.patch(extended) == []
    verdict = admission.validate(review(extended), marking=m)
    assert verdict.response["allowed"] is True
    assert verdict.response["warnings"] == [
        "metadata.annotations[hwaffinity.io/pod-affinity]: spec.schedulerName "
        "default-scheduler does not call the hwaffinity extender (the webhook marks the pods "
        "of hwaffinity-scheduler): these terms are not applied at scheduling time"]
    assert "warnings" not in admission.validate(review(theirs), marking=m).response
    extended["spec"]["schedulerName"] = "hwaffinity-scheduler"
    assert "mutate.hwaffinity.io did not mark it" in _denied(review(extended), m)


def test_a_pod_whose_affinity_needs_an_unmarked_pending_pod_waits_for_its_binding():
    c, ext, t = bound_once_waited_for("db-0", {"app": "db"}, "n2")
    keep, _ = filt(ext, annotated(pod("app", {"app": "app"}),
                                  affinity(req_aff=[term(H, {"app": "db"})])), NAMES)
    t.join()
    assert keep == ["n2"]                           # decided with db-0 bound, first time
    ext.pending_wait = 0.0                          # still pending: decided without it
    c.on_pod("ADDED", pod("db-1", {"app": "db"}, containers=[container()]))
    keep, _ = filt(ext, annotated(pod("app2", {"app": "app"}),
                                  affinity(req_aff=[term(H, {"app": "db"})])), NAMES)
    assert keep == ["n2"]


def test_only_the_namespaces_a_term_may_select_are_looked_at():
    """A term of a CNF waits for its own namespace's unmarked pods, not another's."""
    pods = [pod("web-0", {"app": "web"}, ns="batch", containers=[container()]),
            pod("web-1", {"app": "web"}, ns="cnf", containers=[container()])]
    c = cache_of(pods)
    c.sync_namespaces([{"metadata": {"name": n, "labels": {"tier": n}}}
                       for n in ("batch", "cnf")])
    ext = Extender(c, pending_wait=0.0)
    own = annotated(pod("e", {"app": "e"}, ns="cnf"), ANTI_WEB)
    out = ext.filter({"Pod": own, "NodeNames": NAMES})
    assert set(out["FailedNodes"].values()) == {extender_mod.ERR_UNMARKED_PENDING % (
        1, "cnf/web-1")}
    listed = term(H, {"app": "web"})
    listed["namespaces"] = ["batch"]
    by_list = annotated(pod("f", {"app": "f"}, ns="cnf"), affinity(req_anti=[listed]))
    assert ext.filter({"Pod": by_list, "NodeNames": NAMES})["FailedNodes"]["n1"].endswith(
        "(batch/web-0)")
    chosen = term(H, {"app": "web"})
    chosen["namespaceSelector"] = {"matchLabels": {"tier": "batch"}}
    by_label = annotated(pod("g", {"app": "g"}, ns="cnf"), affinity(req_anti=[chosen]))
    assert ext.filter({"Pod": by_label, "NodeNames": NAMES})["FailedNodes"]["n1"].endswith(
        "(batch/web-0)")
    everywhere = term(H, {"app": "web"})
    everywhere["namespaceSelector"] = {}
    by_all = annotated(pod("h", {"app": "h"}, ns="cnf"), affinity(req_anti=[everywhere]))
    assert ext.filter({"Pod": by_all, "NodeNames": NAMES})["FailedNodes"]["n1"].endswith(
        "(batch/web-0, cnf/web-1)")
    c.on_pod("DELETED", pods[0])
    assert c._unmarked.keys() == {"cnf"}
