"""The driver installs Kubernetes over SSH when ``hwaffinity_param.install``
asks for it, then labels the nodes as always.

Real: one OpenSSH sshd listening on several loopback addresses (one per
"VM"), the driver's SSH code, Tacker's v2 conductor running our v2 script
with the VNF package unpacked (``tmp_csar_dir``), the package's real
``install_k8s.sh`` for every preflight (``--dry-run``), the real control
plane for the nodes and labels, Nova answers replayed from JSON captured on
real Nova. The one stand-in is ``data/install_k8s_standin.sh`` for the
non-dry runs (kubeadm needs an Ubuntu VM): it keeps the script's contract
and registers each node with the real control plane.
"""
import copy
import json
import logging
import os
import shutil
import uuid

import pytest

from mgmt import openstack_replay as replay
from mgmt import tacker_v2_conductor as conductor
from ssh import sshd as sshd_mod
from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL
from tacker_hwaffinity.mgmt import lifecycle, tacker_v2
from tacker_hwaffinity.mgmt.reconcile import HookFailed

pytestmark = [pytest.mark.ssh, pytest.mark.controlplane]
HERE = os.path.dirname(os.path.abspath(__file__))
REAL_SCRIPT = os.path.join(HERE, "..", "..", "csar", "k8s-cluster", "Scripts", "install_k8s.sh")
MASTERS = ["127.0.42.11", "127.0.42.12", "127.0.42.13"]
WORKERS = ["127.0.42.21", "127.0.42.22", "127.0.42.23"]
SCALED = "127.0.42.24"


@pytest.fixture(scope="module")
def vms():
    """One sshd reachable on every VM address."""
    if sshd_mod.find("sshd") is None:
        pytest.fail(sshd_mod.HINT, pytrace=False)
    server = sshd_mod.SSHServer(extra_hosts=MASTERS + WORKERS + [SCALED])
    server.start(timeout=10)
    yield server
    server.stop()
    server.cleanup(keep_logs=False)


def _server(ip, host):
    tpl = replay.load("nova_servers.json")["servers"][0]
    s = copy.deepcopy(tpl)
    s["id"], s["name"] = str(uuid.uuid4()), "vm-" + ip.rsplit(".", 1)[1]
    s["OS-EXT-SRV-ATTR:host"] = s["OS-EXT-SRV-ATTR:hypervisor_hostname"] = host
    s["hostId"] = uuid.uuid5(uuid.NAMESPACE_DNS, host).hex[:28] * 2
    s["addresses"] = {"k8s-net": [{"OS-EXT-IPS:type": "fixed", "addr": ip, "version": 4,
                                   "OS-EXT-IPS-MAC:mac_addr": "fa:16:3e:00:00:01"}]}
    return s


