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

C_SCANNER = json.scanner.c_make_scanner is not None  # tests turn it off for the Python one

_WHITESPACE = re.compile(r"[ \t\n\r]*")


class DuplicateKey(ValueError):
    """KEY is given twice in one object, at LINE and COLUMN (1-based)."""

    def __init__(self, key, line, column):
        super().__init__("duplicate key %r" % (key,))
        self.key, self.line, self.column = key, line, column


class _Duplicate(Exception):
    """Raised from inside the parser; the position is found afterwards."""


class _Constant(Exception):
    """NaN, Infinity or -Infinity, which the parser accepts and JSON does not."""


def _no_constant(name):
    raise _Constant(name)


def _hook(prune):
    def pairs_to_dict(pairs):
        obj = dict(pairs)
        if len(obj) != len(pairs):
            raise _Duplicate()
        if prune is not None:
            prune(obj)
        return obj
    return pairs_to_dict


def loads(text, start=0, prune=None):
    """The JSON value in TEXT from index START (whitespace before it skipped).

    Raises ``json.JSONDecodeError`` (``lineno``/``colno``), ``DuplicateKey`` and
    ``RecursionError``.
    """
    decoder = json.JSONDecoder(object_pairs_hook=_hook(prune), parse_constant=_no_constant)
    if not C_SCANNER:
        decoder.scan_once = json.scanner.py_make_scanner(decoder)
    start = _WHITESPACE.match(text, start).end()
    try:
        value, end = decoder.raw_decode(text, start)
    except _Duplicate:
        raise first_duplicate(text, start)
    except _Constant as e:  # the parser does not say where: the first such word is it
        name = e.args[0]
        raise json.JSONDecodeError("%s is not valid JSON" % name, text,
                                   max(text.find(name, start), start))
    end = _WHITESPACE.match(text, end).end()
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


# One token of (already parsed, so valid up to the duplicate) JSON.
_TOKEN = re.compile(r'[ \t\n\r]*(?:(")|([{\[])|([}\]])|([,:])|[^ \t\n\r,:{}\[\]"]+)')


def first_duplicate(text, start=0):
    """``DuplicateKey`` for the first key that repeats within its object, in text order."""
    scanstring = json.decoder.scanstring
    stack = []  # per open container: the set of keys of an object, None for an array
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
            if key_next:
                keys = stack[-1]
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


def _line_column(text, pos):
    line = text.count("\n", 0, pos) + 1
    return line, pos - text.rfind("\n", 0, pos)
