"""Expressions: key resolution, joint keys, operators, validation (upstream test tables)."""
import pytest
from hypothesis import given, strategies as st

from tacker_hwaffinity.numa.expression import (
    CRIRM, NRI, Expression, ExpressionError, clean_path, resolve, split_keys)
from tacker_hwaffinity.numa.subjects import Pod


class Fake:
    """The upstream test 'evaluable': name, namespace, qosclass, labels, tags, pod."""

    def __init__(self, name, ns, qos, labels, tags, parent=None):
        self.d = {"name": name, "namespace": ns, "qosclass": qos, "labels": labels,
                  "tags": tags}
        self.parent = parent

    def eval_key(self, key):
        if key == "pod":
            return self.parent
        v = self.d.get(key)
        return v


POD = Fake("P1", "pns", "pqos", {"l1": "plone", "l2": "pltwo", "l5": "plfive"}, None)
C1 = Fake("C1", "cns", "cqos", {"l1": "clone", "l2": "cltwo", "l3": "clthree"},
          {"t1": "ctone", "t2": "cttwo", "t3": "ctthree"}, POD)

RESOLVE_TABLE = [
    ("name", "C1", True), ("namespace", "cns", True), ("qosclass", "cqos", True),
    ("labels/l1", "clone", True), ("labels/l2", "cltwo", True), ("labels/l3", "clthree", True),
    ("labels/l4", "", False), ("tags/t1", "ctone", True), ("tags/t2", "cttwo", True),
    ("tags/t3", "ctthree", True), ("tags/t4", "", False), ("pod/labels/l1", "plone", True),
    ("pod/labels/l2", "pltwo", True), ("pod/labels/l3", "", False),
    ("pod/labels/l4", "", False), ("pod/labels/l5", "plfive", True),
    (":,-pod/qosclass,pod/namespace,pod/name,name", "", False),
]


@pytest.mark.parametrize("flavor", [CRIRM, NRI])
@pytest.mark.parametrize("key,value,found", RESOLVE_TABLE)
def test_resolve_ref_table(flavor, key, value, found):
    assert resolve(C1, key, flavor) == (value, found)


@pytest.mark.parametrize("flavor", [CRIRM, NRI])
def test_key_value_of_joint_key(flavor):
    e = Expression(":,-pod/qosclass,pod/namespace,pod/name,name", "Equals", [], flavor)
    assert e.key_value(C1) == ("pqos-pns-P1-C1", True)


SUB = Fake("C1", "cns", "cqos", {"l1": "clone", "l2": "cltwo", "l3": "clthree"},
           {"t1": "ctone", "t2": "cttwo", "t4": "ctfour"}, POD)
OPS = ["Equals", "NotEqual", "In", "NotIn"]
SIMPLE_TABLE = [  # key, values per op, results per op (upstream TestSimpleOperators)
    ("name", [["C1"], ["C1"], ["foo", "C1"], ["foo"]], [1, 0, 1, 1]),
    ("pod/name", [["P1"], ["P1"], ["foo", "P1"], ["foo"]], [1, 0, 1, 1]),
    ("namespace", [["cns"], ["cns"], ["foo", "cns"], ["foo"]], [1, 0, 1, 1]),
    ("pod/namespace", [["pns"], ["pns"], ["foo", "pns"], ["pns"]], [1, 0, 1, 0]),
    ("qosclass", [["cqos"], ["cqos"], ["foo", "cqos"], ["foo"]], [1, 0, 1, 1]),
    ("pod/qosclass", [["pqos"], ["pqos"], ["foo", "pqos"], ["pqos"]], [1, 0, 1, 0]),
    ("labels/l1", [["clone"], ["clone"], ["foo", "clone"], ["foo"]], [1, 0, 1, 1]),
    ("labels/l2", [["cltwo"], ["cltwo"], ["foo", "cltwo"], ["foo"]], [1, 0, 1, 1]),
    ("labels/l3", [["clthree"], ["clthree"], ["foo", "clthree"], ["clthree"]], [1, 0, 1, 0]),
    ("labels/l4", [["clfour"], ["clfour"], ["foo", "clfour"], ["foo"]], [0, 1, 0, 1]),
    ("tags/t1", [["ctone"], ["ctone"], ["foo", "ctone"], ["foo"]], [1, 0, 1, 1]),
    ("tags/t2", [["cttwo"], ["cttwo"], ["foo", "cttwo"], ["foo"]], [1, 0, 1, 1]),
    ("tags/t3", [["ctthree"], ["ctthree"], ["foo", "ctthree"], ["foo"]], [0, 1, 0, 1]),
    ("tags/t4", [["ctfour"], ["ctfour"], ["foo", "ctfour"], ["ctfour"]], [1, 0, 1, 0]),
    ("pod/labels/l1", [["plone"], ["plone"], ["foo", "plone"], ["foo"]], [1, 0, 1, 1]),
    ("pod/labels/l2", [["pltwo"], ["pltwo"], ["foo", "pltwo"], ["foo"]], [1, 0, 1, 1]),
    ("pod/labels/l3", [["plthree"], ["plthree"], ["foo", "plthree"], ["foo"]], [0, 1, 0, 1]),
    ("pod/labels/l4", [["plfour"], ["plfour"], ["foo", "plfour"], ["foo"]], [0, 1, 0, 1]),
    ("pod/labels/l5", [["plfive"], ["plfive"], ["foo", "plfive"], ["foo"]], [1, 0, 1, 1]),
]


