"""Shared helpers of the package tests: where the package sources are, and
how to assemble a package the way ``hwaffinity csar build`` does.

The repository holds only the sources under ``csar/<package>``. A package
Tacker can onboard also needs the ETSI SOL001 type files (from the installed
tacker, :mod:`tacker_hwaffinity.etsi_types`) and, for VNF-A, the MgmtDriver
modules copied into ``Scripts/``. :func:`assemble` adds exactly those to a
copy in a temporary directory; :func:`zip_package` zips it.
"""
import os
import shutil
import zipfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CSAR = os.path.join(ROOT, "csar")
K8S_CLUSTER = os.path.join(CSAR, "k8s-cluster")
CNF = os.path.join(CSAR, "cnf")
SAMPLES = os.path.join(ROOT, "samples", "requests")
INSTALL_SCRIPT = os.path.join(K8S_CLUSTER, "Scripts", "install_k8s.sh")
PACKAGE_DOC = os.path.join(ROOT, "doc", "packages.md")

# What csar build copies into VNF-A: {path in the package: installed module}
DRIVER_FILES = {
    "Scripts/hwaffinity_mgmt_driver.py": "tacker_hwaffinity/mgmt_driver.py",
    "Scripts/hwaffinity_mgmt_v2.py": "tacker_hwaffinity/mgmt_v2.py",
}


def missing(what, why):
    """A prerequisite is absent: fail under CI (CI must not skip), else skip."""
    import pytest
    message = "%s is missing (%s)" % (what, why)
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def load_yaml_all(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def assemble(source, dest, driver_files=True):
    """Copy the package source to DEST and add the ETSI type files (and the
    MgmtDriver modules for VNF-A). Returns DEST."""
    from tacker_hwaffinity import etsi_types
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__"))
    for name, path in etsi_types.paths().items():
        shutil.copy(path, os.path.join(dest, "Definitions", name))
    if driver_files:
        for target, module in DRIVER_FILES.items():
            path = os.path.join(ROOT, module)
            if not os.path.isfile(path):
                missing(module, "the package ships it as %s" % target)
            os.makedirs(os.path.dirname(os.path.join(dest, target)), exist_ok=True)
            shutil.copyfile(path, os.path.join(dest, target))
    return dest


def zip_package(directory, zip_path):
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as z:
        for base, dirs, files in os.walk(directory):
            dirs.sort()
            for f in sorted(files):
                path = os.path.join(base, f)
                z.write(path, os.path.relpath(path, directory))
    return zip_path


def flavour_files(package):
    """{flavour_id: path} of the deployment-flavour files of a package source."""
    found = {}
    definitions = os.path.join(package, "Definitions")
    for name in sorted(os.listdir(definitions)):
        data = load_yaml(os.path.join(definitions, name))
        subst = (data.get("topology_template") or {}).get("substitution_mappings")
        if subst:
            found[subst["properties"]["flavour_id"]] = os.path.join(definitions, name)
    return found


def policies(flavour):
    """{name: policy} of a flavour dict (SOL001 writes them as a list)."""
    return {k: v for p in flavour["topology_template"].get("policies", []) for k, v in p.items()}


def nodes_of_type(flavour, node_type):
    return {k: v for k, v in flavour["topology_template"]["node_templates"].items()
            if v["type"] == node_type}
