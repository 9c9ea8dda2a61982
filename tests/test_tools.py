"""The scripts under tools/ and the suite's markers: the Debian mirror comes from the
machine's apt configuration (tools/apt-mirror.sh), no registry's host name is written
in the repository, every marker is registered once (tox.ini), and tools/test.sh
installs only what the tests pytest selects need."""
import configparser
import fcntl
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

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

pytest_plugins = ["xdist_groups"]       # the suite's own (--by-group), copied in

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


TEST_VENV = os.path.join(ROOT, "tools", "test-venv.sh")


def _venv_path(cache, checkout):
    """tools/test-venv.sh's venv for CHECKOUT under CACHE, with this Python."""
    return subprocess.run(["bash", "-c", 'source "$1" && test_venv_path "$2" "$3" "$4"', "bash",
                           TEST_VENV, str(cache), sys.executable, str(checkout)],
                          capture_output=True, text=True, check=True, timeout=30).stdout.strip()


@pytest.fixture
def checkout(tmp_path):
    """A copy of tools/test.sh in a small checkout whose provisioning steps only say that
    they ran, with a cached venv (this interpreter) and the real tox.ini."""
    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    (repo / "tests").mkdir()
    for name in ("tools/test.sh", "tools/test-venv.sh", "tox.ini", "pyproject.toml",
                 "tests/xdist_groups.py"):
        with open(os.path.join(ROOT, name)) as f:
            (repo / name).write_text(f.read())
    steps = tmp_path / "steps.log"
    for step in STEPS:
        (repo / "tools" / step).write_text('echo "%s $*" >> %s\n' % (step, steps))
    (repo / "tests" / "test_sample.py").write_text(SAMPLE_TESTS)
    (repo / "tests" / "conftest.py").write_text(SAMPLE_CONFTEST)
    cache = tmp_path / "cache"
    venv = tmp_path / _venv_path(cache, repo)
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text('#!/bin/sh\nexec %s "$@"\n' % sys.executable)
    (venv / "bin" / "python").chmod(0o755)
    (venv / ".hwaffinity-editable").write_text(str(repo) + "\n")
    (venv / ".hwaffinity-checkout").write_text(str(repo) + "\n")

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


