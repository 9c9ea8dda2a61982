"""The project's own package sources (csar/) build, validate and pass Tacker's upload."""
import os

import pytest

from csar_fixtures import CLUSTER, REPO, tacker_upload
from tacker_hwaffinity.csar import build, validate

K8S_CLUSTER = os.path.join(REPO, "csar", "k8s-cluster")
CNF = os.path.join(REPO, "csar", "cnf")
SAMPLE_CLUSTER = os.path.join(REPO, "samples", "cluster.yaml")


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


@pytest.fixture(scope="module")
def cnf_zip(tmp_path_factory):
    return build.build(CNF, str(tmp_path_factory.mktemp("cnf") / "cnf.zip")).path


def _plan_inputs(cluster):
    from tacker_hwaffinity.intake import read
    from tacker_hwaffinity.intake.source import Files
    return read.cluster(Files((cluster,)))


@pytest.mark.parametrize("cluster", [SAMPLE_CLUSTER, CLUSTER], ids=["sample", "tests"])
def test_cnf_builds_validates_and_places_every_replica(cnf_zip, cluster):
    report = validate.validate(cnf_zip, _plan_inputs(cluster))
    assert [str(p) for p in report.unique()] == []
    plan = [c for c in report.checks if c.startswith("plan: ")]
    assert len(plan) == 1
    placed, total = plan[0].split()[1], plan[0].split()[3]
    assert placed == total and int(total) > 0
    assert any(c.startswith("Kubernetes manifests: ") for c in report.checks)


def test_cnf_passes_tackers_own_upload(cnf_zip, tmp_path):
    vnf_data, flavours, artifacts = tacker_upload(cnf_zip, tmp_path)
    assert {a["Source"] for a in artifacts} == {
        n for n in build.build(CNF, str(tmp_path / "again.zip")).members
        if n.startswith("Files/kubernetes/")}
    assert flavours
