"""Fuzzing what a pod creator writes and the node agent reads (tests/fuzzing.py): the
CRI-RM and NRI affinity annotations (YAML decoding, expressions, globs, the caps) and
the ``hwaffinity.io/numa`` record. Random text and valid annotations with random edits;
only the project's input errors escape, within the time and memory bound."""
from hypothesis import example, given, strategies as st

import fuzzing
from agent import hostile
from tacker_hwaffinity.agent.node import recorded_grant
from tacker_hwaffinity.numa import affinity, decode, glob
from tacker_hwaffinity.numa.subjects import Pod

CR = "cri-resource-manager.intel.com/"
NRI = "resource-policy.nri.io/"
VALID = [
    "c: [d, e]",
    "c:\n- scope: {key: pod/namespace, operator: In, values: [a, b]}\n"
    "  match: {key: ':,-pod/name,name', operator: MatchesAny, values: ['x*-?', '[a-c]*']}\n"
    "  weight: 50",
    "c:\n- &a {match: {key: labels/app, operator: NotIn, values: [1, yes, 0x1F, 2.50]}}\n"
    "- *a\nd:\n- <<: *a\n  weight: -3",
    "c:\n- match: {key: tags/x, operator: Exists}\n- match: {operator: AlwaysTrue}",
    "c:\n- match: {key: name, operator: MatchesNone, values: ['[^a]\\\\*']}",
]
SEEDS = VALID + [hostile.issue_36_annotation()] + \
    sorted(hostile.worst_admitted_annotations().values())
ALPHABET = st.sampled_from(list("{}[]:,-&*<>!'\"#|\n \t\\/?^1x\u263a"))
PIECES = st.sampled_from(["0x", "1" * 40, "&a ", "*a", "<<: ", "- ", "!!int ", "~"])


@st.composite
def mutated(draw, seeds=SEEDS):
    """A seed annotation with a few random edits: insertions, deletions, replacements."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(0, 6))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 8))
        piece = draw(st.text(ALPHABET, max_size=3) | st.text(max_size=4) | PIECES)
        text = text[:at] + piece + text[at + cut:]
    return text


ANNOTATION = st.one_of(mutated(), st.text(max_size=300),
                       st.text(ALPHABET, max_size=200))


def _read(annotations):
    parsed = affinity.pod_affinities(Pod("p", annotations=annotations, source="fuzz"))
    for affs in parsed.values():
        for a in affs:
            a.scope.evaluate(_SUBJECT)
            a.match.evaluate(_SUBJECT)
    return parsed


decode.go_float32_string(2.5)      # its first call imports numpy: not the parser's time
_POD = Pod("p" * 60, "ns", "uid", labels={"app": "a" * 63})
_SUBJECT = _POD.add_container("c" * 63)


@given(ANNOTATION, st.sampled_from([CR + "affinity", CR + "anti-affinity", NRI + "affinity"]))
@example("c:\n- match: {key: name, operator: In, values: [x]}\n  weight: " + "1" * 401,
         CR + "affinity")
@example("c:\n- match: {key: name, operator: In, values: [0x%s]}" % ("f" * 300),
         CR + "affinity")
@example("c: [%s]" % ("1" * 401), CR + "affinity")
@example(hostile.issue_36_annotation(), CR + "affinity")
@example("c:\n- &a {match: {key: labels/app, operator: In, values: [1]}}\nd:\n- *a: *a\n",
         CR + "affinity")      # an alias as a mapping key: AttributeError, found in CI
def test_fuzz_affinity_annotations(text, key):
    fuzzing.bounded(_read, {key: text})


@given(st.text(st.sampled_from(list("0123456789abcdefxXoObB+-._eE")), max_size=80))
@example("1" * 401)
@example("0x" + "f" * 300)
@example("1" * 5000)
def test_fuzz_yaml_plain_scalars(text):
    fuzzing.bounded(decode.resolve_plain, text)


@given(st.text(st.sampled_from(list("ab/*?[]^-\\!")), max_size=decode.MAX_STRING),
       st.text(st.sampled_from(list("ab/-!^]")), max_size=253))
@example("*a" * 127 + "*b", "a" * 253)
@example("*" + "[a-z]" * 50 + "b*c", "a" * 253)
def test_fuzz_globs(pattern, name):
    fuzzing.bounded(glob.match, pattern, name)


RECORDS = ['{"c": {"pool": "NUMA node #0", "exclusiveCpus": "8-35", "mems": "0", '
           '"cpuType": "normal"}}', '{"c": {"error": "x"}}',
           '{"c": {"pool": "p", "sharedMilliCpu": 500}}']


@given(st.one_of(mutated(RECORDS), st.text(max_size=200)), st.sampled_from(["c", "d"]))
@example('{"c": {"pool": "p", "exclusiveCpus": "0-99999999999999999"}}', "c")
@example("[" * 3000, "c")
@example('{"c": {"pool": "p", "exclusiveCpus": "' + "0-65536," * 500 + '0"}}', "c")
def test_fuzz_numa_record(text, name):
    fuzzing.bounded(recorded_grant, text, name)