class World:
    """The VMs (Nova servers), the VNF package with the stand-in script, and
    the nodes the stand-in registered."""

    def __init__(self, tmp_path, control_plane, vms, workers=WORKERS):
        from controlplane import harness
        self.root, self.cp, self.vms = tmp_path / "vms", control_plane, vms
        (self.root / "fail").mkdir(parents=True)
        self.package = conductor.make_package(str(tmp_path / "pkg"))
        self.kubectl = harness.find_binaries()["kubectl"]
        with open(os.path.join(HERE, "data", "install_k8s_standin.sh")) as f:
            text = f.read()
        for key, value in (("ROOT", str(self.root)), ("REAL", os.path.abspath(REAL_SCRIPT)),
                           ("KUBECTL", self.kubectl), ("KUBECONFIG", control_plane.kubeconfig)):
            text = text.replace("@%s@" % key, value)
        with open(os.path.join(self.package, "Scripts", "install_k8s.sh"), "w") as f:
            f.write(text)
        self.masters = [_server(ip, "compute%d" % i) for i, ip in enumerate(MASTERS)]
        self.workers = [_server(ip, "compute%d" % i) for i, ip in enumerate(workers)]
        self.cloud = replay.ReplayCloud([], self.masters + self.workers, "no-stack")
        self.cloud.__enter__()

    def add_worker(self, ip, host):
        s = _server(ip, host)
        self.workers.append(s)
        self.cloud.servers.append(s)
        return s

    def calls(self):
        path = self.root / "calls.log"
        return path.read_text().splitlines() if path.exists() else []

    def real_runs(self):
        return [c for c in self.calls() if "--dry-run" not in c and "join-file-ok" not in c]

    def node(self, ip):
        name = "vm-" + ip.replace(".", "-")
        return self.cp.admin.get("/api/v1/nodes/" + name)

    def params(self, **install):
        ssh = {"port": self.vms.port, "username": self.vms.username,
               "private_key": self.vms.user_keys["ed25519"][0],
               "known_hosts": "".join(self.vms.known_hosts_for(name="[%s]:%d" % (
                   h, self.vms.port)) for h in self.vms.hosts),
               "kubectl": self.kubectl, "kubeconfig_path": self.cp.kubeconfig,
               "connect_timeout": 5, "command_timeout": 60, "retries": 1}
        return {"k8s_cluster_installation_param": {
                    "script_path": "Scripts/install_k8s.sh",
                    "master_node": {"vdu_id": "masterNode", "pod_cidr": "10.245.0.0/16"},
                    "worker_node": {"vdu_id": "workerNode"}},
                "hwaffinity_param": {"ssh": ssh, "openstack": {"retries": 0},
                                     "install": dict({"enabled": True, "sudo": False,
                                                      "parallel": 3}, **install)}}

    def script(self, hook, params, **extra):
        # as Tacker v2 keeps them: a heal names vnfcInfo ids ("c-"/"m-" here), each of
        # which points at a vnfcResourceInfo (the server)
        vnfcs = [{"id": "res-" + s["id"], "vduId": vdu, "computeResource": {"resourceId": s["id"]}}
                 for vdu, group in (("workerNode", self.workers), ("masterNode", self.masters))
                 for s in group]
        infos = [{"id": "%s-%s" % ("c" if v["vduId"] == "workerNode" else "m",
                                   v["computeResource"]["resourceId"]),
                  "vduId": v["vduId"], "vnfcResourceInfoId": v["id"], "vnfcState": "STARTED"}
                 for v in vnfcs]
        access = self.cloud.access()
        return dict({"operation": hook, "tmp_csar_dir": self.package,
                     "request": {"additionalParams": params},
                     "vnf_instance": {"vimConnectionInfo": {"vim1": {
                         "vimType": tacker_v2.OPENSTACK,
                         "interfaceInfo": {"endpoint": access["auth_url"]},
                         "accessInfo": {"username": access["username"],
                                        "password": access["password"],
                                        "project": access["project_name"],
                                        "projectDomain": "Default", "userDomain": "Default"}}},
                         "instantiatedVnfInfo": {"vnfcResourceInfo": vnfcs,
                                                 "vnfcInfo": infos}}}, **extra)

    def run(self, hook, params, **extra):
        return lifecycle.run(tacker_v2.job_from_v2(self.script(hook, params, **extra)))

    def close(self):
        self.cloud.__exit__(None, None, None)
        for s in self.masters + self.workers:
            ip = s["addresses"]["k8s-net"][0]["addr"]
            self.cp.delete_node("vm-" + ip.replace(".", "-"))


@pytest.fixture
def world(tmp_path, control_plane, vms):
    w = World(tmp_path, control_plane, vms)
    yield w
    w.close()


def _role_runs(world):
    """[(vm address, role)] of the non-dry runs, in order."""
    out = []
    for line in world.real_runs():
        words = line.split()
        out.append((words[0], words[words.index("--role") + 1]))
    return out


