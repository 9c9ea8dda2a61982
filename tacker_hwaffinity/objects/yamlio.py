"""Read Kubernetes objects from YAML or JSON files, the way kubectl prints them.

Accepts single documents, multi-document streams, ``kind: List``
(``kubectl get ... -o yaml`` or ``-o json``) and the API server's typed lists, whose
items carry no kind (``kubectl get --raw /api/v1/nodes``). The text must be UTF-8.
Duplicate mapping keys are an error, as they are for the API server's strict decoding.

The content decides the parser, not the file name (``-`` is standard input):
text whose first non-blank character is ``{`` or ``[`` is JSON, read by the
standard library's C parser (``json_strict``); everything else, and
JSON-looking text that is really YAML flow style, is YAML: kubectl's block style is
read line by line (``yaml_lines``), the rest from libyaml's parser events
(``yaml_events``; ``yaml_strict`` for anchors, tags and errors).
Callers that read only some fields pass a kept-fields table (``pruning``) and
the rest is dropped while loading.
"""
import gc
import json
import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import yaml

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import json_strict, pruning, yaml_events, yaml_lines, yaml_strict
from tacker_hwaffinity.objects.jsontypes import JsonObject, Pruner
from tacker_hwaffinity.objects.pruning import KeptFields, KnownFields

# (object, the name of its source in messages: a path, "<stdin>", "cluster ...")
Loaded = tuple[JsonObject, str]

_BLANK = " \t\r\n\ufeff"
# the files kubectl -f DIR reads
MANIFEST_SUFFIXES = (".json", ".yaml", ".yml")
_BLANK_TO_END = re.compile("[%s]*\\Z" % _BLANK)


def read_text(path: str) -> str:
    """Return the text of PATH ('-' is standard input), which must be UTF-8; errors name
    the file (``source_name``) and, for bytes that are not UTF-8, where the first is."""
    if path == "-":
        stdin = getattr(sys.stdin, "buffer", None)
        if stdin is None:   # a text stream put in its place (an embedding program's)
            return sys.stdin.read()
        return utf8_text(stdin.read(), source_name(path))
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError("cannot read file: %s" % (e.strerror or e), source=path)
    return utf8_text(data, path)


def utf8_text(data: bytes, source: str) -> str:
    """DATA decoded as UTF-8 (line ends kept as they are: YAML and JSON read any); not
    UTF-8 is an InputError naming SOURCE and the line, column and byte offset (from 0)
    of the first byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        start = data.rfind(b"\n", 0, e.start) + 1
        column = len(data[start:e.start].decode("utf-8")) + 1  # all UTF-8 before e.start
        raise InputError("not UTF-8 text: byte 0x%02x at line %d, column %d (byte offset %d): "
                         "%s" % (data[e.start], data.count(b"\n", 0, e.start) + 1, column,
                                 e.start, e.reason), source=source)


class _Malformed(Exception):
    """A syntax problem: the language, where (line and column, or None) and what."""

    def __init__(self, language: str, line: int | None, column: int | None,
                 problem: object) -> None:
        super().__init__(problem)
        self.language, self.line, self.column = language, line, column
        self.problem = " ".join(str(problem).split())  # always one line

    def further_than(self, other: "_Malformed") -> bool:
        return (self.line or 0, self.column or 0) > (other.line or 0, other.column or 0)

    def input_error(self, source: str) -> InputError:
        where = " at line %d, column %d" % (self.line, self.column or 0) if self.line else ""
        return InputError("malformed %s%s: %s" % (self.language, where, self.problem),
                          source=source)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Loading makes millions of objects and no cycles: the cycle collector only costs
    (each of its full passes walks every object loaded so far)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _parse(text: str, prune: Pruner | None) -> list[Any]:
    """The documents of TEXT (JSON or YAML); raises ``_Malformed``."""
    start = 0
    while start < len(text) and text[start] in _BLANK:
        start += 1
    if text[start:start + 1] not in ("{", "["):
        return _parse_yaml(text, prune)
    try:
        return [json_strict.loads(text, start, prune)]
    except json_strict.DuplicateKey as e:
        raise _Malformed("JSON", e.line, e.column, str(e))
    except RecursionError:
        raise _Malformed("JSON", None, None, "nesting too deep")
    except json.JSONDecodeError as e:
        json_error = _Malformed("JSON", e.lineno, e.colno, e.msg)
        if _BLANK_TO_END.match(text, e.pos):
            raise json_error  # cut short: reading it as YAML would not help
    try:
        return _parse_yaml(text, prune)  # YAML flow style looks like JSON
    except _Malformed as yaml_error:
        raise yaml_error if yaml_error.further_than(json_error) else json_error


def _parse_yaml(text: str, prune: Pruner | None) -> list[Any]:
    try:
        return yaml_lines.load_all(text, prune)
    except yaml_events.NeedsFullLoader:
        pass  # not kubectl's style: read again below, from libyaml's events
    except RecursionError:
        raise _Malformed("YAML", None, None, "nesting too deep")
    try:
        return yaml_events.load_all(text, prune)
    except yaml_events.NeedsFullLoader:
        pass  # read again below, with the loader that also locates errors
    except RecursionError:
        raise _Malformed("YAML", None, None, "nesting too deep")
    try:
        docs = yaml_strict.load_all(text)
    except yaml.YAMLError as e:
        raise _yaml_malformed(e, text)
    except RecursionError:
        raise _Malformed("YAML", None, None, "nesting too deep")
    if prune is not None:
        pruning.prune_tree(docs, prune)
    return docs


def _yaml_malformed(e: yaml.YAMLError, text: str) -> _Malformed:
    if "maximum nesting depth" in str(getattr(e, "problem", None) or ""):
        # libyaml's own depth limit: it answers before Python's recursion limit does
        # when a library has raised that limit (celpy sets 2500)
        return _Malformed("YAML", None, None, "nesting too deep")
    mark = getattr(e, "problem_mark", None)
    if mark is not None:
        return _Malformed("YAML", mark.line + 1, mark.column + 1,
                          getattr(e, "problem", None) or e)
    if isinstance(e, yaml.reader.ReaderError):
        pos = e.position
        if yaml_strict.LIBYAML:  # libyaml counts bytes of UTF-8
            pos = len(text.encode("utf-8", "surrogatepass")[:pos].decode("utf-8", "ignore"))
        char = "#x%04x" % e.character if isinstance(e.character, int) else repr(e.character)
        line = text.count("\n", 0, pos) + 1
        return _Malformed("YAML", line, pos - text.rfind("\n", 0, pos),
                          "unacceptable character %s: %s" % (char, e.reason))
    return _Malformed("YAML", None, None, e)


def parse_documents(text: str, source: str, keep: KeptFields | None = None,
                    known: KnownFields | None = None) -> list[JsonObject]:
    """Parse a YAML/JSON stream into a list of top-level mappings.

    KEEP is a kept-fields table (see ``pruning``): fields of the listed kinds
    that it does not name are dropped while parsing. KNOWN (optional, an
    ``objects.schema.SnapshotFields`` for KEEP) checks their keys meanwhile.
    """
    try:
        with gc_paused():
            bound = known.bind(source) if known is not None else None
            prune = pruning.pruner(keep, bound)
            docs = _parse(text, prune)
    except _Malformed as e:
        raise e.input_error(source)
    out = []
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise InputError("document %d is a %s, expected a Kubernetes object (a mapping)"
                             % (i + 1, type_name(doc)), source=source)
        out.extend(_expand_list(doc, source, prune))
    return out


def _expand_list(doc: JsonObject, source: str, prune: Pruner | None) -> list[JsonObject]:
    """The objects of DOC: itself, or the items of a list (``kind: List`` or a typed list
    such as ``NodeList``), flattened; PRUNE: the loader's pruner, for the items below."""
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise InputError("expected a list", source=source, obj=kind, field="items")
        item_kind = kind[:-len("List")]     # "" for a plain List: its items say their own
        out = []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise InputError("expected a Kubernetes object (a mapping), got a %s"
                                 % type_name(item), source=source, obj=kind,
                                 field="items[%d]" % i)
            if item_kind and item.get("kind") is None:
                _typed_item(item, item_kind, doc.get("apiVersion"), prune)
            out.extend(_expand_list(item, source, prune))
        return out
    return [doc]


