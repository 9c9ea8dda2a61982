"""YAML read straight from the parser's events: fast, and memory only for the result.

PyYAML's loaders compose a node tree of the whole document first (for
``kubectl get -o yaml``, one ``kind: List`` document: the whole file), then
construct it. Here the parser's events become dicts, lists and scalars
directly, each mapping handed to an optional pruner as soon as it is complete,
so large snapshots load several times faster than a bare
``yaml.load(Loader=yaml.CSafeLoader)`` in a fraction of its memory.

It handles what kubectl prints: plain and quoted scalars, block and flow
collections, several documents. On anything else (anchors, aliases, explicit
tags, merge keys, a duplicate key, a syntax error, a value that does not
construct) it raises ``NeedsFullLoader`` and the caller reads the text again
with ``yaml_strict``, which gives the same results and locates errors.
"""
from typing import Any, TypeAlias

import yaml
from yaml.events import (
    MappingEndEvent, MappingStartEvent, ScalarEvent, SequenceEndEvent, SequenceStartEvent,
    StreamEndEvent)
from yaml.nodes import ScalarNode

from tacker_hwaffinity.objects import yaml_strict
from tacker_hwaffinity.objects.jsontypes import JsonList, JsonObject, Pruner
from tacker_hwaffinity.objects.yaml_strict import BAD_VALUE_ERRORS, TextChunks

STR_TAG = "tag:yaml.org,2002:str"
_MAP_TAGS = (None, "!", "tag:yaml.org,2002:map")
_SEQ_TAGS = (None, "!", "tag:yaml.org,2002:seq")
_KEY_ONLY_TAGS = ("tag:yaml.org,2002:merge", "tag:yaml.org,2002:value")
_PLAIN_CACHE_SIZE = 1 << 16  # plain scalar text -> value, for the repeated ones
_MISSING = object()
# A parser event. The loops tell events apart by ``event.__class__ is``, which mypy does
# not narrow on (and ``isinstance`` would slow the loop that runs once per event).
_ParserEvent: TypeAlias = Any


class NeedsFullLoader(Exception):
    """The fast path does not handle this text; read it with ``yaml_strict``."""


def _event_source(text: str) -> yaml.CSafeLoader | yaml.SafeLoader:
    """A loader object over TEXT: its parser events, resolver and scalar constructors."""
    if yaml_strict.LIBYAML:
        return yaml.CSafeLoader(TextChunks(text))
    return yaml.SafeLoader(text)


class _Builder:
    """Objects from parser events; ``prune`` (if any) sees every mapping once it is complete."""

    def __init__(self, source: yaml.CSafeLoader | yaml.SafeLoader, prune: Pruner | None
                 ) -> None:
        self.next_event = source.get_event
        self.source = source
        self.prune = prune
        self.plain_values: dict[str, Any] = {}

    def documents(self) -> list[Any]:
        next_event = self.next_event
        next_event()  # StreamStartEvent
        docs = []
        while next_event().__class__ is not StreamEndEvent:  # DocumentStartEvent
            docs.append(self.node(next_event()))
            next_event()  # DocumentEndEvent
        return docs

    def node(self, event: _ParserEvent) -> Any:
        cls = event.__class__
        if cls is ScalarEvent:
            return self.scalar(event)
        if event.anchor is not None:
            raise NeedsFullLoader("anchor")
        if cls is MappingStartEvent and event.tag in _MAP_TAGS:
            return self.mapping()
        if cls is SequenceStartEvent and event.tag in _SEQ_TAGS:
            return self.sequence()
        raise NeedsFullLoader("alias or tag")

    def scalar(self, event: _ParserEvent) -> Any:
        if event.anchor is not None:
            raise NeedsFullLoader("anchor")
        tag = event.tag
        if tag is None and event.implicit[0]:
            return self.plain(event.value)
        if tag is None or tag == "!":
            return event.value
        raise NeedsFullLoader("tag")

    def plain(self, text: str) -> Any:
        """The value of an untagged plain scalar, as SafeLoader resolves and constructs it."""
        value = self.plain_values.get(text, _MISSING)
        return self.resolve_plain(text) if value is _MISSING else value

    def resolve_plain(self, text: str) -> Any:
        # types-PyYAML leaves BaseResolver.resolve unannotated
        tag = self.source.resolve(ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
        if tag == STR_TAG:
            value = text
        elif tag in _KEY_ONLY_TAGS:
            raise NeedsFullLoader("merge key")
        else:
            try:
                value = self.source.yaml_constructors[tag](self.source, ScalarNode(tag, text))
            except BAD_VALUE_ERRORS:
                raise NeedsFullLoader("value")
        if len(self.plain_values) < _PLAIN_CACHE_SIZE:
            self.plain_values[text] = value
        return value

    # mapping() and sequence() inline the common case, an untagged scalar without anchor:
    # they run once per event of the whole file.

    def mapping(self) -> JsonObject:
        next_event, node, resolve_plain = self.next_event, self.node, self.resolve_plain
        cached = self.plain_values.get
        out: JsonObject = {}
        while True:
            event = next_event()
            if event.__class__ is ScalarEvent and event.tag is None and event.anchor is None:
                key = event.value
                if event.implicit[0]:
                    key = cached(key, _MISSING)
                    if key is _MISSING:
                        key = resolve_plain(event.value)
            elif event.__class__ is ScalarEvent:
                key = self.scalar(event)
            elif event.__class__ is MappingEndEvent:
                break
            else:
                raise NeedsFullLoader("complex key")
            if key in out:
                raise NeedsFullLoader("duplicate key")
            event = next_event()
            if event.__class__ is ScalarEvent and event.tag is None and event.anchor is None:
                value = event.value
                if event.implicit[0]:
                    value = cached(value, _MISSING)
                    if value is _MISSING:
                        value = resolve_plain(event.value)
                out[key] = value
            else:
                out[key] = node(event)
        if self.prune is not None:
            self.prune(out)
        return out

    def sequence(self) -> JsonList:
        next_event, node, resolve_plain = self.next_event, self.node, self.resolve_plain
        cached = self.plain_values.get
        out: JsonList = []
        while True:
            event = next_event()
            if event.__class__ is ScalarEvent and event.tag is None and event.anchor is None:
                value = event.value
                if event.implicit[0]:
                    value = cached(value, _MISSING)
                    if value is _MISSING:
                        value = resolve_plain(event.value)
                out.append(value)
            elif event.__class__ is SequenceEndEvent:
                return out
            else:
                out.append(node(event))


def load_all(text: str, prune: Pruner | None = None) -> list[Any]:
    """Every document of TEXT; raises ``NeedsFullLoader`` (and RecursionError)."""
    try:
        source = _event_source(text)
    except yaml.YAMLError:  # the pure reader checks every character first
        raise NeedsFullLoader("unacceptable character")
    try:
        return _Builder(source, prune).documents()
    except yaml.YAMLError:
        raise NeedsFullLoader("syntax error")
    finally:
        source.dispose()
