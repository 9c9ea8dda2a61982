"""VNF LCM v2 through a real Tacker's REST API (python-tackerclient, api_version 2):
Tacker's conductor grants, creates VNF-A's Heat stack from our BaseHOT on the harness's
Heat and Nova, and runs our v2 MgmtDriver script from the package. Here the master is
unreachable over SSH, so the instantiate_end hook fails: the operation must end
FAILED_TEMP with our one-line, secret-free reason in its ``error``, and an LCM
subscriber (a small HTTP server) receives STARTING, PROCESSING and FAILED_TEMP."""
import copy
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from .packages import ROOT

pytestmark = [pytest.mark.tacker, pytest.mark.openstack]
SAMPLE = os.path.join(ROOT, "samples", "requests", "k8s-cluster", "v2",
                      "instantiate_podaffinity_v2.json")


def _keypair():
    """(OpenSSH private key text, its public key line): the sample's Nova keypair."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode()
    return private, public


PRIVATE_KEY, PUBLIC_KEY = _keypair()

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


def _closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(cloud):
    """The sample instantiate request; only addresses, ids and the key are changed, and
    the Kubernetes installation is off (the harness's VMs run no sshd; every SSH target
    must stay on loopback)."""
    body = json.load(open(SAMPLE))
    body = copy.deepcopy(body)
    link = body["extVirtualLinks"][0]
    link["resourceId"] = cloud.network_id
    for cp in link["extCps"]:
        for cfg in cp["cpConfig"].values():
            for proto in cfg["cpProtocolData"]:
                for addr in proto["ipOverEthernet"]["ipAddresses"]:
                    addr["subnetId"] = cloud.subnet_id
    creds = cloud.credentials("admin")
    body["vimConnectionInfo"]["vim1"] = {
        "vimId": body["vimConnectionInfo"]["vim1"]["vimId"],
        "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
        "interfaceInfo": {"endpoint": creds["auth_url"]},
        "accessInfo": {"username": creds["username"], "password": creds["password"],
                       "project": creds["project_name"], "projectDomain": "Default",
                       "userDomain": "Default", "region": "RegionOne"}}
    body["additionalParams"]["hwaffinity_param"]["install"]["enabled"] = False
    ssh = body["additionalParams"]["hwaffinity_param"]["ssh"]
    ssh.update(host="127.0.0.1", port=_closed_port(), connect_timeout=2, retries=0,
               private_key=PRIVATE_KEY)
    return body


def _wait_occ(v2, occ_id, states, timeout=240):
    deadline = time.monotonic() + timeout
    occ = None
    while time.monotonic() < deadline:
        occ = v2.show_vnf_lcm_op_occs(occ_id)
        if occ["operationState"] in states:
            return occ
        time.sleep(1)
    raise AssertionError("operation %s still %s after %d s" % (
        occ_id, occ and occ["operationState"], timeout))


def test_instantiate_runs_heat_and_our_script_and_reports_its_failure(
        v2, package, subscriber, tacker, tacker_cloud):
    cloud = tacker_cloud
    nova = cloud.nova("admin", version="2.1")
    if "k8s-nodes" not in [k.name for k in nova.keypairs.list()]:
        nova.keypairs.create("k8s-nodes", public_key=PUBLIC_KEY)
    callback, received = subscriber
    v2.create_lccn_subscription({"callbackUri": callback})
    inst = v2.create_vnf_instance({"vnfdId": package["vnfdId"], "vnfInstanceName": "vnf-a"})
    t0 = time.monotonic()
    v2.instantiate_vnf_instance(inst["id"], _request(cloud))
    occs = [o for o in v2.list_vnf_lcm_op_occs() if o["vnfInstanceId"] == inst["id"]]
    assert len(occs) == 1
    occ = _wait_occ(v2, occs[0]["id"], ("FAILED_TEMP", "COMPLETED"))
    took = time.monotonic() - t0
    assert occ["operationState"] == "FAILED_TEMP", occ
    detail = json.dumps(occ["error"])
    assert "instantiate_end" in detail and "SSH" in detail, detail
    key_body = PRIVATE_KEY.splitlines()[1]
    assert key_body not in detail and cloud.credentials("admin")["password"] not in detail
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
