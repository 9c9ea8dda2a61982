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

from . import lcm

pytestmark = [pytest.mark.tacker, pytest.mark.openstack]


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
    """The v1 sample, its VIM the one registered above."""
    body = lcm.sample_request(os.path.join("v1", "instantiate_podaffinity.json"), cloud)
    body["vimConnectionInfo"][0]["vimId"] = vim_id
    return body


def test_v1_instantiate_loads_our_driver_and_reports_its_failure(
        v1, vim, vnf_a_onboarded, tacker, tacker_cloud):
    cloud = tacker_cloud
    state, pkg, _ = vnf_a_onboarded
    assert state == "ONBOARDED", pkg
    lcm.ensure_keypair(cloud)
    inst = v1.create_vnf_instance({"vnfdId": pkg["vnfdId"], "vnfInstanceName": "vnf-a-v1"})
    t0 = time.monotonic()
    v1.instantiate_vnf_instance(inst["id"], _request(cloud, vim["id"]))
    occ = lcm.wait_operation(v1.show_vnf_lcm_op_occs,
                             lcm.operation_of(v1.list_vnf_lcm_op_occs, inst["id"]))
    assert occ["operationState"] == "FAILED_TEMP", occ
    detail = json.dumps(occ.get("error"))
    assert "no master answered over SSH" in detail, detail
    assert lcm.secret_free(detail, cloud)
    log = open(tacker.logs()["tacker-conductor"], errors="replace").read()
    assert "ERROR tacker_hwaffinity.mgmt" in log          # our driver, in the conductor
    print("v1 instantiate to FAILED_TEMP in %.1f s: %s" % (time.monotonic() - t0,
                                                          occ["error"].get("detail")))
