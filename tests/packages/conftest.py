"""Fixtures of the package tests: the packages as ``hwaffinity csar build``
makes them, and what Tacker 16.0.0 (installed in the test venv) makes of
them."""
import tempfile
import uuid

import pytest

from . import pkgtools


def _built(tmp_path_factory, source, name):
    folder = tmp_path_factory.mktemp(name)
    zip_path = str(folder / ("%s.zip" % name))
    pkgtools.build(source, zip_path, extract_to=str(folder / "pkg"))
    return zip_path, str(folder / "pkg")


@pytest.fixture(scope="session")
def k8s_built(tmp_path_factory):
    """(zip, extracted directory) of VNF-A built from csar/k8s-cluster."""
    return _built(tmp_path_factory, pkgtools.K8S_CLUSTER, "vnfa")


@pytest.fixture(scope="session")
def cnf_built(tmp_path_factory):
    """(zip, extracted directory) of VNF-B built from csar/cnf."""
    return _built(tmp_path_factory, pkgtools.CNF, "vnfb")


@pytest.fixture(scope="session")
def k8s_package(k8s_built):
    return k8s_built[1]


@pytest.fixture(scope="session")
def cnf_package(cnf_built):
    return cnf_built[1]


def onboard(zip_path, workdir):
    """Tacker's package upload processing (``csar_utils.load_csar_data``,
    toscaparser and the TOSCA.meta hashes included) of ZIP_PATH, with its
    extraction directory and toscaparser's temporary copies under WORKDIR:
    ``(vnf_data, flavours, artifacts)``."""
    from tacker import conf
    from tacker.common import csar_utils
    from tacker_hwaffinity.csar import tacker_checks
    conf.CONF.set_override("vnf_package_csar_path", workdir, "vnf_package")
    saved, tempfile.tempdir = tempfile.tempdir, workdir
    try:
        with tacker_checks.silent():
            return csar_utils.load_csar_data(None, str(uuid.uuid4()), zip_path)
    finally:
        tempfile.tempdir = saved
        conf.CONF.clear_override("vnf_package_csar_path", "vnf_package")


@pytest.fixture(scope="session")
def k8s_onboarded(k8s_built, tmp_path_factory):
    return onboard(k8s_built[0], str(tmp_path_factory.mktemp("tacker")))


@pytest.fixture(scope="session")
def cnf_onboarded(cnf_built, tmp_path_factory):
    return onboard(cnf_built[0], str(tmp_path_factory.mktemp("tacker")))


def v2_vnfd(package_dir):
    """Tacker v2's reading of a package (sol_refactored vnfd_utils.Vnfd)."""
    from tacker.sol_refactored.common import vnfd_utils
    vnfd = vnfd_utils.Vnfd("vnfd-under-test")
    vnfd.init_from_csar_dir(package_dir)
    return vnfd


@pytest.fixture(scope="session")
def k8s_v2_vnfd(k8s_package):
    return v2_vnfd(k8s_package)


@pytest.fixture(scope="session")
def cnf_v2_vnfd(cnf_package):
    return v2_vnfd(cnf_package)
