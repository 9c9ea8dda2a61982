"""The scripts under tools/ and the suite's markers: the Debian mirror comes from the
machine's apt configuration (tools/apt-mirror.sh), no registry's host name is written
in the repository, every marker is registered once (tox.ini), and tools/test.sh
installs only what the tests pytest selects need."""
import configparser
import os
import re
import shlex
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
APT_MIRROR = os.path.join(ROOT, "tools", "apt-mirror.sh")
# written in pieces, so that this file does not name them either
REGISTRY_HOSTS = [".".join(parts) for parts in (
    ("deb", "debian", "org"), ("security", "debian", "org"), ("pypi", "org"),
    ("files", "pythonhosted", "org"), ("registry", "npmjs", "org"))]
DEBIAN = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_CODENAME=bookworm\n'


def _repository_files():
    """The repository's files (tracked, and new ones git does not ignore)."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, check=True,
                             timeout=60).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [name for name in out.decode().split("\0") if name]


def test_no_registry_host_name_is_written_in_the_repository():
    """Registries and mirrors come from the machine's configuration (apt's sources, pip's
    index), never from a host name in the repository."""
    pattern = re.compile("|".join(re.escape(h) for h in REGISTRY_HOSTS).encode())
    found = []
    for name in _repository_files():
        path = os.path.join(ROOT, name)
        if not os.path.isfile(path):
            continue                        # deleted in the work tree
        with open(path, "rb") as f:
            for number, line in enumerate(f, 1):
                if pattern.search(line):
                    found.append("%s:%d: %s" % (name, number, line.decode(errors="replace")
                                                .strip()))
    assert not found, "registry host names in the repository:\n" + "\n".join(found)


def _mirror(root, override=None):
    env = {k: v for k, v in os.environ.items() if k != "HWAFFINITY_DEBIAN_MIRROR"}
    env["HWAFFINITY_APT_ROOT"] = str(root)
    if override is not None:
        env["HWAFFINITY_DEBIAN_MIRROR"] = override
    return subprocess.run(["bash", "-c", 'source "$1" && debian_mirror', "bash", APT_MIRROR],
                          capture_output=True, text=True, env=env, timeout=30)


def _machine(tmp_path, files, os_release=DEBIAN):
    """A file system root with FILES ({path under etc/apt: text}) and an os-release."""
    (tmp_path / "etc" / "apt" / "sources.list.d").mkdir(parents=True)
    (tmp_path / "etc" / "os-release").write_text(os_release)
    for name, text in files.items():
        (tmp_path / "etc" / "apt" / name).write_text(text)
    return tmp_path


DEB822 = """Types: deb
# http://snapshot.example/archive/debian/20250520T000000Z
URIs: http://mirror.example/debian/
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
"""

CASES = {
    "deb822, as Debian's images ship it": (
        {"sources.list.d/debian.sources": DEB822}, "http://mirror.example/debian"),
    "one-line entries; security and updates first, options in brackets": (
        {"sources.list": "# deb http://old.example/debian bookworm main\n"
                         "deb http://sec.example/debian-security bookworm-security main\n"
                         "deb http://upd.example/debian bookworm-updates main\n"
                         "deb-src http://src.example/debian bookworm main\n"
                         "deb [arch=amd64 signed-by=/k.gpg] http://one.example/debian "
                         "bookworm main contrib\n"}, "http://one.example/debian"),
    "the release's codename wins over another suite": (
        {"sources.list": "deb http://stable.example/debian stable main\n",
         "sources.list.d/local.sources": "Types: deb\nURIs: http://code.example/debian\n"
                                         "Suites: bookworm\nComponents: main\n"},
        "http://code.example/debian"),
    "another suite when the codename has none": (
        {"sources.list": "deb http://stable.example/debian stable main\n"},
        "http://stable.example/debian"),
    "disabled, non-main, deb-src and this project's own entries do not count": (
        {"sources.list.d/a.sources": "Types: deb\nURIs: http://off.example/debian\n"
                                     "Suites: bookworm\nComponents: main\nEnabled: no\n\n"
                                     "Types: deb-src\nURIs: http://src.example/debian\n"
                                     "Suites: bookworm\nComponents: main\n\n"
                                     "Types: deb\nURIs: http://contrib.example/debian\n"
                                     "Suites: bookworm\nComponents: contrib\n",
         "sources.list.d/hwaffinity-trixie.sources": "Types: deb\n"
                                                     "URIs: http://own.example/debian\n"
                                                     "Suites: trixie\nComponents: main\n",
         "sources.list.d/b.list": "deb http://b.example/debian/ bookworm main\n"},
        "http://b.example/debian"),
    "continuation lines and several URIs": (
        {"sources.list.d/c.sources": "Types: deb deb-src\nURIs:\n http://c1.example/debian\n"
                                     " http://c2.example/debian\nSuites: bookworm\n"
                                     "Components: contrib\n main\n"},
        "http://c1.example/debian"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_mirror_is_the_one_apt_uses(tmp_path, case):
    files, expected = CASES[case]
    proc = _mirror(_machine(tmp_path, files))
    assert (proc.returncode, proc.stdout.strip()) == (0, expected), proc.stderr


def test_the_variable_overrides_the_configuration(tmp_path):
    proc = _mirror(_machine(tmp_path, {"sources.list.d/debian.sources": DEB822}),
                   override="http://override.example/debian/")
    assert (proc.returncode, proc.stdout.strip()) == (0, "http://override.example/debian")


@pytest.mark.parametrize("files, os_release, says", [
    ({}, DEBIAN, "no Debian archive entry"),
    ({"sources.list": "deb http://sec.example/debian-security bookworm-security main\n"
                      "deb http://upd.example/debian bookworm-updates main\n"}, DEBIAN,
     "no Debian archive entry"),
    ({"sources.list": "deb http://archive.example/ubuntu jammy main\n"},
     "ID=ubuntu\nID_LIKE=debian\nVERSION_CODENAME=jammy\n", "not a Debian host"),
], ids=["nothing", "security-and-updates-only", "ubuntu"])
def test_no_mirror_fails_saying_how_to_set_one(tmp_path, files, os_release, says):
    proc = _mirror(_machine(tmp_path, files, os_release))
    assert proc.returncode != 0 and proc.stdout == ""
    assert says in proc.stderr and "HWAFFINITY_DEBIAN_MIRROR" in proc.stderr


# --- markers ----------------------------------------------------------------------------

def _pytest_ini():
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(os.path.join(ROOT, "tox.ini"))
    return ini


def _registered():
    return [line.split(":", 1)[0].strip()
            for line in _pytest_ini()["pytest"]["markers"].strip().splitlines()]


def test_markers_are_registered_once_and_enforced():
    ini = _pytest_ini()
    assert "--strict-markers" in ini["pytest"]["addopts"].split()
    names = _registered()
    assert len(names) == len(set(names)), names
    registering = []
    for directory, _, files in os.walk(os.path.join(ROOT, "tests")):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(directory, name)) as f:
                    if re.search(r"addinivalue_line\(\s*['\"]markers", f.read()):
                        registering.append(os.path.join(directory, name))
    assert not registering, "markers are registered in tox.ini only: %s" % registering


def test_the_fast_loop_excludes_every_registered_marker():
    """tox -e fast runs the tests with none of the markers (tools/test.sh --fast builds
    the same expression from the list)."""
    command = _pytest_ini()["testenv:fast"]["commands"]
    argv = shlex.split(command)
    expression = argv[argv.index("-m", argv.index("pytest")) + 1]
    assert expression == "not (%s)" % " or ".join(_registered())


# --- tools/test.sh ----------------------------------------------------------------------

SAMPLE_TESTS = '''
import os
import pytest

def test_plain():
    with open(os.environ["PROFILE_LOG"], "w") as f:
        f.write(os.environ.get("HYPOTHESIS_PROFILE", "-"))

@pytest.mark.ssh
def test_over_ssh():
    pass

@pytest.mark.controlplane
def test_on_the_control_plane():
    pass

def test_with_a_cloud(cloud):
    pass
'''
# marks by fixture, in a collection hook, as tests/openstack/conftest.py does
SAMPLE_CONFTEST = '''
import pytest

@pytest.fixture
def cloud():
    return None

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if "cloud" in item.fixturenames:
            item.add_marker("openstack")
'''
STEPS = ["install-test-packages.sh", "install-node-runtime.sh", "build-vm-image.sh",
         "build-kube.sh", "build-image.sh", "openstack-venv.sh", "tacker-kubernetes-client.sh",
         "test-python.sh"]


@pytest.fixture
def checkout(tmp_path):
    """A copy of tools/test.sh in a small checkout whose provisioning steps only say that
    they ran, with a cached venv (this interpreter) and the real tox.ini."""
    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    (repo / "tests").mkdir()
    for name in ("tools/test.sh", "tox.ini", "pyproject.toml"):
        with open(os.path.join(ROOT, name)) as f:
            (repo / name).write_text(f.read())
    steps = tmp_path / "steps.log"
    for step in STEPS:
        (repo / "tools" / step).write_text('echo "%s $*" >> %s\n' % (step, steps))
    (repo / "tests" / "test_sample.py").write_text(SAMPLE_TESTS)
    (repo / "tests" / "conftest.py").write_text(SAMPLE_CONFTEST)
    cache = tmp_path / "cache"
    key = subprocess.run(["bash", "-c", 'printf "%d.%d-%s" $1 $2 "$(sha256sum pyproject.toml | '
                          'cut -c1-12)"', "bash", *map(str, sys.version_info[:2])],
                         cwd=repo, capture_output=True, text=True, check=True).stdout
    venv = cache / ("venv-" + key)
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text('#!/bin/sh\nexec %s "$@"\n' % sys.executable)
    (venv / "bin" / "python").chmod(0o755)
    (venv / ".hwaffinity-editable").write_text(str(repo) + "\n")

    def run(*args):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PYTEST_", "HYPOTHESIS_", "CI"))}
        # the sample tests need no plugin: a second less for each pytest started
        env.update(HWAFFINITY_CACHE=str(cache), PYTHON=sys.executable,
                   PROFILE_LOG=str(tmp_path / "profile"), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
        if steps.exists():
            steps.unlink()
        argv = [*args, "-p", "no:cacheprovider"] if args else []
        proc = subprocess.run(["bash", "tools/test.sh", *argv],
                              cwd=repo, capture_output=True, text=True, env=env, timeout=300)
        ran = steps.read_text().splitlines() if steps.exists() else []
        return proc, ran

    run.profile = tmp_path / "profile"
    return run


def test_unmarked_tests_install_nothing(checkout):
    proc, ran = checkout("tests/test_sample.py", "-k", "plain")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ran == []
    assert "1 passed" in proc.stdout


def test_the_selected_tests_markers_decide_what_is_installed(checkout):
    proc, ran = checkout("tests", "-k", "ssh or cloud")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ran == ["install-test-packages.sh ssh broker", "openstack-venv.sh "]


def test_the_fast_loop_runs_the_unmarked_tests_with_the_dev_profile(checkout):
    proc, ran = checkout("--fast")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ran == [] and "1 passed" in proc.stdout and "[gw" not in proc.stdout
    assert checkout.profile.read_text() == "dev"


def test_a_failing_step_names_the_tests_that_need_it(checkout, tmp_path):
    (tmp_path / "repo" / "tools" / "build-kube.sh").write_text("exit 1\n")
    proc, ran = checkout("tests", "-m", "controlplane")
    assert proc.returncode == 1 and ran == ["install-node-runtime.sh "]
    assert "building Kubernetes (first run: about 10 minutes) failed" in proc.stderr
    assert "tests marked controlplane" in proc.stderr


def test_a_selection_pytest_cannot_collect_fails_before_installing(checkout):
    proc, ran = checkout("tests/no_such_file.py")
    assert proc.returncode != 0 and ran == []
    assert "pytest could not collect" in proc.stderr


def test_no_argument_installs_everything(checkout):
    """... and after the suite passes, runs the fast loop on Debian's newest Python."""
    proc, ran = checkout()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [r.split()[0] for r in ran] == STEPS
    assert ran[0] == "install-test-packages.sh "


def test_the_whole_suite_runs_each_test_once_in_two_passes(checkout):
    """No argument: everything installed, then the tests that need nothing on every core
    and the integration tests one at a time; the trixie fast loop after both pass."""
    proc, ran = checkout()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    passes = [line for line in proc.stdout.splitlines() if "running pytest" in line]
    assert len(passes) == 2, proc.stdout
    assert "-n auto" in passes[0] and "not (" in passes[0] and "-n auto" not in passes[1]
    # xdist reports no deselection: its pass collected the one unmarked test only
    assert "= 1 passed in" in proc.stdout and "3 passed, 1 deselected" in proc.stdout, \
        proc.stdout
    assert ran[-1] == "test-python.sh "


def test_a_failing_first_pass_fails_the_whole_suite(checkout, tmp_path):
    sample = tmp_path / "repo" / "tests" / "test_sample.py"
    sample.write_text(sample.read_text() + "\ndef test_broken():\n    assert False\n")
    proc, ran = checkout()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "3 passed, 2 deselected" in proc.stdout
    assert "test-python.sh " not in ran
