"""JSON with duplicate keys refused, on the standard library's C parser.

Every object goes through an ``object_pairs_hook`` that refuses duplicate
keys and hands the finished mapping to an optional pruner. Only when a
duplicate is found is the text scanned a second, slower time to find the
line and column of the key, which the fast parser does not give.
``NaN``/``Infinity`` are not JSON (YAML reads them as strings): they are a
syntax error here.
"""
import json
import json.decoder
import json.scanner
import re
from collections.abc import Callable
from typing import Any, NoReturn, cast

from tacker_hwaffinity.objects.jsontypes import JsonObject, JsonValue, Pruner

# typeshed leaves out json's scanner internals (c_make_scanner, py_make_scanner, scanstring,
# JSONDecoder.scan_once): hence the ignores below.
C_SCANNER = (json.scanner.c_make_scanner  # type: ignore[attr-defined]
             is not None)  # tests turn it off for the Python one

_WHITESPACE = re.compile(r"[ \t\n\r]*")


class DuplicateKey(ValueError):
    """KEY is given twice in one object, at LINE and COLUMN (1-based)."""

    def __init__(self, key: str, line: int, column: int) -> None:
        super().__init__("duplicate key %r" % (key,))
        self.key, self.line, self.column = key, line, column


class _Duplicate(Exception):
    """Raised from inside the parser; the position is found afterwards."""


class _Constant(Exception):
    """NaN, Infinity or -Infinity, which the parser accepts and JSON does not."""


def _no_constant(name: str) -> NoReturn:
    raise _Constant(name)


def _hook(prune: Pruner | None) -> Callable[[list[tuple[str, Any]]], JsonObject]:
    def pairs_to_dict(pairs: list[tuple[str, Any]]) -> JsonObject:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            raise _Duplicate()
        if prune is not None:
            prune(obj)
        return obj
    return pairs_to_dict


def loads(text: str, start: int = 0, prune: Pruner | None = None) -> JsonValue:
    """The JSON value in TEXT from index START (whitespace before it skipped).

    Raises ``json.JSONDecodeError`` (``lineno``/``colno``), ``DuplicateKey`` and
    ``RecursionError``.
    """
    decoder = json.JSONDecoder(object_pairs_hook=_hook(prune), parse_constant=_no_constant)
    if not C_SCANNER:
        decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    start = _skip_whitespace(text, start)
    value: JsonValue
    try:
        value, end = decoder.raw_decode(text, start)
    except _Duplicate:
        raise first_duplicate(text, start)
    except _Constant as e:  # the parser does not say where: the first such word is it
        name = e.args[0]
        raise json.JSONDecodeError("%s is not valid JSON" % name, text,
                                   max(text.find(name, start), start))
    end = _skip_whitespace(text, end)
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


def _skip_whitespace(text: str, pos: int) -> int:
    """The index after the whitespace at POS (the pattern matches anywhere, if only the
    empty string)."""
    return cast("re.Match[str]", _WHITESPACE.match(text, pos)).end()


# One token of (already parsed, so valid up to the duplicate) JSON.
_TOKEN = re.compile(r'[ \t\n\r]*(?:(")|([{\[])|([}\]])|([,:])|[^ \t\n\r,:{}\[\]"]+)')


def first_duplicate(text: str, start: int = 0) -> DuplicateKey:
    """``DuplicateKey`` for the first key that repeats within its object, in text order."""
    scanstring = json.decoder.scanstring  # type: ignore[attr-defined]
    stack: list[set[str] | None] = []  # per open container: an object's keys, None for an array
    key_next = False
    pos = start
    while True:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            return DuplicateKey("?", *_line_column(text, pos))
        pos = m.end()
        if m.group(1):
            at = pos - 1
            s, pos = scanstring(text, pos)
            keys = stack[-1] if key_next else None
            if keys is not None:
                if s in keys:
                    return DuplicateKey(s, *_line_column(text, at))
                keys.add(s)
                key_next = False
        elif m.group(2):
            stack.append(set() if m.group(2) == "{" else None)
            key_next = m.group(2) == "{"
        elif m.group(3):
            if len(stack) < 2:  # the whole value ended: nothing repeats (should not happen)
                return DuplicateKey("?", *_line_column(text, pos))
            stack.pop()
        elif m.group(4) == "," and stack:
            key_next = stack[-1] is not None


def _line_column(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - text.rfind("\n", 0, pos)
