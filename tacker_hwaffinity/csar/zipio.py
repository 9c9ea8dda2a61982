"""Zip archives: deterministic writing, and reading that refuses unsafe names.

A package written twice from the same inputs is the same bytes: members in
path order, no directory entries, a fixed time stamp (1980-01-01, the zip
epoch), Unix attributes 0644 (0755 for files executable in the source),
deflate level 9 (images stored), and no archive comment.
"""
import os
import posixpath
import shutil
import tempfile
import zipfile

from tacker_hwaffinity.errors import InputError

EPOCH = (1980, 1, 1, 0, 0, 0)
_CHUNK = 1 << 20


def _info(name, executable, stored, size):
    info = zipfile.ZipInfo(name, date_time=EPOCH)
    info.create_system = 3                  # Unix, whatever the building host
    info.external_attr = ((0o100755 if executable else 0o100644) & 0xFFFF) << 16
    info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    info.file_size = size
    return info


def write(target, members):
    """Write the zip TARGET atomically.

    MEMBERS: [(name, data)] where data is bytes or the path of a file to copy;
    optional third and fourth items: executable (bool), stored (bool).
    """
    folder = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=".hwaffinity-", suffix=".zip", dir=folder)
    try:
        with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w") as z:
            for name, data, *flags in sorted(members, key=lambda m: m[0]):
                executable, stored = (list(flags) + [False, False])[:2]
                if not stored and not isinstance(data, bytes):
                    with open(data, "rb") as f:
                        data = f.read()
                if isinstance(data, bytes):
                    z.writestr(_info(name, executable, stored, len(data)), data,
                               compresslevel=9)
                    continue
                # A stored file (an image) is streamed: it may be large.
                size = os.path.getsize(data)
                info = _info(name, executable, stored, size)
                with open(data, "rb") as src, z.open(info, "w", force_zip64=size > 2 ** 31) as dst:
                    shutil.copyfileobj(src, dst, _CHUNK)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def unsafe_reason(name):
    """Why member NAME could land outside the package when extracted, or None."""
    if "\\" in name:
        return "has a backslash (a path separator on Windows)"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "is an absolute path"
    if ".." in posixpath.normpath(name).split("/") or ".." in name.split("/"):
        return "goes up with '..'"
    if "\0" in name:
        return "has a NUL character"
    return None


def open_zip(path):
    """ZipFile of PATH, or InputError when it is not a zip archive."""
    if not os.path.isfile(path):
        raise InputError("no such file", source=path)
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise InputError("not a zip archive: %s" % e, source=path)


def extract_safe(z, into):
    """Extract every member whose name is safe; return their names."""
    names = []
    for info in z.infolist():
        if info.is_dir() or unsafe_reason(info.filename):
            continue
        dest = os.path.join(into, *info.filename.split("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with z.open(info) as src, open(dest, "wb") as dst:
            shutil.copyfileobj(src, dst, _CHUNK)
        names.append(info.filename)
    return names
