"""Drop the fields of Kubernetes objects that a reader never looks at, while loading.

A *kept-fields table* maps an object kind to ``{top-level field: keys kept in it}``;
every other key of a listed field is dropped, and fields not listed are kept
whole. A kept key may be given as ``(key, subkeys)``: its value, a mapping or a
list of mappings (``spec.containers``), keeps only SUBKEYS too. Loaders call the
pruner on every mapping as soon as it is complete, so a large snapshot never holds
its unused parts (``metadata.managedFields``, Node ``status.images``, ...) for
more than one object at a time. Mappings whose ``kind`` is not in the table, and
fields that are not mappings, are left alone: a reader still sees, and reports,
whatever it does read.

The pruner can also tell a schema check (``objects.schema.SnapshotFields``) of the
keys that the schema does not know, at the levels it visits anyway: an object's
top-level keys, each listed field's keys and each nested kept mapping's keys, before
anything is dropped. Only mappings with a ``metadata`` mapping are checked there, so
an ``ownerReferences`` entry (which has a ``kind``) is not taken for an object.
"""
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, Union

from tacker_hwaffinity.objects.jsontypes import JsonObject, Pruner

# {kind: {top-level field: keys kept, each a key or (key, subkeys kept)}}
KeptFields = Mapping[str, Mapping[str, Sequence[Union[str, tuple[str, Sequence[str]]]]]]
# where a key is, below an object: (field, key, index, ...)
Path = tuple[Union[str, int], ...]
# {level: property names}: level "" (the object), a field, or (field, key)
Levels = Mapping[Union[str, tuple[str, str]], frozenset[str]]
_Compiled = tuple[str, frozenset[str], tuple[tuple[str, frozenset[str]], ...]]


class ObjectFields(Protocol):
    """What the pruner tells of the keys it visits (``schema.SnapshotFields.bind``)."""

    def names(self, obj: JsonObject) -> Levels | None:
        """{level: property names} for OBJ, or None: not checked."""

    def unknown(self, obj: JsonObject, path: Path, keys: list[str]) -> None:
        """KEYS of OBJ at PATH are not among its names."""


class KnownFields(Protocol):
    """A schema check of the keys the pruner visits, per source (``schema.SnapshotFields``)."""

    def bind(self, source: str) -> ObjectFields:
        """The check of the objects of SOURCE."""


def pruner(kept: KeptFields | None, known: ObjectFields | None = None) -> Pruner | None:
    """A function that prunes, in place, one mapping according to the table KEPT.

    KNOWN (optional): ``names(obj)`` gives {level: property names} for an object
    (level ``""``, a field, or ``(field, key)``; None: not checked) and
    ``unknown(obj, path, keys)`` is told of the keys not among them."""
    if not kept:
        return None
    tables = {kind: tuple(_compiled(field, keys) for field, keys in fields.items())
              for kind, fields in kept.items()}

    def prune(obj: JsonObject) -> None:
        kind = obj.get("kind")
        if kind.__class__ is not str:
            return
        fields = tables.get(kind)
        if fields is None:
            return
        names = _object_names(known, obj) if known is not None else None
        for field, keys, nested in fields:
            sub = obj.get(field)
            if sub.__class__ is not dict:
                continue
            if names is not None and known is not None:
                allowed = names.get(field)
                if allowed is not None and not allowed.issuperset(sub):
                    _unknown(known, obj, sub, (field,), allowed)
            if not keys.issuperset(sub):
                sub = obj[field] = {k: v for k, v in sub.items() if k in keys}
            for key, subkeys in nested:
                value = sub.get(key)
                if names is not None and known is not None:
                    _check_nested(known, obj, value, (field, key), names.get((field, key)))
                if value.__class__ is dict:
                    sub[key] = _only(value, subkeys)
                elif value.__class__ is list:
                    sub[key] = [_only(v, subkeys) if v.__class__ is dict else v for v in value]
    return prune


def _object_names(known: ObjectFields, obj: JsonObject) -> Levels | None:
    """KNOWN's {level: names} for OBJ (None: not checked), its top-level keys checked."""
    if obj.get("metadata").__class__ is not dict:
        return None
    names = known.names(obj)
    if names is not None:
        allowed = names.get("")
        if allowed is not None and not allowed.issuperset(obj):
            _unknown(known, obj, obj, (), allowed)
    return names


def _unknown(known: ObjectFields, obj: JsonObject, mapping: Mapping[str, Any], path: Path,
             names: frozenset[str]) -> None:
    known.unknown(obj, path, [k for k in mapping if k not in names])


def _check_nested(known: ObjectFields, obj: JsonObject, value: object, path: Path,
                  names: frozenset[str] | None) -> None:
    if names is None:
        return
    if value.__class__ is dict:
        if not names.issuperset(value):
            _unknown(known, obj, value, path, names)
    elif value.__class__ is list:
        for i, item in enumerate(value):
            if item.__class__ is dict and not names.issuperset(item):
                _unknown(known, obj, item, path + (i,), names)


def _compiled(field: str, keys: Sequence[Union[str, tuple[str, Sequence[str]]]]) -> _Compiled:
    """(FIELD, the keys kept, ((key, subkeys kept), ...))."""
    names: set[str] = set()
    nested: list[tuple[str, frozenset[str]]] = []
    for key in keys:
        if isinstance(key, tuple):
            name, subkeys = key
            nested.append((name, frozenset(subkeys)))
            names.add(name)
        else:
            names.add(key)
    return field, frozenset(names), tuple(nested)


def _only(mapping: JsonObject, keys: frozenset[str]) -> JsonObject:
    if keys.issuperset(mapping):
        return mapping
    return {k: v for k, v in mapping.items() if k in keys}


def prune_tree(value: object, prune: Pruner) -> None:
    """Apply PRUNE to every mapping inside VALUE (for loaders without a per-mapping hook).

    YAML aliases can make VALUE share or even contain itself: each container is
    visited once.
    """
    stack: list[object] = [value]
    seen: set[int] = set()
    while stack:
        v = stack.pop()
        if v.__class__ not in (dict, list) or id(v) in seen:
            continue
        seen.add(id(v))
        if v.__class__ is dict:
            prune(v)
            stack.extend(v.values())
        else:
            stack.extend(v)
