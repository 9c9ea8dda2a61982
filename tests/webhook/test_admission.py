"""The admission webhooks' pure core: the DoS guard, malformed annotations, the
RequiredDuringExecution copy into spec.affinity, and the AdmissionReview envelope."""
import base64
import copy
import json
import logging
import statistics
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import fuzzing
from tacker_hwaffinity.scheduling import selectors
from tacker_hwaffinity.constants import EXTENDER_RESOURCE
from tacker_hwaffinity.webhook import admission, patches
from tacker_hwaffinity.webhook.marking import Marking
from tacker_hwaffinity.webhook.podcache import PodCache
from tests import builders

PA = "hwaffinity.io/pod-affinity"
RDE = "hwaffinity.io/required-during-execution"
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
ANTI_PATH = "spec.affinity.podAntiAffinity." + REQ
WHY = ("across all namespaces only kubernetes.io/hostname may be used (it would let one "
       "tenant's pods keep every other tenant's off whole domains)")


def term(key, labels=None, ns_selector="unset", exprs=None, **extra):
    """A term over KEY selecting the pods labelled LABELS (app=web), or EXPRS instead."""
    if exprs:
        return builders.term(key, exprs=exprs, ns_selector=ns_selector, **extra)
    return builders.term(key, dict(labels or {"app": "web"}), ns_selector=ns_selector, **extra)


def gt(key, value):
    return {"key": key, "operator": "Gt", "values": [str(value)]}


def pod(name="web", anti=None, notes=None, affinity=None, **meta):
    """Pod NAME with one container; AFFINITY: its spec.affinity (kept even when empty),
    with ANTI as its required anti-affinity terms; NOTES: its annotations (JSON unless
    strings); META: its other metadata."""
    annotations = {k: v if isinstance(v, str) else json.dumps(v)
                   for k, v in notes.items()} if notes else None
    p = builders.pod(name, annotations=annotations, containers=[builders.container()])
    p["metadata"].update(meta)
    if affinity is not None:
        p["spec"]["affinity"] = affinity
    if anti is not None:
        p["spec"].setdefault("affinity", {})["podAntiAffinity"] = {REQ: anti}
    return p


def template(p):
    return {"metadata": p["metadata"], "spec": p["spec"]}


def workload(kind, p, name="web"):
    api = {"Job": "batch/v1", "CronJob": "batch/v1"}.get(kind, "apps/v1")
    if kind == "CronJob":
        spec = {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template(p)}}}
    else:
        spec = {"selector": {"matchLabels": {"app": "web"}}, "template": template(p)}
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name}, "spec": spec}


def request(obj, op="CREATE", old=None, uid="uid-1", **extra):
    api = obj.get("apiVersion", "v1") if isinstance(obj, dict) else "v1"
    group, _, version = api.rpartition("/")
    kind = obj.get("kind", "Pod") if isinstance(obj, dict) else "Pod"
    req = {"uid": uid, "kind": {"group": group, "version": version, "kind": kind},
           "operation": op, "namespace": "default", "object": obj, "oldObject": old}
    req.update(extra)
    return req


def call(webhook, obj, api="admission.k8s.io/v1", allowed_keys=None, **kw):
    body = json.dumps({"apiVersion": api, "kind": "AdmissionReview",
                       "request": request(obj, **kw)}).encode()
    args = () if allowed_keys is None else (allowed_keys,)
    status, out, outcome = admission.handle(webhook, body, *args)
    assert status == 200
    review = json.loads(out)
    assert review["apiVersion"] == api and review["kind"] == "AdmissionReview"
    assert review["response"]["uid"] == kw.get("uid", "uid-1")
    assert outcome == outcome_of(review["response"])
    return review["response"]


def outcome_of(response):
    """The outcome an AdmissionResponse is counted under (hwaffinity_webhook_requests)."""
    if (response.get("status") or {}).get("code") == 500:
        return "error"
    if not response["allowed"]:
        return "denied"
    return "patched" if response.get("patch") else "allowed"


def denial(obj, **kw):
    resp = call("validate", obj, **kw)
    assert resp["allowed"] is False, resp
    assert resp["status"]["code"] == 403 and resp["status"]["reason"] == "Forbidden"
    return resp["status"]["message"]


def admitted(obj, **kw):
    resp = call("validate", obj, **kw)
    return resp == {"uid": kw.get("uid", "uid-1"), "allowed": True}


def offence(path, key):
    return ('%s: required anti-affinity over all namespaces (namespaceSelector: {}) with '
            'topologyKey "%s" is refused' % (path, key))


# --- a tiny RFC 6902 applier (add, replace) -------------------------------------------

