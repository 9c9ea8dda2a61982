"""The admission guard against required anti-affinity over all namespaces decides by what a
``namespaceSelector`` selects (``webhook.namespaces``), not by how it is spelt: every
spelling of one selection gets the canonical spelling's verdict, in ``spec.affinity`` and
in both annotations, for Pods, pod templates and UPDATEs; malformed selectors stay errors
naming their field."""
import json
import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tacker_hwaffinity.scheduling import selectors
from tacker_hwaffinity.scheduling.model import NS_NAME_LABEL
from tacker_hwaffinity.webhook import admission, namespaces
from tests import builders

K = NS_NAME_LABEL
PA = "hwaffinity.io/pod-affinity"
RDE = "hwaffinity.io/required-during-execution"
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
HOSTNAME = "kubernetes.io/hostname"
NAMES = ("default", "tenant-a", "tenant-b", "kube-system", "cnf")
TEAMS = ("red", "blue", "green")
LABEL = "example.com/team"
ABSENT = ("absent.example.com/never", "unused")     # keys no namespace here carries
# the namespaces that exist here, and some created later (only their name label)
EXISTING = [{K: n, LABEL: t} for n, t in zip(NAMES, TEAMS + TEAMS)] + [{K: "bare"}]
LATER = [{K: n} for n in ("later-1", "zz-new", namespaces.PROBE_PREFIX + "0")]
# the kinds of selection, and whether the guard refuses them (with a non-node key)
OPEN_KINDS = ("all", "all_but_names", "all_but_labelled")
KINDS = OPEN_KINDS + ("names", "labelled", "none")


def canonical(kind, names, team):
    """The canonical spelling of one selection (NAMES: its names, TEAM: its label value)."""
    return {"all": {},
            "all_but_names": {"matchExpressions": [expr(K, "NotIn", sorted(names))]},
            "all_but_labelled": {"matchExpressions": [expr(LABEL, "DoesNotExist")]},
            "names": {"matchExpressions": [expr(K, "In", sorted(names))]},
            "labelled": {"matchLabels": {LABEL: team}},
            "none": {"matchExpressions": [expr(K, "DoesNotExist")]}}[kind]


def expr(key, op, values=None):
    e = {"key": key, "operator": op}
    if values is not None:
        e["values"] = list(values)
    return e


def core(kind, names, team, rnd):
    """Requirements (key, op, values) that select what ``canonical`` does, spelt
    another way (RND chooses)."""
    others = [n for n in NAMES if n not in names]
    if kind == "all":
        return []
    if kind == "all_but_names":     # NotIn A and NotIn B is NotIn A+B
        cut = rnd.randint(0, len(names))
        parts = [names[:cut], names[cut:]]
        return [(K, "NotIn", p) for p in parts if p]
    if kind == "all_but_labelled":
        return [(LABEL, "DoesNotExist", [])] + rnd.choice([[], [(LABEL, "NotIn", [team])]])
    if kind == "names":     # In with more names, those NotIn again; or two Ins meeting
        extra = rnd.sample(others, rnd.randint(0, len(others)))
        spelt = [(K, "In", list(names) + extra)]
        if extra:
            spelt.append((K, "NotIn", extra) if rnd.random() < 0.5 else (K, "In", names))
        return spelt
    if kind == "labelled":
        rest = [t for t in TEAMS if t != team]
        return rnd.choice([[(LABEL, "=", [team])],
                           [(LABEL, "In", [team] + rest), (LABEL, "NotIn", rest)],
                           [(LABEL, "In", [team]), (LABEL, "Exists", [])]])
    return rnd.choice([[(K, "DoesNotExist", [])],
                       [(K, "In", names), (K, "NotIn", names)]])


def padding(rnd, spelt):
    """Requirements that change no selection here: the name label Exists (every
    namespace has it), DoesNotExist on keys no namespace carries, repeats."""
    pads = [(K, "Exists", [])] + [(k, "DoesNotExist", []) for k in ABSENT] + spelt
    return [rnd.choice(pads) for _ in range(rnd.randint(0, 3))]


