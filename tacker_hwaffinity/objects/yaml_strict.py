"""YAML with PyYAML's SafeLoader semantics, duplicate keys refused and bad values located.

The loader behind the fast path (``yaml_events``), for what that path does not
handle (anchors, aliases, tags, merge keys) and to locate errors: every
problem is a ``yaml.YAMLError`` with the line and column, including values
that PyYAML's constructors cannot make (``2024-13-01``, ``!!int x``), which
plain ``yaml.safe_load`` lets escape as ValueError and others.

libyaml's C parser is used when PyYAML has it (``LIBYAML``), else PyYAML's
pure-Python one, with the same results. The composer is PyYAML's own in
both cases, so that deep nesting ends in a RecursionError, not a C stack
overflow.
"""
import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from collections.abc import Hashable
from typing import Any

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

LIBYAML = yaml.__with_libyaml__  # tests turn it off to run the pure-Python parser

# What PyYAML's constructors raise on values they cannot make (``!!int ''``,
# ``2024-13-01``, ``!!timestamp x``, ``!!set {[a]: b}``): bad input, not bugs.
BAD_VALUE_ERRORS = (ValueError, OverflowError, IndexError, KeyError, AttributeError, TypeError)


class TextChunks:
    """A file-like view of a str: libyaml reads it in chunks instead of a whole UTF-8 copy."""

    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def read(self, size: int = -1, /) -> str:
        """Up to SIZE characters more (all that are left when SIZE is negative), as
        file objects do; libyaml always gives SIZE."""
        end = len(self.text) if size < 0 else self.pos + size
        chunk = self.text[self.pos:end]
        self.pos += len(chunk)
        return chunk


class StrictConstruction(SafeConstructor):
    """SafeConstructor with bad values located (the loaders below also refuse duplicate
    keys; ``package_yaml``'s keep the last, as tosca-parser does)."""

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except BAD_VALUE_ERRORS as e:
            what = "invalid value %r" % node.value if isinstance(node, ScalarNode) else "bad value"
            raise ConstructorError(None, None, "%s (%s)" % (what, e), node.start_mark)


def _construct_strict_mapping(loader: yaml.SafeLoader,
                              node: ScalarNode | SequenceNode | MappingNode,
                              deep: bool = False) -> dict[Hashable, Any]:
    if not isinstance(node, MappingNode):
        raise ConstructorError(None, None, "expected a mapping node, but found %s" % node.id,
                               node.start_mark)
    loader.flatten_mapping(node)
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise ConstructorError(None, None, "mapping key is not a scalar", key_node.start_mark)
        if key in seen:
            raise ConstructorError("while constructing a mapping", node.start_mark,
                                   "duplicate key %r" % (key,), key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


class _PureStrictLoader(StrictConstruction, yaml.SafeLoader):
    """PyYAML's pure-Python SafeLoader, strict."""


_PureStrictLoader.add_constructor("tag:yaml.org,2002:map", _construct_strict_mapping)

if LIBYAML:
    class _CStrictLoader(StrictConstruction, Composer, yaml.CSafeLoader):
        """libyaml's parser under PyYAML's composer, strict."""

        def __init__(self, stream: TextChunks) -> None:
            yaml.CSafeLoader.__init__(self, stream)
            Composer.__init__(self)

    _CStrictLoader.add_constructor("tag:yaml.org,2002:map", _construct_strict_mapping)


def load_all(text: str) -> list[Any]:
    """Every document of TEXT with SafeLoader semantics; duplicate keys are YAMLErrors."""
    if LIBYAML:
        return list(yaml.load_all(TextChunks(text), Loader=_CStrictLoader))
    return list(yaml.load_all(text, Loader=_PureStrictLoader))
