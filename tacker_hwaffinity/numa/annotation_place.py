"""Where a pod's annotations are in the YAML or JSON file it was read from, so that an
affinity annotation's error gives the file's line, not the line inside the annotation.

A value whose lines are lines of the file (a literal block, ``|``, or a value on one
line) maps each of its lines and columns to the file's; for any other (folded, ``>``;
quoted over several lines; a JSON string, whose ``\\n`` are escapes) the annotation's
own line is given with the position inside it. The file is composed again, with marks,
only when an error asks (``SourceText``): loading never pays for it.
"""
import dataclasses
import re
from collections.abc import Iterator

import yaml

# (namespace, pod name, annotation key)
_Key = tuple[str, str, str]
_COMPOSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DEFAULT_NAMESPACE = "default"
_LINE_BREAK = re.compile(r"\r\n|[\n\r\x85\u2028\u2029]")   # YAML 1.1's, as the parser counts


@dataclasses.dataclass(frozen=True)
class Place:
    """Where one annotation is: its key's LINE in the file (1-based) and, when each line
    of its value is a line of the file, LINES: (file line, columns before the value's
    text on it, or None when not known) of each line of the value."""
    line: int
    lines: tuple[tuple[int, int | None], ...] | None

    def where(self, line: int | None, column: int | None) -> str:
        """' (line L, column C)': the file's position of LINE and COLUMN (1-based) of the
        annotation's value, or the position in the value at the annotation's line when
        that is not known; LINE None: only the annotation's line."""
        if line is None:
            return " (the annotation at line %d)" % self.line
        if self.lines is not None and 0 < line <= len(self.lines):
            file_line, before = self.lines[line - 1]
            if column is None or before is None:
                return " (line %d)" % file_line
            return " (line %d, column %d)" % (file_line, before + column)
        return " (line %d, column %d of the annotation at line %d)" % (line, column or 0,
                                                                       self.line)


class SourceText:
    """The TEXT of one file pods were read from; ``place`` composes it once, when first
    asked."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.places: dict[_Key, Place] | None = None

    def place(self, namespace: str, name: str, key: str) -> Place | None:
        """Where annotation KEY of pod NAMESPACE/NAME is in the text (None: not found, or
        the text does not compose as YAML)."""
        if self.places is None:
            self.places = _places(self.text)
        return self.places.get((namespace, name, key))


def _places(text: str) -> dict[_Key, Place]:
    try:
        roots = list(yaml.compose_all(text, Loader=_COMPOSER))
    except (yaml.YAMLError, RecursionError):
        return {}
    lines = _LINE_BREAK.split(text)
    out = {}
    for obj in _objects(roots):
        meta = _get(obj, "metadata")
        name, namespace = _get(meta, "name"), _get(meta, "namespace")
        annotations = _get(meta, "annotations")
        if not isinstance(name, yaml.ScalarNode) or not isinstance(annotations,
                                                                   yaml.MappingNode):
            continue
        ns = namespace.value if isinstance(namespace, yaml.ScalarNode) else _DEFAULT_NAMESPACE
        for key, value in annotations.value:
            if isinstance(key, yaml.ScalarNode) and isinstance(value, yaml.ScalarNode):
                out[(ns, name.value, key.value)] = Place(key.start_mark.line + 1,
                                                         _value_lines(value, lines))
    return out


def _objects(roots: list[yaml.Node]) -> Iterator[yaml.MappingNode]:
    """Every mapping of ROOTS that may be an object: each document, and the items of a
    list (``kind: List``, ``NodeList``, ...), as ``objects.yamlio`` flattens them."""
    stack = [r for r in reversed(roots) if isinstance(r, yaml.MappingNode)]
    seen = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:    # an alias: once
            continue
        seen.add(id(node))
        kind, items = _get(node, "kind"), _get(node, "items")
        if isinstance(kind, yaml.ScalarNode) and kind.value.endswith("List") \
                and isinstance(items, yaml.SequenceNode):
            stack.extend(n for n in reversed(items.value) if isinstance(n, yaml.MappingNode))
        else:
            yield node


def _get(node: yaml.Node | None, key: str) -> yaml.Node | None:
    """The value of KEY in the mapping NODE (None: not a mapping, or no such key)."""
    if not isinstance(node, yaml.MappingNode):
        return None
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.value == key:
            return v
    return None


def _value_lines(value: yaml.ScalarNode, lines: list[str]
                 ) -> tuple[tuple[int, int | None], ...] | None:
    """(file line, columns before the text) of each line of VALUE, when each of its lines
    is a line of the file (LINES); else None."""
    start = value.start_mark
    if value.style == "|":      # its text starts on the line after the indicator
        out: list[tuple[int, int | None]] = []
        for i, inner in enumerate(value.value.split("\n")):
            number = start.line + 2 + i
            text = lines[number - 1] if number <= len(lines) else ""
            out.append((number, len(text) - len(inner)
                        if inner and text.endswith(inner) else None))
        return tuple(out)
    if start.line != value.end_mark.line:
        return None
    if not value.style:         # plain: the text as written
        return ((start.line + 1, start.column),)
    if value.style in ("'", '"'):   # quoted, without an escape: the text between the quotes
        written = lines[start.line][start.column + 1:value.end_mark.column - 1]
        return ((start.line + 1, start.column + 1 if written == value.value else None),)
    return None
