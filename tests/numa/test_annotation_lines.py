"""An affinity annotation's error gives the line of the FILE (``numa.annotation_place``):
where the annotation's value starts plus the line inside it, when each line of the value
is a line of the file (a literal block, a value on one line); else the position inside
the value and the annotation's own line."""
import io
import json
import sys

import pytest
from hypothesis import given, settings, strategies as st

from tacker_hwaffinity.cli.main import main
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.numa import affinity as aff
from tacker_hwaffinity.numa.annotation_place import Place, SourceText
from tacker_hwaffinity.numa.subjects import load_pods
from tacker_hwaffinity.objects.yamlio import parse_documents

CR = "cri-resource-manager.intel.com/"
SPEC = "spec:\n  containers: [{name: c1}, {name: c2}]\n"
LITERAL = ("apiVersion: v1\n"                                          # 1
           "kind: Pod\n"                                               # 2
           "metadata:\n"                                               # 3
           "  name: web\n"                                             # 4
           "  namespace: prod\n"                                       # 5
           "  annotations:\n"                                          # 6
           "    cri-resource-manager.intel.com/affinity: |\n"          # 7
           "      c1:\n"                                               # 8
           "      - match: {key: name, operator: Equals, values: [c2]}\n"  # 9
           "        wieght: 2\n" + SPEC)                               # 10: col 9


def error_of(text, source="pods.yaml", name="web"):
    """The message of the error of pod NAME in TEXT, read as the numa commands read it."""
    pods = load_pods([(o, source) for o in parse_documents(text, source)], {source: text})
    (pod,) = [p for p in pods if p.name == name]
    with pytest.raises(InputError) as e:
        aff.pod_affinities(pod)
    return str(e.value)


def test_a_literal_block_gives_the_file_s_line_and_column():
    message = error_of(LITERAL)
    assert message.startswith("pods.yaml: Pod prod/web: field metadata.annotations["
                              "cri-resource-manager.intel.com/affinity]: container 'c1', "
                              "affinity #1: unknown field 'wieght'")
    assert message.endswith(" (line 10, column 9)")
    line = LITERAL.splitlines()[10 - 1]
    assert line[9 - 1:].startswith("wieght")


def test_without_the_file_s_text_the_position_is_the_annotation_s():
    (obj,) = parse_documents(LITERAL, "pods.yaml")
    (pod,) = load_pods([(obj, "pods.yaml")])
    with pytest.raises(InputError) as e:
        aff.pod_affinities(pod)
    assert str(e.value).endswith(" (line 3, column 3)")


def test_a_value_on_one_line_maps_its_columns():
    text = LITERAL.replace(
        "|\n      c1:\n      - match: {key: name, operator: Equals, values: [c2]}\n"
        "        wieght: 2\n", "'c1: [{match: {key: name}, wieght: 2}]'\n")
    line = text.splitlines()[6]
    assert error_of(text).endswith(" (line 7, column %d)" % (line.index("wieght") + 1))
    plain = LITERAL.replace("|\n      c1:\n      - match: {key: name, operator: Equals, "
                            "values: [c2]}\n        wieght: 2\n", "nonsense\n")
    line = plain.splitlines()[6]
    assert error_of(plain).endswith(" (line 7, column %d)" % (line.index("nonsense") + 1))


def test_a_folded_value_gives_the_annotation_s_line():
    text = LITERAL.replace("affinity: |", "affinity: >")
    # folded, the three lines are one: "c1: - match: ..." is not YAML the same way
    assert error_of(text).endswith(" of the annotation at line 7)")


def test_json_gives_the_position_inside_and_the_annotation_s_line():
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "web", "namespace": "prod", "annotations": {
               CR + "anti-affinity": "c1:\n- match: {key: name}\n  wieght: 2\n"}},
           "spec": {"containers": [{"name": "c1"}, {"name": "c2"}]}}
    text = json.dumps(pod, indent=2)
    key_line = text.splitlines().index(
        '      "%santi-affinity": "c1:\\n- match: {key: name}\\n  wieght: 2\\n"' % CR) + 1
    assert error_of(text, "pods.json").endswith(
        " (line 3, column 3 of the annotation at line %d)" % key_line)