@pytest.mark.parametrize("flavor", [CRIRM, NRI])
@pytest.mark.parametrize("key,values,results", SIMPLE_TABLE)
def test_simple_operators_table(flavor, key, values, results):
    for op, vals, expected in zip(OPS, values, results):
        e = Expression(key, op, vals, flavor)
        e.validate()
        assert e.evaluate(SUB) is bool(expected), (key, op, vals)


def _matching_subjects():
    def pod(n, ns, q):
        return Fake(n, ns, q, {"l1": "plv1", "l2": "plv2", "l5": "plv5"}, None)
    lab = {"l1": "clv1", "l2": "clv2", "l3": "clv3"}

    def ctr(n, q, t2, p, ns="cns1"):
        return Fake(n, ns, q, lab, {"t1": "ctv1", "t2": t2, "t4": "ctv4"}, p)
    p1, p2, p3 = pod("P1", "pns1", "pqos1"), pod("P2", "pns2", "pqos2"), pod("P3", "pns3", "pqos3")
    return [ctr("C11", "cqos11", "tag2", p1), ctr("C12", "cqos12", "foo", p1),
            ctr("C12", "cqos13", "ctv2", p1), ctr("C21", "cqos21", "tag2", p2),
            ctr("C22", "cqos22", "ctv2", p2), ctr("C23", "cqos23", "foo", p2),
            ctr("C3", "cqos3", "tag2", p3, "cns3")]


@pytest.mark.parametrize("flavor", [CRIRM, NRI])
@pytest.mark.parametrize("key,pattern,expected", [
    (":,:pod/qosclass,pod/namespace,pod/name,qosclass,name", "pqos2:*:*:*:*",
     ["C21", "C22", "C23"]),
    ("tags/t2", "[tf][ao][go]*", ["C11", "C12", "C21", "C23", "C3"]),
])
def test_matching_table(flavor, key, pattern, expected):
    e = Expression(key, "Matches", [pattern], flavor)
    got = [s.d["name"] for s in _matching_subjects() if e.evaluate(s)]
    assert got == expected


def _container():
    pod = Pod("web-0", "prod", uid="u-1", qosclass="Burstable", labels={"app": "web"})
    return pod.add_container("nginx", cid="abc")


@pytest.mark.parametrize("key,value,found", [
    (":pod/namespace:pod/name:name", "prod:web-0:nginx", True),
    (":,-pod/namespace,name", "prod-nginx", True),
    (":|+name|namespace", "nginx+prod", True),
    (":::name:namespace", "nginx:prod", True),
    (":name", "nginx", True),
    ("::name", ":nginx", True),
    (":name:labels/nope:namespace", "nginx::prod", True),
    (":labels/a:labels/b", ":", False),
    (":,/name,namespace", "", False),
    (":ab", "", False),
    (":pod/qosclass:pod/name:name", "Burstable:web-0:nginx", True),
])
def test_joint_keys_reference_examples(key, value, found):
    for flavor in (CRIRM, NRI):
        assert Expression(key, "Exists", [], flavor).key_value(_container()) == (value, found)