def _tokens(path):
    assert path.startswith("/")
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def apply_patch(doc, ops):
    doc = copy.deepcopy(doc)
    for op in ops:
        assert op["op"] in ("add", "replace"), op
        *parents, last = _tokens(op["path"])
        target = doc
        for t in parents:
            target = target[int(t)] if isinstance(target, list) else target[t]
        value = copy.deepcopy(op["value"])
        if isinstance(target, list):
            if op["op"] == "replace":
                target[int(last)] = value
            elif last == "-":
                target.append(value)
            else:
                target.insert(int(last), value)
        else:
            assert op["op"] == "add" or last in target, op
            target[last] = value
    return doc


def patch_of(resp):
    assert resp["allowed"] is True
    if "patch" not in resp:
        assert "patchType" not in resp
        return None
    assert resp["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(resp["patch"]))
    assert isinstance(ops, list) and ops
    return ops


def mutated(p):
    """(patched pod, ops) after one mutate; asserts a second mutate changes nothing."""
    ops = patch_of(admission.mutate(request(p)).response)
    after = apply_patch(p, ops or [])
    assert patch_of(admission.mutate(request(after)).response) is None
    return after, ops


# --- validating: the DoS guard ---------------------------------------------------------

def test_pod_anti_affinity_over_all_namespaces_with_a_non_node_key_is_refused():
    p = pod(anti=[term("CIS-node", ns_selector={})])
    assert denial(p) == "Pod web: %s: %s" % (offence(ANTI_PATH + "[0]", "CIS-node"), WHY)


@pytest.mark.parametrize("kind,prefix", [
    ("Deployment", "spec.template."), ("ReplicaSet", "spec.template."),
    ("StatefulSet", "spec.template."), ("DaemonSet", "spec.template."),
    ("Job", "spec.template."), ("CronJob", "spec.jobTemplate.spec.template.")])
def test_workload_templates_are_checked_with_their_field_paths(kind, prefix):
    p = pod(anti=[term("kubernetes.io/hostname", ns_selector={}),
                  term("CIS-node", ns_selector={})])
    assert denial(workload(kind, p)) == "%s web: %s: %s" % (
        kind, offence(prefix + ANTI_PATH + "[1]", "CIS-node"), WHY)


def test_pod_created_by_a_controller_is_named_by_its_generate_name():
    p = pod(name="", anti=[term("rack", ns_selector={})], generateName="web-5d4f-")
    assert denial(p).startswith("Pod web-5d4f-<generated>: " + ANTI_PATH + "[0]: ")


def test_the_allowed_keys_are_configurable():
    p = pod(anti=[term("CIS-node", ns_selector={})])
    assert admitted(p, allowed_keys=frozenset({"CIS-node"}))
    hostname = pod(anti=[term("kubernetes.io/hostname", ns_selector={})])
    msg = denial(hostname, allowed_keys={"CIS-node", "rack"})
    assert 'topologyKey "kubernetes.io/hostname" is refused' in msg
    assert msg.endswith("across all namespaces only CIS-node, rack may be used (it would let "
                        "one tenant's pods keep every other tenant's off whole domains)")
    assert "no topologyKey may be used" in denial(hostname, allowed_keys=())
    assert admission.validate(request(p), "CIS-node").response["allowed"] is True   # one key


@pytest.mark.parametrize("t", [
    term("CIS-node"),                                      # the pod's own namespace
    term("CIS-node", ns_selector=None),                    # null: the same
    term("CIS-node", namespaces=["a", "b"]),               # named namespaces
    term("CIS-node", ns_selector={"matchLabels": {"tenant": "a"}}),
    term("CIS-node", ns_selector={"matchExpressions": [
        {"key": "tenant", "operator": "In", "values": ["a"]}]}),
    term("kubernetes.io/hostname", ns_selector={}),        # all namespaces, node key
])
def test_terms_that_cannot_hog_other_tenants_domains_are_admitted(t):
    assert admitted(pod(anti=[t]))
    assert admitted(workload("Deployment", pod(anti=[t])))


@pytest.mark.parametrize("selector", [{"matchLabels": {}, "matchExpressions": []},
                                      {"matchLabels": None, "matchExpressions": None}])
def test_an_empty_selector_spelled_out_still_selects_every_namespace(selector):
    assert "CIS-node" in denial(pod(anti=[term("CIS-node", ns_selector=selector)]))
    assert "zone" in denial(pod(anti=[term("zone", ns_selector=selector, namespaces=["a"])]))


def test_only_required_anti_affinity_is_guarded():
    aff = {"podAffinity": {REQ: [term("CIS-node", ns_selector={})]},
           "podAntiAffinity": {PREF: [{"weight": 5, "podAffinityTerm": term(
               "CIS-node", ns_selector={})}]}}
    assert admitted(pod(affinity=aff))
    assert admitted(pod(notes={PA: aff}))


def test_annotation_terms_are_checked_with_their_field_paths():
    notes = {PA: {"podAntiAffinity": {REQ: [term("CIS-node"),
                                            term("CIS-node", ns_selector={})]}},
             RDE: {"podAntiAffinity": [term("rack", ns_selector={}, exprs=[gt("v", 3)])]}}
    msg = denial(workload("Deployment", pod(notes=notes)))
    a = "spec.template.metadata.annotations[%s]" % PA
    r = "spec.template.metadata.annotations[%s]" % RDE
    assert msg == "Deployment web: %s; %s: %s" % (
        offence(a + ".podAntiAffinity.%s[1]" % REQ, "CIS-node"),
        offence(r + ".podAntiAffinity[0]", "rack"), WHY)
    assert denial(pod(notes=notes)).startswith(
        "Pod web: metadata.annotations[%s].podAntiAffinity.%s[1]: " % (PA, REQ))


def test_every_offending_term_is_listed():
    p = pod(anti=[term("zone", ns_selector={}), term("CIS-node"),
                  term("rack", ns_selector={"matchLabels": {}})],
            notes={RDE: {"podAntiAffinity": [term("CIS-node", ns_selector={})]}})
    msg = denial(p)
    assert msg == "Pod web: %s; %s; %s: %s" % (
        offence(ANTI_PATH + "[0]", "zone"), offence(ANTI_PATH + "[2]", "rack"),
        offence("metadata.annotations[%s].podAntiAffinity[0]" % RDE, "CIS-node"), WHY)
    assert msg.count("across all namespaces") == 1


# --- validating: malformed annotations, garbage, operations -------------------------

def test_malformed_annotations_are_refused_with_the_field_naming_message():
    assert denial(pod(notes={PA: "{not json"})).startswith(
        "Pod web: field metadata.annotations[%s]: not JSON: " % PA)
    bad = {RDE: {"podAntiAffinity": [{"topologyKey": "CIS-node", "labelSelectr": {}}]}}
    assert denial(workload("CronJob", pod(notes=bad))) == (
        "CronJob web: field spec.jobTemplate.spec.template.metadata.annotations[%s]"
        ".podAntiAffinity[0]: unknown field(s) labelSelectr" % RDE)
    msg = denial(pod(notes={PA: {"podAffinity": []}, RDE: {"nodeAffinity": {}}}))
    assert msg == ("Pod web: field metadata.annotations[%s].podAffinity: expected a mapping "
                   "with %s and/or %s; field metadata.annotations[%s].nodeAffinity: expected "
                   "a list of terms" % (PA, REQ, PREF, RDE))


def test_a_malformed_annotation_and_an_offence_are_both_reported():
    msg = denial(pod(anti=[term("rack", ns_selector={})], notes={RDE: "[]"}))
    assert msg.startswith("Pod web: field metadata.annotations[%s]: expected a JSON object" % RDE)
    assert msg.endswith("; %s: %s" % (offence(ANTI_PATH + "[0]", "rack"), WHY))


def test_a_deeply_nested_annotation_is_refused_not_crashed_on():
    notes = {RDE: "[" * 100000 + "]" * 100000}
    msg = denial(pod(notes=notes))
    assert msg.startswith("Pod web: field metadata.annotations[%s]: " % RDE)
    assert patch_of(admission.mutate(request(pod(notes=notes))).response) is None


LONG_NUMBER = "9" * 4400       # int() refuses it (ValueError past 4,300 digits)
DEEP = "[" * 3000 + "]" * 3000


@pytest.mark.parametrize("notes,why", [
    ({PA: {"podAffinity": {REQ: [term("CIS-node", exprs=[gt("v", LONG_NUMBER)])]}}},
     "podAffinity.%s[0].labelSelector.matchExpressions[0].values[0]: for 'Gt', 'Lt' "
     "operators, the value must be an integer" % REQ),
    ({RDE: {"nodeAffinity": [{"matchExpressions": [
        {"key": "cores", "operator": "Lt", "values": [LONG_NUMBER]}]}]}},
     "must be an integer"),
    ({PA: DEEP}, "metadata.annotations[%s]: JSON nested 3000 levels deep, over the limit "
     "of 64" % PA),
    ({RDE: '{"podAffinity": %s}' % DEEP}, "JSON nested 3001 levels deep"),
])
def test_a_huge_gt_value_or_json_nested_thousands_deep_is_denied_with_why_not_a_500(notes, why):
    assert why in denial(pod(notes=notes))           # 403 Forbidden, the engine's message
    assert why in denial(workload("Deployment", pod(notes=notes)))
    assert patch_of(admission.mutate(request(pod(notes=notes))).response) is None


def test_a_review_nested_deeper_than_any_kubernetes_object_is_a_400():
    body = b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": '
    status, out, outcome = admission.handle("validate",
                                            body + b"[" * 3000 + b"]" * 3000 + b"}")
    assert outcome == "error" and (status, json.loads(out)) == (400, {
        "error": "the body nests 3001 levels deep, over the limit of 64"})


# -- fuzzing: a whole AdmissionReview body gives an AdmissionReview answer or a 400, in
# at most 250 ms of CPU and 32 MiB for bodies up to 300 KB (an annotation's worst case)
REVIEW_CPU_S, REVIEW_MIB = 0.25, 32


def _marking():
    """A Marking over a cache holding one bound pod whose extended anti-affinity selects
    the test pods' label (app=web)."""
    cache = PodCache()
    cache.sync_nodes([builders.node("n1", {"CIS-node": "h1"})])
    cache.sync_pods([pod("guard", notes={PA: {"podAntiAffinity": {REQ: [
        builders.term("CIS-node", {"app": "web"})]}}}, nodeName="n1")])
    return Marking(cache)


MARKING = _marking()


def answered(kind, body, marking=None):
    """What handle() answers BODY, checked to be a documented outcome: 200 with an
    AdmissionReview whose response is no internal error, or 400 with an error."""
    status, out, outcome = admission.handle(kind, body, marking=marking)
    doc = json.loads(out)
    if status == 400:
        assert set(doc) == {"error"} and outcome == "error"
        return status
    assert status == 200 and doc["kind"] == "AdmissionReview", (status, doc)
    response = doc["response"]
    assert isinstance(response["allowed"], bool)
    assert (response.get("status") or {}).get("code") != 500, response
    assert outcome == outcome_of(response) != "error", (outcome, response)
    return status


def review_body(obj, op="CREATE", old=None):
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": request(obj, op=op, old=old)}).encode()


VALID_PODS = [
    pod(notes={PA: {"podAffinity": {REQ: [term("CIS-node", exprs=[gt("v", 3)])]}},
               RDE: {"podAntiAffinity": [term("kubernetes.io/hostname")],
                     "nodeAffinity": [{"matchExpressions": [
                         {"key": "c", "operator": "Gt", "values": ["8"]}]}]}}),
    workload("Deployment", pod(anti=[term("rack", ns_selector={})])),
    workload("CronJob", pod(notes={RDE: {"podAffinity": [term("zone", exprs=[gt("v", 1)])]}})),
]
VALID_BODIES = [review_body(p) for p in VALID_PODS] + [
    review_body(VALID_PODS[0], "UPDATE", VALID_PODS[0]),
    review_body(builders.node("w1", taints=[{"key": "k", "effect": "NoSchedule"}],
                              provider_id="openstack:///x"))]
BYTE_BITS = st.sampled_from([b'"', b"{", b"}", b"[", b"]", b",", b":", b"null", b"1e999",
                             LONG_NUMBER.encode(), b"[" * 300, b'{"a":' * 80, rb"\ud800",
                             b'"Gt"', b'"UPDATE"', rb"\u0000", b"\\", b"\xff"])
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=20)
POD_KEYS = st.sampled_from(["metadata", "spec", "annotations", "affinity", "podAntiAffinity",
                            REQ, "template", "labelSelector", "matchExpressions", "values",
                            "namespaceSelector", "topologyKey", PA, RDE, "hwaffinity.io/numa",
                            "labels", "containers", "initContainers", "resources", "limits",
                            "requests", EXTENDER_RESOURCE, "nodeName", "taints", "kind"])


