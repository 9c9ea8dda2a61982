"""Shared helpers of the package tests: where the package sources are, and
the packages built from them.

The repository holds only the sources under ``csar/<package>``;
``hwaffinity csar build`` (:func:`tacker_hwaffinity.csar.build.build`) adds
the ETSI SOL001 type files, the MgmtDriver copies and the TOSCA.meta hash
blocks. The tests use the packages it builds, as an operator would.
"""
import json
import os
import zipfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CSAR = os.path.join(ROOT, "csar")
K8S_CLUSTER = os.path.join(CSAR, "k8s-cluster")
CNF = os.path.join(CSAR, "cnf")
SAMPLES = os.path.join(ROOT, "samples", "requests")
INSTALL_SCRIPT = os.path.join(K8S_CLUSTER, "Scripts", "install_k8s.sh")
PACKAGE_DOC = os.path.join(ROOT, "doc", "packages.md")

# VNF-B: its workloads (name: kind), the budgets file, the instantiate requests
CNF_WORKLOADS = {"upf": "Deployment", "smf": "Deployment", "amf": "Deployment",
                 "udr": "StatefulSet"}
CNF_PDB_FILE = "Files/kubernetes/disruption-budgets.yaml"
CNF_REQUESTS = {"v1": os.path.join(SAMPLES, "cnf", "v1", "instantiate.json"),
                "v2": os.path.join(SAMPLES, "cnf", "v2", "instantiate.json")}

# What csar build copies into VNF-A: {path in the package: installed module}
DRIVER_FILES = {
    "Scripts/hwaffinity_mgmt_driver.py": "tacker_hwaffinity/mgmt_driver.py",
    "Scripts/hwaffinity_mgmt_v2.py": "tacker_hwaffinity/mgmt_v2.py",
}


def missing(what, why):
    """A prerequisite is absent: fail under CI (CI must not skip), else skip."""
    from ci_policy import unavailable
    unavailable("%s is missing (%s)" % (what, why))


def cnf_request(api):
    with open(CNF_REQUESTS[api]) as f:
        return json.load(f)


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def load_yaml_all(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def build(source, zip_path, extract_to=None):
    """``hwaffinity csar build SOURCE --output-file ZIP_PATH``; extracted to EXTRACT_TO if given."""
    from tacker_hwaffinity.csar import build as csar_build
    csar_build.build(source, zip_path)
    if extract_to:
        with zipfile.ZipFile(zip_path) as z:
            z.extractall(extract_to)
    return zip_path


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
