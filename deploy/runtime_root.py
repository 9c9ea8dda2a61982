"""Assemble the in-cluster image's root file system: the package's virtualenv and what its
Python needs to run, and nothing else (no shell, no package manager, no compiler).

deploy/Dockerfile runs it in its build stage, with the virtualenv's own interpreter, and
copies the result into an empty (``scratch``) last stage::

    /opt/hwaffinity/bin/python deploy/runtime_root.py /opt/hwaffinity /runtime

What goes into ROOT (every path at the place it has in the build stage, every symbolic
link met on the way recreated, so /lib64 -> usr/lib64 and bin/python -> python3.11 hold):

* the interpreter the virtualenv was made from, and its standard library but for what
  only a developer uses (tests, IDLE, Tk, lib2to3, ensurepip, venv, pydoc's topics) and
  the extension modules of an interactive terminal (readline, curses) or of dbm;
* the virtualenv, without tests, type stubs and caches;
* every shared library that the interpreter and any kept extension module load (as
  ``ldd`` resolves them), the dynamic loader included, and an ``ld.so.cache`` for them;
* OpenSSL's CA bundle, /etc/passwd and /etc/group (the user nobody), nsswitch.conf, /tmp.

Python code is compiled once, here, to bytecode that stands in for its source (the
standard library's and the dependencies' sources are not shipped; a traceback still names
file and line). The package itself (PACKAGE) keeps its sources beside its bytecode, so
that a traceback from our own code shows the line.

Standard library only: it runs on the base's Python before anything else is installed.
"""
import argparse
import compileall
import os
import re
import shutil
import ssl
import subprocess
import sys
import sysconfig

PACKAGE = "tacker_hwaffinity"
# top-level names in the standard library's directory that only a developer uses
STDLIB_DROPPED = frozenset((
    "test", "idlelib", "tkinter", "turtledemo", "turtle.py", "ensurepip", "lib2to3",
    "pydoc_data", "venv", "__phello__", "site-packages", "dist-packages"))
# extension modules (file name up to the first dot) that load a terminal's or a
# database's library and that no daemon imports
DYNLOAD_DROPPED = frozenset(("readline", "_curses", "_curses_panel", "_dbm", "_gdbm",
                             "_tkinter", "_ctypes_test", "_xxtestfuzz", "xxlimited",
                             "xxlimited_35"))
# directories below a package (not at the top of site-packages) that only its tests use
TEST_DIRS = frozenset(("tests", "test"))
SYSTEM_FILES = ("/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/ld.so.conf",
                "/etc/ld.so.conf.d")
ELF_MAGIC = b"\x7fELF"


def copy_path(path, root, ignore=None):
    """Copy PATH (absolute) to ROOT + PATH, recreating every symbolic link on the way.

    A link anywhere along PATH (a directory such as /lib64, or the file itself) is copied
    as a link, and what it points to is copied in turn. Directories are copied whole but
    for what IGNORE (shutil.copytree's) leaves out, their own links kept as links."""
    parts = path.strip("/").split("/")
    current = "/"
    for index, part in enumerate(parts):
        current = os.path.join(current, part)
        if os.path.islink(current):
            target = os.readlink(current)
            _make_link(root + current, target)
            resolved = os.path.normpath(os.path.join(os.path.dirname(current), target))
            copy_path(os.path.join(resolved, *parts[index + 1:]), root, ignore)
            return
    destination = root + current
    if os.path.lexists(destination):
        return
    os.makedirs(os.path.dirname(destination), exist_ok=True)
    if os.path.isdir(current):
        shutil.copytree(current, destination, symlinks=True, ignore=ignore)
    else:
        shutil.copy2(current, destination)


def _make_link(link, target):
    if os.path.lexists(link):
        return
    os.makedirs(os.path.dirname(link), exist_ok=True)
    os.symlink(target, link)


def ldd_paths(text):
    """The absolute paths that ``ldd`` output TEXT resolves (loader included, vDSO not).

    Raises ValueError when a library is not found: the image would not start."""
    paths = []
    for line in text.splitlines():
        line = line.strip()
        if "=>" in line:
            name, _, where = line.partition("=>")
            where = where.strip()
            if where.startswith("not found"):
                raise ValueError("shared library %s not found" % name.strip())
            line = where
        path = line.split(" (", 1)[0].strip()
        if path.startswith("/"):
            paths.append(path)
    return paths


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == ELF_MAGIC


def shared_objects(top):
    """Every ELF shared object under TOP (extension modules and their bundled libraries)."""
    for directory, _, files in os.walk(top):
        for name in files:
            path = os.path.join(directory, name)
            if ".so" in name and not os.path.islink(path) and is_elf(path):
                yield path


def libraries_of(elf_files):
    """The shared libraries (absolute paths) that ELF_FILES load, each once, sorted."""
    found = set()
    for path in elf_files:
        done = subprocess.run(["ldd", path], capture_output=True, text=True, check=False)
        if done.returncode != 0 and "not a dynamic executable" not in done.stderr + done.stdout:
            raise RuntimeError("ldd %s: %s" % (path, done.stderr.strip()))
        try:
            found.update(ldd_paths(done.stdout))
        except ValueError as exc:
            raise RuntimeError("%s: %s" % (path, exc)) from None
    return sorted(found)


