"""Block-style YAML read a line at a time: kubectl's output, at a fraction of the cost.

``kubectl get -o yaml`` prints one narrow style: block mappings and sequences, one
``key: value`` a line, scalars on one line. Such text is read here from its lines, with
string methods run over whole lists of lines in C, about three times as fast as from
libyaml's parser events (``yaml_events``: a Python object for every event). What is not
in that style is handed to ``yaml_events``, so the result is always its result:

* a value that is not a one-line plain or quoted scalar (a block scalar ``|``, a flow
  collection, an escaped, continued or indented string, a sequence in a sequence): the
  lines of that value;
* any other line inside one item of a top-level sequence (an object of a ``kind: List``):
  that item's lines;
* anything else, and text with a comment, a tab, a carriage return, a byte order mark or
  a character YAML does not print: the whole text (``NeedsFullLoader``).

Plain scalars get PyYAML's SafeLoader values (YAML 1.1: ``yes``, ``0644``, ``1:20``,
dates), from its own resolver and constructors; a duplicate key, a merge key or a value
that does not construct is handed over as ``yaml_events`` hands it over. The pruner sees
every mapping in the order ``yaml_events`` gives them, each top-level item's once the
item is complete: an item read again is pruned once.
"""
import re
from collections.abc import Iterator
from itertools import count, islice
from typing import Any

import yaml
from yaml.nodes import ScalarNode

from tacker_hwaffinity.objects import yaml_events
from tacker_hwaffinity.objects.jsontypes import JsonObject, Pruner
from tacker_hwaffinity.objects.yaml_strict import BAD_VALUE_ERRORS

NeedsFullLoader = yaml_events.NeedsFullLoader

# A character this reader leaves to libyaml: a line break or byte order mark besides
# "\n", a tab, or one YAML does not print (libyaml refuses those with a located error).
_ODD = re.compile("[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd"
                  "\U00010000-\U0010ffff]")
_PRINTABLE_ASCII = bytes(range(0x20, 0x7f)) + b"\n"    # the rest of ASCII is _ODD
# A line that starts at column 0: the text is read in chunks that begin with one, so that
# no value or item spans two chunks.
_LINE_AT_0 = re.compile("\n(?=[^ \n])")
_CHUNK = 1 << 20            # characters split into lines at a time
_MAX_DEPTH = 200            # deeper: left to yaml_events, which says "nesting too deep"
_KEY_SPAN = 1000            # libyaml refuses an implicit key longer than 1024 characters
# First characters of a one-line scalar that is not plain, or needs a closer look.
_NOT_PLAIN = frozenset("-?:,[]{}#&*!|>'\"%@` ")
_CACHE_SIZE = 1 << 16       # lines, key texts and value texts worked out, each
_KEY_ONLY_TAGS = ("tag:yaml.org,2002:merge", "tag:yaml.org,2002:value")
_MISSING = object()         # no key (a sequence item), or a value read from its lines
_BLOCK = object()           # no value on the line: a block (or null) follows
_UNSEEN = object()          # not in a cache yet
_EMPTY_MAP, _EMPTY_SEQ = object(), object()     # "{}" and "[]": a new one each time
# What a line's value makes its line: 1 (a scalar: hot) unless it is one of these.
_HOT = {_EMPTY_MAP: 2, _EMPTY_SEQ: 3, _BLOCK: 4, _MISSING: 0}
_FRESH = {2: dict, 3: list}     # what a hot line of "{}" or "[]" puts in
# (column, hot, sequence item, key, value): ``_Scalars.line``
_Line = tuple[int, int, bool, Any, Any]


class _Trouble(Exception):
    """A line this reader does not read: its item is read by ``yaml_events``."""


