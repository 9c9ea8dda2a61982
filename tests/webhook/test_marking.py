"""Which pods kube-scheduler sends to the extender (issue #40): the mark the mutating
webhook adds, the validating webhook's rules that keep it true, and the filter's order
for pods that exist unmarked."""
import base64
import json
import threading
import time

import pytest
from hypothesis import given, settings, strategies as st
from prometheus_client import CollectorRegistry

from tacker_hwaffinity.constants import EXTENDER_RESOURCE
from tacker_hwaffinity.webhook import admission, extender as extender_mod, patches, podcache
from tacker_hwaffinity.webhook.extender import Extender
from tacker_hwaffinity.webhook.marking import Marking
from tacker_hwaffinity.webhook.podcache import PodCache
from tests.builders import affinity, container, marked, node, pod, term, weighted
from tests.webhook.test_admission import apply_patch
from tests.webhook.test_extender import annotated, filt

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


def is_marked(obj):
    return podcache._marked(obj["spec"])


# --- the mutating webhook marks exactly the pods the extender can place differently -----

def test_a_pod_with_extended_terms_is_marked_and_a_plain_one_nothing_selects_is_not():
    c = cache_of([annotated(pod("db", {"app": "db"}, on="n1"), ANTI_WEB)])
    p = annotated(pod("x", {"app": "x"}, annotations={}),
                  affinity(pref_aff=[weighted(1, term(H, {"app": "db"}))]))
    p["spec"]["containers"] = [container()]          # as created: unmarked
    after = apply_patch(p, mark_ops(c, p))
    assert is_marked(after)
    res = after["spec"]["containers"][0]["resources"]
    assert res == {"limits": {EXTENDER_RESOURCE: "1"}, "requests": {EXTENDER_RESOURCE: "1"}}
    plain = pod("plain", {"app": "plain"}, containers=[container()])
    assert mark_ops(c, plain) == []


@pytest.mark.parametrize("kind, weight, expected", [
    ("req_anti", 1, True), ("pref_aff", 1, True), ("pref_anti", 1, True),
    ("req_aff", 1, True), ("req_aff", 0, False)])
def test_a_plain_pod_an_existing_extended_term_selects_is_marked(kind, weight, expected):
    """The kinds the extender applies to incoming pods: required anti-affinity (filter
    symmetry), preferred terms and, with a hard weight, required affinity (score)."""
    t = term(H, {"app": "web"})
    existing = annotated(pod("e", {"app": "e"}, on="n1"),
                         affinity(**{kind: [weighted(5, t) if kind.startswith("pref") else t]}))
    c = cache_of([existing])
    plain = pod("web-1", {"app": "web"}, containers=[container()])
    ops = admission.mutate(review(plain), Marking(c, weight)).response.get("patch")
    assert bool(ops) is expected


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
    after = apply_patch({"spec": spec}, patches.mark_patch(spec, EXTENDER_RESOURCE))
    got = after["spec"]["containers"][0]["resources"]
    for part in ("limits", "requests"):
        assert got[part][EXTENDER_RESOURCE] == "1"
        assert {k: v for k, v in got[part].items() if k != EXTENDER_RESOURCE} == \
            ((resources or {}).get(part) or {})
    assert after["spec"]["containers"][1] == spec["containers"][1]


def test_a_pod_that_names_the_resource_already_is_left_alone():
    init = container("init", resources={"limits": {EXTENDER_RESOURCE: "1"}})
    assert patches.mark_patch({"containers": [container()], "initContainers": [init]},
                              EXTENDER_RESOURCE) == []
    assert patches.mark_patch(marked(pod("p"))["spec"], EXTENDER_RESOURCE) == []


@pytest.mark.parametrize("spec", [
    None, {}, {"containers": []}, {"containers": "x"}, {"containers": [1]},
    {"containers": [{"name": "c", "resources": []}]},
    {"containers": [{"name": "c", "resources": {"limits": []}}]}])
def test_a_pod_the_api_server_would_refuse_gets_no_mark(spec):
    with pytest.raises(patches.Unpatchable):
        patches.mark_patch(spec, EXTENDER_RESOURCE)


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
    after = apply_patch({"spec": spec}, patches.mark_patch(spec, EXTENDER_RESOURCE))
    assert podcache._marked(after["spec"])
    assert patches.mark_patch(after["spec"], EXTENDER_RESOURCE) == []
    for before, now in zip(containers, after["spec"]["containers"]):
        for part, amounts in (before.get("resources") or {}).items():
            assert {k: v for k, v in now["resources"][part].items()
                    if k != EXTENDER_RESOURCE} == amounts


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
    assert EXTENDER_RESOURCE in message and "mutate.hwaffinity.io" in message
    assert _denied(review(p), None) is None              # no extender: no mark needed


def test_an_update_that_makes_a_pending_unmarked_pod_the_extenders_is_refused():
    c = cache_of([annotated(pod("e", {"app": "e"}, on="n1"), ANTI_WEB)])
    m = Marking(c)
    old = pod("p", {"app": "db"}, containers=[container()])
    new = pod("p", {"app": "web"}, containers=[container()])
    message = _denied(review(new, "UPDATE", old), m)
    assert message.startswith("Pod p: metadata: the change makes this pending pod one the "
                              "hwaffinity extender must place")
    bound_old, bound_new = (dict(x, spec=dict(x["spec"], nodeName="n2")) for x in (old, new))
    assert _denied(review(bound_new, "UPDATE", bound_old), m) is None   # placed already
    assert _denied(review(marked(new), "UPDATE", marked(old)), m) is None
    assert _denied(review(new, "UPDATE", new), m) is None    # needed before: not this change
    other = pod("p", {"app": "db", "tier": "1"}, containers=[container()])
    assert _denied(review(other, "UPDATE", old), m) is None  # nothing selects it
    with_terms = annotated(pod("p", {"app": "db"}, containers=[container()]), ANTI_WEB)
    with_terms["spec"]["containers"][0].pop("resources")
    assert "must place" in _denied(review(with_terms, "UPDATE", old), m)


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
