"""The one loader of what a VNF package's author writes, within stated bounds.

Every YAML (or JSON, YAML's subset) file of a package that we parse goes through
here: the Definitions and whatever they import, the HOT templates
heat-translator nests, the lines of TOSCA.meta, the Kubernetes manifests under
``Files/``. What one file may make us do is bounded (:class:`Bounds`,
doc/packages.md), each bound checked while the parser composes the document:

* its size in bytes, checked before it is read;
* its values with every alias expanded: an alias adds the values of the node it
  names, so nine aliases of nine aliases nine levels deep (1 KB of text, 9**9
  values: a "billion laughs") are refused at the alias that passes the budget,
  and no reader after us (tosca-parser, heat-translator, ``repr``) walks more;
  an alias to a node that holds it (a recursive structure) expands for ever and
  is refused too;
* its nesting of mappings and sequences;
* the CPU time its parse may take (this thread's, checked at every value).

Over a bound is :class:`OverBound`, an InputError with the file and line. The
meaning of a document is PyYAML's SafeLoader's, on libyaml's parser when PyYAML
has it, as tosca-parser reads these files (and Tacker and heat-translator, with
``yaml.safe_load``): the same tags, the same values, mapping order kept, a
repeated key's last value; a value its constructor cannot make (``2024-13-01``)
is a located error instead of an escaping ValueError (``yaml_strict``). Heat's
loader keeps ``2013-05-23`` a string (``dates=False``). The Kubernetes manifests
keep the strict reading of ``yamlio`` (duplicate keys refused, JSON by its
content), under the same bounds, which count a file's documents together.
"""
import dataclasses
import os
import time
from typing import TYPE_CHECKING, Any

import yaml
from yaml.composer import Composer, ComposerError
from yaml.events import AliasEvent
from yaml.nodes import Node

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import yaml_strict
from tacker_hwaffinity.objects.jsontypes import JsonObject
from tacker_hwaffinity.objects.yaml_strict import StrictConstruction, TextChunks
from tacker_hwaffinity.objects.yamlio import parse_documents

_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_CHUNK = 1 << 20        # what a file that is not what its size says is read by


@dataclasses.dataclass(frozen=True)
class Bounds:
    """What one file of a package may hold; the defaults hold ETSI's VNFD types
    (62 KB, 2,854 values, 9 levels) many times over."""

    bytes: int = 16 << 20       # the file's size
    values: int = 100_000       # values with every alias expanded
    depth: int = 128            # nested mappings and sequences
    seconds: float = 5.0        # CPU time of this thread to parse it


BOUNDS = Bounds()


class OverBound(InputError):
    """A package file over one of its :class:`Bounds`: refused before anyone walks it."""


class _OverBound(ComposerError):
    """Raised inside the composer; becomes :class:`OverBound`."""

    problem_mark: yaml.Mark     # always given: where the bound was passed


class _BoundedComposition(Composer):
    """A composer that counts the values of a file's documents, aliases expanded, and
    their depth, and watches the clock, from :meth:`start` (:func:`_parser`)."""

    bounds: Bounds
    expanded: int                   # values so far, aliases expanded
    nesting: int
    deadline: float                 # of time.thread_time()
    anchor_values: dict[str | None, int]   # by anchor (str | None to types-PyYAML)

    if TYPE_CHECKING:
        def peek_event(self) -> Any:
            """The parser's (the class this is mixed into), declared for the type checker."""

    def start(self, bounds: Bounds) -> None:
        self.bounds, self.expanded, self.nesting = bounds, 0, 0
        self.deadline = time.thread_time() + bounds.seconds

    def compose_document(self) -> Node | None:
        self.anchor_values = {}         # the document's anchors: values each expands to
        return super().compose_document()

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        event = self.peek_event()
        if event.__class__ is AliasEvent:
            size = self.anchor_values.get(event.anchor)
            if size is None and event.anchor in self.anchors:
                # types-PyYAML's events' marks may be libyaml's, which its errors do not take
                raise _OverBound(None, None, "alias *%s names a node that holds it (a "
                                 "recursive structure)" % event.anchor,
                                 event.start_mark)  # type: ignore[arg-type]
            self._count(size or 0, event)  # an undefined alias: the composer refuses it
            return super().compose_node(parent, index)
        if self.nesting >= self.bounds.depth:
            raise _OverBound(None, None, "nests deeper than %d mappings and lists"
                             % self.bounds.depth, event.start_mark)
        before = self.expanded
        self._count(1, event)
        self.nesting += 1
        node = super().compose_node(parent, index)
        self.nesting -= 1
        if event.anchor is not None:
            self.anchor_values[event.anchor] = self.expanded - before
        return node

    def _count(self, values: int, event: Any) -> None:
        self.expanded += values
        if self.expanded > self.bounds.values:
            raise _OverBound(None, None, "over %d values with its aliases expanded (an alias "
                             "bomb?)" % self.bounds.values, event.start_mark)
        if time.thread_time() > self.deadline:
            raise _OverBound(None, None, "still parsing after %g s of CPU"
                             % self.bounds.seconds, event.start_mark)


# TYPE_CHECKING: mypy reads the libyaml branch (one class of each name); the other is
# the same mixins on PyYAML's pure-Python loader.
if TYPE_CHECKING or yaml_strict.LIBYAML:
    class _SafeLoader(_BoundedComposition, StrictConstruction, Composer, yaml.CSafeLoader):
        """libyaml's parser under PyYAML's composer (deep nesting stays in Python)."""

        def __init__(self, stream: str) -> None:
            yaml.CSafeLoader.__init__(self, TextChunks(stream))
            Composer.__init__(self)
else:
    class _SafeLoader(_BoundedComposition, StrictConstruction, yaml.SafeLoader):
        """PyYAML's pure-Python SafeLoader."""


