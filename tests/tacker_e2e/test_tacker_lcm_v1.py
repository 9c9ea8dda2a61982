"""VNF LCM v1 through a real Tacker's REST API: a VIM registered with Tacker's own
``/v1.0/vims`` (it validates the credentials against the harness's Keystone), then the
v1 sample requests. Tacker's conductor loads our driver through its driver manager
(``[tacker] vnflcm_mgmt_driver``), checks the package's copy against the installed
file, creates the stack from the BaseHOT and our UserData class, and calls the hooks.

1. instantiate while the master is down: FAILED_TEMP with our one-line reason, from
   our driver inside the conductor; the master comes up; Tacker's retry completes and
   every worker's node carries ``CIS-node=<its compute host>``, with the report in the
   instance's ``metadata``;
2. another instance: instantiate, then scale out (the new worker's node is labelled),
   scale in (the removed worker's node drained and deleted), heal a worker (its new
   server's node labelled, then uncordoned) and terminate (no stack, server or server
   group left);
3. the TOSCA flavour (no BaseHOT): the translator's server group spreads the workers, the
   VMs boot from the image the package carries (uploaded by Tacker, checked against the
   VDUs' checksum), and terminate removes the stack and the image.

The tests run in this order and share the master (down until the first test starts it)."""
import json
import os

import pytest

from . import lcm
from .guide import IMAGE
from .vnf import Vnf

pytestmark = [pytest.mark.tacker, pytest.mark.openstack, pytest.mark.controlplane,
              pytest.mark.ssh]


@pytest.fixture(scope="module")
def vim(v1_client, tacker_cloud):
    creds = tacker_cloud.credentials("admin")
    made = v1_client.create_vim({"vim": {
        "type": "openstack", "name": "hwaffinity-vim", "is_default": True,
        "auth_url": creds["auth_url"],
        "auth_cred": {"username": creds["username"], "password": creds["password"],
                      "user_domain_name": "Default", "cert_verify": "False"},
        "vim_project": {"name": creds["project_name"], "project_domain_name": "Default"}}})
    assert made["vim"]["status"] in ("ACTIVE", "REACHABLE", "PENDING"), made
    return made["vim"]


@pytest.fixture(scope="module")
def new_vnf(v1_client, vim, vnf_a_onboarded, tacker_cloud, master, kubelets):
    """A factory of VNF-A instances (v1), their operations timed."""
    state, pkg, _ = vnf_a_onboarded
    assert state == "ONBOARDED", pkg
    lcm.ensure_keypair(tacker_cloud)
    made = []

    def new(name):
        life = Vnf(v1_client, 1, tacker_cloud, master, kubelets, vim_id=vim["id"])
        life.id = v1_client.create_vnf_instance({"vnfdId": pkg["vnfdId"],
                                                 "vnfInstanceName": name})["id"]
        made.append(life)
        return life
    yield new
    print("v1 LCM (s): " + "; ".join(", ".join("%s %.1f" % kv for kv in life.seconds.items())
                                     for life in made))


def test_instantiate_fails_while_the_master_is_down_and_a_retry_completes(
        new_vnf, master, tacker, tacker_cloud):
    vnf = new_vnf("vnf-a-v1-retried")
    v1 = vnf.client
    occ = vnf.run("INSTANTIATE", v1.instantiate_vnf_instance, vnf.id,
                  vnf.request("instantiate_podaffinity.json"))
    assert occ["operationState"] == "FAILED_TEMP", occ
    detail = json.dumps(occ.get("error"))
    assert "instantiate_end: no master answered over SSH" in detail, detail
    assert lcm.secret_free(detail, tacker_cloud)
    log = open(tacker.logs()["tacker-conductor"], errors="replace").read()
    assert "ERROR tacker_hwaffinity.mgmt" in log          # our driver, in the conductor

    master.start()                                       # the fix: the master is up
    v1.retry_vnf_instance(occ["id"])
    occ = vnf.wait(occ["id"], "instantiate retry")
    assert occ["operationState"] == "COMPLETED", occ.get("error")
    assert len(vnf.assert_labelled("instantiate_end")) == 3