class _Scalars:
    """What a line, its head (what comes before its ": "), the text of a key or of a value
    stands for, each worked out once (``lines``, ``heads``, ``keys``, ``values``: up to
    _CACHE_SIZE each, emptied when full): a plain scalar's value as
    PyYAML's SafeLoader makes it (its resolver, then its constructor for the tag), a
    quoted scalar's string, _EMPTY_MAP or _EMPTY_SEQ for ``{}`` and ``[]``, or _MISSING
    for text this reader leaves to ``yaml_events``."""

    def __init__(self) -> None:
        self.loader = yaml.SafeLoader("")
        resolvers = self.loader.yaml_implicit_resolvers
        # only scalars starting with one of these can resolve to anything but a string
        self.first = (None if None in resolvers or self.loader.yaml_path_resolvers
                      else frozenset(c for c in resolvers if c))
        self.keys: dict[str, Any] = {}
        self.values: dict[str, Any] = {}
        self.lines: dict[str, _Line] = {}
        self.heads: dict[str, tuple[int, int, bool, Any]] = {}

    def key(self, text: str) -> Any:
        """The key that TEXT (what comes before ": " or a final ":") stands for."""
        first = text[:1]
        if first == "'" or first == '"':
            key = _quoted(text)
        elif not first or (first in _NOT_PLAIN and (first != "-" or text[1:2] in ("", " "))) \
                or text[-1] == " " or len(text) > _KEY_SPAN:
            key = _MISSING
        else:
            key = self.plain(text)
        if len(self.keys) >= _CACHE_SIZE:
            self.keys.clear()
        self.keys[text] = key
        return key

    def value(self, text: str) -> Any:
        """The value that TEXT (not empty: what comes after ": " or "- ") stands for."""
        first = text[0]
        if first not in _NOT_PLAIN or (first == "-" and text[1:2] not in ("", " ")):
            value = _MISSING if text[-1] in " :" or ": " in text else self.plain(text)
        elif first == "'" or first == '"':
            value = _quoted(text)
        else:
            value = {"{}": _EMPTY_MAP, "[]": _EMPTY_SEQ}.get(text, _MISSING)
        if len(self.values) >= _CACHE_SIZE:
            self.values.clear()
        self.values[text] = value
        return value

    def line(self, line: str) -> _Line:
        """(column, hot, whether it is a sequence item "- ...", key, value) of LINE, worked
        out once: the key (_MISSING: none) and the value as ``key`` and ``value`` give
        them, _BLOCK for none ("key:"), _MISSING for "- " alone. HOT: a "key: value" line
        with a scalar (1), "{}" (2) or "[]" (3) value, a "key:" line (4); 0 for others.
        Column -1: a blank line; -2: "---" (a document starts), -3: another document
        marker. What comes before a line's ": " is kept too (``heads``: column, whether a
        key line can be hot, item, key): a line with a new value (a name, a uid) is only
        worked out from there, and not kept, as it will not come again."""
        head_text, colon, value_text = line.partition(": ")
        head = self.heads.get(head_text) if colon else None
        if head is None:
            info = self.new_line(line)
            col, hot, dash, key, _ = info
            if colon and col >= 0 and key is not _MISSING:
                if len(self.heads) >= _CACHE_SIZE:
                    self.heads.clear()
                self.heads[head_text] = (col, int(not dash), dash, key)
        else:
            value: Any = _BLOCK
            if value_text:
                value = self.values.get(value_text, _UNSEEN)
                if value is _UNSEEN:
                    value = self.value(value_text)
                    return (head[0], head[1] and _HOT.get(value, 1), head[2], head[3], value)
            info = (head[0], head[1] and _HOT.get(value, 1), head[2], head[3], value)
        if len(self.lines) >= _CACHE_SIZE:
            self.lines.clear()      # the lines seen most come back first
        self.lines[line] = info
        return info

    def new_line(self, line: str) -> _Line:
        """``line``'s answer for a LINE whose head is not known."""
        body = line.lstrip(" ")
        col = len(line) - len(body)
        if not body:
            return (-1, 0, False, _MISSING, _MISSING)
        if col == 0 and body[:3] in ("---", "...") and body[3:4] in ("", " "):
            plain_start = body[:3] == "---" and not body[3:].strip(" ")
            return (-2 if plain_start else -3, 0, False, _MISSING, _MISSING)
        dash = body[:2] == "- "
        if dash:
            body = body[2:]
        key_text, colon, value_text = body.partition(": ")
        if not colon and body[-1:] == ":":
            key_text, colon = body[:-1], ":"
        key = self.keys.get(key_text, _UNSEEN) if colon else _MISSING
        if key is _UNSEEN:
            key = self.key(key_text)
        if key is _MISSING:
            value_text = body       # a scalar item, or text this reader leaves
        value = self.values.get(value_text, _UNSEEN) if value_text else (
            _MISSING if key is _MISSING else _BLOCK)
        if value is _UNSEEN:
            value = self.value(value_text)
        return (col, 0 if dash or key is _MISSING else _HOT.get(value, 1), dash, key, value)

    def plain(self, text: str) -> Any:
        """The value of the plain scalar TEXT; NeedsFullLoader for a merge key or a value
        that does not construct (``yaml_strict`` locates the error)."""
        if self.first is not None and text[0] not in self.first:
            return text
        # types-PyYAML leaves BaseResolver.resolve unannotated
        tag = self.loader.resolve(ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
        if tag == yaml_events.STR_TAG:
            return text
        if tag in _KEY_ONLY_TAGS:
            raise NeedsFullLoader("merge key")
        try:
            return self.loader.yaml_constructors[tag](self.loader, ScalarNode(tag, text))
        except BAD_VALUE_ERRORS:
            raise NeedsFullLoader("value")


def _quoted(text: str) -> Any:
    """The string a one-line quoted scalar TEXT stands for, or _MISSING when TEXT is not
    one this reader reads (escapes, an inner quote, text after the closing quote)."""
    if len(text) < 2 or text[-1] != text[0]:
        return _MISSING
    inner = text[1:-1]
    if text[0] == '"':
        return _MISSING if '"' in inner or "\\" in inner else inner
    if "'" not in inner:
        return inner
    return _MISSING if "'" in inner.replace("''", "") else inner.replace("''", "'")


def _chunks(text: str) -> Iterator[str]:
    """TEXT in pieces of about _CHUNK characters, each after the first starting with a
    line at column 0."""
    start = 0
    while start < len(text):
        found = _LINE_AT_0.search(text, start + _CHUNK)
        end = found.end() if found is not None else len(text)
        yield text[start:end]
        start = end


def _item_end(lines: list[str], start: int, col: int) -> int:
    """The index of the first line after START that is not blank and not indented more
    than COL (or the number of LINES)."""
    end = start + 1
    while end < len(lines):
        body = lines[end].lstrip(" ")
        if body and len(lines[end]) - len(body) <= col:
            break
        end += 1
    return end


def _only(docs: list[Any], dash: bool, keyed: bool) -> Any:
    """The value read from a value's lines: DOCS must be one document, one sequence item
    when DASH, one mapping entry when KEYED."""
    if len(docs) != 1:
        raise NeedsFullLoader("not one value")
    value = docs[0]
    if dash:
        if value.__class__ is not list or len(value) != 1:
            raise NeedsFullLoader("not one item")
        value = value[0]
    if keyed:
        if value.__class__ is not dict or len(value) != 1:
            raise NeedsFullLoader("not one entry")
        value = next(iter(value.values()))
    return value


def _is_item(line: str) -> bool:
    """Whether LINE is a sequence item, "- ..." after its indentation."""
    return line.lstrip(" ")[:2] == "- "


def _text(lines: list[str], start: int, end: int) -> str:
    """Lines START to END (exclusive) of a chunk's LINES, as they are in the text."""
    return "\n".join(lines[start:end]) + ("\n" if end < len(lines) else "")


class _Reader:
    """The documents of one text (``documents``), read a line at a time.

    The open collections: the innermost in ``top`` (a mapping when ``top_map``, its
    entries indented by ``top_ind``), those around it in ``stack``; a document is the
    value of key 0 of ``holder``. ``pending``: the key of ``top`` whose value is a block
    to come (None: none). ``node``: the line of the last value, which lines indented more
    than ``node_block`` continue (it is read from its lines, by ``yaml_events``, unless
    ``node_read``). ``unit``: the first line of the top-level item being read (its
    sequence ``unit_seq`` had ``unit_len`` items before it, at ``unit_col``, at depth
    ``unit_depth``). ``ready``: ``top`` is a mapping, its last value complete and no key
    pending, so a "key: value" line at its indentation is its next entry (``node_block``
    is then ``top_ind``). ``done``: the mappings complete and not yet handed to the
    pruner (the current top-level item's)."""

    __slots__ = ("text", "prune", "done", "collect", "scalars", "docs", "holder", "stack",
                 "top", "top_ind", "top_map", "in_doc", "ready", "pending", "node",
                 "node_block", "node_read", "unit", "unit_col", "unit_depth", "unit_len",
                 "unit_seq")

    def __init__(self, text: str, prune: Pruner | None) -> None:
        self.text, self.prune = text, prune
        self.done: list[JsonObject] = []
        self.collect = self.done.append if prune is not None else None
        self.scalars = _Scalars()
        self.docs: list[Any] = []
        self.holder: dict[Any, Any] = {}
        self.stack: list[tuple[Any, int, bool]] = []
        self.top: Any = self.holder
        self.top_ind, self.top_map, self.in_doc, self.ready = -1, True, False, False
        self.pending: Any = 0
        self.node, self.node_block, self.node_read = -1, -1, True
        self.unit, self.unit_col, self.unit_depth, self.unit_len = -1, -1, 0, 0
        self.unit_seq: list[Any] = []

    def documents(self) -> list[Any]:
        ascii_only = self.text.isascii()    # else load_all has looked at every character
        for chunk in _chunks(self.text):
            if ascii_only and chunk.encode("ascii").translate(None, _PRINTABLE_ASCII):
                raise NeedsFullLoader("unacceptable character")
            lines = chunk.split("\n")
            self.read(lines)
            if self.node >= 0 and not self.node_read:
                self.set_last(self.node_value(lines, len(lines)))
            self.node = -1
        if self.in_doc:
            self.docs.append(self.close())
        return self.docs

    def read(self, lines: list[str]) -> None:
        """Read LINES (a chunk's). This loop runs once per line of the file: a "key:
        value" or "key:" line in the mapping of the line before, when that line's value is
        complete (``ready``), is put in here, the next item of a sequence of mappings by
        ``next_item``; every other line goes to ``step``."""
        line_of, known_line = self.scalars.line, self.scalars.lines.get
        top, top_ind, ready, node = self.top, self.top_ind, self.ready, self.node
        lines_left = zip(count(), lines, map(known_line, lines))
        for i, line, info in lines_left:
            if info is None:
                info = line_of(line)
            col, hot, dash, key, value = info
            if hot and col == top_ind and ready and key not in top:
                if hot != 4:
                    top[key] = value if hot == 1 else _FRESH[hot]()
                    node = i
                    continue
                self.put(i, key, value, lines)
            elif not (dash and ready and self.next_item(i, info, lines)):
                self.node = node
                skip = self.step(i, info, lines)
                if skip:
                    next(islice(lines_left, skip, skip), None)
            top, top_ind, ready, node = self.top, self.top_ind, self.ready, self.node
        self.node = node

    def next_item(self, i: int, info: _Line, lines: list[str]) -> bool:
        """Whether line I (INFO), a "- key..." line, is the next item of the sequence the
        complete mapping ``top`` is the last item of; if so, put it in (as ``step``)."""
        col, _, _, key, value = info
        if key is _MISSING or col != self.top_ind - 2 or self.stack[-1][1:] != (col, False):
            return False
        self.pop()
        if col <= self.unit_col:
            self.unit_col = -1
        self.item(i, col, key)
        self.put(i, key, value, lines)
        return True

    def step(self, i: int, info: _Line, lines: list[str]) -> int:
        """Read line I of LINES (INFO: ``_Scalars.line``); the number of lines after it
        that are read with it."""
        col, _, dash, key, value = info
        if col == -1:
            return 0
        try:
            if self.node >= 0:
                if col > self.node_block:       # the last value goes on: read its lines
                    self.node_read = self.ready = False
                    return 0
                if not self.node_read:
                    self.set_last(self.node_value(lines, i))
                self.node = -1
            if col <= self.unit_col:
                self.unit_col = -1
            if col < 0:
                self.marker(col)
                return 0
            self.enter(col, dash)
            if dash:
                self.item(i, col, key)
            elif key is _MISSING:
                raise _Trouble("not a key")
            elif key in self.top:
                raise _Trouble("duplicate key")
            self.put(i, key, value, lines)
        except _Trouble:
            return self.item_again(i, lines)
        return 0

    def marker(self, col: int) -> None:
        """A document marker line: "---" (column -2) ends one and starts the next."""
        if col != -2:
            raise NeedsFullLoader("document marker")
        if self.in_doc:
            self.docs.append(self.close())
        self.holder, self.stack, self.top_ind, self.top_map = {}, [], -1, True
        self.top, self.pending, self.in_doc, self.ready = self.holder, 0, True, False

    def enter(self, col: int, dash: bool) -> None:
        """Open the block a pending key's value is, or close the collections that a line
        indented by COL (an item when DASH) ends; _Trouble when it belongs to none."""
        if self.pending is not None:
            if col > self.top_ind or (col == self.top_ind and dash):
                new: Any = [] if dash else {}
                self.top[self.pending] = new
                self.push(new, col, not dash)
                self.in_doc = True
            self.pending = None
        while col < self.top_ind or (col == self.top_ind and not dash and not self.top_map):
            self.pop()
        if self.top_ind != col or self.top_map == dash:
            raise _Trouble("indentation")

    def item(self, i: int, col: int, key: Any) -> None:
        """A sequence item at line I (column COL): a top-level item starts there, and a
        mapping when KEY is one."""
        if len(self.stack) <= 2:
            self.unit, self.unit_col, self.unit_depth = i, col, len(self.stack)
            self.unit_seq, self.unit_len = self.top, len(self.top)
        if key is not _MISSING:
            new: JsonObject = {}
            self.top.append(new)
            self.push(new, col + 2, True)

    def put(self, i: int, key: Any, value: Any, lines: list[str]) -> None:
        """Put VALUE (of line I of LINES) under KEY of ``top``, or after its items (KEY
        _MISSING)."""
        if value is _EMPTY_MAP:
            value = {}
        elif value is _EMPTY_SEQ:
            value = []
        self.node_read = value is not _MISSING
        if not self.node_read:          # read from its lines, once they are known
            value = None
        if key is _MISSING:
            self.top.append(value)
            self.node, self.node_block, self.ready = i, self.top_ind, False
        elif value is _BLOCK:
            self.top[key] = None
            self.node, self.pending, self.ready = -1, key, False
            self.open_ahead(i + 1, lines)
        else:
            self.top[key] = value
            self.node, self.node_block, self.ready = i, self.top_ind, self.node_read

    def open_ahead(self, i: int, lines: list[str]) -> None:
        """When line I of LINES is a mapping's first entry, indented more than ``top``'s
        pending key, open that mapping now, as the line would (``enter``): the line is then
        one of the common lines that ``read`` puts in at once."""
        if i < len(lines):
            col, _, dash, _, _ = (self.scalars.lines.get(lines[i])
                                  or self.scalars.line(lines[i]))
            if col > self.top_ind and not dash:
                new: JsonObject = {}
                self.top[self.pending] = new
                self.push(new, col, True)
                self.pending, self.ready, self.node_block = None, True, col

    def push(self, new: Any, col: int, is_map: bool) -> None:
        """NEW (a mapping when IS_MAP, its entries indented by COL) is the innermost."""
        self.stack.append((self.top, self.top_ind, self.top_map))
        self.top, self.top_ind, self.top_map = new, col, is_map
        if len(self.stack) > _MAX_DEPTH:
            raise NeedsFullLoader("deep")

    def pop(self) -> None:
        """The innermost collection is complete; at the top of a document or of one of
        its top-level items, the pruner gets the mappings complete so far."""
        if self.top_map and self.collect is not None:
            self.collect(self.top)
        depth = len(self.stack)
        self.top, self.top_ind, self.top_map = self.stack.pop()
        if depth <= 2 or (depth == 3 and not self.top_map):
            self.flush()

    def item_again(self, i: int, lines: list[str]) -> int:
        """Line I is not one this reader reads: read the top-level item it is in from its
        lines (NeedsFullLoader outside one); the lines after I that item has."""
        if self.unit_col < 0:
            raise NeedsFullLoader("not kubectl's style")
        end = _item_end(lines, self.unit, self.unit_col)
        del self.stack[self.unit_depth:], self.unit_seq[self.unit_len:], self.done[:]
        self.top, self.top_ind, self.top_map = self.unit_seq, self.unit_col, False
        self.unit_seq.append(self.lines_value(_text(lines, self.unit, end), True, False))
        self.flush()
        self.pending, self.node, self.unit_col, self.ready = None, -1, -1, False
        return end - i - 1

    def node_value(self, lines: list[str], end: int) -> Any:
        """The last value, read from its lines (``node`` to END) by ``yaml_events``."""
        return self.lines_value(_text(lines, self.node, end), _is_item(lines[self.node]),
                                self.top_map)

    def lines_value(self, text: str, dash: bool, keyed: bool) -> Any:
        """The value of the lines TEXT, read by ``yaml_events`` (see ``_only``); the
        mappings it makes join ``done``, without the one-entry mapping around the value."""
        before = len(self.done)
        value = _only(yaml_events.load_all(text, self.collect), dash, keyed)
        if keyed and len(self.done) > before:
            self.done.pop()         # the {key: value} of the lines: no mapping of the text
        return value

    def set_last(self, value: Any) -> None:
        """Put VALUE where the last value read into ``top`` is."""
        if self.top_map:
            self.top[next(reversed(self.top))] = value
        else:
            self.top[-1] = value

    def flush(self) -> None:
        """Hand the complete mappings to the pruner, in the order they completed."""
        if self.prune is not None:
            for mapping in self.done:
                self.prune(mapping)
        del self.done[:]

    def close(self) -> Any:
        """The document in ``holder``, its open collections closed."""
        while self.top is not self.holder:
            if self.top_map and self.collect is not None:
                self.collect(self.top)
            self.top, _, self.top_map = self.stack.pop()
        self.flush()
        return self.holder.get(0)


def load_all(text: str, prune: Pruner | None = None) -> list[Any]:
    """Every document of TEXT, as ``yaml_events.load_all`` reads it; raises
    ``NeedsFullLoader`` (and RecursionError) as it does, and for text in another style."""
    if "\t" in text or "\r" in text or ("#" in text and (
            " #" in text or "\n#" in text or text[:1] == "#")) \
            or (not text.isascii() and _ODD.search(text) is not None):
        raise NeedsFullLoader("not kubectl's style")
    return _Reader(text, prune).documents()
