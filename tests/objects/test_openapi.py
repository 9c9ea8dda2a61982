"""objects.openapi: each keyword Kubernetes' definitions use, as jsonschema applies it
(tests/objects/test_schema_data.py compares the whole check with jsonschema's)."""
import datetime

import pytest

from tacker_hwaffinity.objects import openapi

DEFS = {
    "Thing": {"type": "object", "required": ["name"], "additionalProperties": False,
              "properties": {"name": {"type": "string"},
                             "size": {"$ref": "Quantity"},
                             "port": {"$ref": "IntOrString"},
                             "count": {"type": ["integer", "null"]},
                             "policy": {"type": "string", "enum": ["Always", "Never"]},
                             "items": {"type": "array", "items": {"$ref": "Item"}},
                             "labels": {"type": "object",
                                        "additionalProperties": {"type": "string"}},
                             "open": {"type": "object"}},
              "x-kubernetes-group-version-kind": [{"group": "", "version": "v1",
                                                   "kind": "Thing"}]},
    "Item": {"additionalProperties": False, "properties": {"on": {"type": "boolean"},
                                                             "ratio": {"type": "number"}}},
    "Quantity": {"oneOf": [{"type": ["string", "null"]}, {"type": ["number", "null"]}]},
    "IntOrString": {"oneOf": [{"type": ["string", "null"]}, {"type": ["integer", "null"]}]},
}


def found(obj, limit=100):
    return openapi.findings(DEFS, "Thing", obj, limit)


def test_a_valid_object_has_no_finding():
    assert found({"name": "a", "size": "1Gi", "port": 80, "count": 2, "policy": "Never",
                  "items": [{"on": True, "ratio": 0.5}], "labels": {"a": "b"},
                  "open": {"any": [1]}}) == []


@pytest.mark.parametrize("field,value,message", [
    ("name", 1, "expected string, got integer 1"),
    ("count", True, "expected integer, got boolean True"),
    ("count", 1.5, "expected integer, got number 1.5"),
    ("count", "3", "expected integer, got string '3'"),
    ("size", True, "expected string or number, got boolean True"),
    ("size", [], "expected string or number, got list"),
    ("port", 1.5, "expected string or integer, got number 1.5"),
    ("policy", "always", 'expected one of "Always", "Never", got string \'always\''),
    ("policy", datetime.date(2024, 1, 1), 'expected one of "Always", "Never", got date'),
    ("items", {}, "expected array, got mapping"),
    ("labels", "a=b", "expected object, got string 'a=b'"),
    ("name", "x" * 50, None),
])
def test_a_wrong_value_is_an_error_naming_its_path(field, value, message):
    expected = [] if message is None else [("error", field, message)]
    assert found({"name": "a", field: value}) == expected


@pytest.mark.parametrize("value", [1.0, 7])
def test_an_integral_number_is_an_integer(value):
    assert found({"name": "a", "count": value}) == []


def test_a_date_is_a_string_and_null_is_not_set():
    assert found({"name": datetime.date(2024, 1, 1), "size": None, "policy": None,
                  "items": None, "labels": {"a": None}}) == []


def test_unknown_keys_at_every_level_and_in_order():
    obj = {"name": "a", "zz": 1, "items": [{"on": True}, {"of": 1, "on": "yes"}],
           "labels": {"a": 1}, 3: "x"}
    assert found(obj) == [
        ("unknown", "[3]", "unknown field"),
        ("unknown", "items[1].of", "unknown field"),
        ("error", "items[1].on", "expected boolean, got string 'yes'"),
        ("error", "labels.a", "expected string, got integer 1"),
        ("unknown", "zz", "unknown field")]


def test_a_missing_required_field_and_a_wrong_type_of_the_object():
    assert found({}) == [("error", "name", "required field is missing")]
    assert found([]) == [("error", "", "expected object, got list")]


def test_findings_stop_at_the_limit():
    obj = {"name": "a", "items": [{"on": 1}] * 1000}
    assert len(found(obj, limit=5)) == 5


def test_nesting_past_the_recursion_limit_raises():
    defs = {"Node": {"properties": {"a": {"$ref": "Node"}}}}
    deep = {}
    for _ in range(5000):
        deep = {"a": deep}
    with pytest.raises(RecursionError):
        openapi.findings(defs, "Node", deep, 100)


def test_dotted_is_kubectl_s_path():
    assert openapi.dotted(("spec", "containers", 0, "name")) == "spec.containers[0].name"
    assert openapi.dotted((0, "a")) == "[0].a"
