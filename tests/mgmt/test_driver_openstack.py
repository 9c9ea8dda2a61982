"""The v1 driver end to end on real components: Heat 27 and Nova 34 (the
OpenStack harness: fake hypervisors, real scheduler and server groups),
Tacker's driver manager and objects, a real sshd running the real kubectl
against the real control plane, whose nodes carry the VMs' addresses as
InternalIP (as kubelets on those VMs would register them)."""
import json
import logging
import os
import uuid

import pytest

from mgmt import tacker_objects
from mgmt.tacker_objects import DRIVER
from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL

pytestmark = [pytest.mark.openstack, pytest.mark.controlplane, pytest.mark.ssh]
TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
HOST = "OS-EXT-SRV-ATTR:host"


def _read(name):
    with open(os.path.join(TEMPLATES, name)) as f:
        return f.read()


@pytest.fixture(scope="module")
def cloud(request):
    import osharness
    with osharness.heat_clouds(request) as start:
        yield start(3)


class Vnf:
    """One stack of worker VMs whose servers have joined the cluster."""

    def __init__(self, cloud, cp, template, files, params, aspect="worker_instance",
                 user="admin"):
        import osharness
        self.cloud, self.cp, self.aspect, self.user = cloud, cp, aspect, user
        self.heat, self.nova = cloud.heat(user), cloud.nova("admin", version="latest")
        self.files = {n: _read(n) for n in files}
        self.params = dict(params, image=cloud.image, network=cloud.network)
        created = self.heat.stacks.create(stack_name="vnf-" + uuid.uuid4().hex[:8],
                                          template=_read(template), files=self.files,
                                          parameters=self.params)
        self.stack_id = created["stack"]["id"]
        osharness.wait_stack(self.heat, self.stack_id, timeout=240)
        self.nodes = {}  # server id -> node name
        self.join()

    def servers(self):
        ids = {r.physical_resource_id for r in self.heat.resources.list(self.stack_id,
                                                                         nested_depth=2)
               if r.resource_type == "OS::Nova::Server" and r.physical_resource_id}
        return [s for s in self.nova.servers.list(detailed=True,
                                                  search_opts={"all_tenants": 1})
                if s.id in ids]

    def members(self):
        return [r for r in self.heat.resources.list(self.stack_id, nested_depth=1)
                if getattr(r, "parent_resource", None) == self.aspect]

    def join(self):
        """Every server without a node gets one (kubeadm join, as it were)."""
        for s in self.servers():
            if s.id not in self.nodes:
                addr = next(a["addr"] for nets in s.addresses.values() for a in nets)
                name = "k8s-%s-%s" % (s.name.lower()[-12:].strip("-"), s.id[:6])
                self.cp.add_node(name, address=addr, wait=False)
                self.nodes[s.id] = name

    def labels(self, server_id):
        node = self.cp.admin.get("/api/v1/nodes/" + self.nodes[server_id])
        return node["metadata"].get("labels") or {}

    def update(self, **params):
        import osharness
        before = self.heat.stacks.get(self.stack_id).updated_time
        self.heat.stacks.update(self.stack_id, existing=True, parameters=params)
        osharness.wait_for(lambda: self.heat.stacks.get(self.stack_id).updated_time != before,
                           30, what="stack update to start")
        return osharness.wait_stack(self.heat, self.stack_id, timeout=240)

    def cleanup(self):
        for name in self.nodes.values():
            self.cp.delete_node(name)
        self.heat.stacks.delete(self.stack_id)


def _params(ssh_params, **hw):
    return {"k8s_cluster_installation_param": {
        "master_node": {"username": "ubuntu", "password": "master-Passw0rd"},
        "worker_node": {"aspect_id": "worker_instance"}},
        "hwaffinity_param": dict({"ssh": ssh_params}, **hw)}


def _invoke(manager, hook, inst, request, **kwargs):
    return manager.invoke(DRIVER, hook, context=tacker_objects.admin_context(),
                          vnf_instance=inst, grant=None, grant_request=None,
                          **{_REQUEST[hook.rsplit("_", 1)[0]]: request}, **kwargs)


_REQUEST = {"instantiate": "instantiate_vnf_request", "scale": "scale_vnf_request",
            "heal": "heal_vnf_request"}


@pytest.fixture(scope="module")
def manager():
    return tacker_objects.driver_manager()


@pytest.fixture(scope="module")
def anti_affine(cloud, control_plane):
    vnf = Vnf(cloud, control_plane, "k8s_workers.yaml", ["worker_member.yaml"],
              {"policy": "anti-affinity", "worker_count": 3})
    yield vnf
    vnf.cleanup()