def spell(reqs, rnd):
    """A namespaceSelector of REQS: values repeated and shuffled, requirements shuffled,
    single values in matchLabels or matchExpressions, empty parts present or not."""
    rnd.shuffle(reqs)
    labels, exprs = {}, []
    for key, op, values in reqs:
        values = list(values) + rnd.sample(list(values), rnd.randint(0, len(values)))
        rnd.shuffle(values)
        single = op in ("=", "In") and len(set(values)) == 1
        if single and key not in labels and rnd.random() < 0.6:
            labels[key] = values[0]
        elif op in ("Exists", "DoesNotExist"):
            exprs.append(expr(key, op) if rnd.random() < 0.5 else expr(key, op, []))
        else:
            exprs.append(expr(key, "In" if op == "=" else op, values))
    selector = {}
    for part, value in (("matchLabels", labels), ("matchExpressions", exprs)):
        if value or rnd.random() < 0.3:
            selector[part] = value if value or rnd.random() < 0.5 else None
    return selector


@st.composite
def selections(draw):
    """(kind, canonical spelling, another spelling of the same selection)."""
    kind = draw(st.sampled_from(KINDS))
    names = draw(st.permutations(NAMES))[:draw(st.integers(1, 3))]
    team = draw(st.sampled_from(TEAMS))
    rnd = random.Random(draw(st.integers(0, 2 ** 32)))
    spelt = core(kind, names, team, rnd)
    return kind, canonical(kind, names, team), spell(spelt + padding(rnd, spelt), rnd)


def selected(raw):
    """Which namespaces, existing and created later, the engine says RAW selects."""
    sel = selectors.parse_label_selector(raw, "namespaceSelector")
    return [sel.matches(ns) for ns in EXISTING + LATER]


# --- the objects that carry a term ----------------------------------------------------

def pod_with(where, selector, key="CIS-node"):
    """A Pod whose one required anti-affinity term (in WHERE: "spec", PA or RDE) has
    the namespaceSelector SELECTOR and topology KEY."""
    t = builders.term(key, {"app": "web"}, ns_selector=selector)
    p = builders.pod("web", containers=[builders.container()])
    if where == "spec":
        p["spec"]["affinity"] = {"podAntiAffinity": {REQ: [t]}}
    else:
        value = {"podAntiAffinity": {REQ: [t]}} if where == PA else {"podAntiAffinity": [t]}
        p["metadata"]["annotations"] = {where: json.dumps(value)}
    return p


def carrier(kind, where, selector, key="CIS-node"):
    p = pod_with(where, selector, key)
    if kind == "Pod":
        return p
    spec = {"selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": p["metadata"], "spec": p["spec"]}}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "web"}, "spec": spec}


def review(obj, old=None):
    group, _, version = obj.get("apiVersion", "v1").rpartition("/")
    return {"uid": "u", "kind": {"group": group, "version": version, "kind": obj.get("kind",
                                                                                    "Pod")},
            "operation": "UPDATE" if old is not None else "CREATE", "namespace": "default",
            "object": obj, "oldObject": old, "userInfo": {"username": "alice"}}


_OFFENCE = re.compile(r'([^:;\s]+): required anti-affinity over all namespaces \([^()]*\) '
                      r'with topologyKey "([^"]*)" is refused')


def verdict(obj, old=None):
    """("allowed",) or ("denied", ((path, key), ...)) of the validating webhook."""
    response = admission.validate(review(obj, old)).response
    if response["allowed"]:
        return ("allowed",)
    message = response["status"]["message"]
    assert response["status"]["code"] == 403, message
    return ("denied", tuple(_OFFENCE.findall(message)))


WHERES = ("spec", PA, RDE)
CARRIERS = ("Pod", "Deployment", "StatefulSet")


@given(selections(), st.sampled_from(WHERES), st.sampled_from(CARRIERS),
       st.sampled_from(("CIS-node", HOSTNAME)))
def test_every_spelling_of_a_selection_gets_the_canonical_verdict(sel, where, kind, key):
    what, canon, spelt = sel
    assert selected(spelt) == selected(canon), (canon, spelt)   # the generator is right
    expected = verdict(carrier(kind, where, canon, key))
    assert verdict(carrier(kind, where, spelt, key)) == expected, (canon, spelt)
    refused = what in OPEN_KINDS and key != HOSTNAME
    assert (expected[0] == "denied") == refused
    if refused:
        assert len(expected[1]) == 1 and expected[1][0][1] == key


