"""TOSCA-Metadata/TOSCA.meta: blocks of ``Key: value`` lines.

Tacker's upload check (``csar_utils._convert_artifacts``) splits the file at
runs of empty lines (``\\n\\n+``) and reads each block with
``yaml.safe_load``; toscaparser and Tacker v2 read the whole file with
``yaml.safe_load``. We read it the way Tacker splits it, and refuse what the
readers would see differently: CR line ends, lines of only spaces (not a
separator for Tacker), lines that are not ``Key: value``, a key twice in one
block, values YAML does not read back as the same string (read by
``objects.package_yaml``, within its bounds: ``str()`` of a value whose aliases
expand to a billion values would not end).
"""
import dataclasses
import os
from collections.abc import Iterable

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import package_yaml

PATH = "TOSCA-Metadata/TOSCA.meta"
ALGORITHM = "SHA-256"
# An artifact's path: Name (SOL004's TOSCA.meta key, what build writes: v2 reads only it,
# v1 takes it for Source) or Source (what v1's own samples write).
SOURCE_KEYS = ("Source", "Name")
IMAGE_CONTENT_TYPE = "application/x-iso9066-image"    # as Tacker's samples write it

# Tacker's csar_utils.IMAGE_FORMAT_LIST: Sources with these extensions are
# never hashed at upload.
IMAGE_EXTENSIONS = ("raw", "vhd", "vhdx", "vmdk", "vdi", "iso", "ploop", "qcow2", "aki",
                    "ari", "ami", "img")

_CONTENT_TYPES = {".py": "text/x-python", ".sh": "application/x-sh",
                  ".yaml": "application/yaml", ".yml": "application/yaml",
                  ".json": "application/json", ".txt": "text/plain"}


@dataclasses.dataclass
class Block:
    entries: list[tuple[str, str]]      # in file order
    line: int                           # line number of the first entry (1-based)

    def get(self, key: str, default: str | None = None) -> str | None:
        for k, v in self.entries:
            if k == key:
                return v
        return default

    @property
    def source(self) -> str | None:
        for key in SOURCE_KEYS:
            if self.get(key) is not None:
                return self.get(key)
        return None

    @property
    def source_key(self) -> str:
        """The key the block names its artifact with (Name when it has none)."""
        return next((key for key in SOURCE_KEYS if self.get(key) is not None), "Name")

    @property
    def is_artifact(self) -> bool:
        """Tacker checks a block's hash when it has Algorithm or Hash."""
        return any(k in ("Algorithm", "Hash") for k, _ in self.entries)

    def where(self) -> str:
        """How a problem in this block is located."""
        src = self.source
        return "line %d%s" % (self.line, " (%s)" % src if src else "")


def is_image(path: str) -> bool:
    return os.path.splitext(path)[1][1:] in IMAGE_EXTENSIONS


def content_type(path: str) -> str:
    if is_image(path):
        return IMAGE_CONTENT_TYPE
    return _CONTENT_TYPES.get(os.path.splitext(path)[1].lower(), "application/octet-stream")


def _entry(line, number, source):
    key, sep, value = line.partition(":")
    if not sep or not key or key != key.strip() or " " in key:
        raise InputError("not 'Key: value': %r" % line, source=source, obj="line %d" % number)
    value = value.strip()
    if value and _reads_back(key, value) is False:
        raise InputError("YAML does not read %r back as this text; Tacker would see another "
                         "value" % value, source=source, obj="line %d" % number, field=key)
    return key, value


def _reads_back(key, value, exact=False):
    """Does YAML read ``key: value`` back as VALUE (EXACT: as that very string)?"""
    try:
        loaded = package_yaml.loads("%s: %s" % (key, value), PATH)
    except InputError:      # not YAML, or over the loader's bounds (an alias bomb)
        return False
    if not isinstance(loaded, dict):
        return False
    return loaded.get(key) == value if exact else str(loaded.get(key)) == value


def parse(text: str, source: str = PATH) -> list[Block]:
    """The blocks of TOSCA.meta TEXT; InputError (with the line) when unreadable."""
    if "\r" in text:
        raise InputError("has CR line ends; Tacker splits blocks at LF LF only", source=source)
    blocks, current = [], None
    for number, line in enumerate(text.split("\n"), 1):
        if line == "":
            current = None
            continue
        if not line.strip():
            raise InputError("only spaces: Tacker does not see it as the empty line between "
                             "blocks", source=source, obj="line %d" % number)
        key, value = _entry(line, number, source)
        if current is None:
            current = Block([], number)
            blocks.append(current)
        if current.get(key) is not None:
            raise InputError("given twice in one block", source=source,
                             obj="line %d" % number, field=key)
        current.entries.append((key, value))
    if not blocks:
        raise InputError("is empty", source=source)
    return blocks


def read(path: str, source: str = PATH) -> list[Block]:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError("cannot read: %s" % (e.strerror or e), source=source)
    try:
        return parse(data.decode("utf-8"), source)
    except UnicodeDecodeError as e:
        raise InputError("not UTF-8 text (%s)" % e.reason, source=source)


def artifact_block(path: str, digest: str | None, ctype: str | None = None) -> Block:
    """The block Tacker checks for one artifact: Name, Algorithm, Hash."""
    if not _reads_back("Name", path, exact=True):
        raise InputError("file name cannot be written in TOSCA.meta (YAML reads it as "
                         "something else)", source=path)
    entries = [("Name", path), ("Content-Type", ctype or content_type(path))]
    if digest is not None:
        entries += [("Algorithm", ALGORITHM), ("Hash", digest)]
    return Block(entries, 0)


def render(blocks: Iterable[Block]) -> str:
    """TOSCA.meta text: ``Key: value`` lines, one empty line between blocks."""
    return "\n".join("".join("%s: %s\n" % kv for kv in b.entries) for b in blocks)