def _instantiate(manager, cloud, vnf, params, user="admin"):
    vim = tacker_objects.vim(cloud.credentials(user))
    inst = tacker_objects.instance(vim, vnf.stack_id, params)
    _invoke(manager, "instantiate_end", inst, tacker_objects.instantiate_request(vim, params),
            vnf={})
    return inst


def test_instantiate_labels_three_workers_on_three_hosts(manager, cloud, anti_affine,
                                                         ssh_params, caplog):
    caplog.set_level(logging.INFO, logger="tacker_hwaffinity")
    params = _params(ssh_params)
    inst = _instantiate(manager, cloud, anti_affine, params)
    servers = anti_affine.servers()
    hosts = {s.id: getattr(s, HOST) for s in servers}
    assert len(set(hosts.values())) == 3
    assert {sid: anti_affine.labels(sid)[DEFAULT_HOST_LABEL] for sid in hosts} == hosts
    report = json.loads(inst.vnf_metadata["hwaffinity"])
    assert report["hostSource"] == "host"
    assert {w["server"]: (w["host"], w["node"]) for w in report["workers"]} == {
        sid: (hosts[sid], anti_affine.nodes[sid]) for sid in hosts}
    # constant OpenStack calls: token, Heat redirect + resources, Nova servers
    assert report["openstackCalls"] <= 5
    for sid in hosts:
        assert "-> host %s (host) -> node %s" % (hosts[sid], anti_affine.nodes[sid]) \
            in caplog.text
    assert "master-Passw0rd" not in caplog.text


def test_the_real_scheduler_spreads_a_cnf_across_hosts(manager, cloud, anti_affine,
                                                       ssh_params, control_plane, namespace):
    from controlplane.harness import wait_until
    _instantiate(manager, cloud, anti_affine, _params(ssh_params))
    nodes = set(anti_affine.nodes.values())
    control_plane.admin.create("/apis/apps/v1/namespaces/%s/deployments" % namespace, {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "upf", "namespace": namespace},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "upf"}},
                 "template": {"metadata": {"labels": {"app": "upf"}}, "spec": {
                     "affinity": {
                         "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                             "nodeSelectorTerms": [{"matchExpressions": [{
                                 "key": "kubernetes.io/hostname", "operator": "In",
                                 "values": sorted(nodes)}]}]}},
                         "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                             {"labelSelector": {"matchLabels": {"app": "upf"}},
                              "topologyKey": DEFAULT_HOST_LABEL}]}},
                     "containers": [{"name": "upf", "image": "busybox"}]}}}})
    wait_until(lambda: sum(1 for p in control_plane.pods(namespace, "app=upf")
                           if p["spec"].get("nodeName")) == 3, 60, what="3 pods bound")
    by_node = {sid: n for sid, n in anti_affine.nodes.items()}
    host_of_node = {n: anti_affine.labels(sid)[DEFAULT_HOST_LABEL] for sid, n in by_node.items()}
    placed = [host_of_node[p["spec"]["nodeName"]] for p in control_plane.pods(namespace,
                                                                              "app=upf")]
    assert len(set(placed)) == 3


def test_a_non_admin_vim_user_gets_host_ids(manager, cloud, control_plane, ssh_params):
    from tacker.common import exceptions
    vnf = Vnf(cloud, control_plane, "k8s_workers.yaml", ["worker_member.yaml"],
              {"policy": "anti-affinity", "worker_count": 3}, user="member")
    try:
        inst = _instantiate(manager, cloud, vnf, _params(ssh_params), user="member")
        report = json.loads(inst.vnf_metadata["hwaffinity"])
        assert report["hostSource"] == "hostId"
        member_nova = cloud.nova("member", version="latest")
        listed = member_nova.servers.list(detailed=True)
        assert listed and not any(getattr(s, HOST, None) for s in listed)  # policy hides it
        ids = {s.id: s.hostId for s in listed if s.id in vnf.nodes}
        assert {sid: vnf.labels(sid)[DEFAULT_HOST_LABEL] for sid in ids} == ids
        assert len(ids) == len(set(ids.values())) == 3
        # forcing the admin-only attribute names the policy instead of guessing
        with pytest.raises(exceptions.MgmtDriverOtherError) as e:
            _instantiate(manager, cloud, vnf, _params(ssh_params, host_source="host"),
                         user="member")
        assert "os_compute_api:os-extended-server-attributes" in str(e.value)
    finally:
        vnf.cleanup()


