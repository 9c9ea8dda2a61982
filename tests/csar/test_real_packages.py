"""The project's own package sources (csar/) build, validate and pass Tacker's upload."""
import os

import pytest

from csar_fixtures import REPO, tacker_upload
from tacker_hwaffinity.csar import build, validate

K8S_CLUSTER = os.path.join(REPO, "csar", "k8s-cluster")


@pytest.fixture(scope="module")
def k8s_cluster_zip(tmp_path_factory):
    return build.build(K8S_CLUSTER, str(tmp_path_factory.mktemp("k8s") / "k8s.zip")).path


def test_k8s_cluster_builds_and_validates(k8s_cluster_zip):
    report = validate.validate(k8s_cluster_zip)
    assert [str(p) for p in report.unique()] == []
    flavours = [c for c in report.checks if c.startswith("flavour ")]
    assert len(flavours) >= 1
    assert all("translated (heat-translator + tacker-hwaffinity)" in c for c in flavours)
    assert any("Vnflcm hooks use mgmt-drivers-hwaffinity" in c for c in report.checks)


def test_k8s_cluster_passes_tackers_own_upload(k8s_cluster_zip, tmp_path):
    vnf_data, flavours, artifacts = tacker_upload(k8s_cluster_zip, tmp_path)
    assert {a["Source"] for a in artifacts} >= {"Scripts/hwaffinity_mgmt_driver.py"}
    assert flavours
