"""VNF packages onboarded through a real Tacker's REST API with python-tackerclient:
VNF-A as `hwaffinity csar build` makes it, and the same package with one flipped byte
in the MgmtDriver, which Tacker itself refuses."""
import io
import os
import subprocess
import sys
import time
import zipfile

import pytest

pytestmark = [pytest.mark.tacker, pytest.mark.openstack]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = "Scripts/hwaffinity_mgmt_driver.py"


@pytest.fixture(scope="module")
def vnf_a(tmp_path_factory):
    out = tmp_path_factory.mktemp("vnf-a") / "vnf-a.zip"
    r = subprocess.run([sys.executable, "-m", "tacker_hwaffinity.cli.main", "csar", "build",
                        os.path.join(ROOT, "csar", "k8s-cluster"), "-o", str(out)],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    return out.read_bytes()


@pytest.fixture(scope="module")
def client(tacker, tacker_cloud):
    from tackerclient.v1_0 import client as tackerclient
    return tackerclient.Client(session=tacker_cloud.session("admin"))


def _flipped(package, member):
    src, out = zipfile.ZipFile(io.BytesIO(package)), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == member:
                data = data[:100] + bytes([data[100] ^ 0x01]) + data[101:]
            dst.writestr(info, data)
    return out.getvalue()


def _onboard(client, package, timeout=60):
    """Create and upload; wait until Tacker has processed it. (final state, package)"""
    pkg = client.create_vnf_package({"userDefinedData": {"test": "hwaffinity"}})
    assert pkg["onboardingState"] == "CREATED"
    client.upload_vnf_package(pkg["id"], io.BytesIO(package))
    deadline, seen = time.monotonic() + timeout, set()
    while time.monotonic() < deadline:
        pkg = client.show_vnf_package(pkg["id"])
        seen.add(pkg["onboardingState"])
        if pkg["onboardingState"] == "ONBOARDED":
            return "ONBOARDED", pkg
        if pkg["onboardingState"] == "CREATED" and seen & {"UPLOADING", "PROCESSING"}:
            return "REFUSED", pkg                       # Tacker reverted the upload
        time.sleep(0.3)
    raise AssertionError("package %s still %s after %d s" % (pkg["id"], seen, timeout))


def test_vnf_a_onboards_through_the_rest_api(client, vnf_a):
    t0 = time.monotonic()
    state, pkg = _onboard(client, vnf_a)
    assert state == "ONBOARDED", pkg
    assert pkg["operationalState"] == "ENABLED" and pkg["usageState"] == "NOT_IN_USE"
    assert pkg["vnfProductName"] and pkg["vnfdId"]
    artifacts = {a["artifactPath"]: a for a in pkg.get("additionalArtifacts") or []}
    assert DRIVER in artifacts and artifacts[DRIVER]["checksum"]["algorithm"] == "SHA-256"
    print("VNF-A onboarded in %.1f s" % (time.monotonic() - t0))


def test_a_flipped_byte_in_the_driver_is_refused_by_tacker(client, vnf_a, tacker):
    state, pkg = _onboard(client, _flipped(vnf_a, DRIVER))
    assert state == "REFUSED", pkg
    log = open(tacker.logs()["tacker-conductor"], errors="replace").read()
    assert ('InvalidCSAR: The hash "' in log
            and 'of artifact file "%s" is an invalid value' % DRIVER in log), log[-3000:]
