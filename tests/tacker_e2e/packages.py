"""VNF packages for the real-Tacker tests: VNF-A and VNF-B as `hwaffinity csar build` makes them,
a copy with one flipped byte, and onboarding through python-tackerclient."""
import io
import os
import subprocess
import sys
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = "Scripts/hwaffinity_mgmt_driver.py"


def build(csar, directory):
    """The package `hwaffinity csar build` makes of csar/CSAR (k8s-cluster: VNF-A,
    cnf: VNF-B), as bytes."""
    out = os.path.join(str(directory), csar + ".zip")
    r = subprocess.run([sys.executable, "-m", "tacker_hwaffinity.cli.main", "csar", "build",
                        os.path.join(ROOT, "csar", csar), "--output-file", out],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    with open(out, "rb") as f:
        return f.read()


def flipped(package, member):
    src, out = zipfile.ZipFile(io.BytesIO(package)), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == member:
                data = data[:100] + bytes([data[100] ^ 0x01]) + data[101:]
            dst.writestr(info, data)
    return out.getvalue()


def onboard(client, package, timeout=60):
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
