"""Annotation decoding, shorthand, sign/clamp, pod scope, effective affinity."""
import pytest
from hypothesis import given, settings, strategies as st

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.numa import affinity as aff
from tacker_hwaffinity.numa.decode import DecodeError
from tacker_hwaffinity.numa.expression import CRIRM, NRI
from tacker_hwaffinity.numa.subjects import Pod

CR = "cri-resource-manager.intel.com/"
NR = "resource-policy.nri.io/"


def parse(text, sign=1, flavor=CRIRM, pod="testpod"):
    return aff.parse_annotation(text, pod, sign, flavor)


def pairs(result):
    return {name: {v for a in affs for v in a.match.values} for name, affs in result.items()}


@pytest.mark.parametrize("source,expected", [   # upstream TestSimpleParsingSymmetry
    ("c1: [ c2 ]", {"c1": {"c2"}, "c2": {"c1"}}),
    ("c1: [ c2, c3, c4, c5 ]", {"c1": {"c2", "c3", "c4", "c5"}, "c2": {"c1"}, "c3": {"c1"},
                                "c4": {"c1"}, "c5": {"c1"}}),
    ("\nc1: [ c2 ]\nc2: [ c3, c4, c5 ]\nc4: [ c5 ]\n",
     {"c1": {"c2"}, "c2": {"c1", "c3", "c4", "c5"}, "c3": {"c2"}, "c4": {"c2", "c5"},
      "c5": {"c2", "c4"}}),
])
def test_shorthand_symmetry(source, expected):
    assert pairs(parse(source)) == expected


def test_shorthand_expansion_shape():
    r = parse("c3: [c1]\nc4: [c2, c3, c2]", sign=-1)
    (a,) = r["c3"]
    assert a.weight == -1
    assert a.scope.to_dict() == {"key": "io.kubernetes.pod.name", "operator": "Equals",
                                 "values": ["testpod"]}
    assert a.match.to_dict() == {"key": "io.kubernetes.container.name", "operator": "In",
                                 "values": ["c1", "c4"]}
    assert r["c1"][0].match.op == "Equals"
    assert r["c4"][0].match.values == ["c2", "c3"]      # duplicates collapse
    n = parse("a: [b]", flavor=NRI)["a"][0]
    assert (n.scope.key, n.match.key) == ("pod/name", "name")


@pytest.mark.parametrize("text", ["c1: []", "c1:", "", "   \n", "~"])
def test_shorthand_empty(text):
    assert parse(text) == {} or all(v == [] for v in parse(text).values())


def test_doc_example_expands_symmetrically():
    pod = Pod("p", annotations={CR + "affinity": "container3: [ container1 ]",
                                CR + "anti-affinity": "container3: [ container2 ]\n"
                                                      "container4: [ container2, container3 ]"})
    r = aff.pod_affinities(pod)
    got = {n: [(a.weight, sorted(a.match.values)) for a in lst] for n, lst in r.items()}
    assert got == {"container1": [(1, ["container3"])],
                   "container3": [(1, ["container1"]), (-1, ["container2", "container4"])],
                   "container2": [(-1, ["container3", "container4"])],
                   "container4": [(-1, ["container2", "container3"])]}


VALID = """
  memtier-benchmark:
    - scope:
        key: pod/name
        operator: Matches
        values:
          - redis-*
      match:
        key: name
        operator: Equals
        values:
          - redis
      weight: 10
"""
INVALID = """
  memtier-benchmark:
    - scope:
      key: pod/name
      operator: Matches
      values:
        - redis-*
      match:
        key: name
        operator: Equals
        values:
          - redis
      weight: 10
"""


def test_strict_parsing_upstream():
    (a,) = parse(VALID)["memtier-benchmark"]
    assert a.weight == 10 and a.scope.key == "pod/name"
    with pytest.raises(DecodeError, match="unknown field 'key'.*line 4"):
        parse(INVALID)


def m(body, name="c"):
    return "%s:\n- %s\n" % (name, body)


@pytest.mark.parametrize("sign,weight,expected", [
    (1, None, 1), (-1, None, -1), (1, 0, 1), (-1, 0, -1), (1, 5, 5), (-1, 5, -5),
    (-1, -5, 5), (1, -5, -5), (1, 5000, 1000), (-1, 5000, -1000), (-1, -5000, 1000),
    (1, -5000, -1000), (1, 1000, 1000), (1, 2147483647, 1000)])
def test_sign_default_and_clamp(sign, weight, expected):
    w = "" if weight is None else "\n  weight: %d" % weight
    (a,) = parse(m("match: {key: name, operator: Equals, values: [x]}" + w), sign)["c"]
    assert a.weight == expected