def test_scale_in_drains_and_deletes_exactly_the_removed_member(manager, cloud, anti_affine,
                                                                ssh_params, control_plane):
    vim = tacker_objects.vim(cloud.credentials("admin"))
    params = _params(ssh_params)
    inst = tacker_objects.instance(vim, anti_affine.stack_id, params)
    # Heat's AutoScalingGroup removes its oldest member first
    victim = sorted(anti_affine.members(), key=lambda r: (r.creation_time, r.resource_name))[0]
    victim_server = next(r.physical_resource_id for r in anti_affine.heat.resources.list(
        victim.physical_resource_id) if r.resource_type == "OS::Nova::Server")
    _invoke(manager, "scale_start", inst, tacker_objects.scale_request("SCALE_IN"),
            scale_name_list=[victim.resource_name], vnf={})
    existing = {n["metadata"]["name"] for n in control_plane.admin.get("/api/v1/nodes")["items"]}
    assert anti_affine.nodes[victim_server] not in existing
    assert all(n in existing for sid, n in anti_affine.nodes.items() if sid != victim_server)
    anti_affine.nodes.pop(victim_server)
    anti_affine.update(worker_count=2)  # what Tacker does after scale_start
    assert {s.id for s in anti_affine.servers()} == set(anti_affine.nodes)


def test_heal_relabels_the_new_vm(manager, cloud, anti_affine, ssh_params, control_plane):
    vim = tacker_objects.vim(cloud.credentials("admin"))
    params = _params(ssh_params)
    servers = anti_affine.servers()
    target = servers[0]
    vnfcs = [tacker_objects.vnfc(s.id) for s in servers]
    inst = tacker_objects.instance(vim, anti_affine.stack_id, params, vnfcs)
    heal = tacker_objects.heal_request([vnfcs[0].id])
    _invoke(manager, "heal_start", inst, heal)
    node = anti_affine.nodes[target.id]
    assert control_plane.admin.get("/api/v1/nodes/" + node)["spec"].get("unschedulable")
    # Tacker heals by marking the server unhealthy and updating the stack
    member = next(r for r in anti_affine.heat.resources.list(anti_affine.stack_id,
                                                             nested_depth=2)
                  if r.physical_resource_id == target.id)
    stack_of = next(link["href"] for link in member.links if link["rel"] == "stack")
    anti_affine.heat.resources.mark_unhealthy(stack_of.rsplit("/stacks/", 1)[1],
                                              member.resource_name, True, "heal test")
    anti_affine.update()
    new = [s for s in anti_affine.servers() if s.id not in anti_affine.nodes]
    assert len(new) == 1 and new[0].id != target.id
    anti_affine.nodes[new[0].id] = anti_affine.nodes.pop(target.id)  # same port, same node
    vnfcs[0].compute_resource.resource_id = new[0].id  # Tacker updates the VNFC
    _invoke(manager, "heal_end", inst, heal, vnf={})
    assert anti_affine.labels(new[0].id)[DEFAULT_HOST_LABEL] == getattr(
        anti_affine.nova.servers.get(new[0].id), HOST)
    assert not control_plane.admin.get("/api/v1/nodes/" + node)["spec"].get("unschedulable")


def test_scale_out_past_the_hosts_detects_colocation(manager, cloud, control_plane,
                                                     ssh_params):
    from tacker.common import exceptions
    vnf = Vnf(cloud, control_plane, "k8s_workers.yaml", ["worker_member.yaml"],
              {"policy": "soft-anti-affinity", "worker_count": 3})
    try:
        vnf.update(worker_count=4)
        vnf.join()
        vim = tacker_objects.vim(cloud.credentials("admin"))
        params = _params(ssh_params)
        inst = tacker_objects.instance(vim, vnf.stack_id, params)
        _invoke(manager, "scale_end", inst, tacker_objects.scale_request("SCALE_OUT"),
                scale_out_id_list=[], vnf={})
        report = json.loads(inst.vnf_metadata["hwaffinity"])
        hosts = [w["host"] for w in report["workers"]]
        assert len(hosts) == 4 and len(set(hosts)) == 3
        assert len(report["warnings"]) == 1 and "share compute host" in report["warnings"][0]
        strict = _params(ssh_params, on_colocation="fail")
        with pytest.raises(exceptions.MgmtDriverOtherError, match="share compute host"):
            _invoke(manager, "scale_end", tacker_objects.instance(vim, vnf.stack_id, strict),
                    tacker_objects.scale_request("SCALE_OUT", additional_params=strict),
                    scale_out_id_list=[], vnf={})
    finally:
        vnf.cleanup()


def test_two_vdus_forced_onto_one_host_are_detected(manager, cloud, control_plane, ssh_params):
    from tacker.common import exceptions
    vnf = Vnf(cloud, control_plane, "pinned_pair.yaml", [],
              {"zone": "nova:%s" % cloud.hosts[0]})
    try:
        params = {"hwaffinity_param": {"ssh": ssh_params, "worker_vdus": ["workerA", "workerB"],
                                       "on_colocation": "fail"}}
        with pytest.raises(exceptions.MgmtDriverOtherError) as e:
            _instantiate(manager, cloud, vnf, params)
        assert "share compute host %s" % cloud.hosts[0] in str(e.value)
        # the labels are still the truth
        assert {vnf.labels(s)[DEFAULT_HOST_LABEL] for s in vnf.nodes} == {cloud.hosts[0]}
    finally:
        vnf.cleanup()