@pytest.mark.parametrize("key,crirm,nri", [
    ("name", ("nginx", True), ("nginx", True)),
    ("qosclass", ("Burstable", True), ("Burstable", True)),
    ("pod/qosclass", ("Burstable", True), ("Burstable", True)),
    ("id", ("abc", True), ("abc", True)),
    ("pod/uid", ("u-1", True), ("u-1", True)),
    ("uid", ("", False), ("", False)),              # not a container key
    ("pod/id", ("", False), ("", False)),           # sandbox id unknown from API objects
    ("pod/tags", ("", False), ("", False)),
    ("image", ("", False), ("", False)),
    ("io.kubernetes.container.name", ("nginx", True), ("", False)),   # dotted-label rule
    ("io.kubernetes.pod.namespace", ("prod", True), ("", False)),
    ("labels/io.kubernetes.pod.name", ("web-0", True), ("web-0", True)),
    ("pod/labels/app", ("web", True), ("web", True)),
    ("name/x/y", ("nginx", True), ("", False)),      # crirm quirk
    ("pod//name", ("web-0", True), ("web-0", True)),
    ("pod/./name", ("web-0", True), ("web-0", True)),
    ("pod/../name", ("nginx", True), ("nginx", True)),
    ("name/", ("nginx", True), ("nginx", True)),
    ("", ("", False), ("", False)),
    ("/", ("", False), ("", False)),
    ("pod", ("", False), ("", False)),
])
def test_container_keys_by_flavor(key, crirm, nri):
    c = _container()
    assert resolve(c, key, CRIRM) == crirm
    assert resolve(c, key, NRI) == nri


def test_label_keys_with_slash_only_in_nri():
    pod = Pod("p", labels={"example.com/team": "a"})
    c = pod.add_container("c")
    assert resolve(c, "pod/labels/example.com/team", NRI) == ("a", True)
    assert resolve(c, "pod/labels/example.com/team", CRIRM) == ("", False)


def test_pod_subject_keys():
    pod = Pod("p", "ns", uid="u", qosclass="Guaranteed")
    assert resolve(pod, "uid") == ("u", True)
    assert resolve(pod, "labels/io.kubernetes.pod.uid") == ("u", True)
    assert resolve(pod, "tags/x") == ("", False)
    assert resolve(pod, "pod/name") == ("", False)


@pytest.mark.parametrize("p,expected", [
    ("a//b", "a/b"), ("pod/./name", "pod/name"), ("pod/../name", "name"), ("a/", "a"),
    ("", "."), ("/", "/"), ("//a", "/a"), ("///a", "/a"), ("../a", "../a")])
def test_clean_path(p, expected):
    assert clean_path(p) == expected


# Operator semantics, found and not found (reference table 2.4)
OPERATOR_TABLE = [
    ("Equals", ["nginx"], True, False), ("Equals", ["*"], True, False),
    ("Equals", ["other"], False, False),
    ("NotEqual", ["nginx"], False, True), ("NotEqual", ["*"], True, True),
    ("In", ["a", "nginx"], True, False), ("In", ["*"], True, False), ("In", [], False, False),
    ("NotIn", ["a", "nginx"], False, True), ("NotIn", [], True, True),
    ("Exists", [], True, False), ("NotExist", [], False, True), ("NotExists", [], False, True),
    ("AlwaysTrue", [], True, True),
    ("Matches", ["ng*"], True, False), ("Matches", ["["], False, False),
    ("MatchesNot", ["ng*"], False, True), ("MatchesNot", ["["], True, True),
    ("MatchesAny", ["[", "x*", "n?inx"], True, False), ("MatchesAny", [], False, False),
    ("MatchesNone", ["x*", "n*"], False, True), ("MatchesNone", [], True, True),
    ("MatchesNone", ["["], True, True),
]