class _HeatLoader(_SafeLoader):
    """Heat's reading: ``2013-05-23`` stays a string."""


_HeatLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def _decoded(data: bytes | str, source: str, field: str | None, bounds: Bounds,
             why: str | None = None) -> str:
    """DATA (bytes or str) as text within the size bound; WHY it must be UTF-8, if said."""
    if len(data) > bounds.bytes:
        raise _too_big(len(data), source, field, bounds)
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError("not UTF-8 text (%s)%s" % (e.reason, ": " + why if why else ""),
                         source=source, field=field)


def _too_big(size: int, source: str, field: str | None, bounds: Bounds) -> OverBound:
    return OverBound("%d bytes, over the %d a package's YAML file may hold"
                     % (size, bounds.bytes), source=source, field=field)


def _located(e: yaml.YAMLError, text: str, source: str, field: str | None) -> InputError:
    """The InputError for YAMLError E raised reading TEXT."""
    if isinstance(e, _OverBound):
        return OverBound("at line %d: %s" % (e.problem_mark.line + 1, e.problem),
                         source=source, field=field)
    mark = getattr(e, "problem_mark", None)
    problem = getattr(e, "problem", None) or getattr(e, "reason", None) or e
    context = getattr(e, "context", None)
    if context and getattr(e, "problem", None):
        problem = "%s: %s" % (context, problem)
    if mark is None and isinstance(e, yaml.reader.ReaderError):
        mark = _reader_mark(e, text)
        problem = "unacceptable character #x%04x: %s" % (
            e.character if isinstance(e.character, int) else ord(e.character[:1] or "\0"),
            e.reason)
    where = " at line %d" % (mark.line + 1) if mark is not None else ""
    return InputError("not valid YAML%s: %s" % (where, " ".join(str(problem).split())),
                      source=source, field=field)


def _reader_mark(e: yaml.reader.ReaderError, text: str) -> yaml.Mark:
    """The mark (a line) of ReaderError E: libyaml counts bytes of UTF-8."""
    pos = e.position
    if yaml_strict.LIBYAML:
        pos = len(text.encode("utf-8", "surrogatepass")[:pos].decode("utf-8", "ignore"))
    # types-PyYAML wants a name and a pointer, which libyaml's marks lack too
    return yaml.Mark(None, pos, text.count("\n", 0, pos), 0, None, None)  # type: ignore[arg-type]


def _parser(loader: type[_SafeLoader], text: str, bounds: Bounds) -> _SafeLoader:
    """A LOADER (a class) over TEXT, within BOUNDS."""
    parser = loader(text)
    parser.start(bounds)
    return parser


def _load(loader: type[_SafeLoader], text: str, source: str, field: str | None,
          bounds: Bounds) -> Any:
    """The one document of TEXT read by LOADER (a class) within BOUNDS."""
    parser = _parser(loader, text, bounds)
    try:
        return parser.get_single_data()
    except yaml.YAMLError as e:
        raise _located(e, text, source, field)
    except RecursionError:      # Python's limit set below the depth bound by a library
        raise OverBound("nests too deep", source=source, field=field)
    finally:
        parser.dispose()


def loads(data: bytes | str, source: str, field: str | None = None, dates: bool = True,
          bounds: Bounds = BOUNDS) -> Any:
    """The document of DATA (bytes or str), a YAML file of a package named SOURCE, as
    tosca-parser reads it, within BOUNDS; InputError (OverBound past a bound)
    with SOURCE, the line and FIELD. DATES=False: Heat's reading, dates stay strings."""
    text = _decoded(data, source, field, bounds, "a VNFD is YAML")
    return _load(_SafeLoader if dates else _HeatLoader, text, source, field, bounds)


def _file_bytes(path: str, source: str, field: str | None, bounds: Bounds) -> bytes:
    """The bytes of the file PATH, its size checked before it is read; one that holds
    more than its size said (it grows, or is not a regular file) is read a chunk at a
    time up to the bound."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > bounds.bytes:
                raise _too_big(size, source, field, bounds)
            data = f.read(size + 1)
            while (size == 0 or len(data) > size) and len(data) <= bounds.bytes:
                more = f.read(min(_CHUNK, bounds.bytes + 1 - len(data)))
                if not more:
                    break
                data += more
    except OSError as e:
        raise InputError("cannot read: %s" % (e.strerror or e), source=source, field=field)
    if len(data) > bounds.bytes:
        raise _too_big(len(data), source, field, bounds)
    return data


def read(path: str, source: str | None = None, field: str | None = None,
         bounds: Bounds = BOUNDS) -> Any:
    """:func:`loads` of the file PATH (SOURCE: how messages name it, PATH if None),
    its size checked before it is read."""
    source = source or path
    return loads(_file_bytes(path, source, field, bounds), source, field, bounds=bounds)


def read_manifests(path: str, source: str | None = None, bounds: Bounds = BOUNDS
                   ) -> list[JsonObject]:
    """The Kubernetes objects of the manifest file PATH of a package (SOURCE: how
    messages name it), as ``yamlio.parse_documents`` reads them (strict), within BOUNDS:
    a text that YAML reads is composed under them first, so that no alias expands past
    them afterwards."""
    source = source or path
    text = _decoded(_file_bytes(path, source, None, bounds), source, None, bounds)
    parser = _parser(_SafeLoader, text, bounds)
    try:
        while parser.check_node():
            parser.get_node()
    except _OverBound as e:
        raise _located(e, text, source, None)
    except (yaml.YAMLError, RecursionError):
        pass    # parse_documents says what is wrong, as JSON or as YAML
    finally:
        parser.dispose()
    documents: list[JsonObject] = parse_documents(text, source)
    return documents