def test_respread_moves_one_of_two_workers_on_one_host_and_labels_the_truth(
        manager, cloud, control_plane, ssh_params):
    """on_colocation respread: the second worker of a soft group's pair is live-migrated
    with no host named; Nova's scheduler, weighing the group, puts it on a free host."""
    vnf = Vnf(cloud, control_plane, "soft_pair.yaml", [], {"zone": "nova:%s" % cloud.hosts[0]})
    try:
        params = {"hwaffinity_param": {"ssh": ssh_params, "worker_vdus": ["workerA", "workerB"],
                                       "on_colocation": "respread"}}
        inst = _instantiate(manager, cloud, vnf, params)
        report = json.loads(inst.vnf_metadata["hwaffinity"])
        hosts = {s.id: getattr(s, HOST) for s in vnf.servers()}
        assert len(set(hosts.values())) == 2 and cloud.hosts[0] in hosts.values()
        (move,) = report["respread"]["moves"]
        assert report["respread"]["error"] is None and report["warnings"] == []
        assert (move["from"], move["to"]) == (cloud.hosts[0], hosts[move["server"]])
        assert {sid: vnf.labels(sid)[DEFAULT_HOST_LABEL] for sid in hosts} == hosts
        assert {w["server"]: w["host"] for w in report["workers"]} == hosts
    finally:
        vnf.cleanup()


def test_respread_with_more_workers_than_hosts_moves_only_while_a_host_is_free(
        manager, cloud, control_plane, ssh_params):
    """Four workers of a soft group on three hosts: every move that adds a host is made
    (Heat's creation can leave one host empty: seen under load), and then none, since
    every compute host has a worker (Nova's os-hypervisors): what is left is Nova's best,
    a warning, not a failure."""
    vnf = Vnf(cloud, control_plane, "k8s_workers.yaml", ["worker_member.yaml"],
              {"policy": "soft-anti-affinity", "worker_count": 4})
    try:
        spread_before = len({getattr(s, HOST) for s in vnf.servers()})
        inst = _instantiate(manager, cloud, vnf, _params(ssh_params, on_colocation="respread"))
        report = json.loads(inst.vnf_metadata["hwaffinity"])
        assert report["respread"]["error"] is None
        assert len(report["respread"]["moves"]) == 3 - spread_before, report["respread"]
        assert len(report["warnings"]) == 1 and "share compute host" in report["warnings"][0]
        hosts = {s.id: getattr(s, HOST) for s in vnf.servers()}
        assert len(set(hosts.values())) == 3
        assert {sid: vnf.labels(sid)[DEFAULT_HOST_LABEL] for sid in hosts} == hosts
    finally:
        vnf.cleanup()


def test_respread_that_nova_refuses_fails_the_hook_after_labelling(
        manager, cloud, control_plane, ssh_params):
    """A VIM user whom Nova's policy refuses live migration (not admin): the hook fails
    naming the refusal and the colocation, and the labels are Nova's hostIds."""
    from tacker.common import exceptions
    vnf = Vnf(cloud, control_plane, "k8s_workers.yaml", ["worker_member.yaml"],
              {"policy": "soft-anti-affinity", "worker_count": 4}, user="member")
    try:
        with pytest.raises(exceptions.MgmtDriverOtherError) as e:
            _instantiate(manager, cloud, vnf, _params(ssh_params, on_colocation="respread"),
                         user="member")
        assert "respread: live migration of worker" in str(e.value)
        assert "HTTP 403" in str(e.value) and "share compute host" in str(e.value)
        ids = {s.id: s.hostId for s in cloud.nova("member", version="latest").servers.list(
            detailed=True) if s.id in vnf.nodes}
        assert len(ids) == 4
        assert {sid: vnf.labels(sid)[DEFAULT_HOST_LABEL] for sid in ids} == ids
    finally:
        vnf.cleanup()


def test_a_worker_that_never_joined_is_listed(manager, cloud, control_plane, ssh_params,
                                              anti_affine):
    from tacker.common import exceptions
    sid, node = sorted(anti_affine.nodes.items())[0]
    control_plane.delete_node(node)
    try:
        with pytest.raises(exceptions.MgmtDriverOtherError) as e:
            _instantiate(manager, cloud, anti_affine, _params(ssh_params))
        assert "(server %s): no Kubernetes node has an InternalIP" % sid in str(e.value)
    finally:
        anti_affine.nodes.pop(sid)
        anti_affine.join()
