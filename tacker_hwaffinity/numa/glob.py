"""Glob matching with the semantics of Go's ``path/filepath.Match`` on Linux.

Upstream CRI Resource Manager matches the ``Matches*`` operators with Go's
``filepath.Match``. Python's ``fnmatch`` differs in ways that change results,
so these are the Go algorithm's rules:

* the pattern must match the whole name;
* ``*`` matches any run of characters except ``/``; ``?`` one character
  except ``/``;
* ``[...]`` is a class with ``a-z`` ranges, negated by a leading ``^``
  (``!`` is an ordinary character);
* ``\\x`` matches ``x`` literally;
* a malformed pattern (``[``, ``[]``, ``[a-]``, a trailing ``\\``) is an
  error; :func:`match` reports it as "no match", as upstream ignores it.

Go's algorithm cuts the pattern into chunks, each a run without ``*`` led by
the stars before it, and matches them left to right, a star chunk at the first
place it fits (no backtracking into earlier chunks). A pattern is compiled once
into one regular expression that does the same (``_compiled``), so a match costs
the regex engine's scan of the name, not a Python loop per character
(tests/numa/go_glob.py keeps the line-by-line transcription this is checked
against).
"""
import functools
import re


class BadPattern(Exception):
    """The pattern is malformed (Go's ``ErrBadPattern``)."""


def match(pattern, name):
    """True if NAME matches PATTERN; a malformed pattern never matches."""
    try:
        return match_strict(pattern, name)
    except BadPattern:
        return False


def match_strict(pattern, name):
    """Like :func:`match` but raise :class:`BadPattern` where Go returns an error."""
    compiled = _compiled(pattern)
    if compiled is None:
        raise BadPattern("malformed pattern %r" % pattern)
    return compiled.match(name) is not None


@functools.lru_cache(maxsize=4096)
def _compiled(pattern):
    """PATTERN as one regular expression with Go's semantics, None when it is malformed.

    A star chunk that is not the last is matched at the first place it fits after
    no ``/``, and that choice is final: a lookahead (which the regex engine never
    re-enters) captures it and a back-reference consumes it. The last chunk must end
    the name; a trailing star takes the rest of the name unless it has a ``/``."""
    parts, groups = [], 0
    try:
        while pattern:
            star, chunk, pattern = _scan_chunk(pattern)
            if star and not chunk:
                parts.append("[^/]*")
                break
            source = _chunk_regex(chunk)
            if not pattern:
                parts.append(("[^/]*" if star else "") + source)
            elif star:
                groups += 1
                parts.append("(?=([^/]*?%s))\\%d" % (source, groups))
            else:
                parts.append(source)
    except BadPattern:
        return None
    return re.compile("".join(parts) + "\\Z", re.DOTALL)


def _scan_chunk(pattern):
    star = False
    while pattern and pattern[0] == "*":
        pattern = pattern[1:]
        star = True
    in_range = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if i + 1 < len(pattern):
                i += 1
        elif c == "[":
            in_range = True
        elif c == "]":
            in_range = False
        elif c == "*" and not in_range:
            break
        i += 1
    return star, pattern[:i], pattern[i:]


def _chunk_regex(chunk):
    """The regex source of one chunk (each element one character); BadPattern where Go
    errs."""
    parts = []
    while chunk:
        c = chunk[0]
        if c == "[":
            chunk = chunk[1:]
            negated = chunk[:1] == "^"
            if negated:
                chunk = chunk[1:]
            ranges = []
            while True:
                if chunk[:1] == "]" and ranges:
                    chunk = chunk[1:]
                    break
                lo, chunk = _get_esc(chunk)
                hi = lo
                if chunk[0] == "-":
                    hi, chunk = _get_esc(chunk[1:])
                ranges.append((lo, hi))
            parts.append(_class(ranges, negated))
        elif c == "?":
            parts.append("[^/]")
            chunk = chunk[1:]
        else:
            if c == "\\":
                chunk = chunk[1:]
                if not chunk:
                    raise BadPattern("trailing backslash")
            parts.append(re.escape(chunk[0]))
            chunk = chunk[1:]
    return "".join(parts)


def _class(ranges, negated):
    """One character of the class RANGES ([(lo, hi)]; an empty range matches nothing)."""
    body = "".join(re.escape(lo) if lo == hi else "%s-%s" % (re.escape(lo), re.escape(hi))
                   for lo, hi in ranges if lo <= hi)
    if not body:
        return "[\\s\\S]" if negated else "(?!)"
    return "[%s%s]" % ("^" if negated else "", body)


def _get_esc(chunk):
    if not chunk or chunk[0] in "-]":
        raise BadPattern("bad character class")
    if chunk[0] == "\\":
        chunk = chunk[1:]
        if not chunk:
            raise BadPattern("trailing backslash in class")
    r, rest = chunk[0], chunk[1:]
    if not rest:
        raise BadPattern("unterminated character class")
    return r, rest
