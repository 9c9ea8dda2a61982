"""VNF LCM v2 through a real Tacker's REST API (python-tackerclient, api_version 2), one
VNF-A instance through its life: Tacker's conductor grants, creates VNF-A's Heat stack
from our BaseHOT on the harness's Heat and Nova, and runs our v2 MgmtDriver script from
the package, which labels the real control plane's nodes over SSH.

1. instantiate while the master is down: FAILED_TEMP with our one-line, secret-free
   reason; the master comes up; Tacker's retry completes; every worker's node carries
   ``CIS-node=<its compute host>`` and the instance's metadata holds the report; the
   request sets no ``server_group_policy``: the workers' group is ``anti-affinity``;
2. scale out: the new worker's node is labelled (four workers, four hosts);
3. scale in: the removed worker's node is drained and deleted;
4. heal a worker: its node is drained, then uncordoned and labelled with its new host;
5. terminate: the stack is gone.

An LCM subscriber (a small HTTP server) receives every operation's notifications.
The tests run in this order and share the instance; each needs the one before.
"""
import json
import subprocess
import sys

import pytest

from . import lcm
from .vnf import Vnf

pytestmark = [pytest.mark.tacker, pytest.mark.openstack, pytest.mark.controlplane,
              pytest.mark.ssh]
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
def subscriber(tmp_path_factory):
    path = tmp_path_factory.mktemp("subscriber") / "notifications.jsonl"
    path.write_text("")
    proc = subprocess.Popen([sys.executable, "-c", SUBSCRIBER, str(path)],
                            stdout=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline())
    yield "http://127.0.0.1:%d/notify" % port, path
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module")
def vnf(v2, vnf_a_onboarded, subscriber, tacker_cloud, master, kubelets):
    state, pkg, _ = vnf_a_onboarded
    assert state == "ONBOARDED", pkg
    lcm.ensure_keypair(tacker_cloud)
    callback, received = subscriber
    v2.create_lccn_subscription({"callbackUri": callback})
    life = Vnf(v2, 2, tacker_cloud, master, kubelets, received)
    life.id = v2.create_vnf_instance({"vnfdId": pkg["vnfdId"], "vnfInstanceName": "vnf-a"})["id"]
    yield life
    print("v2 LCM (s): " + ", ".join("%s %.1f" % kv for kv in life.seconds.items()))


def test_instantiate_fails_while_the_master_is_down_and_a_retry_completes(vnf, tacker_cloud):
    v2 = vnf.client
    body = vnf.request("instantiate_podaffinity_v2.json")
    # a request that leaves the workers' group policy out: the BaseHOT's anti-affinity
    del body["additionalParams"]["nfv"]["VDU"]["workerNode"]["server_group_policy"]
    occ = vnf.run("INSTANTIATE", v2.instantiate_vnf_instance, vnf.id, body)
    assert occ["operationState"] == "FAILED_TEMP", occ
    detail = json.dumps(occ["error"])
    assert "instantiate_end: no master answered over SSH" in detail, detail
    assert lcm.secret_free(detail, tacker_cloud)
    # Tacker's own stack exists: the failure came after Heat, in our hook
    heat = tacker_cloud.heat("admin")
    stacks = [s for s in heat.stacks.list() if vnf.id in s.stack_name]
    assert stacks and stacks[0].stack_status == "CREATE_COMPLETE"
    assert vnf.wait_notified(occ["id"], "FAILED_TEMP") == ["STARTING", "PROCESSING",
                                                           "FAILED_TEMP"]

    vnf.master.start()                                   # the fix: the master is up
    lcm.start_operation(v2.retry_vnf_instance, occ["id"])
    occ = vnf.wait(occ["id"], "instantiate retry")
    assert occ["operationState"] == "COMPLETED", occ.get("error")
    hosts = vnf.assert_labelled("instantiate_end")
    assert len(hosts) == 3
    assert vnf.worker_group().policy == "anti-affinity"
    assert vnf.wait_notified(occ["id"], "COMPLETED")[-2:] == ["PROCESSING", "COMPLETED"]


def test_scale_out_labels_the_new_worker(vnf):
    before = vnf.workers()
    occ = vnf.run("SCALE", vnf.client.scale_vnf_instance, vnf.id,
                  vnf.request("scale_out_workers.json"), label="scale out")
    assert occ["operationState"] == "COMPLETED", occ.get("error")
    assert len(vnf.workers()) == len(before) + 1
    hosts = vnf.assert_labelled("scale_end")
    assert len(hosts) == 4                               # one per compute host
    assert vnf.wait_notified(occ["id"], "COMPLETED") == ["STARTING", "PROCESSING",
                                                         "COMPLETED"]


def test_scale_in_drains_and_deletes_the_removed_workers_node(vnf):
    vnf.scale_in_checked()


def test_heal_of_a_worker_relabels_its_node(vnf):
    vnf.heal_worker_checked()


def test_terminate_removes_the_stack_its_servers_and_server_groups(vnf):
    vnf.terminate_checked()
