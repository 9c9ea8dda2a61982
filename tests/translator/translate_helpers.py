"""Helpers for the translator tests (tests/translator has no __init__.py: a
package named ``translator`` would shadow heat-translator).

Fixture VNFDs live in data/cases (golden cases), data/k8s_cluster_package (a
Tacker-style package with two flavours) and data/errors (a base VNFD that the
error tests mutate). The type files in data/Definitions are a SOL001 v2.6.1
subset written for these tests.
"""
import copy
import os

import yaml

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
CASES = os.path.join(DATA, "cases")
EXPECTED = os.path.join(DATA, "expected")
DEFINITIONS = os.path.join(DATA, "Definitions")
K8S_PACKAGE = os.path.join(DATA, "k8s_cluster_package")


def case_names():
    return sorted(f[:-5] for f in os.listdir(CASES) if f.endswith(".yaml"))


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def absolute_imports(data, base_dir):
    data = copy.deepcopy(data)
    data["imports"] = [os.path.normpath(os.path.join(base_dir, i)) for i in data["imports"]]
    return data


def write_vnfd(tmp_path, data, name="vnfd.yaml"):
    path = os.path.join(str(tmp_path), name)
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(data, f, sort_keys=False)
    return path


def translate_file(path, flavour=None):
    """{file name: text} for a VNFD path, through our loader and Tacker's calls."""
    from tacker_hwaffinity.translator import loader, run
    with loader.open_vnfd(path, flavour) as vnfd:
        return run.translate_vnfd(vnfd)


def parsed(files):
    """{file name: data} of translated files."""
    return {name: yaml.safe_load(text) for name, text in files.items()}
