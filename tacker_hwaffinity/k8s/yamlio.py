"""Read Kubernetes objects from YAML or JSON files, the way kubectl prints them.

Accepts single documents, multi-document streams and ``kind: List``
(``kubectl get ... -o yaml``). Duplicate mapping keys are an error, as they
are for the API server's strict decoding.
"""
import sys

import yaml

from tacker_hwaffinity.errors import InputError


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys instead of keeping the last."""


def _construct_mapping(loader, node, deep=False):
    loader.flatten_mapping(node)
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "mapping key is not a scalar", key_node.start_mark)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                "duplicate key %r" % (key,), key_node.start_mark)
        seen[key] = True
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_text(path):
    """Return the text of PATH ('-' is standard input); errors name the file."""
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise InputError("cannot read file: %s" % (e.strerror or e), source=path)
    except UnicodeDecodeError as e:
        raise InputError("not UTF-8 text (%s)" % e.reason, source=path)


def parse_documents(text, source):
    """Parse a YAML/JSON stream into a list of top-level mappings."""
    try:
        docs = list(yaml.load_all(text, Loader=_StrictLoader))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = " at line %d, column %d" % (mark.line + 1, mark.column + 1) if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise InputError("malformed YAML%s: %s" % (where, problem), source=source)
    except RecursionError:
        raise InputError("malformed YAML: nesting too deep", source=source)
    out = []
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise InputError("document %d is a %s, expected a Kubernetes object (a mapping)"
                             % (i + 1, type_name(doc)), source=source)
        out.extend(_expand_list(doc, source))
    return out


def _expand_list(doc, source):
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise InputError("expected a list", source=source, obj=kind, field="items")
        out = []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise InputError("expected a Kubernetes object (a mapping), got a %s"
                                 % type_name(item), source=source, obj=kind,
                                 field="items[%d]" % i)
            out.extend(_expand_list(item, source))
        return out
    return [doc]


def load_objects(paths):
    """Load every object of every file; return a list of (object, source)."""
    out = []
    for path in paths:
        source = "<stdin>" if path == "-" else path
        for obj in parse_documents(read_text(path), source):
            out.append((obj, source))
    return out


def type_name(value):
    return {dict: "mapping", list: "list", str: "string", bool: "boolean",
            int: "integer", float: "number"}.get(type(value), type(value).__name__)

