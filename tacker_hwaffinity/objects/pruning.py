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


def pruner(kept, known=None):
    """A function that prunes, in place, one mapping according to the table KEPT.

    KNOWN (optional): ``names(obj)`` gives {level: property names} for an object
    (level ``""``, a field, or ``(field, key)``; None: not checked) and
    ``unknown(obj, path, keys)`` is told of the keys not among them."""
    if not kept:
        return None
    kept = {kind: tuple(_compiled(field, keys) for field, keys in fields.items())
            for kind, fields in kept.items()}

    def prune(obj):
        kind = obj.get("kind")
        if kind.__class__ is not str:
            return
        fields = kept.get(kind)
        if fields is None:
            return
        names = _object_names(known, obj) if known is not None else None
        for field, keys, nested in fields:
            sub = obj.get(field)
            if sub.__class__ is not dict:
                continue
            if names is not None:
                allowed = names.get(field)
                if allowed is not None and not allowed.issuperset(sub):
                    _unknown(known, obj, sub, (field,), allowed)
            if not keys.issuperset(sub):
                sub = obj[field] = {k: v for k, v in sub.items() if k in keys}
            for key, subkeys in nested:
                value = sub.get(key)
                if names is not None:
                    _check_nested(known, obj, value, (field, key), names.get((field, key)))
                if value.__class__ is dict:
                    sub[key] = _only(value, subkeys)
                elif value.__class__ is list:
                    sub[key] = [_only(v, subkeys) if v.__class__ is dict else v for v in value]
    return prune


def _object_names(known, obj):
    """KNOWN's {level: names} for OBJ (None: not checked), its top-level keys checked."""
    if obj.get("metadata").__class__ is not dict:
        return None
    names = known.names(obj)
    if names is not None:
        allowed = names.get("")
        if allowed is not None and not allowed.issuperset(obj):
            _unknown(known, obj, obj, (), allowed)
    return names


def _unknown(known, obj, mapping, path, names):
    known.unknown(obj, path, [k for k in mapping if k not in names])


def _check_nested(known, obj, value, path, names):
    if names is None:
        return
    if value.__class__ is dict:
        if not names.issuperset(value):
            _unknown(known, obj, value, path, names)
    elif value.__class__ is list:
        for i, item in enumerate(value):
            if item.__class__ is dict and not names.issuperset(item):
                _unknown(known, obj, item, path + (i,), names)


def _compiled(field, keys):
    """(FIELD, the keys kept, ((key, subkeys kept), ...))."""
    names, nested = set(), []
    for key in keys:
        if key.__class__ is tuple:
            key, subkeys = key
            nested.append((key, frozenset(subkeys)))
        names.add(key)
    return field, frozenset(names), tuple(nested)


def _only(mapping, keys):
    if keys.issuperset(mapping):
        return mapping
    return {k: v for k, v in mapping.items() if k in keys}


def prune_tree(value, prune):
    """Apply PRUNE to every mapping inside VALUE (for loaders without a per-mapping hook).

    YAML aliases can make VALUE share or even contain itself: each container is
    visited once.
    """
    stack, seen = [value], set()
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
