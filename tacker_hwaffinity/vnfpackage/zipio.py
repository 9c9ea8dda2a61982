"""Zip archives: deterministic writing, and reading within stated sizes that
refuses unsafe names.

A package written twice from the same inputs is the same bytes: members in
path order, no directory entries, a fixed time stamp (1980-01-01, the zip
epoch), Unix attributes 0644 (0755 for files executable in the source),
deflate level 9 (images stored), and no archive comment.

Reading: what the central directory declares is checked against :class:`Limits`
before anything is extracted (each member, the total, the compression ratio, the
count), and what a member really holds is counted while it is written or hashed,
a chunk at a time (doc/packages.md).
"""
import dataclasses
import os
import posixpath
import shutil
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol

from tacker_hwaffinity import safewrite
from tacker_hwaffinity.errors import InputError

EPOCH = (1980, 1, 1, 0, 0, 0)
_CHUNK = 1 << 20
RATIO_FLOOR = 64 << 10      # bytes a member may declare whatever its compression ratio
_CORRUPT = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError,
            ValueError, OSError)      # what zipfile raises reading a damaged member


class Hash(Protocol):
    """What ``digest`` asks of a hash object (``hashlib``'s)."""

    def update(self, data: bytes, /) -> None: ...

    def hexdigest(self) -> str: ...


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one package may unpack to; the defaults hold a VNF image of a few GiB."""

    member_bytes: int = 8 << 30     # bytes one member may declare (and write)
    total_bytes: int = 16 << 30     # bytes all members together may declare
    ratio: int = 100                # a member's size over its zipped size (over RATIO_FLOOR)
    members: int = 10000            # entries in the central directory


def _info(name, executable, stored, size):
    info = zipfile.ZipInfo(name, date_time=EPOCH)
    info.create_system = 3                  # Unix, whatever the building host
    info.external_attr = ((0o100755 if executable else 0o100644) & 0xFFFF) << 16
    info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    info.file_size = size
    return info


def write(target: str, members: Iterable[Sequence[Any]]) -> None:
    """Write the zip TARGET atomically (``safewrite.replacing``: a link there is replaced,
    not followed; mode 0666 less the umask).

    MEMBERS: [(name, data)] where data is bytes or the path of a file to copy;
    optional third and fourth items: executable (bool), stored (bool).
    """
    with safewrite.replacing(os.path.abspath(target)) as raw, zipfile.ZipFile(raw, "w") as z:
        for name, data, *flags in sorted(members, key=lambda m: m[0]):
            executable, stored = (list(flags) + [False, False])[:2]
            if not stored and not isinstance(data, bytes):
                with open(data, "rb") as f:
                    data = f.read()
            if isinstance(data, bytes):
                z.writestr(_info(name, executable, stored, len(data)), data, compresslevel=9)
                continue
            # A stored file (an image) is streamed: it may be large.
            size = os.path.getsize(data)
            info = _info(name, executable, stored, size)
            with open(data, "rb") as src, z.open(info, "w", force_zip64=size > 2 ** 31) as dst:
                shutil.copyfileobj(src, dst, _CHUNK)


def unsafe_reason(name: str) -> str | None:
    """Why member NAME could land outside the package when extracted, or None."""
    if not name:
        return "is empty (it names the package's own folder)"
    if "\\" in name:
        return "has a backslash (a path separator on Windows)"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "is an absolute path"
    if ".." in posixpath.normpath(name).split("/") or ".." in name.split("/"):
        return "goes up with '..'"
    if "\0" in name:
        return "has a NUL character"
    return None


def open_zip(path: str) -> zipfile.ZipFile:
    """ZipFile of PATH, or InputError when it is not a zip archive."""
    if not os.path.isfile(path):
        raise InputError("no such file", source=path)
    try:
        return zipfile.ZipFile(path)
    except _CORRUPT as e:       # NotImplementedError: a zip version zipfile cannot read
        raise InputError("not a zip archive: %s" % e, source=path)


def check_sizes(z: zipfile.ZipFile, limits: Limits = Limits()) -> None:
    """Refuse (InputError) an archive whose central directory declares more than
    LIMITS allow: nothing has been extracted or decompressed yet."""
    source = z.filename
    infos = z.infolist()
    if len(infos) > limits.members:
        raise InputError("%d archive members, over %d" % (len(infos), limits.members),
                         source=source)
    total = 0
    for info in infos:
        name, size = info.filename, info.file_size
        if size > limits.member_bytes:
            raise InputError("declares %d bytes, over the %d a member may hold (csar validate "
                             "--max-member-bytes)" % (size, limits.member_bytes),
                             source=source, obj=name)
        if size > RATIO_FLOOR and size > limits.ratio * max(info.compress_size, 1):
            raise InputError("declares %d bytes from %d zipped: a compression ratio over %d "
                             "(a zip bomb?; csar validate --max-ratio)"
                             % (size, info.compress_size, limits.ratio), source=source, obj=name)
        total += size
    if total > limits.total_bytes:
        raise InputError("members unpack to %d bytes, over %d (csar validate "
                         "--max-package-bytes)" % (total, limits.total_bytes), source=source)


def chunks(z: zipfile.ZipFile, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """The bytes of member INFO, a chunk at a time; InputError when the member holds more
    than it declares or is damaged (zipfile also stops at the declared size)."""
    left = info.file_size
    try:
        with z.open(info) as src:
            while True:
                chunk = src.read(min(_CHUNK, left + 1))
                if not chunk:
                    return
                left -= len(chunk)
                if left < 0:
                    raise InputError("holds more than the %d bytes it declares: cut off"
                                     % info.file_size, source=z.filename, obj=info.filename)
                yield chunk
    except _CORRUPT as e:
        raise InputError("cannot be read as the %d bytes it declares (damaged, or holding "
                         "more: cut off): %s" % (info.file_size, e), source=z.filename,
                         obj=info.filename)


def read_member(z: zipfile.ZipFile, name: str, cap: int) -> bytes:
    """The bytes of member NAME, read whole: InputError when it declares over CAP bytes."""
    info = z.getinfo(name)
    if info.file_size > cap:
        raise InputError("declares %d bytes, over the %d read whole" % (info.file_size, cap),
                         source=z.filename, obj=name)
    return b"".join(chunks(z, info))


def digest(z: zipfile.ZipFile, name: str, algorithm: Callable[[], Hash]) -> str:
    """Hex digest (ALGORITHM: a hashlib constructor) of member NAME, read streamed."""
    h = algorithm()
    for chunk in chunks(z, z.getinfo(name)):
        h.update(chunk)
    return h.hexdigest()


def extract_safe(z: zipfile.ZipFile, into: str, limits: Limits = Limits(),
                 skip: Callable[[str], bool] | None = None) -> list[str]:
    """Extract every member whose name is safe (and SKIP(name) is not true) within
    LIMITS; return their names. A member that turns out bigger than it declared is
    removed and refused. No link in INTO is followed (``safewrite.create_beneath``)."""
    check_sizes(z, limits)
    names = []
    for info in z.infolist():
        if unsafe_reason(info.filename) or info.is_dir() or (skip and skip(info.filename)):
            continue
        dest = os.path.join(into, *info.filename.split("/"))
        try:
            with safewrite.create_beneath(into, info.filename) as dst:
                for chunk in chunks(z, info):
                    dst.write(chunk)
        except InputError:
            os.unlink(dest)
            raise
        except OSError as e:
            raise InputError("cannot be extracted: %s" % (e.strerror or e),
                             source=z.filename, obj=info.filename) from None
        names.append(info.filename)
    return names