def edited(body, edits):
    """BODY with EDITS ((position, deleted length, inserted bytes), ...) applied."""
    for pos, cut, insert in edits:
        pos %= len(body) + 1
        body = body[:pos] + insert + body[pos + cut:]
    return body


def _graft(obj, path, value):
    """OBJ (a deep copy) with VALUE put at the key path PATH, as far as it leads."""
    obj = copy.deepcopy(obj)
    node = obj
    for key in path[:-1]:
        nxt = node.get(key) if isinstance(node, dict) else None
        if not isinstance(nxt, dict):
            break
        node = nxt
    if isinstance(node, dict) and path:
        node[path[-1]] = value
    return obj


BODIES = st.one_of(
    st.binary(max_size=400),
    st.builds(edited, st.sampled_from(VALID_BODIES), st.lists(st.tuples(
        st.integers(0, 4000), st.integers(0, 40), BYTE_BITS | st.binary(max_size=6)),
        max_size=6)),
    st.builds(lambda o, path, v: review_body(_graft(o, path, v)), st.sampled_from(VALID_PODS),
              st.lists(POD_KEYS, min_size=1, max_size=5), JSON),
    st.builds(lambda o, name, text: review_body(_graft(o, ["metadata", "annotations", name],
                                                       text)),
              st.sampled_from(VALID_PODS[:1]), st.sampled_from([PA, RDE]),
              st.text(max_size=200) | st.sampled_from([DEEP, LONG_NUMBER]))).filter(
    lambda b: len(b) <= 300_000)