def test_the_run_uses_this_checkout_s_own_venv_and_records_its_use(checkout, tmp_path):
    record = tmp_path / _venv_path(tmp_path / "cache", tmp_path / "repo") / ".hwaffinity-checkout"
    record.unlink()
    proc, _ = checkout("tests/test_sample.py", "-k", "plain")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(os.listdir(tmp_path / "cache")) == 1 and "creating" not in proc.stdout
    assert record.read_text() == "%s\n" % (tmp_path / "repo")


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
    and the integration tests in two workers by group; the trixie fast loop after both
    pass."""
    proc, ran = checkout()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    passes = [line for line in proc.stdout.splitlines() if "running pytest" in line]
    assert len(passes) == 2, proc.stdout
    assert "-n auto" in passes[0] and "not (" in passes[0] and "-n auto" not in passes[1]
    assert "-n 2 --by-group" in passes[1] and "not (" not in passes[1]
    # xdist reports no deselection: each pass collected its own tests only
    assert "= 1 passed in" in proc.stdout and "= 3 passed in" in proc.stdout, proc.stdout
    assert ran[-1] == "test-python.sh "


def test_a_failing_first_pass_fails_the_whole_suite(checkout, tmp_path):
    sample = tmp_path / "repo" / "tests" / "test_sample.py"
    sample.write_text(sample.read_text() + "\ndef test_broken():\n    assert False\n")
    proc, ran = checkout()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "= 1 failed, 1 passed in" in proc.stdout and "= 3 passed in" in proc.stdout
    assert "test-python.sh " not in ran


# --- the venv of each checkout (tools/test-venv.sh) --------------------------------------

def _checkouts(tmp_path, *names):
    paths = []
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "pyproject.toml").write_text("[project]\nname = 'x'\n")
        paths.append(tmp_path / name)
    return paths


def test_two_checkouts_have_two_venvs_and_one_checkout_keeps_its_own(tmp_path):
    one, two = _checkouts(tmp_path, "one", "two")
    cache = tmp_path / "cache"
    first, second = _venv_path(cache, one), _venv_path(cache, two)
    assert first != second
    assert first == _venv_path(cache, one)
    version = "%d.%d" % sys.version_info[:2]
    for venv in (first, second):
        assert os.path.dirname(venv) == str(cache)
        assert os.path.basename(venv).startswith("venv-%s-" % version)
    (one / "pyproject.toml").write_text("[project]\nname = 'y'\n")
    changed = _venv_path(cache, one)
    assert changed != first and changed.rsplit("-", 1)[0] == first.rsplit("-", 1)[0]


def test_venvs_of_gone_checkouts_and_superseded_ones_are_pruned(tmp_path):
    """Gone: its checkout no longer exists and it was last used over a week ago (a CI clone
    made again at the same path within the week finds its venv)."""
    live, gone, recent = _checkouts(tmp_path, "live", "gone", "recent")
    cache = tmp_path / "cache"
    current = _venv_path(cache, live)
    venvs = {"current": current, "gone": _venv_path(cache, gone),
             "gone, used this week": _venv_path(cache, recent),
             "superseded": current.rsplit("-", 1)[0] + "-0123456789ab",
             "other python": current.replace("venv-", "venv-9.9-", 1),
             "by hand": str(cache / "venv-by-hand"),
             "older, gone": str(cache / "venv-3.11-0123456789ab"),
             "older, live": str(cache / "venv-3.11-ba9876543210")}
    eight_days_ago = time.time() - 8 * 86400
    for name, venv in venvs.items():
        os.makedirs(venv)
        owner = recent if "this week" in name else gone if "gone" in name else live
        record = ".hwaffinity-editable" if name.startswith("older") else ".hwaffinity-checkout"
        if name != "by hand":
            with open(os.path.join(venv, record), "w") as f:
                f.write("%s\n" % owner)
            if "this week" not in name:
                os.utime(os.path.join(venv, record), (eight_days_ago, eight_days_ago))
    for checkout in (gone, recent):
        checkout.joinpath("pyproject.toml").unlink()
        checkout.rmdir()
    r = subprocess.run(["bash", "-c", 'source "$1" && prune_test_venvs "$2" "$3"', "bash",
                        TEST_VENV, str(cache), current],
                       capture_output=True, text=True, check=True, timeout=30)
    removed = {name for name, venv in venvs.items() if not os.path.exists(venv)}
    assert removed == {"gone", "superseded", "older, gone"}
    assert sorted(r.stdout.split()) == sorted(venvs[name] for name in removed)


# --- apt waits for a held lock (tools/apt-lock.sh) ----------------------------------------

APT_LOCK = os.path.join(ROOT, "tools", "apt-lock.sh")
LOCK_OPTION = "-o DPkg::Lock::Timeout="


def _shell_commands(path):
    """The lines of the script at PATH without comments and double-quoted strings (but
    those with a command substitution)."""
    with open(path) as f:
        for number, line in enumerate(f, 1):
            code = re.sub(r'"(?:[^"\\]|\\.)*"',
                          lambda m: m.group(0) if "$(" in m.group(0) else '""',
                          line.split(" #", 1)[0])
            if not code.lstrip().startswith("#"):
                yield number, code


def test_every_apt_get_of_the_tools_waits_for_a_held_lock():
    """apt-get through apt_get or apt_get_update (tools/apt-lock.sh), or with the option
    itself; dpkg only to read (dpkg-query, dpkg-deb, --print-architecture take no lock)."""
    offenders, callers = [], []
    for name in sorted(os.listdir(os.path.join(ROOT, "tools"))):
        if not name.endswith(".sh"):
            continue
        path = os.path.join(ROOT, "tools", name)
        for number, code in _shell_commands(path):
            where = "tools/%s:%d: %s" % (name, number, code.strip())
            for m in re.finditer(r"(?<![\w-])apt-get\b(.*)", code):
                if not m.group(1).lstrip().startswith(LOCK_OPTION):
                    offenders.append(where)
            for m in re.finditer(r"(?<![\w-])dpkg\b(?!-)(.*)", code):
                if not re.match(r"\s*--print-architecture\b", m.group(1)):
                    offenders.append(where)
            if re.search(r"\bapt_get(_update)?\b", code) and name != "apt-lock.sh":
                callers.append(name)
    assert not offenders, "apt-get without %s:\n%s" % (LOCK_OPTION, "\n".join(offenders))
    assert {"apt-install.sh", "build-kube.sh"} <= set(callers)
    for name in set(callers):
        with open(os.path.join(ROOT, "tools", name)) as f:
            assert "apt-lock.sh" in f.read(), "tools/%s uses apt_get without sourcing it" % name


@pytest.fixture
def apt_root(tmp_path):
    """An APT_CONFIG whose lists, cache, dpkg status (and so their locks) and sources are
    under TMP_PATH: apt runs for real without touching the machine's."""
    if shutil.which("apt-get") is None:
        pytest.skip("no apt-get on this machine")
    for d in ("lists/partial", "cache/archives/partial", "dpkg", "sources.list.d"):
        (tmp_path / d).mkdir(parents=True)
    shutil.copy("/var/lib/dpkg/status", tmp_path / "dpkg" / "status")
    (tmp_path / "sources.list").write_text("")
    config = tmp_path / "apt.conf"
    config.write_text("\n".join('%s "%s";' % pair for pair in (
        ("Dir::State::Lists", tmp_path / "lists"), ("Dir::State::status", tmp_path / "dpkg" /
                                                       "status"),
        ("Dir::Cache", tmp_path / "cache"), ("Dir::Etc::sourcelist", tmp_path / "sources.list"),
        ("Dir::Etc::sourceparts", tmp_path / "sources.list.d"))) + "\n")
    return tmp_path, dict(os.environ, APT_CONFIG=str(config), HWAFFINITY_APT_LOCK_TIMEOUT="120")


def _wait_for(condition, what, limit=60):
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "not within %d s: %s" % (limit, what)
        time.sleep(0.05)


@pytest.mark.parametrize("lock, command, says", [
    ("lists/lock", "apt_get_update -q", "[apt-lock] waiting for the apt lists lock"),
    ("dpkg/lock-frontend", "apt_get install -y -q", "Waiting for cache lock"),
])
def test_apt_waits_while_the_lock_is_held_and_goes_on_when_it_is_released(
        apt_root, lock, command, says):
    root, env = apt_root
    out = root / "out"
    with open(root / lock, "a") as held:
        fcntl.lockf(held, fcntl.LOCK_EX)            # apt's own kind of lock (fcntl)
        with open(out, "w") as sink:
            proc = subprocess.Popen(["bash", "-c", 'source "$1" && %s' % command, "bash",
                                     APT_LOCK], env=env, stdout=sink, stderr=subprocess.STDOUT)
        try:
            _wait_for(lambda: says in out.read_text() or proc.poll() is not None,
                      "%s says it waits" % command)
            assert proc.poll() is None and says in out.read_text(), out.read_text()
        except BaseException:
            proc.kill()
            proc.wait(10)
            raise
    assert proc.wait(60) == 0, out.read_text()
