"""The in-cluster image (deploy/Dockerfile: ``pip install ".[controller]"``) carries
every third-party module the agent, the controller and the webhook import at run time;
every install carries the schema check's data; and the ``tacker`` extra, which goes into
Tacker's own Python, cannot bring the kubernetes client that breaks Tacker's drivers."""
import ast
import importlib.metadata
import json
import re
import subprocess
import tomllib
import os
import sys
import zipfile

from packaging.requirements import Requirement
from packaging.version import Version

from tacker_hwaffinity import __version__
from tacker_hwaffinity.objects import schema

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "tacker_hwaffinity")
# what runs in the cluster (the certs helper runs on the operator's machine: extra webhook)
IN_CLUSTER = ("agent", "controller", "kube", "openstack", "webhook", "labeling", "scheduling",
              "numa", "cli/agent.py", "cli/controller.py", "cli/webhook.py",
              "cli/main.py", "cli/common.py", "errors.py", "constants.py")
OPERATOR_SIDE = {"webhook/certs.py": "cryptography"}
# import name -> the requirement that brings it (directly or as a declared dependency)
PROVIDED_BY = {"yaml": "PyYAML", "numpy": "numpy", "kubernetes": "kubernetes",
               "prometheus_client": "prometheus_client", "keystoneauth1": "keystoneauth1",
               "oslo_messaging": "oslo.messaging", "oslo_config": "oslo.messaging",
               "cryptography": "cryptography", "urllib3": "kubernetes", "requests": "kubernetes",
               "httptools": "httptools"}


def _requirements(extra=None):
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    lines = project["dependencies"] if extra is None else \
        project["optional-dependencies"][extra]
    return {line.split(">")[0].split("=")[0].split("<")[0].strip() for line in lines}


def _imports(path):
    tree = ast.parse(open(path).read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]


def _files():
    for entry in IN_CLUSTER:
        path = os.path.join(PKG, entry)
        if path.endswith(".py"):
            yield path
        for d, _, names in os.walk(path):
            yield from (os.path.join(d, n) for n in names if n.endswith(".py"))


def test_the_image_installs_what_the_in_cluster_commands_import():
    have = _requirements() | _requirements("controller")
    stdlib = set(sys.stdlib_module_names)
    missing = {}
    for path in _files():
        rel = os.path.relpath(path, PKG)
        for name in _imports(path):
            if name in stdlib or name == "tacker_hwaffinity":
                continue
            if rel in OPERATOR_SIDE and name == OPERATOR_SIDE[rel]:
                assert PROVIDED_BY[name] in _requirements("webhook")
                continue
            if PROVIDED_BY.get(name) not in have:
                missing.setdefault(name, []).append(rel)
    assert missing == {}, "imported in the cluster but not installed by the image: %s" % missing
    docker = open(os.path.join(ROOT, "deploy", "Dockerfile")).read()
    assert 'pip install --no-cache-dir ".[controller]"' in docker


def _project():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def _kubernetes(lines):
    (found,) = [r for r in map(Requirement, lines) if r.name == "kubernetes"]
    return found.specifier


def _story_client():
    """The kubernetes client tools/tacker-kubernetes-client.sh gives the story's Tacker,
    and the Tacker release it says that client is for."""
    with open(os.path.join(ROOT, "tools", "tacker-kubernetes-client.sh")) as f:
        text = f.read()
    return (re.search(r'^VERSION="([\d.]+)"$', text, re.M).group(1),
            re.search(r"^# Tacker (\d+)'s Kubernetes infra drivers", text, re.M).group(1))


def test_every_install_carries_the_schemas():
    data = _project()["tool"]["setuptools"]["package-data"]["tacker_hwaffinity.objects"]
    assert os.path.basename(schema.DATA) in data
    assert os.path.dirname(schema.DATA) == os.path.join(PKG, "objects")
    assert "schema" in _project()["project"]["optional-dependencies"]     # pip takes .[schema]