@given(st.sampled_from(["validate", "mutate", "register-node"]), BODIES,
       st.sampled_from([None, MARKING]))
@example("validate", review_body(pod(notes={PA: DEEP})), MARKING)
@example("validate", review_body(pod(notes={PA: {"podAffinity": {REQ: [
    term("CIS-node", exprs=[gt("v", LONG_NUMBER)])]}}})), MARKING)
@example("mutate", review_body(pod(notes={RDE: {"podAntiAffinity": [
    term("CIS-node", exprs=[gt("v", LONG_NUMBER)])]}})), MARKING)
@example("validate", review_body(pod(notes={RDE: "[" * 100000 + "]" * 100000})), MARKING)
@example("validate", b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", '
         b'"request": ' + b"[" * 3000 + b"]" * 3000 + b"}", None)
def test_fuzz_admission_review_bodies(kind, body, marking):
    fuzzing.bounded(answered, kind, body, marking, seconds=REVIEW_CPU_S, mib=REVIEW_MIB)


@pytest.mark.parametrize("obj,message", [
    (workload("Deployment", pod()) | {"spec": ["x"]}, "Deployment web: field spec: "
     "expected a mapping"),
    (pod() | {"spec": {"affinity": {"podAntiAffinity": {REQ: {"a": 1}}}}},
     "Pod web: field %s: expected a list of terms" % ANTI_PATH),
    (pod() | {"spec": {"affinity": {"podAntiAffinity": {REQ: ["x"]}}}},
     "Pod web: field %s[0]: expected a mapping" % ANTI_PATH),
    (pod() | {"metadata": {"name": "web", "annotations": ["x"]}},
     "Pod web: field metadata.annotations: expected a mapping"),
])
def test_garbage_pod_objects_are_refused_naming_the_field(obj, message):
    assert denial(obj) == message