def test_an_error_of_the_whole_annotation_gives_its_line():
    partners = ", ".join("p%d" % i for i in range(aff.MAX_EXPRESSION_VALUES + 1))
    text = LITERAL.replace("|\n      c1:\n      - match: {key: name, operator: Equals, "
                           "values: [c2]}\n        wieght: 2\n", "'c1: [%s]'\n" % partners)
    message = error_of(text)
    assert "65 partners (at most 64)" in message
    assert message.endswith(" (the annotation at line 7)")


def test_the_pod_is_found_in_a_list_among_others():
    other = LITERAL.replace("name: web", "name: api").replace("wieght", "weight")
    items = "".join("- " + "\n  ".join(doc.splitlines()) + "\n" for doc in (other, LITERAL))
    text = "apiVersion: v1\nkind: List\nitems:\n" + items
    (bad,) = [i for i, line in enumerate(text.splitlines(), 1) if line.strip() == "wieght: 2"]
    column = text.splitlines()[bad - 1].index("wieght") + 1
    assert error_of(text).endswith(" (line %d, column %d)" % (bad, column))


def test_the_cli_says_the_file_s_line_on_stderr_and_in_the_output(capsys, tmp_path):
    path = tmp_path / "pods.yaml"
    path.write_text(LITERAL)
    assert main(["numa", "explain", str(path), "-o", "json"]) == 2
    out, err = capsys.readouterr()
    assert err.splitlines()[0].endswith("(line 10, column 9)")
    assert all(c["errors"][0].endswith("(line 10, column 9)")
               for c in json.loads(out)["containers"])


def test_standard_input_keeps_its_text_too(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(LITERAL))
    assert main(["numa", "explain", "-"]) == 2
    err = capsys.readouterr().err
    assert "<stdin>: Pod prod/web" in err and err.splitlines()[0].endswith("(line 10, column 9)")


def test_a_text_that_does_not_compose_gives_no_place():
    assert SourceText("a: [\n").place("default", "p", "k") is None


def test_where_inside_the_value_when_its_lines_are_not_the_file_s():
    place = Place(7, ((8, 6), (9, None)))
    assert place.where(1, 3) == " (line 8, column 9)"
    assert place.where(2, 3) == " (line 9)"
    assert place.where(3, 1) == " (line 3, column 1 of the annotation at line 7)"
    assert place.where(None, None) == " (the annotation at line 7)"


@settings(max_examples=100, deadline=None)
@given(indent=st.integers(1, 8), before=st.integers(0, 5), blank=st.booleans(),
       flow=st.booleans(), name=st.sampled_from(["c1", "caf\u00e9", "x-\u6f22\u5b57"]))
def test_the_line_and_column_point_at_the_bad_key(indent, before, blank, flow, name):
    pad = " " * (2 + indent)     # under "  annotations:"
    good = ["- match: {key: name, operator: Equals, values: [%s]}" % name] * before
    bad = (["- {match: {key: name, values: [%s]}, wieght: 2}" % name] if flow
           else ["- match: {key: name, values: [%s]}" % name, "  wieght: 2"])
    body = ["%s:" % name] + good + (["" if blank else "  # a comment"]) + bad
    text = ("kind: Pod\nmetadata:\n  name: p\n  annotations:\n" + pad + CR + "affinity: |\n"
            + "".join(pad + "  " + line + "\n" if line else "\n" for line in body)
            + "spec:\n  containers: [{name: %s}]\n" % json.dumps(name))
    message = error_of(text, name="p")
    line, column = (int(n) for n in message.rsplit("(line ", 1)[1].rstrip(")").split(
        ", column "))
    assert text.splitlines()[line - 1][column - 1:].startswith("wieght")
