"""The in-cluster image (deploy/Dockerfile: ``pip install ".[controller]"``) carries
every third-party module the agent, the controller and the webhook import at run time."""
import ast
import tomllib
import os
import sys

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