def test_a_non_mapping_object_is_refused():
    resp = admission.validate(request("garbage") | {"kind": {"group": "", "kind": "Pod"}}).response
    assert resp["allowed"] is False and resp["status"]["message"] == (
        "Pod <unnamed>: field object: expected a mapping")


def test_other_kinds_are_allowed():
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}
    assert admitted(cm)
    # a custom resource that happens to be called Deployment has its own schema
    crd = {"apiVersion": "example.com/v1", "kind": "Deployment", "metadata": {"name": "x"},
           "spec": ["whatever"]}
    assert admitted(crd)


@pytest.mark.parametrize("op", ["DELETE", "CONNECT"])
def test_operations_without_an_object_are_allowed(op):
    bad = pod(anti=[term("CIS-node", ns_selector={})])
    assert admitted(None, op=op, old=bad)
    assert admitted(bad, op=op)
    assert patch_of(call("mutate", None, op=op, old=bad)) is None


def test_update_refuses_only_new_problems():
    old = pod(anti=[term("CIS-node", ns_selector={})], notes={PA: "{"})
    relabelled = copy.deepcopy(old)
    relabelled["metadata"]["labels"] = {"x": "y"}
    assert admitted(relabelled, op="UPDATE", old=old)
    worse = workload("Deployment", copy.deepcopy(old))
    worse["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][REQ].append(
        term("rack", ns_selector={}))
    msg = denial(worse, op="UPDATE", old=workload("Deployment", old))
    assert msg == "Deployment web: %s: %s" % (
        offence("spec.template." + ANTI_PATH + "[1]", "rack"), WHY)
    assert "CIS-node" in denial(old, op="UPDATE", old=None)


def test_an_internal_error_is_a_denial_not_a_traceback():
    resp, outcome = admission.validate(request(pod()), allowed_keys=None)
    assert outcome == "error" and resp["allowed"] is False and resp["status"]["code"] == 500
    assert "internal error" in resp["status"]["message"]


def review(req):
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": req}).encode()


def test_an_internal_error_of_validate_is_logged_and_counted(caplog):
    with caplog.at_level(logging.ERROR, logger=admission.LOG.name):
        status, out, outcome = admission.handle("validate", review(request(pod())), None)
    response = json.loads(out)["response"]
    assert (status, outcome, response["status"]["code"]) == (200, "error", 500)
    assert [(r.getMessage(), r.exc_info[0]) for r in caplog.records] == [
        ("validating webhook: internal error on request uid-1", TypeError)]


def test_an_internal_error_of_mutate_is_logged_and_counted_not_swallowed(monkeypatch, caplog):
    """The pod is allowed unpatched, as before; the bug is now in the log (with its
    traceback) and counted as the outcome error, not silently taken for "no patch"."""
    def boom(obj):
        raise RuntimeError("kaputt")
    monkeypatch.setattr(patches, "pod_patch", boom)
    req = request(pod(notes={RDE: {"podAffinity": [term("k")]}}))
    with caplog.at_level(logging.ERROR, logger=admission.LOG.name):
        status, out, outcome = admission.handle("mutate", review(req))
    assert (status, outcome) == (200, "error")
    assert json.loads(out)["response"] == {"uid": "uid-1", "allowed": True}
    assert [(r.getMessage(), r.exc_info[0]) for r in caplog.records] == [
        ("mutating webhook: internal error on request uid-1; allowed unpatched",
         RuntimeError)]