def test_instantiate_installs_the_cluster_then_labels_it(world, tmp_path):
    """Through Tacker's v2 conductor: the script comes from the unpacked package."""
    o = conductor.objects()
    params = world.params()
    script = world.script("instantiate_end", params)
    inst = o.VnfInstanceV2.from_dict(dict(
        script["vnf_instance"], id=str(uuid.uuid4()), vnfdId="vnfd-test", vnfProvider="p",
        vnfProductName="k8s", vnfSoftwareVersion="1", vnfdVersion="1",
        instantiationState="INSTANTIATED", instantiatedVnfInfo=dict(
            script["vnf_instance"]["instantiatedVnfInfo"], flavourId="simple",
            vnfState="STARTED")))
    req = o.InstantiateVnfRequest.from_dict({"flavourId": "simple", "additionalParams": params})
    conductor.execute(world.package, "instantiate_end", req, inst)

    # preflight: the real script's dry run on all six VMs before any real run
    calls = world.calls()
    first_real = next(i for i, c in enumerate(calls) if "--dry-run" not in c)
    assert sorted(c.split()[0] for c in calls[:first_real]) == sorted(MASTERS + WORKERS)
    runs = _role_runs(world)
    assert runs[:3] == [(MASTERS[0], "init"), (MASTERS[1], "join-control-plane"),
                        (MASTERS[2], "join-control-plane")]
    assert sorted(runs[3:]) == [(ip, "join-worker") for ip in WORKERS]
    # every join got init's join file, 0600 (checked by the stand-in), then deleted
    assert sum("join-file-ok" in c for c in calls) == 5
    init_line = next(c for c in calls if "--role init" in c and "--dry-run" not in c)
    assert "--control-plane-endpoint %s:6443" % MASTERS[0] in init_line
    assert "--pod-cidr 10.245.0.0/16" in init_line  # from master_node.pod_cidr

    report = inst.metadata["hwaffinity"]
    assert [(n["nodeIp"], n["role"], n["changed"]) for n in report["install"]["nodes"]][:3] == [
        (MASTERS[0], "init", True), (MASTERS[1], "join-control-plane", True),
        (MASTERS[2], "join-control-plane", True)]
    assert report["install"]["endpoint"] == MASTERS[0] + ":6443"
    hosts = {w["addresses"]["k8s-net"][0]["addr"]: w["OS-EXT-SRV-ATTR:host"]
             for w in world.workers}
    for ip, host in hosts.items():
        assert world.node(ip)["metadata"]["labels"][DEFAULT_HOST_LABEL] == host
    token = next(line.split("=", 1)[1] for line in (world.root / "join.expected")
                 .read_text().splitlines() if line.startswith("token="))
    assert token not in json.dumps(report)
    # nothing of the upload is left behind on the VMs
    assert not any(n.startswith("tmp") and os.path.exists(os.path.join("/tmp", n, "join.env"))
                   for n in os.listdir("/tmp"))


def test_a_refused_preflight_installs_nothing(world):
    # a worker that was set up as a control-plane node: the real script refuses the role
    state = world.root / "vm" / WORKERS[1] / "real"
    state.mkdir(parents=True, mode=0o700)
    (state / "node-role").write_text("init\n")
    with pytest.raises(HookFailed) as e:
        world.run("instantiate_end", world.params())
    msg = str(e.value)
    assert "install preflight (install_k8s.sh --dry-run) failed on 1 of 6 node(s); nothing " \
           "was installed" in msg
    assert "vm-22 (%s, join-worker): refused (exit 2, nothing changed): install_k8s: error: " \
           "this node was set up with --role init; it cannot become join-worker" % WORKERS[1] \
        in msg
    assert world.real_runs() == []