def _typed_item(item: JsonObject, kind: str, api_version: object,
                prune: Pruner | None) -> None:
    """Give ITEM of a typed list (``KINDList``) the list's KIND and API_VERSION, which the
    API server's list responses (``kubectl get --raw /api/v1/nodes``) leave out of their
    items, then prune it: loading could not, without its kind (so such a list is held
    whole until it is read)."""
    item["kind"] = kind
    if api_version is not None and item.get("apiVersion") is None:
        item["apiVersion"] = api_version
    if prune is not None:
        prune(item)


def expand_paths(paths: Sequence[str]) -> list[str]:
    """PATHS with each directory replaced by its .json, .yaml and .yml files, sorted by
    name, as kubectl's -f DIR reads them (not recursive). A directory without one is an
    error: a likely mistake, not an empty input."""
    out = []
    for path in paths:
        if path == "-" or not os.path.isdir(path):
            out.append(path)
            continue
        try:
            names = sorted(os.listdir(path))
        except OSError as e:
            raise InputError("cannot read directory: %s" % (e.strerror or e), source=path)
        found = [os.path.join(path, n) for n in names if n.endswith(MANIFEST_SUFFIXES)
                 and os.path.isfile(os.path.join(path, n))]
        if not found:
            raise InputError("no %s file in the directory" % ", ".join(MANIFEST_SUFFIXES),
                             source=path)
        out.extend(found)
    return out


def load_objects(paths: Sequence[str], keep: KeptFields | None = None,
                 known: KnownFields | None = None) -> list[Loaded]:
    """Load every object of every file (a directory: its manifests, ``expand_paths``);
    return a list of (object, source).

    KEEP, KNOWN: see ``parse_documents``. Each file's text is released once parsed.
    """
    out = []
    for path in expand_paths(paths):
        source = source_name(path)
        for obj in parse_documents(read_text(path), source, keep, known):
            out.append((obj, source))
    return out


def source_name(path: str) -> str:
    """How ``load_objects`` names the objects' source PATH in messages."""
    return "<stdin>" if path == "-" else path


def type_name(value: object) -> str:
    return {dict: "mapping", list: "list", str: "string", bool: "boolean",
            int: "integer", float: "number"}.get(type(value), type(value).__name__)
