"""Quantities, label validation and kubectl-style YAML loading."""
from fractions import Fraction

import pytest

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import quantity, validation, yamlio


@pytest.mark.parametrize("text,milli", [
    ("100m", 100), ("1", 1000), ("1.5", 1500), ("2e3", 2000000), (".5", 500), ("1u", 1),
    (4, 4000), ("0", 0)])
def test_cpu_quantities(text, milli):
    assert quantity.milli_value(quantity.parse_quantity(text)) == milli


@pytest.mark.parametrize("text,value", [
    ("1Ki", 1024), ("500Mi", 500 * 2 ** 20), ("1G", 10 ** 9), ("1.5Gi", 3 * 2 ** 29),
    ("8010196Ki", 8010196 * 1024), ("1e3", 1000)])
def test_memory_quantities(text, value):
    assert quantity.value(quantity.parse_quantity(text)) == value


@pytest.mark.parametrize("bad", ["", "1.2.3", "10XB", "Gi", True, None, [], "1e999"])
def test_bad_quantities(bad):
    with pytest.raises(ValueError):
        quantity.parse_quantity(bad)


def test_quantity_is_exact():
    assert quantity.parse_quantity("0.1") * 3 == Fraction(3, 10)


@pytest.mark.parametrize("key,ok", [
    ("app", True), ("example.com/app", True), ("a.b-c_d", True), ("-a", False), ("a/", False),
    ("/a", False), ("A.com/x", False), ("x" * 64, False), ("a/b/c", False), ("", False)])
def test_label_keys(key, ok):
    assert (validation.qualified_name_error(key) is None) is ok


@pytest.mark.parametrize("value,ok", [
    ("", True), ("v1", True), ("a_b.c-d", True), ("-a", False), ("a" * 64, False),
    ("a b", False), (7, False)])
def test_label_values(value, ok):
    assert (validation.label_value_error(value) is None) is ok


def test_yaml_streams_lists_and_json():
    text = ("apiVersion: v1\nkind: List\nitems:\n- {kind: Node, metadata: {name: a}}\n"
            "- {kind: List, items: [{kind: Pod, metadata: {name: p}}]}\n---\n"
            '{"kind": "Namespace", "metadata": {"name": "n"}}\n---\n')
    objs = yamlio.parse_documents(text, "f")
    assert [o["kind"] for o in objs] == ["Node", "Pod", "Namespace"]


@pytest.mark.parametrize("text,msg", [
    ("a: [1,\n", "malformed YAML at line"),
    ("a: 1\na: 2\n", "duplicate key 'a'"),
    ("- 1\n", "expected a Kubernetes object"),
    ("kind: List\nitems: [1]\n", "items[0]"),
    ("? [a]\n: b\n", "malformed YAML")])
def test_yaml_errors_name_the_file(text, msg):
    with pytest.raises(InputError) as e:
        yamlio.parse_documents(text, "f.yaml")
    assert msg in str(e.value) and str(e.value).startswith("f.yaml")


def test_unreadable_file(tmp_path):
    with pytest.raises(InputError) as e:
        yamlio.load_objects([str(tmp_path / "missing.yaml")])
    assert "cannot read file" in str(e.value)
    bad = tmp_path / "bin.yaml"
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError) as e:
        yamlio.load_objects([str(bad)])
    assert "not UTF-8" in str(e.value)