def test_a_failed_worker_is_named_and_a_rerun_resumes(world, caplog):
    caplog.set_level(logging.INFO, logger="tacker_hwaffinity")
    (world.root / "fail" / WORKERS[2]).touch()
    with pytest.raises(HookFailed) as e:
        world.run("instantiate_end", world.params())
    msg = str(e.value)
    assert "installing Kubernetes failed on 1 of 3 worker(s): vm-23 (%s, join-worker): step " \
           "kubeadm-join failed (exit 1); log /var/log/hwaffinity-k8s/install.log on the node" \
           % WORKERS[2] in msg
    assert "Nodes done: vm-11 (init), vm-12 (join-control-plane)" in msg
    assert "Rerunning the operation resumes" in msg
    (world.root / "fail" / WORKERS[2]).unlink()
    before = len(world.real_runs())
    report = world.run("instantiate_end", world.params())
    changed = {n["nodeIp"]: n["changed"] for n in report["install"]["nodes"]}
    assert changed == dict({ip: False for ip in MASTERS + WORKERS[:2]}, **{WORKERS[2]: True})
    assert len(world.real_runs()) - before == 6
    assert {w["server"] for w in report["workers"]} == {s["id"] for s in world.workers}


def test_scale_out_joins_only_the_new_worker_with_a_fresh_token(world):
    world.run("instantiate_end", world.params())
    old_join = (world.root / "join.expected").read_text()
    new = world.add_worker(SCALED, "compute3")
    before = len(world.real_runs())
    report = world.run("scale_end", world.params(), **{"grant_request": {}})
    assert _role_runs(world)[before:] == [(MASTERS[0], "refresh-join"), (SCALED, "join-worker")]
    assert (world.root / "join.expected").read_text() != old_join
    assert report["install"]["newCluster"] is False
    assert world.node(SCALED)["metadata"]["labels"][DEFAULT_HOST_LABEL] == \
        new["OS-EXT-SRV-ATTR:host"]


def test_dry_run_checks_every_node_and_installs_nothing(world):
    for s in world.masters + world.workers:  # a cluster installed otherwise
        ip = s["addresses"]["k8s-net"][0]["addr"]
        world.cp.add_node("vm-" + ip.replace(".", "-"), address=ip, wait=False)
    report = world.run("instantiate_end", world.params(dry_run=True))
    assert report["install"]["dryRun"] is True
    assert len(report["install"]["nodes"]) == 6
    assert world.real_runs() == []
    assert len(world.calls()) == 6
    assert {w["host"] for w in report["workers"]} == {"compute0", "compute1", "compute2"}


def test_without_install_the_script_never_runs(world):
    for s in world.masters + world.workers:
        ip = s["addresses"]["k8s-net"][0]["addr"]
        world.cp.add_node("vm-" + ip.replace(".", "-"), address=ip, wait=False)
    params = world.params()
    del params["hwaffinity_param"]["install"]
    report = world.run("instantiate_end", params)
    assert "install" not in report and world.calls() == []
    assert len(report["workers"]) == 3


def test_a_script_path_leaving_the_package_is_refused(world):
    from tacker_hwaffinity.errors import InputError
    params = world.params()
    params["k8s_cluster_installation_param"]["script_path"] = "../outside.sh"
    with pytest.raises(InputError) as e:
        world.run("instantiate_end", params)
    assert "script_path" in str(e.value) and "relative path inside the VNF package" in \
        str(e.value)
    os.remove(os.path.join(world.package, "Scripts", "install_k8s.sh"))
    with pytest.raises(InputError) as e:
        world.run("instantiate_end", world.params())
    assert "cannot read Scripts/install_k8s.sh in the VNF package" in str(e.value)
    assert world.calls() == []



