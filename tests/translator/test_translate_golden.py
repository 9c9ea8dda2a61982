"""Golden tests: each fixture VNFD against its checked-in HOT output.

data/expected/<case>/ holds main.yaml and the nested templates exactly as the
translation must produce them. Regenerate after an intended change with
``HWAFFINITY_UPDATE_GOLDEN=1 python -m pytest tests/translator``, then review
the diff like code. Every case is also translated with its policies in
reverse order, which must give byte-identical files.
"""
import filecmp
import os

import pytest

from ci_policy import refuse_in_ci
from tacker_hwaffinity import etsi_types
from translate_helpers import (CASES, DATA, DEFINITIONS, EXPECTED, K8S_PACKAGE, REPO_DATA,
                               absolute_imports, case_names, load_yaml, translate_file,
                               write_vnfd)

UPDATE = os.environ.get("HWAFFINITY_UPDATE_GOLDEN") == "1"

K8S_FLAVOURS = ("podaffinity", "podaffinity_shared")
GOLDEN = case_names() + ["k8s_%s" % f for f in K8S_FLAVOURS]


def _source(case):
    if case.startswith("k8s_"):
        flavour = case[len("k8s_"):]
        return os.path.join(K8S_PACKAGE, "Definitions",
                            "sample_kubernetes_df_%s.yaml" % flavour), flavour
    return os.path.join(CASES, case + ".yaml"), None


def _expected(case):
    folder = os.path.join(EXPECTED, case)
    if not os.path.isdir(folder):
        return {}
    result = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            result[name] = f.read()
    return result


def _update(case, files):
    refuse_in_ci("HWAFFINITY_UPDATE_GOLDEN=1 (rewriting golden files)")
    folder = os.path.join(EXPECTED, case)
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        os.remove(os.path.join(folder, name))
    for name, text in files.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(text)


@pytest.mark.parametrize("case", GOLDEN)
def test_golden(case):
    path, flavour = _source(case)
    files = translate_file(path, flavour)
    if UPDATE:
        _update(case, files)
    expected = _expected(case)
    assert sorted(files) == sorted(expected), "files differ from data/expected/%s" % case
    for name in expected:
        assert files[name] == expected[name], "%s/%s differs from the golden file" % (
            case, name)


@pytest.mark.parametrize("case", GOLDEN)
def test_policy_order_does_not_matter(case):
    path, flavour = _source(case)
    data = absolute_imports(load_yaml(path), os.path.dirname(path))
    policies = data["topology_template"].get("policies") or []
    if len(policies) < 2:
        pytest.fail("case %s needs at least two policies to test their order" % case)
    data["topology_template"]["policies"] = list(reversed(policies))
    reordered = translate_file(write_vnfd(data, os.path.basename(path)), flavour)
    assert reordered == translate_file(path, flavour)


def test_every_case_has_golden_files():
    missing = [c for c in GOLDEN if not _expected(c)]
    assert not missing, "no data/expected files for %s" % ", ".join(missing)


@pytest.mark.parametrize("folder", [DEFINITIONS, os.path.join(K8S_PACKAGE, "Definitions")],
                         ids=["Definitions", "k8s_cluster_package"])
def test_fixtures_import_the_real_etsi_files(folder):
    """The fixtures see ETSI's SOL001 files as the installed tacker ships them,
    in a copy of data/, never in the repository (issue #5)."""
    assert os.path.commonpath([folder, REPO_DATA]) != REPO_DATA
    for name, real in etsi_types.paths().items():
        assert filecmp.cmp(os.path.join(folder, name), real, shallow=False), name
        in_repo = os.path.join(REPO_DATA, os.path.relpath(folder, DATA), name)
        assert not os.path.exists(in_repo), in_repo