@given(selections(), st.sampled_from(WHERES), st.sampled_from(CARRIERS))
def test_an_update_is_judged_by_meaning_not_spelling(sel, where, kind):
    what, canon, spelt = sel
    before = carrier(kind, where, None)           # the pod's own namespace: no offence
    assert verdict(carrier(kind, where, spelt), before) == \
        verdict(carrier(kind, where, canon), before)
    # the same selection respelt is no new problem, either way round
    assert verdict(carrier(kind, where, spelt), carrier(kind, where, canon)) == ("allowed",)
    assert verdict(carrier(kind, where, canon), carrier(kind, where, spelt)) == ("allowed",)
    if what in OPEN_KINDS:
        assert verdict(carrier(kind, where, spelt), before)[0] == "denied"


# --- the measured defect: spellings of "all namespaces" that were admitted --------------

EVERY_NAMESPACE = [
    {"matchExpressions": [expr(K, "Exists")]},
    {"matchExpressions": [expr("absent.example.com/never", "DoesNotExist")]},
    {"matchExpressions": [expr(K, "NotIn", ["x"])]},
    {"matchExpressions": [expr(K, "NotIn", ["default"])]},     # all but the pod's own
    {"matchExpressions": [expr(LABEL, "NotIn", ["red"])]},
]


@pytest.mark.parametrize("where", WHERES)
@pytest.mark.parametrize("selector", EVERY_NAMESPACE, ids=json.dumps)
def test_selectors_that_reach_every_namespace_are_refused(selector, where):
    got = verdict(carrier("Deployment", where, selector))
    assert got[0] == "denied" and got[1][0][1] == "CIS-node", got
    message = admission.validate(review(pod_with(where, selector))).response["status"]["message"]
    assert ("(its namespaceSelector selects every namespace but those it excludes) with "
            'topologyKey "CIS-node" is refused') in message


@pytest.mark.parametrize("selector", [
    {"matchExpressions": [expr(K, "In", list(NAMES) + ["bare"])]},  # every name there is
    {"matchLabels": {LABEL: "red"}},
    {"matchExpressions": [expr(LABEL, "Exists"), expr(LABEL, "NotIn", ["red"])]},
    {"matchExpressions": [expr(K, "DoesNotExist")]},                 # no namespace at all
], ids=json.dumps)
def test_selectors_that_pick_namespaces_are_admitted(selector):
    """Enumerations and label groups reach only namespaces someone named or labelled for
    them, not those created later (``webhook.namespaces``): as ``namespaces: [...]``."""
    assert verdict(carrier("Pod", "spec", selector)) == ("allowed",)


def test_the_probe_name_is_never_one_the_selector_lists():
    listed = [namespaces.PROBE_PREFIX + str(i) for i in range(4)]
    sel = selectors.parse_label_selector(
        {"matchExpressions": [expr(K, "NotIn", listed[:2]), expr(K, "In", listed[2:])]}, "s")
    assert namespaces.unlisted_name(sel) not in listed
    assert not namespaces.spans_all_namespaces(sel)     # In: only the names it lists


# --- malformed selectors stay errors that name their field ------------------------------

SPEC = "spec.template.spec.affinity.podAntiAffinity.%s[0].namespaceSelector" % REQ


@pytest.mark.parametrize("selector,field,why", [
    ({"matchExpressions": [expr(K, "Bogus", ["a"])]}, ".matchExpressions[0].operator",
     "'Bogus' is not a valid operator"),
    ({"matchExpressions": [expr(K, "NotIn", [])]}, ".matchExpressions[0].values",
     "values set can't be empty"),
    ({"matchExpressions": [expr(K, "Gt", ["1"])]}, "", "Gt/Lt are not supported"),
    ({"matchLabels": {K: "not a name!"}}, ".matchLabels[%s].values[0]" % K,
     "invalid label value"),
    ("everything", "", "expected a label selector"),
])
def test_a_malformed_namespace_selector_is_refused_naming_its_field(selector, field, why):
    response = admission.validate(review(carrier("Deployment", "spec", selector))).response
    message = response["status"]["message"]
    assert response["allowed"] is False and response["status"]["code"] == 403, message
    assert message.startswith("Deployment web: field %s%s: " % (SPEC, field)), message
    assert why in message
    note = admission.validate(review(carrier("Deployment", PA, selector))).response
    assert ("field spec.template.metadata.annotations[%s].podAntiAffinity.%s[0]."
            "namespaceSelector" % (PA, REQ)) in note["status"]["message"]
