"""VNF LCM v1 through a real Tacker's REST API: a VIM registered with Tacker's own
``/v1.0/vims`` (it validates the credentials against the harness's Keystone), then
instantiate with the v1 sample. Tacker's conductor loads our driver through its driver
manager (``[tacker] vnflcm_mgmt_driver``), checks the package's copy against the
installed file, creates the stack from the BaseHOT and our UserData class, and calls
``instantiate_end``; with the master unreachable over SSH the operation is FAILED_TEMP
with our one-line reason."""
import json
import os
import time

import pytest

from . import test_tacker_lcm_v2 as v2mod
from .packages import ROOT

pytestmark = [pytest.mark.tacker, pytest.mark.openstack]
SAMPLE = os.path.join(ROOT, "samples", "requests", "k8s-cluster", "v1",
                      "instantiate_podaffinity.json")


@pytest.fixture(scope="module")
def v1(tacker, tacker_cloud):
    from tackerclient.v1_0 import client as tackerclient
    return tackerclient.Client(session=tacker_cloud.session("admin"), api_version="1")


@pytest.fixture(scope="module")
def vim(v1, tacker_cloud):
    creds = tacker_cloud.credentials("admin")
    made = v1.create_vim({"vim": {
        "type": "openstack", "name": "hwaffinity-vim", "is_default": True,
        "auth_url": creds["auth_url"],
        "auth_cred": {"username": creds["username"], "password": creds["password"],
                      "user_domain_name": "Default", "cert_verify": "False"},
        "vim_project": {"name": creds["project_name"], "project_domain_name": "Default"}}})
    assert made["vim"]["status"] in ("ACTIVE", "REACHABLE", "PENDING"), made
    return made["vim"]


def _request(cloud, vim_id):
    """The v1 sample; only addresses, ids and the key are changed, installation off."""
    body = json.load(open(SAMPLE))
    for link in body["extVirtualLinks"]:
        link["resourceId"] = cloud.network_id
        for cp in link["extCps"]:
            for cfg in cp["cpConfig"]:
                for proto in cfg["cpProtocolData"]:
                    for addr in proto["ipOverEthernet"]["ipAddresses"]:
                        addr["subnetId"] = cloud.subnet_id
    body["vimConnectionInfo"][0]["vimId"] = vim_id
    hw = body["additionalParams"]["hwaffinity_param"]
    hw["install"]["enabled"] = False
    hw["ssh"].update(host="127.0.0.1", port=v2mod._closed_port(), connect_timeout=2,
                     retries=0, private_key=v2mod.PRIVATE_KEY)
    return body


def test_v1_instantiate_loads_our_driver_and_reports_its_failure(
        v1, vim, vnf_a_onboarded, tacker, tacker_cloud):
    cloud = tacker_cloud
    state, pkg, _ = vnf_a_onboarded
    assert state == "ONBOARDED", pkg
    nova = cloud.nova("admin", version="2.1")
    if "k8s-nodes" not in [k.name for k in nova.keypairs.list()]:
        nova.keypairs.create("k8s-nodes", public_key=v2mod.PUBLIC_KEY)
    inst = v1.create_vnf_instance({"vnfdId": pkg["vnfdId"], "vnfInstanceName": "vnf-a-v1"})
    t0 = time.monotonic()
    v1.instantiate_vnf_instance(inst["id"], _request(cloud, vim["id"]))
    deadline, occ = time.monotonic() + 240, None
    while time.monotonic() < deadline:
        occs = [o for o in v1.list_vnf_lcm_op_occs() if o["vnfInstanceId"] == inst["id"]]
        occ = occs[0] if occs else None
        if occ and occ["operationState"] in ("FAILED_TEMP", "COMPLETED"):
            break
        time.sleep(1)
    assert occ and occ["operationState"] == "FAILED_TEMP", occ
    occ = v1.show_vnf_lcm_op_occs(occ["id"])         # the list leaves "error" out
    detail = json.dumps(occ.get("error"))
    assert "no master answered over SSH" in detail, detail
    assert v2mod.PRIVATE_KEY.splitlines()[1] not in detail
    log = open(tacker.logs()["tacker-conductor"], errors="replace").read()
    assert "ERROR tacker_hwaffinity.mgmt" in log          # our driver, in the conductor
    print("v1 instantiate to FAILED_TEMP in %.1f s: %s" % (time.monotonic() - t0,
                                                          occ["error"].get("detail")))
