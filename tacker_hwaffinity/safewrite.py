"""Writing files in directories that may already hold another user's files or links.

Every file the package writes on this machine is written here (doc/security.md):

* whole, under a fresh random name created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (a
  link or a file planted at any name is never opened), then renamed over its name: a
  link there is replaced, never written through, and a planted file (a hard link to
  another file, a file someone holds open) keeps its content;
* with its mode given at creation: outputs 0666 less the umask, private files (keys)
  0600; nothing is chmod-ed by path;
* by name inside a directory opened once (``dir_fd``): a directory swapped for a link
  midway changes nothing;
* private files in a directory created 0700, or an existing one that is the caller's
  and that no one else may write (nor a link to it of another user's): whoever may write
  there could replace the files afterwards;
* a journal is appended to only when it is a regular file of the caller's with no other
  name.

Refusals are :class:`Unsafe`, an OSError with the path and why, so that callers that
turn an OSError into an InputError naming the file keep doing so.
"""
import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from typing import BinaryIO, TextIO

OUTPUT_MODE = 0o666         # less the umask: what the user's shell would create
PRIVATE_MODE = 0o600        # keys, whatever the umask
PRIVATE_DIR_MODE = 0o700
_TEMP_TRIES = 16            # fresh names tried: 64 random bits each, so only planting collides
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
# keyed by OSError.errno, which may be None
_REFUSED_OPENS: dict[int | None, str] = {
    errno.ELOOP: "is a symbolic link: not followed",
    errno.ENXIO: "is a FIFO or a socket, not a regular file: not written into"}


class Unsafe(OSError):
    """A path refused: ``Unsafe(errno, why, path)``."""


class Directory:
    """Directory PATH, made if missing and opened once; files are written in it by name.
    PRIVATE: it holds keys (see the module's docstring)."""

    def __init__(self, path: str, private: bool = False) -> None:
        self.path = path or "."
        os.makedirs(self.path, PRIVATE_DIR_MODE if private else 0o777, exist_ok=True)
        if private:
            _check_link(self.path)
        self.fd = os.open(self.path, _FOLDER)
        try:
            if private:
                _check_private(self.fd, self.path)
        except BaseException:
            os.close(self.fd)
            raise

    def __enter__(self) -> "Directory":
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)

    def where(self, name: str) -> str:
        return os.path.join(self.path, name)

    @contextlib.contextmanager
    def replacing(self, name: str, private: bool = False) -> Iterator[BinaryIO]:
        """A binary file that replaces NAME when the block ends; nothing changes when it
        raises. PRIVATE: mode 0600."""
        _check_plain(name, self.where(name))
        temp, f = self._new_temp(name, PRIVATE_MODE if private else OUTPUT_MODE)
        try:
            with f:
                if private:
                    os.fchmod(f.fileno(), PRIVATE_MODE)     # exactly, whatever the umask
                yield f
            try:
                os.replace(temp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
            except OSError as e:
                raise OSError(e.errno, e.strerror, self.where(name)) from None
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=self.fd)
            raise

    def replace(self, name: str, data: bytes, private: bool = False) -> None:
        """Replace NAME with the bytes DATA (see ``replacing``)."""
        with self.replacing(name, private) as f:
            f.write(data)

    def append(self, name: str) -> TextIO:
        """NAME opened to append text, created if missing; refused unless it is a regular
        file of this user with no other name (not a link, a hard link or a FIFO)."""
        where = self.where(name)
        _check_plain(name, where)
        try:        # O_NONBLOCK: a FIFO planted there must not hang the open
            fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                         | os.O_NONBLOCK | os.O_CLOEXEC, OUTPUT_MODE, dir_fd=self.fd)
        except OSError as e:
            why = _REFUSED_OPENS.get(e.errno)
            raise (Unsafe(e.errno, why, where) if why else
                   OSError(e.errno, e.strerror, where)) from None
        try:
            _check_own_file(os.fstat(fd), where)
            os.set_blocking(fd, True)
            return os.fdopen(fd, "a", encoding="utf-8")
        except BaseException:
            os.close(fd)
            raise

    def _new_temp(self, name: str, mode: int) -> tuple[str, BinaryIO]:
        for _ in range(_TEMP_TRIES):
            temp = ".%s.%s.tmp" % (name[:200], secrets.token_hex(8))
            try:
                return temp, os.fdopen(os.open(temp, _NEW, mode, dir_fd=self.fd), "wb")
            except FileExistsError:
                continue
            except OSError as e:
                raise OSError(e.errno, e.strerror, self.where(name)) from None
        raise Unsafe(errno.EEXIST, "%d fresh temporary names in its folder were all taken"
                     % _TEMP_TRIES, self.where(name))


