"""The pod-creator-controlled parsers of the scheduling terms: the Gt/Lt selector numbers
and the ``hwaffinity.io/*`` JSON annotations give a result or InputError, within 50 ms of
CPU and 16 MiB (tests/fuzzing.py), on random and mutated-valid input."""
import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import fuzzing
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling import annotations, selectors
from tacker_hwaffinity.scheduling.terms import RawTerm

H = "kubernetes.io/hostname"
REQ = annotations.REQUIRED
PREF = annotations.PREFERRED
LONG_NUMBER = "9" * 4400                 # int() refuses it: ValueError past 4,300 digits
DEEP = "[" * 3000 + "]" * 3000           # json.loads recurses: RecursionError


def gt_term(value, op="Gt"):
    return {"topologyKey": H, "labelSelector": {"matchExpressions": [
        {"key": "version", "operator": op, "values": [value]}]}}


VALID_PA = json.dumps({"podAffinity": {REQ: [gt_term("3")],
                                       PREF: [{"weight": 5, "podAffinityTerm": gt_term("1")}]},
                       "podAntiAffinity": {REQ: [gt_term("9", "Lt")]}})
VALID_RDE = json.dumps({"podAntiAffinity": [gt_term("2")], "podAffinity": [],
                        "nodeAffinity": [{"matchExpressions": [
                            {"key": "cores", "operator": "Gt", "values": ["8"]}]}]})


def scheduling_terms(name, text):
    return annotations.scheduling_terms({name: text})


# -- the defects: a number past int64 and JSON nested deep are input errors --------------
@pytest.mark.parametrize("value,parsed,why", [
    (LONG_NUMBER, None, "must be an integer"), ("-" + "9" * 5000, None, "must be an integer"),
    ("0" * 5000 + "5", 5, "invalid label value")])      # Go's ParseInt takes leading zeros
def test_a_gt_value_of_thousands_of_digits_is_an_input_error(value, parsed, why):
    assert selectors.parse_int64(value) == parsed
    with pytest.raises(InputError, match=why):
        scheduling_terms(annotations.POD_AFFINITY,
                         json.dumps({"podAffinity": {REQ: [gt_term(value)]}}))
    with pytest.raises(InputError, match=why):
        scheduling_terms(annotations.REQUIRED_DURING_EXECUTION, json.dumps(
            {"nodeAffinity": [{"matchExpressions": [
                {"key": "cores", "operator": "Lt", "values": [value]}]}]}))


@pytest.mark.parametrize("name", [annotations.POD_AFFINITY,
                                  annotations.REQUIRED_DURING_EXECUTION])
def test_json_nested_thousands_deep_is_refused_naming_the_annotation(name):
    for text in (DEEP, '{"podAffinity": ' + DEEP + "}"):
        with pytest.raises(InputError, match="nested 300[01] levels deep, over the limit of 64"
                           ) as e:
            scheduling_terms(name, text)
        assert e.value.field == "metadata.annotations[%s]" % name


@pytest.mark.parametrize("text,value", [
    ("9223372036854775807", 2 ** 63 - 1), ("-9223372036854775808", -(2 ** 63)),
    ("00000000000000000000042", 42), ("+7", 7), ("-0", 0),
    ("9223372036854775808", None), ("1\n", None), ("\u0661", None), ("", None), ("+", None),
])
def test_parse_int64_is_go_parse_int(text, value):
    assert selectors.parse_int64(text) == value


# -- fuzzing --------------------------------------------------------------------------
NUMBERS = st.one_of(st.text(alphabet="+-0123456789", max_size=40),
                    st.text(alphabet="0123456789", min_size=4290, max_size=4400),
                    st.text(max_size=30))


@given(NUMBERS)
@example(LONG_NUMBER)
@example("0" * 5000 + "1")
def test_fuzz_gt_lt_numbers(text):
    fuzzing.bounded(selectors.parse_int64, text)
    fuzzing.bounded(RawTerm.parse, gt_term(text), "t", False)
    fuzzing.bounded(RawTerm.parse, gt_term(text, "Lt"), "t", False)


def _mutate(text, edits):
    """TEXT with EDITS ((position, deleted length, inserted text), ...) applied."""
    for pos, cut, insert in edits:
        pos %= len(text) + 1
        text = text[:pos] + insert + text[pos + cut:]
    return text


JSON_BITS = st.sampled_from(['"', "{", "}", "[", "]", ",", ":", "null", "1e999", LONG_NUMBER,
                             '"Gt"', '"values"', "[" * 200, "{\"a\":" * 100, "\\u0000",
                             '"matchExpressions"', '"topologyKey"', "-", "\ud800"])
EDITS = st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 30),
                           st.one_of(JSON_BITS, st.text(max_size=8))), max_size=6)
ANNOTATION_TEXT = st.one_of(
    st.text(max_size=300),
    st.builds(_mutate, st.sampled_from([VALID_PA, VALID_RDE]), EDITS),
    st.builds(lambda n, inner: "[" * n + inner + "]" * n, st.integers(0, 4000),
              st.sampled_from(["", "1", "{}"])))


@given(st.sampled_from([annotations.POD_AFFINITY, annotations.REQUIRED_DURING_EXECUTION]),
       ANNOTATION_TEXT)
@example(annotations.POD_AFFINITY, DEEP)
@example(annotations.REQUIRED_DURING_EXECUTION, DEEP)
@example(annotations.POD_AFFINITY, VALID_PA.replace('"3"', json.dumps(LONG_NUMBER)))
@example(annotations.REQUIRED_DURING_EXECUTION, VALID_RDE.replace('"8"', json.dumps(LONG_NUMBER)))
def test_fuzz_term_annotations(name, text):
    fuzzing.bounded(scheduling_terms, name, text)
    fuzzing.bounded(annotations.Rules.parse, text)
    fuzzing.bounded(annotations.parse_pod_affinity, text)
    assert isinstance(annotations.malformed({name: text}), (str, type(None)))