# --- the envelope --------------------------------------------------------------------

@pytest.mark.parametrize("body", [
    b"", b"not json", b"\xff\xfe\x00", b"[]", b"null", b'"AdmissionReview"', b"[" * 100000,
    b'{"kind": "AdmissionReview", "apiVersion": "v1", "request": {"uid": "u"}}',
    b'{"kind": "Pod", "apiVersion": "admission.k8s.io/v1", "request": {"uid": "u"}}',
    b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}',
    b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": []}',
    b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {}}',
    b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {"uid": 1}}',
])
@pytest.mark.parametrize("webhook", ["validate", "mutate"])
def test_a_body_that_is_no_admission_review_gets_400_and_a_short_error(webhook, body):
    status, out, outcome = admission.handle(webhook, body)
    assert status == 400 and outcome == "error"
    err = json.loads(out)
    assert list(err) == ["error"] and 0 < len(err["error"]) < 300
    assert "Traceback" not in err["error"]


def test_an_unknown_webhook_gets_404():
    status, out, outcome = admission.handle("convert", b"{}")
    assert status == 404 and outcome == "error" and "convert" in json.loads(out)["error"]


def test_v1beta1_reviews_are_answered_in_kind():
    resp = call("validate", pod(anti=[term("CIS-node", ns_selector={})]),
                api="admission.k8s.io/v1beta1", uid="abc")
    assert resp["allowed"] is False and resp["uid"] == "abc"


# --- mutating --------------------------------------------------------------------------

def test_mutate_copies_pod_terms_as_written_and_leaves_gt_lt_to_the_extender():
    plain = term("CIS-node", {"app": "db"}, namespaces=[])
    extended = term("CIS-node", exprs=[gt("version", 3)])
    anti = term("rack", {"app": "web"}, ns_selector={"matchLabels": {"t": "a"}})
    p = pod(notes={RDE: {"podAffinity": [plain, extended], "podAntiAffinity": [anti]}})
    resp = call("mutate", p)
    ops = patch_of(resp)
    assert ops == [
        {"op": "add", "path": "/spec/affinity", "value": {}},
        {"op": "add", "path": "/spec/affinity/podAffinity", "value": {}},
        {"op": "add", "path": "/spec/affinity/podAffinity/" + REQ, "value": [plain]},
        {"op": "add", "path": "/spec/affinity/podAntiAffinity", "value": {}},
        {"op": "add", "path": "/spec/affinity/podAntiAffinity/" + REQ, "value": [anti]}]
    after, _ = mutated(p)
    assert after["spec"]["affinity"] == {"podAffinity": {REQ: [plain]},
                                         "podAntiAffinity": {REQ: [anti]}}


def test_mutate_appends_to_existing_lists_and_adds_no_term_twice():
    kept = term("zone", {"app": "x"})
    present = term("CIS-node", {"app": "db"})
    new = term("CIS-node", {"app": "cache"})
    p = pod(affinity={"podAffinity": {REQ: [kept, present], PREF: []}},
            notes={RDE: {"podAffinity": [present, new, new]}})
    after, ops = mutated(p)
    assert ops == [{"op": "add", "path": "/spec/affinity/podAffinity/%s/-" % REQ, "value": new}]
    assert after["spec"]["affinity"]["podAffinity"][REQ] == [kept, present, new]


def test_a_term_equal_once_stored_by_the_api_server_is_not_added_again():
    written = term("CIS-node", {"app": "db"}, namespaces=[], matchLabelKeys=None)
    stored = term("CIS-node", {"app": "db"})
    p = pod(affinity={"podAffinity": {REQ: [stored]}}, notes={RDE: {"podAffinity": [written]}})
    assert patch_of(admission.mutate(request(p)).response) is None


def expr(key, op="In", *values):
    e = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def node_affinity(*terms):
    return {"nodeAffinity": {REQ: {"nodeSelectorTerms": list(terms)}}}


