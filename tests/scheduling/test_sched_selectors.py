"""Label selector and node selector primitives (apimachinery semantics + Gt/Lt)."""
import pytest

from tacker_hwaffinity.scheduling import selectors as s


def sel(raw):
    return s.parse_label_selector(raw, "labelSelector")


def expr(key, op, values=None):
    e = {"key": key, "operator": op}
    if values is not None:
        e["values"] = values
    return {"matchExpressions": [e]}


def test_nil_selector_matches_nothing_and_empty_matches_everything():
    assert not sel(None).matches({})
    assert not sel(None).matches({"a": "b"})
    assert sel({}).matches({})
    assert sel({"matchLabels": {}, "matchExpressions": []}).matches({"x": "y"})


@pytest.mark.parametrize("op,values,labels,want", [
    ("In", ["a", "b"], {"k": "a"}, True),
    ("In", ["a"], {"k": "c"}, False),
    ("In", ["a"], {}, False),
    ("NotIn", ["a"], {}, True),
    ("NotIn", ["a"], {"k": "a"}, False),
    ("NotIn", ["a"], {"k": "b"}, True),
    ("Exists", None, {"k": ""}, True),
    ("Exists", None, {}, False),
    ("DoesNotExist", None, {}, True),
    ("DoesNotExist", None, {"k": "x"}, False),
    ("Gt", ["20"], {"k": "21"}, True),
    ("Gt", ["20"], {"k": "20"}, False),
    ("Gt", ["20"], {"k": "0206"}, True),
    ("Gt", ["20"], {"k": "abc"}, False),
    ("Gt", ["20"], {}, False),
    ("Gt", ["20"], {"k": "99999999999999999999"}, False),  # overflows int64
    ("Lt", ["30"], {"k": "29"}, True),
    ("Lt", ["30"], {"k": "30"}, False),
    ("Lt", ["30"], {"k": "1.5"}, False),
])
def test_requirement_matching(op, values, labels, want):
    assert sel(expr("k", op, values)).matches(labels) is want


def test_requirements_are_anded_and_match_labels_is_equality():
    x = sel({"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["fe"]}]})
    assert x.matches({"app": "web", "tier": "fe"})
    assert not x.matches({"app": "web"})
    assert not x.matches({"tier": "fe"})


def test_gt_and_lt_form_a_range():
    x = sel({"matchExpressions": [{"key": "foo", "operator": "Gt", "values": ["20"]},
                                  {"key": "foo", "operator": "Lt", "values": ["30"]}]})
    assert [v for v in range(15, 35) if x.matches({"foo": str(v)})] == list(range(21, 30))
    assert x.uses_extension()


@pytest.mark.parametrize("raw,where,what", [
    (expr("k", "Bogus", ["a"]), "operator", "not a valid"),
    (expr("k", "In", []), "values", "can't be empty"),
    (expr("k", "NotIn"), "values", "can't be empty"),
    (expr("k", "Exists", ["a"]), "values", "must be empty"),
    (expr("k", "Gt", ["a"]), "values[0]", "must be an integer"),
    (expr("k", "Gt", ["1", "2"]), "values", "exactly one value"),
    (expr("k", "Lt", []), "values", "exactly one value"),
    (expr("k", "Gt", ["-1"]), "values[0]", "invalid label value"),
    (expr("k", "In", ["{{.bad-value.}}"]), "values[0]", "invalid label value"),
    (expr("bad key!", "Exists"), "key", "invalid label key"),
    ({"matchLabels": {"k": "invalid value: ___@#$%^"}}, "matchLabels[k]", "invalid label value"),
    ({"matchLabels": {"a/b/c": "x"}}, "key", "invalid label key"),
    ({"matchExpressions": "oops"}, "matchExpressions", "expected a list"),
    ({"matchLabel": {}}, "labelSelector", "unknown field"),
])
def test_invalid_selectors_name_the_field(raw, where, what):
    with pytest.raises(s.SelectorError) as e:
        sel(raw)
    assert where in e.value.field
    assert what in e.value.message


def node_sel(terms):
    return s.NodeSelector({"nodeSelectorTerms": terms}, "required")


def test_node_selector_terms_are_ored_and_expressions_anded():
    ns = node_sel([{"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]},
                                         {"key": "b", "operator": "Exists"}]},
                   {"matchExpressions": [{"key": "c", "operator": "In", "values": ["3"]}]}])
    assert ns.matches({"a": "1", "b": ""}, "n")
    assert not ns.matches({"a": "1"}, "n")
    assert ns.matches({"c": "3"}, "n")


@pytest.mark.parametrize("terms", [None, [], [{}], [{"matchExpressions": [], "matchFields": []}]])
def test_node_selector_without_terms_matches_no_node(terms):
    raw = {"nodeSelectorTerms": terms} if terms is not None else {}
    assert not s.NodeSelector(raw, "f").matches({"a": "b"}, "n")


def test_empty_term_is_dropped_but_other_terms_count():
    ns = node_sel([{}, {"matchExpressions": [{"key": "a", "operator": "Exists"}]}])
    assert ns.matches({"a": ""}, "n")
    assert not ns.matches({}, "n")


def test_match_fields_on_metadata_name():
    ns = node_sel([{"matchFields": [{"key": "metadata.name", "operator": "In",
                                     "values": ["n1"]}]}])
    assert ns.matches({}, "n1") and not ns.matches({}, "n2")
    notin = node_sel([{"matchFields": [{"key": "metadata.name", "operator": "NotIn",
                                        "values": ["n1"]}]}])
    assert notin.matches({}, "n2") and not notin.matches({}, "n1")


def test_node_selector_parse_errors_are_lazy_per_term():
    ns = node_sel([
        {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["x"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]},
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]},
    ])
    assert len(ns.errors) == 2
    assert "must be an integer" in ns.errors[0]
    assert "unexpected number of value (2)" in ns.errors[1]
    assert ns.matches({"zone": "z1", "a": "5"}, "a")
    assert not ns.matches({"a": "5"}, "a")


def test_node_selector_gt_lt():
    ns = node_sel([{"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["8"]}]}])
    assert ns.matches({"cores": "16"}, "n")
    assert not ns.matches({"cores": "8"}, "n")
    assert not ns.matches({"cores": "many"}, "n")
    assert not ns.matches({}, "n")
