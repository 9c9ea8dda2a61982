"""Helpers for the translator tests (tests/translator has no __init__.py: a
package named ``translator`` would shadow heat-translator).

Fixture VNFDs live in data/cases (golden cases), data/k8s_cluster_package (a
Tacker-style package with two flavours) and data/errors (a base VNFD that the
error tests mutate). They import the ETSI SOL001 v2.6.1 type files
(etsi_nfv_sol001_common_types.yaml, etsi_nfv_sol001_vnfd_types.yaml) from
their Definitions/ directory, but this repository does not hold ETSI's files:
the installed ``tacker`` ships them (``tacker_hwaffinity.etsi_types``).

So the tests never read data/ in place. Once per process this module copies
data/ (without data/expected) to a temporary directory, puts the real ETSI
files into its Definitions/ and k8s_cluster_package/Definitions/, removes the
copy at exit, and DATA, CASES, DEFINITIONS and K8S_PACKAGE point into that
copy. A test that edits a fixture edits that copy (better: a copy of it in
tmp_path), never the repository. EXPECTED stays in the repository, so that
HWAFFINITY_UPDATE_GOLDEN=1 rewrites the checked-in golden files.
"""
import atexit
import copy
import os
import shutil
import tempfile

import yaml

from tacker_hwaffinity import etsi_types

REPO_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
EXPECTED = os.path.join(REPO_DATA, "expected")
# The directories, relative to data/, that receive the real ETSI files.
ETSI_DIRS = ("Definitions", os.path.join("k8s_cluster_package", "Definitions"))


def _data_with_etsi_types():
    """A temporary copy of data/ with the real ETSI files, removed at exit."""
    etsi = etsi_types.paths()           # an InputError if tacker is missing
    root = tempfile.mkdtemp(prefix="hwaffinity-translator-data-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    data = os.path.join(root, "data")
    shutil.copytree(REPO_DATA, data, ignore=lambda d, names: (
        ["expected"] if os.path.samefile(d, REPO_DATA) else []))
    for folder in ETSI_DIRS:
        for name, source in etsi.items():
            target = os.path.join(data, folder, name)
            assert not os.path.exists(target), (
                "%s is in the repository; the tests take ETSI's files from the "
                "installed tacker" % os.path.join(REPO_DATA, folder, name))
            shutil.copyfile(source, target)    # a copy, not a link: tests may edit it
    return data


DATA = _data_with_etsi_types()
CASES = os.path.join(DATA, "cases")
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


def scratch_dir():
    """A new directory inside DATA: a VNFD written there may import DATA's
    Definitions/ (the loader reads no file outside a VNFD's package, and DATA is
    the package of the files one directory down)."""
    return tempfile.mkdtemp(prefix="scratch-", dir=DATA)


def write_vnfd(data, name="vnfd.yaml"):
    """The path of DATA written as a VNFD in a new scratch_dir()."""
    path = os.path.join(scratch_dir(), name)
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