def test_node_terms_are_anded_with_the_pods_own_as_a_cross_product():
    s1 = {"matchExpressions": [expr("zone", "In", "a"), expr("gpu", "Exists")]}
    s2 = {"matchFields": [expr("metadata.name", "In", "n1")]}
    r1 = {"matchExpressions": [expr("gpu", "Exists"), expr("cpu", "Gt", "8")]}
    r2 = {"matchExpressions": [expr("rack", "NotIn", "r9")],
          "matchFields": [expr("metadata.name", "NotIn", "n2")]}
    p = pod(affinity=node_affinity(s1, s2), notes={RDE: {"nodeAffinity": [r1, r2]}})
    after, ops = mutated(p)
    want = [
        {"matchExpressions": [expr("zone", "In", "a"), expr("gpu", "Exists"),
                              expr("cpu", "Gt", "8")]},
        {"matchExpressions": [expr("zone", "In", "a"), expr("gpu", "Exists"),
                              expr("rack", "NotIn", "r9")],
         "matchFields": [expr("metadata.name", "NotIn", "n2")]},
        {"matchExpressions": r1["matchExpressions"], "matchFields": s2["matchFields"]},
        {"matchExpressions": r2["matchExpressions"],
         "matchFields": s2["matchFields"] + r2["matchFields"]}]
    assert ops == [{"op": "replace", "value": want,
                    "path": "/spec/affinity/nodeAffinity/%s/nodeSelectorTerms" % REQ}]
    assert after["spec"]["affinity"]["nodeAffinity"][REQ]["nodeSelectorTerms"] == want


def test_node_terms_without_required_node_affinity_are_copied_as_they_are():
    r = [{"matchExpressions": [expr("cpu", "Lt", "4")]},
         {"matchFields": [expr("metadata.name", "In", "n1")]}]
    pref = {PREF: [{"weight": 1, "preference": {"matchExpressions": [expr("a", "Exists")]}}]}
    after, ops = mutated(pod(affinity={"nodeAffinity": pref}, notes={RDE: {"nodeAffinity": r}}))
    assert ops == [{"op": "add", "path": "/spec/affinity/nodeAffinity/" + REQ, "value": {}},
                   {"op": "add", "value": r,
                    "path": "/spec/affinity/nodeAffinity/%s/nodeSelectorTerms" % REQ}]
    assert after["spec"]["affinity"]["nodeAffinity"] == dict(pref, **{
        REQ: {"nodeSelectorTerms": r}})


def test_node_affinity_already_within_the_annotations_is_left_alone():
    r = {"matchExpressions": [expr("cpu", "Gt", "8")]}
    s = {"matchExpressions": [expr("zone", "In", "a"), expr("cpu", "Gt", "8")]}
    p = pod(affinity=node_affinity(s), notes={RDE: {"nodeAffinity": [r, {
        "matchExpressions": [expr("other", "Exists")]}]}})
    assert patch_of(admission.mutate(request(p)).response) is None


def test_mutate_replaces_a_null_affinity():
    p = pod(notes={RDE: {"podAntiAffinity": [term("CIS-node")]}})
    p["spec"]["affinity"] = None
    after, ops = mutated(p)
    assert ops[0] == {"op": "add", "path": "/spec/affinity", "value": {}}
    assert after["spec"]["affinity"]["podAntiAffinity"][REQ] == [term("CIS-node")]


@pytest.mark.parametrize("req", [
    request(pod(notes={RDE: {"podAffinity": [term("k")]}}), op="UPDATE"),
    request(pod(notes={RDE: {"podAffinity": [term("k")]}}), subResource="ephemeralcontainers"),
    request(workload("Deployment", pod(notes={RDE: {"podAffinity": [term("k")]}}))),
    request(pod(notes={PA: {"podAffinity": {REQ: [term("k")]}}})),
    request(pod(notes={RDE: {"podAffinity": [term("k", exprs=[gt("v", 1)])]}})),
    request(pod(notes={RDE: {"podAffinity": [{"topologyKey": ""}]}})),       # malformed
    request(pod(notes={RDE: "{"})),
    request(pod(notes={RDE: {"podAffinity": [term("k")]}}) | {"spec": []}),  # garbage
    request(pod(affinity={"podAffinity": "x"}, notes={RDE: {"podAffinity": [term("k")]}})),
    request(pod(affinity=node_affinity("x"), notes={RDE: {"nodeAffinity": [
        {"matchExpressions": [expr("a", "Exists")]}]}})),
    request("not a pod"),
    {"uid": "u"},
])
def test_mutate_leaves_everything_else_alone(req):
    assert admission.mutate(req) == ({"uid": req["uid"], "allowed": True}, "allowed")


def test_json_pointer_escaping():
    assert patches.escape("a~b/c") == "a~0b~1c"
    assert patches.pointer("metadata", "annotations", RDE) == (
        "/metadata/annotations/hwaffinity.io~1required-during-execution")
    assert patches.pointer("x~1", "/") == "/x~01/~1"
    doc = apply_patch({"m": {}}, [{"op": "add", "path": patches.pointer("m", "a/b~c"),
                                   "value": 1}])
    assert doc == {"m": {"a/b~c": 1}}


