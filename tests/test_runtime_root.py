"""deploy/runtime_root.py, which assembles the in-cluster image's root file system: its
rules on small trees, and a root assembled from a fresh virtualenv that runs under chroot
with nothing of the host's but what the script copied. The image itself, built and run
in containerd and under a kubelet: tests/realnode/test_image.py, test_kube_deploy.py."""
import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from ci_policy import unavailable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "deploy", "runtime_root.py")


def load_script():
    spec = importlib.util.spec_from_file_location("runtime_root", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


runtime_root = load_script()

LDD = """\
\tlinux-vdso.so.1 (0x00007ffd5b9f2000)
\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f0c1c2c6000)
\tlibz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x00007f0c1c2a7000)
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0c1c0c6000)
\t/lib64/ld-linux-x86-64.so.2 (0x00007f0c1c8b4000)
"""


def test_ldd_output_gives_every_library_and_the_loader_but_not_the_vdso():
    assert runtime_root.ldd_paths(LDD) == [
        "/lib/x86_64-linux-gnu/libm.so.6", "/lib/x86_64-linux-gnu/libz.so.1",
        "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"]
    assert runtime_root.ldd_paths("\tstatically linked\n") == []


def test_a_library_ldd_cannot_find_fails_the_assembly():
    with pytest.raises(ValueError, match="libopenblas.so.0 not found"):
        runtime_root.ldd_paths(LDD + "\tlibopenblas.so.0 => not found\n")


def test_copy_path_recreates_every_link_on_the_way(tmp_path):
    src, out = tmp_path / "src", str(tmp_path / "out")
    (src / "usr" / "lib").mkdir(parents=True)
    (src / "usr" / "lib" / "libx.so.1.2").write_text("x")
    (src / "usr" / "lib" / "libx.so.1").symlink_to("libx.so.1.2")
    (src / "lib").symlink_to("usr/lib")                     # merged /usr
    runtime_root.copy_path(str(src / "lib" / "libx.so.1"), out)

    copied = out + str(src)
    assert os.readlink(copied + "/lib") == "usr/lib"
    assert os.readlink(copied + "/usr/lib/libx.so.1") == "libx.so.1.2"
    with open(copied + "/lib/libx.so.1") as f:               # resolves inside OUT
        assert f.read() == "x"


def test_prune_drops_tests_stubs_caches_and_named_modules_but_a_top_level_tests(tmp_path):
    top = tmp_path / "site"
    for path in ("pkg/__init__.py", "pkg/tests/test_a.py", "pkg/sub/test/t.py",
                 "pkg/__pycache__/x.pyc", "pkg/a.pyi", "tests/__init__.py", "idlelib/x.py",
                 "lib-dynload/readline.cpython-311-x86_64-linux-gnu.so",
                 "lib-dynload/_ssl.cpython-311-x86_64-linux-gnu.so", "config-3.11/Makefile"):
        (top / path).parent.mkdir(parents=True, exist_ok=True)
        (top / path).write_text("")
    runtime_root.prune_tree(str(top), {"idlelib"}, {"readline"})
    left = sorted(str(p.relative_to(top)) for p in top.rglob("*") if p.is_file())
    assert left == ["lib-dynload/_ssl.cpython-311-x86_64-linux-gnu.so", "pkg/__init__.py",
                    "tests/__init__.py"]


def test_sources_give_way_to_bytecode_named_for_the_image_but_the_packages_own(tmp_path):
    root = str(tmp_path)
    site = tmp_path / "opt" / "site"
    (site / "dep").mkdir(parents=True)
    (site / "dep" / "__init__.py").write_text("def where():\n    return __file__\n")
    (site / "dep" / "broken.py").write_text("print 'python 2'\n")
    (site / "ours").mkdir()
    (site / "ours" / "__init__.py").write_text("X = 1\n")
    runtime_root.compile_sourceless(str(site), root, keep_sources=[str(site / "ours")])

    assert sorted(os.listdir(site / "dep")) == ["__init__.pyc", "broken.py"]
    assert (site / "ours" / "__init__.py").exists()
    assert list((site / "ours" / "__pycache__").glob("__init__.cpython-*.pyc"))
    code = subprocess.run([sys.executable, "-c", "import dep; print(dep.where.__code__."
                           "co_filename)"], cwd=str(site), capture_output=True, text=True)
    assert code.stdout.strip() == "/opt/site/dep/__init__.py", code.stderr


@pytest.mark.root
def test_a_root_assembled_from_a_virtualenv_runs_under_chroot_with_nothing_else(tmp_path):
    if os.geteuid() != 0:
        unavailable("assembling and entering a root file system needs root (chroot)")
    venv = str(tmp_path / "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    site = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                           "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    for path, text in (("dep/__init__.py", "VALUE = 'dep'\n"),
                       ("dep/tests/__init__.py", ""),
                       (runtime_root.PACKAGE + "/__init__.py", "VALUE = 'ours'\n")):
        os.makedirs(os.path.dirname(os.path.join(site, path)), exist_ok=True)
        with open(os.path.join(site, path), "w") as f:
            f.write(text)
    out = str(tmp_path / "root")
    subprocess.run([os.path.join(venv, "bin", "python"), SCRIPT, venv, out], check=True,
                   capture_output=True, timeout=300)

    probe = textwrap.dedent("""\
        import json, os, ssl, sys, decimal, hashlib, ctypes
        import dep, %s as ours
        print(dep.VALUE, ours.VALUE, sys.prefix == %r, os.path.exists('/bin/sh'),
              hashlib.sha256(b'').hexdigest()[:8], os.stat('/tmp').st_mode & 0o7777 == 0o1777)
        """ % (runtime_root.PACKAGE, venv))
    python = os.path.join(venv, "bin", "python")
    done = subprocess.run([shutil.which("chroot"), out, python, "-c", probe], timeout=60,
                          capture_output=True, text=True, env={"PYTHONUTF8": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["dep", "ours", "True", "False", "e3b0c442", "True"]
    assert not os.path.exists(os.path.join(out + site, "dep", "tests"))
    assert os.path.isfile(os.path.join(out, "etc", "ld.so.cache"))