@pytest.mark.parametrize("op,values,when_found,when_missing", OPERATOR_TABLE)
def test_operator_found_and_missing(op, values, when_found, when_missing):
    c = _container()
    for flavor in (CRIRM, NRI):
        e = Expression("name", op, values, flavor)
        e.validate()
        assert e.evaluate(c) is when_found
        missing = Expression("labels/none", op, values, CRIRM)
        missing.validate()
        assert missing.evaluate(c) is when_missing


def test_empty_value_exists_and_equals_empty():
    pod = Pod("p", labels={"e": ""})
    c = pod.add_container("c")
    assert Expression("pod/labels/e", "Exists").evaluate(c)
    assert Expression("pod/labels/e", "Equals", [""]).evaluate(c)
    assert not Expression("pod/labels/x", "Equals", [""]).evaluate(c)


def test_not_exists_alias_normalised():
    e = Expression("name", "NotExists")
    e.validate()
    assert e.op == "NotExist" and e.to_dict()["operator"] == "NotExist"


@pytest.mark.parametrize("op,values,ok", [
    ("Equals", [], False), ("Equals", ["a", "b"], False), ("NotEqual", [], False),
    ("Matches", [], False), ("MatchesNot", ["a", "b"], False), ("Exists", ["a"], False),
    ("NotExist", ["a"], False), ("In", [], True), ("NotIn", [], True), ("MatchesAny", [], True),
    ("MatchesNone", [], True), ("AlwaysTrue", ["x"], True), ("", [], False),
    ("equals", ["a"], False), ("Bogus", [], False)])
def test_validation_crirm(op, values, ok):
    e = Expression("name", op, values, CRIRM)
    if ok:
        e.validate()
    else:
        with pytest.raises(ExpressionError):
            e.validate()


@pytest.mark.parametrize("key,op,values,ok", [  # upstream nri TestValidation
    ("id", "Exists", [], True), ("uid", "Exists", [], True), ("name", "Exists", [], True),
    ("namespace", "Exists", [], True), ("qosclass", "Exists", [], True),
    ("labels/io.kubernetes.application", "Exists", [], True), ("pod/name", "Exists", [], True),
    ("pod", "Exists", [], False), ("pod/foo", "Exists", [], False),
    ("name/foo", "Exists", [], False), ("name", "Equals", [], False),
    ("name", "NotEqual", ["a", "b"], False), ("name", "Matches", [], False),
    ("name", "MatchesNot", ["a", "b"], False), ("name", "AlwaysTrue", ["a"], False),
    ("", "AlwaysTrue", [], False), ("io.kubernetes.pod.name", "Exists", [], False),
    ("image", "Exists", [], False), ("labels", "Exists", [], False),
    ("pod/labels/example.com/x", "Exists", [], True), (":name:pod/name", "Exists", [], True),
    (":name:image", "Exists", [], False), ("/name", "Exists", [], True),
    ("pod/pod/name", "Exists", [], True)])
def test_validation_nri(key, op, values, ok):
    e = Expression(key, op, values, NRI)
    if ok:
        e.validate()
    else:
        with pytest.raises(ExpressionError):
            e.validate()
    Expression(key, "Exists", [], CRIRM).validate()     # crirm validates no keys


def test_always_true_does_not_look_up_key():
    class Exploding:
        def eval_key(self, key):
            raise AssertionError("looked up")
    assert Expression("name", "AlwaysTrue").evaluate(Exploding())


@pytest.mark.parametrize("key,keys,vsep", [
    (":a:b", ["a", "b"], ":"), (":ab", [":ab"], ""), ("abcd", ["abcd"], ""),
    (":,-a,b", ["a", "b"], "-"), (":,/a,b", [",/a,b"], ":"), (":\u00e9", [":\u00e9"], "")])
def test_split_keys(key, keys, vsep):
    assert split_keys(key) == (keys, vsep)


@given(st.text(max_size=20), st.sampled_from(["crirm", "nri"]))
def test_resolve_never_raises(key, flavor):
    value, found = resolve(_container(), key, flavor)
    assert isinstance(value, str) and found in (True, False)
    assert found or value == ""
