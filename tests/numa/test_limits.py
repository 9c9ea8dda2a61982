"""What one pod's affinity annotations may ask, and what they cost (issue #36)."""
import time

import pytest

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.numa import affinity, decode

from agent import hostile

CR = "cri-resource-manager.intel.com/"
HUGE_DECIMAL = "1" * 401
HUGE_HEX = "0x" + "f" * 300


def affinities(text, kind="affinity"):
    return affinity.annotation_affinities({CR + kind: text}, "p")


@pytest.mark.parametrize("number", [HUGE_DECIMAL, HUGE_HEX, "-" + HUGE_DECIMAL,
                                    "0b" + "1" * 65, "0o" + "7" * 30, "1" * 5000])
def test_a_number_out_of_go_range_is_a_string_as_go_yaml_reads_it(number):
    """Issue #36: these raised OverflowError from float(n), which nothing caught; go-yaml
    keeps such a plain scalar as its text (strconv's range error)."""
    assert decode.resolve_plain(number) == number
    for text in ("c:\n- match: {key: name, operator: In, values: [%s]}" % number,
                 "c:\n- match: {key: name, operator: In, values: [x]}\n  weight: %s" % number,
                 "c: [%s]" % number, "%s: [c]" % number):
        try:
            affinities(text)
        except InputError:
            pass


def test_a_number_out_of_range_within_the_caps_reads_as_upstream_reads_it():
    number = "0x" + "f" * 250
    parsed = affinities("c:\n- match: {key: name, operator: In, values: [%s]}" % number)
    assert parsed["c"][0].match.values == [number]
    with pytest.raises(InputError, match="weight: expected an integer, got a string"):
        affinities("c:\n- match: {key: name, operator: In, values: [x]}\n  weight: %s"
                   % number)


def test_numbers_go_reads_as_numbers_are_still_numbers():
    assert decode.resolve_plain("0x10") == 16
    assert decode.resolve_plain(str(2 ** 64 - 1)) == 2 ** 64 - 1
    assert decode.resolve_plain("1" * 30) == float("1" * 30)       # ParseFloat
    assert decode.resolve_plain("1e400") == "1e400"                 # its range error


def _values(n, width=3):
    return "[%s]" % ",".join("v%0*d" % (width, i) for i in range(n))


@pytest.mark.parametrize("text, message", [
    ("c:\n- match: {key: name, operator: In, values: %s}" % _values(65),
     "container 'c', affinity #1, match.values: 65 values (at most 64)"),
    ("c:\n" + "- match: {key: name, operator: In, values: [x]}\n" * 65,
     "container 'c', affinity #65: more than 64 affinities in the pod's annotations"),
    ("c:\n" + "- match: {key: name, operator: In, values: %s}\n" % _values(64) * 5,
     "container 'c', affinity #5: more than 256 expression values"),
    ("c:\n" + "- match: {key: name, operator: In, values: %s}\n" % _values(40, 60) * 2,
     "container 'c', affinity #2: more than 4096 characters of expression keys"),
    ("c: %s" % _values(65), "container 'c': 65 partners (at most 64)"),
    ("c:\n- match: {key: name, operator: In, values: [%s]}" % ("x" * 257),
     "a value of 257 characters (at most 256)"),
    ("c: [%s]" % ",".join(["x" * 200] * 45), "the text is 9"),
    (hostile.issue_36_annotation(), "the text is 16296 characters long; at most 8192"),
])
def test_each_cap_refuses_with_a_message_naming_the_annotation(text, message):
    start = time.monotonic()
    with pytest.raises(InputError) as e:
        affinities(text)
    assert time.monotonic() - start < 0.5
    assert str(e.value).startswith("field metadata.annotations[%saffinity]: " % CR)
    assert message in str(e.value)


def test_the_caps_are_the_pods_all_annotations_together():
    half = "c:\n" + "- match: {key: name, operator: In, values: [x]}\n" * 40
    affinities(half)
    with pytest.raises(InputError, match="anti-affinity.*affinity #25: more than 64 "):
        affinity.annotation_affinities({CR + "affinity": half, CR + "anti-affinity": half},
                                       "p")


def test_a_large_real_annotation_is_well_within_the_caps():
    """A CNF pinning 8 containers to each other and away from 16 named pods."""
    names = ["worker-%d" % i for i in range(8)]
    pull = "\n".join("%s:\n- scope: {key: namespace, operator: Equals, values: [cnf]}\n"
                     "  match: {key: name, operator: In, values: [%s]}\n  weight: 10"
                     % (n, ", ".join(names)) for n in names)
    push = "\n".join("%s:\n- scope: {operator: AlwaysTrue}\n  match: {key: pod/name, "
                     "operator: MatchesAny, values: [%s]}" % (
                         n, ", ".join("'noisy-%d-*'" % i for i in range(16))) for n in names)
    parsed = affinity.annotation_affinities({CR + "affinity": pull, CR + "anti-affinity": push},
                                            "cnf-0")
    assert sum(len(a) for a in parsed.values()) == 16


def test_a_shorthand_and_an_alias_count_what_they_expand_to():
    with pytest.raises(InputError, match="more than 4096 values after alias expansion"):
        affinities("x: &a [%s]\n" % ",".join(["'*b'"] * 64)
                   + "\n".join("c%d: *a" % i for i in range(64)))
