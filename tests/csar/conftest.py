"""Packages built once per session from tests/csar/data (copied before any change)."""
import pytest

from csar_fixtures import CNF, VNF_A
from tacker_hwaffinity.csar import build


@pytest.fixture(scope="session")
def vnf_a_zip(tmp_path_factory):
    return build.build(VNF_A, str(tmp_path_factory.mktemp("vnf_a") / "vnf_a.zip")).path


@pytest.fixture(scope="session")
def cnf_zip(tmp_path_factory):
    return build.build(CNF, str(tmp_path_factory.mktemp("cnf") / "cnf.zip")).path