def test_the_tacker_extra_admits_the_story_s_client_and_refuses_37():
    project = _project()["project"]
    pinned = _kubernetes(project["optional-dependencies"]["tacker"])
    client, _ = _story_client()
    assert pinned.contains(client)
    assert not any(pinned.contains(v) for v in ("37.0.0", "37.0.2", "37.1.0", "38.0.0"))
    base = _kubernetes(project["dependencies"])
    assert base.contains("37.0.2") and base.contains(client)   # the base stays >=36


def test_the_tacker_the_tests_run_is_the_release_the_pin_is_for():
    """The pin is for Tacker 16's drivers (tools/tacker-kubernetes-client.sh): the tests,
    the story among them, run that Tacker."""
    _, release = _story_client()
    assert Version(importlib.metadata.version("tacker")).major == int(release)
    (wanted,) = [r for r in map(Requirement, _project()["project"]["optional-dependencies"]["test"])
                 if r.name == "tacker"]
    assert wanted.specifier.contains("%s.0.0" % release)
    assert not wanted.specifier.contains("%d.0.0" % (int(release) + 1))


def _stub_wheel(folder, name, version, requires=(), extras=()):
    """A wheel of NAME VERSION that holds nothing but its metadata."""
    stem = "%s-%s" % (re.sub(r"[-_.]+", "_", name), version)
    info = "%s.dist-info" % stem
    metadata = ["Metadata-Version: 2.1", "Name: %s" % name, "Version: %s" % version]
    metadata += ["Provides-Extra: %s" % e for e in extras]
    metadata += ["Requires-Dist: %s" % r for r in requires]
    path = os.path.join(folder, "%s-py3-none-any.whl" % stem)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("%s/METADATA" % info, "\n".join(metadata) + "\n")
        z.writestr("%s/WHEEL" % info, "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: "
                   "true\nTag: py3-none-any\n")
        z.writestr("%s/RECORD" % info, "")
    return path


def _satisfying(specifier):
    """A version SPECIFIER admits: the first it names, else 99.0."""
    for version in [s.version for s in specifier] + ["99.0"]:
        if specifier.contains(version):
            return version
    raise AssertionError(str(specifier))


def _resolved(folder, target):
    """{name: version} pip's resolver picks to install TARGET from FOLDER alone."""
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--dry-run",
                           "--ignore-installed", "--no-index", "--find-links", folder,
                           "--disable-pip-version-check", "--report", "-", target],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return {item["metadata"]["name"]: item["metadata"]["version"]
            for item in json.loads(done.stdout)["install"]}


def test_pip_installing_the_tacker_extra_never_selects_kubernetes_37(tmp_path):
    """pip's own resolver, offline, over our requirements as pyproject.toml declares them
    (what setuptools writes into the wheel's METADATA), the kubernetes requirement of the
    Tacker the tests run, and kubernetes 36, 37 and 38 to choose from."""
    project = _project()["project"]
    optional = project["optional-dependencies"]
    requires = list(project["dependencies"]) + [
        '%s; extra == "%s"' % (line, extra)
        for extra, lines in optional.items() for line in lines]
    ours = _stub_wheel(str(tmp_path), "tacker-hwaffinity", __version__, requires, optional)
    tackers = [r for r in map(Requirement, importlib.metadata.requires("tacker") or ())
               if r.name == "kubernetes" and r.marker is None]
    _stub_wheel(str(tmp_path), "tacker", importlib.metadata.version("tacker"), map(str, tackers))
    client, _ = _story_client()
    for version in (client, "37.0.2", "38.0.0"):
        _stub_wheel(str(tmp_path), "kubernetes", version)
    for extra in ("", "tacker"):
        for line in project["dependencies"] + (optional[extra] if extra else []):
            r = Requirement(line)
            if r.name not in ("kubernetes", "tacker"):
                _stub_wheel(str(tmp_path), r.name, _satisfying(r.specifier))
    assert _resolved(str(tmp_path), "%s[tacker]" % ours)["kubernetes"] == client
    assert _resolved(str(tmp_path), ours)["kubernetes"] == "38.0.0"    # the base alone: newest