def test_v1_reads_the_script_from_tackers_package_directory(tmp_path, monkeypatch):
    """v1 hooks get no package path: the driver asks Tacker
    (``vnflcm.utils._get_vnf_package_path``: ``[vnf_package]
    vnf_package_csar_path`` + the package id). Only the database lookup of
    the id is replaced; without it the error says what is missing."""
    from tacker import conf
    from tacker.vnflcm import utils as vnflcm_utils
    from mgmt import tacker_objects
    from tacker_hwaffinity.mgmt import install, tacker_v1
    (tmp_path / "pkg-1" / "Scripts").mkdir(parents=True)
    (tmp_path / "pkg-1" / "Scripts" / "install_k8s.sh").write_bytes(b"#!/bin/bash\n")
    params = {"hwaffinity_param": {"install": {"enabled": True}}}
    vim = tacker_objects.vim({"auth_url": "http://127.0.0.1:9/v3", "username": "u",
                              "password": "p", "project_name": "p"})
    inst = tacker_objects.instance(vim, "stack-1", params)
    job = tacker_v1.job_from_v1("instantiate_end", tacker_objects.admin_context(), inst,
                                tacker_objects.instantiate_request(vim, params), {})
    with pytest.raises(HookFailed) as e:
        install.script_bytes(job)
    assert "cannot find the VNF package of VNFD %s in Tacker" % inst.vnfd_id in str(e.value)
    conf.CONF.set_override("vnf_package_csar_path", str(tmp_path), "vnf_package")
    try:
        monkeypatch.setattr(vnflcm_utils, "_get_vnf_package_id",
                            lambda context, vnfd_id: "pkg-1")
        assert install.script_bytes(job) == b"#!/bin/bash\n"
    finally:
        conf.CONF.clear_override("vnf_package_csar_path", "vnf_package")


def test_heal_of_a_worker_removes_its_node_and_joins_the_new_vm(world):
    world.run("instantiate_end", world.params())
    old = world.workers[1]
    report = world.run("heal_start", world.params(), request={
        "vnfcInstanceId": ["c-" + old["id"]], "additionalParams": world.params()})
    assert report["removedNodes"] == ["vm-" + WORKERS[1].replace(".", "-")]
    with pytest.raises(Exception) as e:
        world.node(WORKERS[1])
    assert "404" in str(e.value) or "NotFound" in str(e.value)
    # Heat replaced the server (new id, same port): a fresh VM without Kubernetes
    new = _server(WORKERS[1], "compute2")
    world.workers[1] = new
    world.cloud.servers[world.cloud.servers.index(old)] = new
    shutil.rmtree(world.root / "vm" / WORKERS[1])
    before = len(world.real_runs())
    report = world.run("heal_end", world.params(), request={
        "vnfcInstanceId": ["c-" + new["id"]], "additionalParams": world.params()})
    assert _role_runs(world)[before:] == [(MASTERS[0], "refresh-join"),
                                          (WORKERS[1], "join-worker")]
    assert [n["nodeIp"] for n in report["install"]["nodes"]] == [WORKERS[1]]
    assert world.node(WORKERS[1])["metadata"]["labels"][DEFAULT_HOST_LABEL] == "compute2"


def test_heal_of_a_master_with_install_is_refused_before_any_change(world):
    world.run("instantiate_end", world.params())
    before = len(world.calls())
    with pytest.raises(HookFailed) as e:
        world.run("heal_end", world.params(), request={
            "vnfcInstanceId": ["m-" + world.masters[1]["id"]],
            "additionalParams": world.params()})
    assert "a healed control-plane node (vm-12) is not reinstalled" in str(e.value)
    assert len(world.calls()) == before


def test_a_dry_run_heal_only_drains_the_node(world):
    for s in world.masters + world.workers:
        ip = s["addresses"]["k8s-net"][0]["addr"]
        world.cp.add_node("vm-" + ip.replace(".", "-"), address=ip, wait=False)
    params = world.params(dry_run=True)
    report = world.run("heal_start", params, request={
        "vnfcInstanceId": ["c-" + world.workers[0]["id"]], "additionalParams": params})
    assert report["drainedNodes"] == ["vm-" + WORKERS[0].replace(".", "-")]
    assert world.node(WORKERS[0])["spec"].get("unschedulable") is True