@pytest.mark.parametrize("weight", ['"5"', "1.5", "high", "3000000000", "[1]", "true"])
def test_bad_weights(weight):
    with pytest.raises(DecodeError, match="weight"):
        parse(m("match: {key: name, operator: Equals, values: [x]}\n  weight: " + weight))


def test_integral_float_weight_is_accepted():
    (a,) = parse(m("match: {key: name, operator: Exists}\n  weight: 5.0"))["c"]
    assert a.weight == 5


@pytest.mark.parametrize("raw,expected", [
    ("yes", "true"), ("on", "true"), ("off", "false"), ("no", "false"), ("2.50", "2.5"),
    ("007", "7"), ("0x1F", "31"), ("1e3", "1000"), ("null", ""), ("'007'", "007"),
    ("1_000", "1000"), ("2001-12-14", "2001-12-14"), ("!!str 7", "7"), ("1e6", "1e+06")])
def test_scalar_coercion_to_strings(raw, expected):
    (a,) = parse(m("match: {key: name, operator: In, values: [%s]}" % raw))["c"]
    assert a.match.values == [expected]


def test_shorthand_coerces_scalars_like_upstream():
    assert pairs(parse("c: [null, 5]")) == {"c": {"", "5"}, "": {"c"}, "5": {"c"}}


def test_container_name_coercion():
    assert set(parse("yes: [007]")) == {"true", "7"}


def test_field_names_case_insensitive():
    (a,) = parse(m("MATCH: {Key: name, OPERATOR: Exists}\n  Weight: 3"))["c"]
    assert (a.match.key, a.match.op, a.weight) == ("name", "Exists", 3)


@pytest.mark.parametrize("text,message", [
    (m("match: {key: name, operator: Exists}\n  weigth: 3"), "unknown field 'weigth'"),
    (m("match: {key: name, operator: Exists, value: [a]}"), "unknown field 'value'"),
    ("c:\n- match: {key: name, operator: Exists}\nc:\n- match: {key: a, operator: Exists}",
     "duplicate key 'c'"),
    (m("match: {key: name, key: id, operator: Exists}"), "duplicate key 'key'"),
    (m("match: {key: name, Key: id, operator: Exists}"), "given twice"),
    (m("scope: {key: name, operator: Exists}"), "nil expression"),
    (m("match: null"), "nil expression"),
    (m("match: {key: name, operator: NotExists, values: [a]}"), "does not take any values"),
    (m("match: {key: name, operator: Equals}"), "requires a single value"),
    (m("match: {key: name, operator: Bogus}"), "unknown operator"),
    (m("match: {key: name, operator: Exists}\n  scope: {key: x, operator: In, values: a}"),
     "expected a list"),
    (m("match: {key: [a], operator: Exists}"), "expected a string"),
    (m("match: {key: name, operator: In, values: [{a: b}]}"), "expected a string"),
    ("c: word", "expected a list"),
    ("- a\n- b", "expected a mapping"),
    ("just a string", "expected a mapping"),
    ("c: [\n", "malformed YAML"),
    ("c:\n- match: {key: name, operator: Exists}\n- null", "cannot be null"),
    ("c:\n- match: {key: name, operator: Exists}\n- 5", "expected a mapping"),
    ("a: [b]\n---\nc: [d]", "more than one YAML document"),
])
def test_decoding_errors(text, message):
    with pytest.raises(DecodeError, match=message):
        parse(text)


def test_nri_validates_keys_crirm_does_not():
    body = m("match: {operator: AlwaysTrue}")
    assert parse(body, flavor=CRIRM)["c"][0].match.op == "AlwaysTrue"
    with pytest.raises(DecodeError, match="unknown key"):
        parse(body, flavor=NRI)


def test_pod_error_names_file_pod_annotation_container_position():
    pod = Pod("web", "prod", source="pods.yaml",
              annotations={CR + "affinity": "c1: [c2]",
                           CR + "anti-affinity": "c1:\n- match: {key: name}\n  wieght: 2"})
    with pytest.raises(InputError) as e:
        aff.pod_affinities(pod)
    s = str(e.value)
    for part in ("pods.yaml", "Pod prod/web", CR + "anti-affinity", "container 'c1'",
                 "affinity #1", "wieght", "line 3"):
        assert part in s


def test_affinity_before_anti_affinity_and_both_prefixes():
    pod = Pod("p", annotations={
        NR + "affinity": "a: [b]", CR + "anti-affinity": "a: [c]", CR + "affinity": "a: [d]"})
    r = aff.pod_affinities(pod)
    assert [(x.weight, x.match.values, x.source) for x in r["a"]] == [
        (1, ["d"], CR + "affinity"), (1, ["b"], NR + "affinity"), (-1, ["c"], CR + "anti-affinity")]


