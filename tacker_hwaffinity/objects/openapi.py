"""An object against one definition of a Kubernetes release's OpenAPI schema: the part of
JSON Schema (Draft 2020-12) those definitions use, applied as the ``jsonschema`` package
applies it, each failure a finding with its path.

The definitions are the ones ``objects.schema`` loads (``tools/kubernetes_schemas.py``
writes them from kubernetes-validate's data): ``$ref`` holds a definition's name, and
every keyword is one of KEYWORDS (the tool stops at any other that is not an annotation):

* ``type``: JSON's types as the API server reads YAML: a date is a string, ``1.0`` an
  integer, ``true`` not a number;
* ``properties``; ``additionalProperties``: ``false`` makes each key the type lacks an
  ``unknown`` finding, a schema checks every other key's value; ``required``; ``items``;
* ``enum`` (of strings) and ``oneOf`` (of types: Quantity, IntOrString).

A null is "not set" for the API server: nothing is found in it. Standard library only.
"""
import datetime
import json
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tacker_hwaffinity.objects.yamlio import type_name

# (category, dotted path, message): category "unknown" (a key the type lacks) or "error"
Finding = tuple[str, str, str]
# the path of a value inside the object: keys and list indexes
Path = tuple[Any, ...]
# JSON Schema's type names -> whether a Python value (as YAML or JSON loads it) is one
TYPES: dict[str, Callable[[object], bool]] = {
    "string": lambda v: isinstance(v, (str, datetime.date)),
    "integer": lambda v: ((isinstance(v, int) and not isinstance(v, bool))
                          or (isinstance(v, float) and v.is_integer())),
    "number": lambda v: isinstance(v, numbers.Number) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


class _Enough(Exception):
    """The walk has found as many findings as it was asked for."""


def findings(defs: Mapping[str, Any], name: str, obj: object, limit: int) -> list[Finding]:
    """[(category, dotted path, message)] of OBJ against the definition NAME of DEFS (a
    release's definitions by name), at most LIMIT, in path order. Raises RecursionError
    for an object nested past Python's recursion limit."""
    walk = _Walk(defs, limit)
    try:
        walk.value(obj, defs[name], ())
    except _Enough:
        pass
    return sorted(walk.found, key=lambda f: f[1])


def dotted(path: Iterable[object]) -> str:
    """kubectl's form of a field path: ``spec.containers[0].name``."""
    out = ""
    for part in path:
        if part.__class__ is int:
            out += "[%d]" % part
        else:
            out += ("." if out else "") + str(part)
    return out


class _Walk:
    """One object's check: the definitions, the findings so far and how many are enough."""

    def __init__(self, defs: Mapping[str, Any], limit: int) -> None:
        self.defs, self.limit = defs, limit
        self.found: list[Finding] = []

    def add(self, category: str, path: Path, message: str) -> None:
        self.found.append((category, dotted(path), message))
        if len(self.found) >= self.limit:
            raise _Enough

    def value(self, value: object, schema: Mapping[str, Any], path: Path) -> None:
        """Check VALUE, at PATH, against SCHEMA: its keywords in their order."""
        if value is None:
            return
        for keyword, argument in schema.items():
            check = KEYWORDS.get(keyword)
            if check is not None:
                check(self, value, argument, schema, path)


def _ref(walk: _Walk, value: object, name: str, _: Mapping[str, Any], path: Path) -> None:
    walk.value(value, walk.defs[name], path)


def _type(walk: _Walk, value: object, types: str | Sequence[str], _: Mapping[str, Any],
          path: Path) -> None:
    if not _is_a(value, types):
        walk.add("error", path, "expected %s, got %s" % (_expected(types), _shown(value)))


def _properties(walk: _Walk, value: object, properties: Mapping[str, Any],
                _: Mapping[str, Any], path: Path) -> None:
    if isinstance(value, dict):
        for key, schema in properties.items():
            if key in value:
                walk.value(value[key], schema, path + (key,))


def _additional(walk: _Walk, value: object, other: bool | Mapping[str, Any],
                schema: Mapping[str, Any], path: Path) -> None:
    if not isinstance(value, dict) or other is True:
        return
    known = schema.get("properties") or {}
    for key, item in value.items():
        if key in known:
            continue
        if other is False:
            walk.add("unknown", path + (key,), "unknown field")
        else:
            walk.value(item, other, path + (key,))


def _required(walk: _Walk, value: object, names: Sequence[str], _: Mapping[str, Any],
              path: Path) -> None:
    if isinstance(value, dict):
        for key in names:
            if key not in value:
                walk.add("error", path + (key,), "required field is missing")


def _items(walk: _Walk, value: object, items: Mapping[str, Any], _: Mapping[str, Any],
           path: Path) -> None:
    if isinstance(value, list):
        for index, item in enumerate(value):
            walk.value(item, items, path + (index,))


def _enum(walk: _Walk, value: object, allowed: Sequence[str], _: Mapping[str, Any],
          path: Path) -> None:
    if not (isinstance(value, str) and value in allowed):
        walk.add("error", path, "expected one of %s, got %s" % (
            ", ".join(json.dumps(v) for v in allowed), _shown(value)))


def _one_of(walk: _Walk, value: object, branches: Sequence[Mapping[str, Any]],
            _: Mapping[str, Any], path: Path) -> None:
    if not any(_is_a(value, branch["type"]) for branch in branches):
        walk.add("error", path, "expected %s, got %s" % (
            _expected([t for branch in branches for t in _names(branch["type"])]),
            _shown(value)))


# keyword -> its check (walk, value, the keyword's argument, the schema, path)
KEYWORDS: dict[str, Callable[[_Walk, Any, Any, Mapping[str, Any], Path], None]] = {
    "$ref": _ref, "type": _type, "properties": _properties,
    "additionalProperties": _additional, "required": _required, "items": _items,
    "enum": _enum, "oneOf": _one_of,
}


def _is_a(value: object, types: str | Sequence[str]) -> bool:
    """Whether VALUE is of TYPES (a JSON Schema type name, or a list of them)."""
    return any(TYPES[t](value) for t in _names(types))


def _names(types: str | Sequence[str]) -> list[str]:
    return [types] if isinstance(types, str) else list(types)


def _expected(types: str | Sequence[str]) -> str:
    return " or ".join(t for t in _names(types) if t != "null")


def _shown(value: object) -> str:
    text = repr(value) if isinstance(value, (str, int, float, bool)) else ""
    if len(text) > 40:
        text = text[:37] + "..."
    return ("%s %s" % (type_name(value), text)).strip()