def prune_tree(top, dropped_names=(), dropped_modules=()):
    """Remove caches, type stubs and test directories below TOP; DROPPED_NAMES at its top
    level; extension modules whose name (up to the first dot) is in DROPPED_MODULES."""
    for name in os.listdir(top):
        if name in dropped_names or name.startswith("config-"):
            _remove(os.path.join(top, name))
    for directory, dirs, files in os.walk(top, topdown=True):
        depth = os.path.relpath(directory, top).count(os.sep) + (directory != top)
        for name in list(dirs):
            if name == "__pycache__" or (depth >= 1 and name in TEST_DIRS):
                _remove(os.path.join(directory, name))
                dirs.remove(name)
        for name in files:
            if name.endswith(".pyi") or (name.endswith(".so") and
                                         name.split(".", 1)[0] in dropped_modules):
                os.remove(os.path.join(directory, name))


def _not_in_stdlib(stdlib):
    """copytree's IGNORE for the standard library: what prune_tree would drop at its top
    and the caches, left out of the copy (the tests alone are larger than the rest)."""
    def ignore(directory, names):
        dropped = {"__pycache__"}
        if directory == stdlib:
            dropped |= {n for n in names if n in STDLIB_DROPPED or n.startswith("config-")}
        return dropped
    return ignore


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)


def compile_sourceless(top, root, keep_sources=()):
    """Compile every module below TOP (inside ROOT) to bytecode named as the module
    (``x.pyc`` beside where ``x.py`` was), then remove the sources that compiled; the
    directories in KEEP_SOURCES keep theirs, with the usual __pycache__. Code objects name
    the path the module has in the image (ROOT stripped). A file that does not compile
    (a template, a Python 2 leftover) is reported by compileall and kept as it is."""
    kept = tuple(os.path.join(path, "") for path in keep_sources)
    skipped = re.compile("|".join(re.escape(path) for path in kept)) if kept else None
    compileall.compile_dir(top, quiet=1, legacy=True, workers=0, stripdir=root,
                           prependdir="/", rx=skipped)
    for directory, _, files in os.walk(top):
        if os.path.join(directory, "").startswith(kept):
            continue
        for name in files:
            if name.endswith(".py") and name + "c" in files:
                os.remove(os.path.join(directory, name))
    for path in keep_sources:
        compileall.compile_dir(path, quiet=1, workers=0, stripdir=root, prependdir="/")


def assemble(venv, root):
    """Build ROOT from the virtualenv VENV and the interpreter running this script."""
    if os.path.realpath(sys.prefix) != os.path.realpath(venv):
        raise SystemExit("run this with %s/bin/python (this is %s)" % (venv, sys.executable))
    os.makedirs(root)
    python = os.path.join(venv, "bin", "python")
    interpreter = os.path.realpath(python)
    stdlib = sysconfig.get_path("stdlib")
    dynload = sysconfig.get_config_var("DESTSHARED")

    copy_path(venv, root)
    copy_path(python, root)         # the links from the virtualenv to the interpreter
    copy_path(stdlib, root, ignore=_not_in_stdlib(stdlib))
    if not os.path.isdir(root + dynload):           # outside the standard library's tree
        copy_path(dynload, root)
    for path in SYSTEM_FILES:
        if os.path.lexists(path):
            copy_path(path, root)
    cafile = ssl.get_default_verify_paths().openssl_cafile
    if cafile and os.path.exists(cafile):
        copy_path(cafile, root)
    os.makedirs(root + "/tmp", exist_ok=True)
    os.chmod(root + "/tmp", 0o1777)

    prune_tree(root + stdlib, STDLIB_DROPPED, DYNLOAD_DROPPED)
    if dynload and not dynload.startswith(os.path.join(stdlib, "")):
        prune_tree(root + dynload, dropped_modules=DYNLOAD_DROPPED)
    site_packages = sysconfig.get_path("purelib")
    prune_tree(root + site_packages)

    elf_files = [interpreter] + [path[len(root):] for path in shared_objects(root + venv)]
    elf_files += [path[len(root):] for path in shared_objects(root + dynload)]
    for library in libraries_of(elf_files):
        copy_path(library, root)
    subprocess.run(["ldconfig", "-X", "-r", root], check=True)

    compile_sourceless(root + stdlib, root)
    compile_sourceless(root + site_packages, root,
                       keep_sources=[os.path.join(root + site_packages, PACKAGE)])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("venv", help="the package's virtualenv (e.g. /opt/hwaffinity)")
    parser.add_argument("root", help="the directory to create (must not exist)")
    args = parser.parse_args(argv)
    assemble(os.path.abspath(args.venv), os.path.abspath(args.root))


if __name__ == "__main__":
    main()
