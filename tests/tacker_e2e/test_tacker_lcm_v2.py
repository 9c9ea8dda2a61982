"""VNF LCM v2 through a real Tacker's REST API (python-tackerclient, api_version 2):
Tacker's conductor grants, creates VNF-A's Heat stack from our BaseHOT on the harness's
Heat and Nova, and runs our v2 MgmtDriver script from the package. Here the master is
unreachable over SSH, so the instantiate_end hook fails: the operation must end
FAILED_TEMP with our one-line, secret-free reason in its ``error``, and an LCM
subscriber (a small HTTP server) receives STARTING, PROCESSING and FAILED_TEMP."""
import json
import os
import subprocess
import sys
import time

import pytest

from . import lcm

pytestmark = [pytest.mark.tacker, pytest.mark.openstack]
SUBSCRIBER = r'''
import http.server, json, sys
out = open(sys.argv[1], "a")
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(204); self.end_headers()
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        out.write(body.decode() + "\n"); out.flush()
        self.send_response(204); self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
'''


@pytest.fixture(scope="module")
def v2(tacker, tacker_cloud):
    from tackerclient.v1_0 import client as tackerclient
    return tackerclient.Client(session=tacker_cloud.session("admin"), api_version="2")


@pytest.fixture(scope="module")
def package(vnf_a_onboarded):
    state, pkg, _ = vnf_a_onboarded
    assert state == "ONBOARDED", pkg
    return pkg


@pytest.fixture(scope="module")
def subscriber(tmp_path_factory):
    path = tmp_path_factory.mktemp("subscriber") / "notifications.jsonl"
    path.write_text("")
    proc = subprocess.Popen([sys.executable, "-c", SUBSCRIBER, str(path)],
                            stdout=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline())
    yield "http://127.0.0.1:%d/notify" % port, path
    proc.terminate()
    proc.wait(10)


def _request(cloud):
    """The v2 sample, its VIM given inline (v2 takes vimConnectionInfo as it is)."""
    body = lcm.sample_request(os.path.join("v2", "instantiate_podaffinity_v2.json"), cloud)
    creds = cloud.credentials("admin")
    body["vimConnectionInfo"]["vim1"] = {
        "vimId": body["vimConnectionInfo"]["vim1"]["vimId"],
        "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
        "interfaceInfo": {"endpoint": creds["auth_url"]},
        "accessInfo": {"username": creds["username"], "password": creds["password"],
                       "project": creds["project_name"], "projectDomain": "Default",
                       "userDomain": "Default", "region": "RegionOne"}}
    return body


def test_instantiate_runs_heat_and_our_script_and_reports_its_failure(
        v2, package, subscriber, tacker, tacker_cloud):
    cloud = tacker_cloud
    lcm.ensure_keypair(cloud)
    callback, received = subscriber
    v2.create_lccn_subscription({"callbackUri": callback})
    inst = v2.create_vnf_instance({"vnfdId": package["vnfdId"], "vnfInstanceName": "vnf-a"})
    t0 = time.monotonic()
    v2.instantiate_vnf_instance(inst["id"], _request(cloud))
    occ = lcm.wait_operation(v2.show_vnf_lcm_op_occs,
                             lcm.operation_of(v2.list_vnf_lcm_op_occs, inst["id"]))
    took = time.monotonic() - t0
    assert occ["operationState"] == "FAILED_TEMP", occ
    detail = json.dumps(occ["error"])
    assert "instantiate_end" in detail and "SSH" in detail, detail
    assert lcm.secret_free(detail, cloud)
    # Tacker's own stack exists: the failure came after Heat, in our hook
    heat = cloud.heat("admin")
    stacks = [s for s in heat.stacks.list() if inst["id"] in s.stack_name]
    assert stacks and stacks[0].stack_status == "CREATE_COMPLETE"

    def states():
        lines = [json.loads(x) for x in received.read_text().splitlines() if x.strip()]
        return [n.get("operationState") for n in lines
                if n.get("notificationType") == "VnfLcmOperationOccurrenceNotification"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "FAILED_TEMP" not in states():
        time.sleep(0.5)
    assert states()[:1] == ["STARTING"] and "PROCESSING" in states() \
        and states()[-1] == "FAILED_TEMP", states()
    print("v2 instantiate to FAILED_TEMP in %.1f s: %s" % (took, occ["error"]["detail"]))