def test_validate_and_mutate_are_fast():
    notes = {RDE: {"podAntiAffinity": [term("CIS-node"), term("zone", exprs=[gt("v", 2)])],
                   "nodeAffinity": [{"matchExpressions": [expr("cpu", "Gt", "4")]}]},
             PA: {"podAffinity": {REQ: [term("rack")]}}}
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": request(pod(anti=[term("kubernetes.io/hostname")],
                                              notes=notes))}).encode()
    # this thread's CPU time, which other processes on a loaded machine do not inflate
    # (about 0.15 ms here; the 5 ms bound is 30 times that); the wall-clock p99 over
    # HTTPS against the same 5 ms goal is benchmarks/bench_webhook.py's
    times = []
    for _ in range(200):
        t0 = time.thread_time()
        for webhook in ("validate", "mutate"):
            assert admission.handle(webhook, body)[0] == 200
        times.append(time.thread_time() - t0)
    assert statistics.median(times) < 0.005


# --- property: mutate is idempotent and means (pod's own) AND (annotation) ------------

KEYS = ("a", "b", "n")
VALUES = ("1", "2", "5")
NAMES = ("n1", "n2")
label_expr = st.one_of(
    st.builds(lambda k, op, vs: expr(k, op, *vs), st.sampled_from(KEYS),
              st.sampled_from(("In", "NotIn")),
              st.lists(st.sampled_from(VALUES), min_size=1, max_size=2, unique=True)),
    st.builds(lambda k, op: expr(k, op), st.sampled_from(KEYS),
              st.sampled_from(("Exists", "DoesNotExist"))),
    st.builds(lambda k, op, v: expr(k, op, v), st.sampled_from(KEYS),
              st.sampled_from(("Gt", "Lt")), st.sampled_from(VALUES)))
field_expr = st.builds(lambda op, v: expr("metadata.name", op, v),
                       st.sampled_from(("In", "NotIn")), st.sampled_from(NAMES))


@st.composite
def node_term(draw):
    t = {}
    exprs = draw(st.lists(label_expr, max_size=3))
    fields = draw(st.lists(field_expr, max_size=1))
    if exprs or draw(st.booleans()):
        t["matchExpressions"] = exprs
    if fields:
        t["matchFields"] = fields
    return t


pod_term = st.builds(
    lambda key, e, ext: term(key, exprs=[e] + ([gt("v", 3)] if ext else [])),
    st.sampled_from(("CIS-node", "zone")), label_expr.filter(
        lambda e: e["operator"] not in ("Gt", "Lt")), st.booleans())


@st.composite
def pods(draw):
    rde = {}
    for group in ("podAffinity", "podAntiAffinity"):
        rde[group] = draw(st.lists(pod_term, max_size=3))
    rde["nodeAffinity"] = draw(st.lists(node_term(), max_size=3))
    affinity = draw(st.sampled_from(("filled", "absent", None, {})))
    p = pod(notes={RDE: rde})
    if affinity == "filled":
        affinity = {}
        for group in ("podAffinity", "podAntiAffinity"):
            existing = draw(st.lists(st.one_of(pod_term, st.sampled_from(rde[group] or [{}])),
                                     max_size=3))
            if existing:
                affinity[group] = {REQ: [t for t in existing if t]}
        affinity["nodeAffinity"] = {REQ: {"nodeSelectorTerms": draw(
            st.lists(node_term(), min_size=1, max_size=3))}}
    if affinity != "absent":
        p["spec"]["affinity"] = affinity
    return p


def _node_matches(terms, labels, name):
    if terms is None:
        return True
    return selectors.NodeSelector({"nodeSelectorTerms": terms}, "t").matches(labels, name)


def _node_terms(p):
    aff = p["spec"].get("affinity") or {}
    return ((aff.get("nodeAffinity") or {}).get(REQ) or {}).get("nodeSelectorTerms")


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pods(), st.lists(st.tuples(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(
    VALUES + ("x",))), st.sampled_from(NAMES)), min_size=1, max_size=8))
def test_mutate_is_idempotent_and_ands_node_affinity(p, nodes):
    after, _ = mutated(p)              # asserts mutate(apply(mutate(p))) has no patch
    rde = json.loads(p["metadata"]["annotations"][RDE])
    aff = after["spec"].get("affinity") or {}
    for group in ("podAffinity", "podAntiAffinity"):
        have = [patches.canon(t) for t in ((aff.get(group) or {}).get(REQ) or [])]
        for t in rde[group]:
            uses_gt = any(e["operator"] == "Gt" for e in t["labelSelector"]["matchExpressions"])
            assert (patches.canon(t) in have) or uses_gt
    before, now, wanted = _node_terms(p), _node_terms(after), rde["nodeAffinity"]
    if not any(t.get("matchExpressions") or t.get("matchFields") for t in wanted):
        assert now == before            # nothing that matches a node: the extender's job
        return
    for labels, name in nodes:
        assert _node_matches(now, labels, name) == (
            _node_matches(before, labels, name) and _node_matches(wanted, labels, name))
