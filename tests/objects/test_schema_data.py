"""The Kubernetes schemas every install has (objects/kubernetes-schemas.json.gz) are what
tools/kubernetes_schemas.py makes from the kubernetes-validate the tests install, and the
check over them (objects/openapi.py) finds what jsonschema finds over the published data
(tests/objects/jsonschema_reference.py, the check as it was with the schema extra):
nothing the check caught is lost."""
import copy
import datetime
import functools
import importlib.util
import json
import os
import zlib

import pytest
from hypothesis import given, settings, strategies as st

from tacker_hwaffinity.objects import schema
from tacker_hwaffinity.objects.yamlio import load_objects

from .jsonschema_reference import Reference

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location(
    "kubernetes_schemas_tool", os.path.join(ROOT, "tools", "kubernetes_schemas.py"))
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)

SOURCE = tool.source_root()
MINORS = schema.supported_minors()


def _shipped():
    with open(schema.DATA, "rb") as f:
        return json.loads(zlib.decompress(f.read(), 31))


def test_the_shipped_schemas_are_what_the_tool_makes_from_kubernetes_validate():
    shipped, made = _shipped(), tool.build(SOURCE)
    assert shipped["source"] == made["source"], (
        "the tests install %s: python tools/kubernetes_schemas.py" % made["source"])
    assert shipped == made, "stale: python tools/kubernetes_schemas.py"
    assert tuple(made["minors"]) == MINORS == tuple(range(30, MINORS[-1] + 1))
    # the budget of every install: 35 KB for 1.30-1.37 (kubernetes-validate: a 22 MB wheel)
    assert os.path.getsize(schema.DATA) < 100 * 1024


@pytest.mark.parametrize("minor", MINORS)
def test_each_release_loads_as_its_published_definitions_without_annotations(minor):
    published = tool.source_definitions(SOURCE, minor)
    assert schema.release(minor).defs == {
        name: tool.compact(d, name, top=True) for name, d in published.items()}


def test_the_tool_refuses_what_the_check_cannot_apply():
    for bad in ({"pattern": "^a"}, {"type": "tuple"}, {"enum": [1]},
                {"oneOf": [{"type": "string", "maxLength": 3}]},
                {"oneOf": [{"type": "integer"}, {"type": ["number", "integer"]}]},
                {"$ref": "other.json#/x"}):
        with pytest.raises(tool.Unfit):
            tool.compact(bad, "X")
    kept = tool.compact({"description": "d", "format": "int32", "x-kubernetes-list-type": "m",
                         "properties": {"description": {"type": "string",
                                                        "description": "the text"}},
                         "x-kubernetes-group-version-kind": [{"kind": "X"}]}, "X", top=True)
    assert kept == {"properties": {"description": {"type": "string"}},
                    "x-kubernetes-group-version-kind": [{"kind": "X"}]}


@functools.lru_cache(maxsize=None)
def _reference(minor):
    return Reference(tool.source_definitions(SOURCE, minor))


def _shipped_objects():
    out = []
    for top in ("deploy", "samples", "csar"):
        for dirpath, _, names in sorted(os.walk(os.path.join(ROOT, top))):
            for name in sorted(names):
                if name.endswith((".yaml", ".yml", ".json")):
                    out.extend(obj for obj, _ in load_objects([os.path.join(dirpath, name)])
                               if isinstance(obj.get("apiVersion"), str)
                               and isinstance(obj.get("kind"), str))
    return out


SHIPPED = _shipped_objects()
NEWEST = schema.release(MINORS[-1])
KINDS = sorted(NEWEST.types)
# property names the definitions use, misspellings and odd keys: random objects reach deep
KEYS = sorted({key for d in NEWEST.defs.values() for key in d.get("properties") or ()})
NAMES = st.sampled_from(KEYS) | st.sampled_from(["afinity", "replica", "lables", 1, ""])
SCALARS = (st.none() | st.booleans() | st.integers(-3, 70000) | st.floats(allow_nan=False)
           | st.sampled_from([1.0, "1Gi", "500m", "Always", "TCP", "IfNotPresent", "x"])
           | st.dates(datetime.date(2000, 1, 1), datetime.date(2030, 1, 1)) | st.text(max_size=4))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(NAMES, inner, max_size=4), max_leaves=20)


def _agree(minor, obj):
    """Our findings are jsonschema's for OBJ at 1.MINOR (when fewer than the limit)."""
    release = schema.release(minor)
    try:
        name = release.type_of(obj.get("apiVersion"), obj.get("kind"))
    except LookupError:
        return
    if name is None:
        return
    expected = _reference(minor).findings(name, obj, schema.MAX_FINDINGS)
    if len(expected) < schema.MAX_FINDINGS:
        assert release.findings(obj) == expected


@pytest.mark.parametrize("minor", MINORS)
def test_the_shipped_manifests_find_what_jsonschema_finds(minor):
    for obj in SHIPPED:
        _agree(minor, obj)


@settings(deadline=None)
@given(st.sampled_from(MINORS), st.sampled_from(KINDS),
       st.dictionaries(NAMES, VALUES, max_size=6))
def test_fuzz_random_objects_find_what_jsonschema_finds(minor, kind, body):
    api_version, kind_name = kind
    _agree(minor, dict(body, apiVersion=api_version, kind=kind_name))


@settings(deadline=None)
@given(st.sampled_from(MINORS), st.sampled_from(range(len(SHIPPED))), st.data())
def test_fuzz_shipped_manifests_changed_in_one_place_find_what_jsonschema_finds(
        minor, index, data):
    """A real manifest, one value replaced or one key added somewhere inside it."""
    obj = copy.deepcopy(SHIPPED[index])
    node = obj
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        containers = [k for k in keys if isinstance(node[k], (dict, list)) and node[k]]
        if not containers or data.draw(st.booleans()):
            break
        node = node[data.draw(st.sampled_from(containers))]
    if isinstance(node, dict):
        node[data.draw(st.sampled_from(list(node)) | NAMES)] = data.draw(VALUES)
    else:
        node[data.draw(st.integers(0, len(node) - 1))] = data.draw(VALUES)
    _agree(minor, obj)