def test_identical_text_under_both_prefixes_counts_once():
    pod = Pod("p", annotations={NR + "affinity": "a: [b]", CR + "affinity": "a: [b]"})
    (a,) = aff.pod_affinities(pod)["a"]
    assert a.source == NR + "affinity" and a.match.key == "name"


def _cluster():
    p1 = Pod("farm", "default", annotations={CR + "affinity": """
peter:
- match: {key: name, operator: Equals, values: [sheep]}
  weight: 5
- match: {key: name, operator: In, values: [sheep, dog]}
  weight: 3
"""})
    for n in ("peter", "sheep", "dog"):
        p1.add_container(n)
    p2 = Pod("farm", "other")          # same name, other namespace
    p2.add_container("sheep")
    p3 = Pod("zoo", "default")
    p3.add_container("sheep")
    return p1, p2, p3


def test_effective_affinity_sums_and_pod_scope_ignores_namespace():
    p1, p2, p3 = _cluster()
    peter = p1.containers[0]
    eff = aff.evaluate(aff.pod_affinities(p1)["peter"], peter,
                       [c for p in (p1, p2, p3) for c in p.containers])
    got = {c.ref: w for c, w in eff.items()}
    assert got == {"default/farm/sheep": 8, "default/farm/dog": 3, "other/farm/sheep": 8}


def test_self_affinity_dropped_and_zero_sums_hidden():
    pod = Pod("p", annotations={CR + "affinity": "a: [a]\n"})
    a = pod.add_container("a")
    assert aff.evaluate(aff.pod_affinities(pod)["a"], a, [a]) == {}
    pod2 = Pod("q", annotations={CR + "affinity": "a: [b]", CR + "anti-affinity": "a: [b]"})
    a2, b2 = pod2.add_container("a"), pod2.add_container("b")
    assert aff.evaluate(aff.pod_affinities(pod2)["a"], a2, [a2, b2]) == {}


def test_implicit_affinities_only_without_explicit():
    pod = Pod("p")
    a = pod.add_container("a")
    assert aff.implicit_affinities(a, True, True, True) == []
    got = aff.implicit_affinities(a, False, True, True)
    assert [x.weight for x in got] == [10, 10]
    assert got[1].match.to_dict()["values"] == ["default"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_fuzz_decoder_text_never_tracebacks(text):
    pod = Pod("p", annotations={CR + "affinity": text, NR + "anti-affinity": text})
    try:
        r = aff.pod_affinities(pod)
    except InputError as e:
        assert str(e)
        return
    for affs in r.values():
        for a in affs:
            assert -1000 <= a.weight <= 1000


_scalar = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 40, 2 ** 40),
                    st.floats(allow_nan=True), st.text(max_size=8),
                    st.sampled_from(["Equals", "In", "Exists", "NotExists", "AlwaysTrue",
                                     "Matches", "name", "pod/name", "[", "*"]))
_yamlish = st.recursive(_scalar, lambda ch: st.one_of(
    st.lists(ch, max_size=4),
    st.dictionaries(st.sampled_from(["scope", "match", "weight", "key", "operator", "values",
                                     "Match", "c1", "x"]), ch, max_size=4)), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=5), _yamlish, max_size=3),
       st.sampled_from([CRIRM, NRI]), st.sampled_from([1, -1]))
def test_fuzz_structured_documents(doc, flavor, sign):
    import yaml
    text = yaml.safe_dump(doc)
    try:
        r = aff.parse_annotation(text, "p", sign, flavor)
    except DecodeError as e:
        assert str(e)
        return
    for affs in r.values():
        for a in affs:
            a.match.validate()
            a.scope.validate()
            assert -1000 <= a.weight <= 1000 and a.weight != 0


def test_alias_bomb_is_refused():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append("a%d: &a%d [%s]" % (i, i, ", ".join(["*a%d" % (i - 1)] * 10)))
    with pytest.raises(DecodeError, match="too large"):
        parse("\n".join(lines))


def test_merge_keys():
    text = "base: &b {key: name, operator: Exists}\nc:\n- match: {<<: *b}\n"
    with pytest.raises(DecodeError):        # 'base' is not a list of affinities
        parse(text)
    (a,) = parse("c:\n- match: &m {key: name, operator: Exists}\n- match: {<<: *m, "
                 "operator: NotExist}\n")["c"][1:]
    assert (a.match.key, a.match.op) == ("name", "NotExist")


def test_leading_zero_non_octal_resolves_as_float_like_go_yaml():
    # go-yaml: ParseInt("08", 0, 64) fails (not octal), ParseFloat gives 8
    from tacker_hwaffinity.numa.decode import resolve_plain
    assert resolve_plain("08") == 8.0 and isinstance(resolve_plain("08"), float)
    assert resolve_plain("010") == 8 and isinstance(resolve_plain("010"), int)
