"""VNF packages onboarded through a real Tacker's REST API with python-tackerclient:
VNF-A as `hwaffinity csar build` makes it, and the same package with one flipped byte
in the MgmtDriver, which Tacker itself refuses."""

import pytest

from .packages import DRIVER, flipped, onboard

pytestmark = [pytest.mark.tacker, pytest.mark.openstack]


def test_vnf_a_onboards_through_the_rest_api(vnf_a_onboarded):
    state, pkg, took = vnf_a_onboarded
    assert state == "ONBOARDED", pkg
    assert pkg["operationalState"] == "ENABLED"
    assert pkg["vnfProductName"] and pkg["vnfdId"]
    artifacts = {a["artifactPath"]: a for a in pkg.get("additionalArtifacts") or []}
    assert DRIVER in artifacts and artifacts[DRIVER]["checksum"]["algorithm"] == "SHA-256"
    print("VNF-A onboarded in %.1f s" % took)


def test_a_flipped_byte_in_the_driver_is_refused_by_tacker(packages_client, vnf_a_zip, tacker):
    state, pkg = onboard(packages_client, flipped(vnf_a_zip, DRIVER))
    assert state == "REFUSED", pkg
    log = open(tacker.logs()["tacker-conductor"], errors="replace").read()
    assert ('InvalidCSAR: The hash "' in log
            and 'of artifact file "%s" is an invalid value' % DRIVER in log), log[-3000:]