@contextlib.contextmanager
def replacing(path: str, private: bool = False) -> Iterator[BinaryIO]:
    """A binary file that replaces PATH when the block ends (``Directory.replacing``)."""
    with Directory(os.path.dirname(path)) as folder, \
            folder.replacing(os.path.basename(path), private) as f:
        yield f


def replace_file(path: str, data: bytes, private: bool = False) -> None:
    """Replace PATH with the bytes DATA (``Directory.replacing``)."""
    with Directory(os.path.dirname(path)) as folder:
        folder.replace(os.path.basename(path), data, private)


def open_append(path: str) -> TextIO:
    """PATH opened to append text (``Directory.append``)."""
    with Directory(os.path.dirname(path)) as folder:
        return folder.append(os.path.basename(path))


def create_beneath(root: str, relative: str) -> BinaryIO:
    """A new binary file at RELATIVE ('/'-separated) inside directory ROOT, its folders
    made: no link on the way is followed (one is refused), and whatever is at the name
    is replaced, never written into."""
    *folders, name = relative.split("/")
    fd = os.open(root, _FOLDER)
    try:
        for folder in folders:
            if folder in ("", "."):
                continue
            _check_plain(folder, os.path.join(root, relative))
            with contextlib.suppress(FileExistsError):
                os.mkdir(folder, dir_fd=fd)
            try:
                inner = os.open(folder, _FOLDER | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as e:
                if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                raise Unsafe(e.errno, "%s on its way is a link or a file, not a folder"
                             % folder, os.path.join(root, relative)) from None
            os.close(fd)
            fd = inner
        _check_plain(name, os.path.join(root, relative))
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=fd)
        return os.fdopen(os.open(name, _NEW, OUTPUT_MODE, dir_fd=fd), "wb")
    finally:
        os.close(fd)


def _check_plain(name: str, where: str) -> None:
    if name in ("", ".", "..") or "/" in name or "\0" in name:
        raise Unsafe(errno.EINVAL, "%r is not a plain file name (no folder, no '..')" % name,
                     where)


def _check_link(path: str) -> None:
    """A link at PATH must be this user's or root's: its owner chooses where it leads."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) and st.st_uid not in (os.geteuid(), 0):
        raise Unsafe(errno.EPERM, "is a symbolic link of user %d, who chooses where it "
                     "leads: give the directory itself" % st.st_uid, path)


def _check_private(fd: int, path: str) -> None:
    st = os.fstat(fd)
    if st.st_uid != os.geteuid():
        raise Unsafe(errno.EPERM, "is owned by user %d, not this one (%d), who could replace "
                     "the keys written there: give a directory of your own (a new one is "
                     "made 0700)" % (st.st_uid, os.geteuid()), path)
    if st.st_mode & 0o022:
        raise Unsafe(errno.EPERM, "may be written by others (mode %04o), who could replace "
                     "the keys written there: chmod go-w it, or give a new directory (made "
                     "0700)" % stat.S_IMODE(st.st_mode), path)


def _check_own_file(st: os.stat_result, path: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise Unsafe(errno.EINVAL, "is not a regular file: not written into", path)
    if st.st_uid != os.geteuid():
        raise Unsafe(errno.EPERM, "is owned by user %d, not this one: not written into"
                     % st.st_uid, path)
    if st.st_nlink != 1:
        raise Unsafe(errno.EMLINK, "has %d names (hard links): not written into"
                     % st.st_nlink, path)
