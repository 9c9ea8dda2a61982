"""Write tacker_hwaffinity/objects/kubernetes-schemas.json.gz, the Kubernetes schemas the
schema check reads (objects/schema.py, doc/cli.md "Schema check"), from the data of the
installed kubernetes-validate package: for each Kubernetes minor from 1.30 it has, the
``-strict`` variant of ``_definitions.json`` (every object type ``additionalProperties:
false``).

Compacted, losing nothing the check reads:

* the annotations the check never reads go: ``description``, ``format`` (jsonschema does
  not assert it either), ``default`` and the ``x-kubernetes-*`` list, map and patch hints;
  a definition keeps its ``x-kubernetes-group-version-kind``;
* ``$ref`` holds the definition's name (``#/$defs/`` dropped);
* a definition that is the same in several minors is stored once: ``names`` lists every
  definition, ``variants`` each one's distinct forms, ``releases`` each minor's form of
  each name (an index into its variants, or null where the minor lacks it);
* compact JSON, gzip level 9 (no timestamp: the same input gives the same file).

Any keyword the check does not implement (objects/openapi.py KEYWORDS) that is not an
annotation above, an enum of anything but strings, or a oneOf of anything but types that
only null shares, stops the tool: teach objects/openapi.py first.

    python tools/kubernetes_schemas.py     # in a Python with kubernetes-validate installed

tests/objects/test_schema_data.py checks the committed file is what this makes from the
kubernetes-validate the tests install (pyproject.toml's test extra pins it: raise the pin,
run this, commit both).
"""
import gzip
import importlib.metadata
import importlib.util
import json
import os
import re
import sys
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tacker_hwaffinity.objects import openapi, schema  # noqa: E402  (the checkout's)

SOURCE = "kubernetes_validate"
GVK = "x-kubernetes-group-version-kind"
ANNOTATIONS = frozenset(("description", "format", "default"))
FORMAT = 1
_STRICT_DIR = re.compile(r"^v1\.(\d+)\.0-local-strict$")
_REF = "#/$defs/"


class Unfit(Exception):
    """The source has something the check cannot apply as jsonschema would."""


def source_root() -> str:
    """kubernetes-validate's schema directory, found without importing the package."""
    spec = importlib.util.find_spec(SOURCE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("kubernetes-validate is not installed in %s" % sys.executable)
    return os.path.join(list(spec.submodule_search_locations)[0], "kubernetes-json-schema")


def source_minors(root: str) -> list[int]:
    """The minors N (1.N) from schema.FLOOR that ROOT has strict definitions for."""
    found = (_STRICT_DIR.match(name) for name in os.listdir(root))
    return sorted(n for n in (int(m.group(1)) for m in found if m) if n >= schema.FLOOR)


def source_definitions(root: str, minor: int) -> dict[str, Any]:
    """The ``$defs`` of 1.MINOR's strict ``_definitions.json`` under ROOT, as published."""
    path = os.path.join(root, "v1.%d.0-local-strict" % minor, "_definitions.json")
    with open(path, encoding="utf-8") as f:
        defs: dict[str, Any] = json.load(f)["$defs"]
    return defs


def compact(node: dict[str, Any], where: str, top: bool = False) -> dict[str, Any]:
    """NODE, a schema (at WHERE, for messages), without its annotations, refs as names."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ANNOTATIONS or (key.startswith("x-kubernetes-") and not (top and key == GVK)):
            continue
        if key == GVK:
            out[key] = value
        elif key not in openapi.KEYWORDS:
            raise Unfit("%s: keyword %r (objects/openapi.py does not check it)" % (where, key))
        elif key == "properties":
            out[key] = {name: compact(sub, "%s.%s" % (where, name))
                        for name, sub in value.items()}
        elif key == "items" or (key == "additionalProperties" and isinstance(value, dict)):
            out[key] = compact(value, "%s.%s" % (where, key))
        elif key == "$ref":
            if not value.startswith(_REF):
                raise Unfit("%s: $ref %r is not a definition" % (where, value))
            out[key] = value[len(_REF):]
        else:
            out[key] = value
    _check_arguments(out, where)
    return out


def _check_arguments(node: dict[str, Any], where: str) -> None:
    types = node.get("type", [])
    for name in [types] if isinstance(types, str) else types:
        if name not in openapi.TYPES:
            raise Unfit("%s: type %r" % (where, name))
    if not all(isinstance(v, str) for v in node.get("enum", ())):
        raise Unfit("%s: an enum of other values than strings" % where)
    seen: set[str] = set()
    for branch in node.get("oneOf", ()):
        if set(branch) != {"type"}:
            raise Unfit("%s: a oneOf branch with more than a type" % where)
        names = {branch["type"]} if isinstance(branch["type"], str) else set(branch["type"])
        if (names - {"null"}) & seen:
            raise Unfit("%s: oneOf branches that share a type" % where)
        seen |= names - {"null"}
    if not isinstance(node.get("additionalProperties", True), (bool, dict)):
        raise Unfit("%s: additionalProperties" % where)


def build(root: str) -> dict[str, Any]:
    """The document objects/schema.py reads, made from the kubernetes-validate at ROOT."""
    minors = source_minors(root)
    releases = {}
    for minor in minors:
        defs = source_definitions(root, minor)
        releases[minor] = {name: compact(d, "1.%d %s" % (minor, name), top=True)
                           for name, d in defs.items()}
        for name, d in releases[minor].items():
            for ref in _refs(d):
                if ref not in defs:
                    raise Unfit("1.%d %s: $ref to %r, which is not defined" % (minor, name, ref))
    names = sorted(set().union(*releases.values()))
    variants: dict[str, list[Any]] = {name: [] for name in names}
    texts: dict[str, list[str]] = {name: [] for name in names}
    rows = []
    for minor in minors:
        row: list[int | None] = []
        for name in names:
            d = releases[minor].get(name)
            if d is None:
                row.append(None)
                continue
            text = json.dumps(d)          # keys in order: the check walks them in order
            if text not in texts[name]:
                texts[name].append(text)
                variants[name].append(d)
            row.append(texts[name].index(text))
        rows.append(row)
    return {"format": FORMAT,
            "source": "kubernetes-validate %s" % importlib.metadata.version("kubernetes-validate"),
            "minors": minors, "names": names, "variants": [variants[n] for n in names],
            "releases": rows}


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [r for key, value in node.items() if key != "$ref" for r in _refs(value)]
    if isinstance(node, list):
        return [r for value in node for r in _refs(value)]
    return []


def encode(document: dict[str, Any]) -> bytes:
    """DOCUMENT as the file holds it: compact JSON, gzip level 9, no timestamp."""
    text = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def main() -> int:
    try:
        data = encode(build(source_root()))
    except Unfit as e:
        sys.stderr.write("kubernetes_schemas: %s\n" % e)
        return 1
    with open(schema.DATA, "wb") as f:
        f.write(data)
    sys.stdout.write("wrote %s (%d bytes)\n" % (os.path.relpath(schema.DATA, ROOT), len(data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