@pytest.fixture(scope="module")
def vnf_v1(new_vnf, master):
    """VNF-A instantiated through v1, for the operations after it. A fresh instance:
    Tacker 16's v1 conductor loses the VNF's `scale_group` attribute when an
    instantiate is retried (the retry skips the stack creation that sets it), so a
    scale of the retried instance above answers 500 KeyError 'scale_group'."""
    master.start()                                       # up (already, after the test above)
    vnf = new_vnf("vnf-a-v1")
    occ = vnf.run("INSTANTIATE", vnf.client.instantiate_vnf_instance, vnf.id,
                  vnf.request("instantiate_podaffinity.json"))
    assert occ["operationState"] == "COMPLETED", occ.get("error")
    return vnf


def test_instantiate_then_scale_out_labels_the_new_worker(vnf_v1):
    vnf = vnf_v1
    before = vnf.workers()
    assert len(vnf.assert_labelled("instantiate_end")) == len(before) == 3
    occ = vnf.run("SCALE", vnf.client.scale_vnf_instance, vnf.id,
                  vnf.request("scale_out_workers.json"), label="scale out")
    assert occ["operationState"] == "COMPLETED", occ.get("error")
    assert len(vnf.workers()) == len(before) + 1
    assert len(vnf.assert_labelled("scale_end")) == 4    # one per compute host


def test_scale_in_drains_and_deletes_the_removed_workers_node(vnf_v1):
    vnf_v1.scale_in_checked()


def test_heal_of_a_worker_relabels_its_node_before_it_is_uncordoned(vnf_v1):
    vnf_v1.heal_worker_checked()


def test_terminate_removes_the_stack_its_servers_and_server_groups(vnf_v1):
    vnf_v1.terminate_checked()


def test_the_tosca_flavour_boots_from_the_packages_image_and_spreads_its_workers(
        new_vnf, master, tacker_cloud, guide):
    """VNF-A's TOSCA flavour, no BaseHOT: heat-translator with our extension makes the
    server group, and the VMs boot from the image the package carries (the guide's
    ``csar build --image``), which Tacker uploads to Glance and checks against the VDUs'
    checksum. Terminate removes the stack and the image."""
    import hashlib

    from openstack import connection
    master.start()                                       # up (already, after the tests above)
    vnf = new_vnf("vnf-a-v1-tosca")
    occ = vnf.run("INSTANTIATE", vnf.client.instantiate_vnf_instance, vnf.id,
                  vnf.request("instantiate_podaffinity_tosca.json"), label="tosca instantiate")
    assert occ["operationState"] == "COMPLETED", occ.get("error")
    hosts = vnf.assert_labelled("instantiate_end")
    assert len(hosts) == 3

    nova = tacker_cloud.nova("admin", version="latest")
    servers = set(vnf.workers().values())
    # the translator's group (the Heat resource named after the VNFD's policy, which
    # Heat names <stack>-<resource>-<suffix>) put them on distinct hosts
    group = vnf.worker_group()
    assert (group.name.split("-srvgroup_worker-")[0], group.policy) == (
        "vnf-a-v1-tosca", "anti-affinity"), group.name
    images = {nova.servers.get(s).image["id"] for s in servers}
    assert len(images) == 1 and not images & set(tacker_cloud.info["images"].values()), images
    sdk = connection.Connection(session=tacker_cloud.session("admin"))
    image = sdk.image.get_image(images.pop())
    with open(os.path.join(guide.workdir, IMAGE), "rb") as f:
        assert image.hash_value == hashlib.sha512(f.read()).hexdigest()
    assert (image.name, image.disk_format, image.min_disk) == (
        "ubuntu-24.04-server-cloudimg-amd64-podaffinity_tosca", "qcow2", 10)

    occ = vnf.run("TERMINATE", vnf.client.terminate_vnf_instance, vnf.id,
                  {"terminationType": "FORCEFUL"}, label="tosca terminate")
    assert occ["operationState"] == "COMPLETED", occ.get("error")
    assert sdk.image.find_image(image.id) is None
    assert not servers & {s.id for s in nova.servers.list()}
