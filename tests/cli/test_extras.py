"""A command whose extra is missing names the extra and how to install it, in one
line, exit 2, no traceback (cli.main + extras.missing, one place for every command).

Each case runs the real ``hwaffinity`` entry point in a subprocess whose import
system refuses the module (a meta path finder raising ModuleNotFoundError, as a
Python without the extra does), so nothing else about the environment changes."""
import os
import re
import subprocess
import sys
import textwrap
import tomllib

import pytest

from tacker_hwaffinity import extras
from tacker_hwaffinity.cli import main as cli_main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_RUN = textwrap.dedent("""
    import sys
    blocked = set(sys.argv[1].split(","))

    class Refuse:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in blocked:
                raise ModuleNotFoundError("No module named %r" % name, name=name)
            return None

    for name in list(sys.modules):
        if name.split(".")[0] in blocked:
            del sys.modules[name]
    sys.meta_path.insert(0, Refuse())
    from tacker_hwaffinity.cli.main import main
    sys.exit(main(sys.argv[2:]))
""")
# OpenStack credentials pointing nowhere: the commands get as far as the session
_OS_ENV = {"OS_AUTH_URL": "http://127.0.0.1:9/v3", "OS_USERNAME": "u", "OS_PASSWORD": "p",
           "OS_PROJECT_NAME": "k8s", "OS_USER_DOMAIN_NAME": "Default",
           "OS_PROJECT_DOMAIN_NAME": "Default"}


def _hwaffinity_without(modules, argv, tmp_path, credentials=True):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    if credentials:
        env.update(_OS_ENV)
    return subprocess.run([sys.executable, "-c", _RUN, ",".join(modules)] + argv,
                          capture_output=True, text=True, cwd=str(tmp_path), env=env,
                          timeout=120)


@pytest.mark.parametrize("modules,argv,command,extra", [
    (["cryptography"], ["webhook", "certs", "--out", "certs"], "webhook certs", "webhook"),
    (["keystoneauth1"], ["controller", "--stack", "s", "--aspect", "worker_instance"],
     "controller", "controller"),
    (["keystoneauth1"], ["relabel", "--stack", "s", "--worker-aspect", "worker_instance"],
     "relabel", "ssh,openstack"),
    (["toscaparser", "translator"], ["translate", "csar/k8s-cluster"], "translate",
     "translator"),
])
def test_a_missing_extra_is_one_line_naming_it(modules, argv, command, extra, tmp_path):
    r = _hwaffinity_without(modules, argv, tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "unexpected" not in r.stderr, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("hwaffinity %s: error: " % command), line
    assert "%s extra" % extra in line, line
    assert "pip install '.[%s]'" % extra in line, line
    assert ("dist/tacker_hwaffinity-%s-py3-none-any.whl[%s]" % (cli_main.__version__, extra)
            in line), line
    assert "pip install tacker-hwaffinity" not in line       # not on PyPI


@pytest.mark.parametrize("argv,command,extra", [
    (["controller", "--stack", "s", "--aspect", "worker_instance"], "controller", "controller"),
    (["relabel", "--stack", "s", "--worker-aspect", "worker_instance"], "relabel",
     "ssh,openstack"),
    (["audit", "--cluster", os.path.join(ROOT, "samples", "audit", "cluster.yaml"),
      "--openstack"], "audit", "openstack"),
])
def test_the_missing_extra_is_named_before_credentials_are_asked_for(argv, command, extra,
                                                                     tmp_path):
    """Without credentials and without the extra, the extra is what the user must fix
    first: entering credentials would not make the command run."""
    r = _hwaffinity_without(["keystoneauth1"], argv, tmp_path, credentials=False)
    assert r.returncode == 2, (r.stdout, r.stderr)
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("hwaffinity %s: error: needs the %s extra" % (command, extra)), line
    assert "credentials" not in line


def test_a_module_no_extra_provides_is_not_disguised_as_one(tmp_path):
    """A broken installation (a base requirement missing) keeps its traceback: it is
    not an extra to install."""
    r = _hwaffinity_without(["yaml"], ["plan", "--cluster", "c.yaml", "w.yaml"], tmp_path)
    assert r.returncode != 0 and "ModuleNotFoundError" in r.stderr


def _names(lines):
    return {re.split(r"[<>=!~ \[;]", line.strip(), maxsplit=1)[0] for line in lines}


def _declared_extras():
    """{extra: the distributions it adds to the base requirements} of pyproject.toml."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    base = _names(project["dependencies"])
    return {extra: _names(lines) - base
            for extra, lines in project["optional-dependencies"].items()}


def test_the_module_table_is_pyproject_s_extras():
    declared = _declared_extras()
    assert declared["schema"] == set()      # an alias: the check is in every install
    for extra, distributions in declared.items():
        if extra == "test":
            continue
        for dist in distributions:
            module = extras.DISTRIBUTION_MODULES[dist]    # every extra's distribution known
            assert extra in extras.MODULE_EXTRAS[module], (dist, extra)
    for module, names in extras.MODULE_EXTRAS.items():
        for extra in names:
            assert module in {extras.DISTRIBUTION_MODULES[d] for d in declared[extra]}, (
                module, extra)
    for command, names in extras.COMMAND_EXTRAS.items():
        assert command in cli_main.COMMAND_MODULES
        assert set(names) <= set(declared), command


def test_no_message_names_the_package_on_pypi():
    """tacker-hwaffinity is not on PyPI: no hint may say `pip install tacker-hwaffinity`."""
    offenders = []
    for base in ("tacker_hwaffinity", "doc", "samples", "csar", "etc"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, base)):
            for name in files:
                if not name.endswith((".py", ".md", ".yaml", ".sample", ".sh", ".txt")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    if re.search(r"pip install ['\"]?tacker-hwaffinity", f.read()):
                        offenders.append(os.path.relpath(path, ROOT))
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        if re.search(r"pip install ['\"]?tacker-hwaffinity", f.read()):
            offenders.append("README.md")
    assert offenders == []


def test_the_schema_check_needs_no_extra(tmp_path):
    """What the schema extra installed is refused, and a misspelt field is still found:
    the schemas and their check come with every install."""
    path = tmp_path / "w.yaml"
    with open(os.path.join(ROOT, "samples", "cnf", "upf-required.yaml")) as f:
        path.write_text(f.read().replace("replicas: 3", "replica: 3", 1))
    r = _hwaffinity_without(["kubernetes_validate", "jsonschema", "referencing"],
                            ["plan", "--cluster", os.path.join(ROOT, "samples", "cluster.yaml"),
                             str(path)], tmp_path)
    assert r.returncode == 0, r.stderr
    assert ('Warning: %s: Deployment cnf/upf: unknown field "spec.replica"' % path
            in r.stderr.splitlines()), r.stderr
    assert "skipped" not in r.stderr
    r = _hwaffinity_without(["kubernetes_validate", "jsonschema", "referencing"],
                            ["plan", "--strict", "--cluster",
                             os.path.join(ROOT, "samples", "cluster.yaml"), str(path)], tmp_path)
    assert r.returncode == 2 and r.stderr.splitlines()[-1] == (
        "hwaffinity plan: error: %s: Deployment cnf/upf: field spec.replica: unknown field "
        "(--strict)" % path)
