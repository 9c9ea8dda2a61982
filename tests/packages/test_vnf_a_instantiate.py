"""VNF-A, as ``hwaffinity csar build`` makes it, instantiated on real
components: Heat 27 and Nova 34 (the OpenStack harness: fake hypervisors,
the real scheduler and server groups), Tacker 16's objects and
driver manager, and a real sshd running the real kubectl against the real
control plane, whose nodes carry the VMs' addresses as InternalIP (as
kubelets on those VMs would register them).

* ``podaffinity`` (BaseHOT, Tacker v1): the stack is what Tacker makes from
  the package and the v1 sample request (our UserData class,
  ``vnfa_stacks.v1_bundle``), created as Tacker's ``_create_stack_with_user_data``
  does; the request's network and subnet are the harness's, the sample's
  keypair ``k8s-nodes`` is registered in Nova. Then Tacker's scale-out of the
  workers (the ``worker_instance_scale_out`` signal) past the three hosts.
* ``podaffinity_tosca`` (heat-translator with our extension): the translated
  templates with the request's extVirtualLinks applied by Tacker's own
  ``_convert_ext_vls``, as its v1 TOSCA path does.
* a second harness with four hosts: the scale-out step lands on the free
  host, and ``scale_end`` (kwargs as Tacker's ``_scale_vnf_post`` passes
  them) labels the new worker.

Each flavour's stack lives as long as its test class, so that the nodes of
one harness (whose addresses come from the same subnet as the other's) are
gone before the next harness's VMs join.

Nothing is mocked; only the sample's placeholders (network ids, the SSH block)
are replaced by what the harness offers.
"""
import copy
import json
import logging
import re
import uuid

import pytest
import yaml

from mgmt import tacker_objects
from mgmt.tacker_objects import DRIVER
from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL

from . import vnfa_stacks as st
import osharness

pytestmark = [pytest.mark.openstack, pytest.mark.controlplane, pytest.mark.ssh]
HOST = "OS-EXT-SRV-ATTR:host"
TOSCA_SAMPLE = st.V1_SAMPLE.replace("instantiate_podaffinity.json",
                                    "instantiate_podaffinity_tosca.json")


@pytest.fixture(scope="module")
def cloud(request):
    """Three compute hosts: exactly as many as workers (and masters)."""
    with osharness.heat_clouds(request) as start:
        yield start(3)


@pytest.fixture(scope="module")
def manager():
    return tacker_objects.driver_manager()


def _body(path, cloud):
    """A sample request with the harness's network and subnet in its extVirtualLinks."""
    body = copy.deepcopy(st.sample(path))
    for vl in body["extVirtualLinks"]:
        vl["resourceId"] = cloud.network_id
        for cp in vl["extCps"]:
            for config in cp["cpConfig"]:
                for data in config["cpProtocolData"]:
                    for ip in data["ipOverEthernet"]["ipAddresses"]:
                        ip["subnetId"] = cloud.subnet_id
    return body


def _with_ssh(body, ssh_params):
    """The sample's parameters reaching the test's sshd. The harness's VMs
    run no OS, so nothing is installed on them (tests/mgmt/test_install.py
    covers that): labelling must not depend on it."""
    body = copy.deepcopy(body)
    body["additionalParams"]["hwaffinity_param"]["ssh"] = ssh_params
    assert body["additionalParams"]["hwaffinity_param"].pop("install")["enabled"] is True
    return body


class Stack:
    """One VNF stack created as Tacker v1 creates it; its ACTIVE servers
    join the cluster as nodes named after their VDU."""

    def __init__(self, cloud, cp, template, files, parameters=None):
        import osharness
        self.cloud, self.cp = cloud, cp
        self.heat = cloud.heat("admin")
        self.nova = cloud.nova("admin", version="latest")
        self.nodes = {}  # server id -> node name
        # Tacker's _create_stack_with_user_data / HeatClient.create
        created = self.heat.stacks.create(
            stack_name="vnflcm_" + str(uuid.uuid4()), template=yaml.safe_dump(template),
            files={n: yaml.safe_dump(t) for n, t in files.items()},
            parameters=parameters or {}, disable_rollback=True)
        self.stack_id = created["stack"]["id"]
        self.stack = osharness.wait_stack(self.heat, self.stack_id, timeout=240)

    def servers(self, vdu):
        """{server id: novaclient Server} of a VDU (the server's resource name)."""
        ids = {r.physical_resource_id
               for r in self.heat.resources.list(self.stack_id, nested_depth=2)
               if r.resource_type == "OS::Nova::Server" and r.resource_name == vdu
               and r.physical_resource_id}
        return {s.id: s for s in self.nova.servers.list(
            detailed=True, search_opts={"all_tenants": 1}) if s.id in ids}

    def group(self, name):
        """The Nova server group of a top-level OS::Nova::ServerGroup resource."""
        res = self.heat.resources.get(self.stack_id, name)
        return self.nova.server_groups.get(res.physical_resource_id)

    def join(self, *vdus):
        """Every ACTIVE server of VDUS without a node gets one (kubeadm join,
        as it were), its VM address as InternalIP."""
        for vdu in vdus:
            for s in self.servers(vdu).values():
                if s.id not in self.nodes and s.status == "ACTIVE":
                    addr = next(a["addr"] for nets in s.addresses.values() for a in nets)
                    name = "vnfa-%s-%s" % (vdu.lower(), s.id[:8])
                    self.cp.add_node(name, address=addr, wait=False)
                    self.nodes[s.id] = name

    def labels(self, server_id):
        node = self.cp.admin.get("/api/v1/nodes/" + self.nodes[server_id])
        return node["metadata"].get("labels") or {}

    def signal(self, policy, group):
        """Signal a ScalingPolicy as Tacker's scale does
        (``heatclient.resource_signal``); returns the group's nested stack
        once the resize is over."""
        import osharness
        nested = self.heat.resources.get(self.stack_id, group).physical_resource_id
        before = self.heat.stacks.get(nested).updated_time
        self.heat.resources.signal(self.stack_id, policy)
        osharness.wait_for(lambda: self.heat.stacks.get(nested).updated_time != before, 30,
                           what="%s to start scaling" % policy)
        return osharness.wait_stack(self.heat, nested, timeout=240)

    def members(self, group):
        """Physical ids (nested stacks) of an AutoScalingGroup's members, what
        Tacker's ``get_scale_ids`` lists."""
        nested = self.heat.resources.get(self.stack_id, group).physical_resource_id
        return {r.physical_resource_id for r in self.heat.resources.list(nested)}

    def cleanup(self):
        for name in self.nodes.values():
            self.cp.delete_node(name)
        self.heat.stacks.delete(self.stack_id)


def _invoke(manager, hook, inst, **kwargs):
    manager.invoke(DRIVER, hook, context=tacker_objects.admin_context(), vnf_instance=inst,
                   grant=None, grant_request=None, vnf={}, **kwargs)


def _instantiate(manager, cloud, stack, body):
    """Tacker v1's instantiate_end through its driver manager, with the
    request object as the v1 controller builds it from BODY and the VNF
    instance keeping BODY's additionalParams."""
    vim = tacker_objects.vim(cloud.credentials("admin"))
    request = st.v1_request(body)
    request.vim_connection_info = [vim]  # the sample's VIM, with the harness's access
    inst = tacker_objects.instance(vim, stack.stack_id, body["additionalParams"])
    inst.instantiated_vnf_info.flavour_id = body["flavourId"]
    _invoke(manager, "instantiate_end", inst, instantiate_vnf_request=request)
    return inst


def _assert_labelled(inst, stack, workers, caplog, ssh_params):
    """Every worker's node carries its compute host; the report lists exactly
    the workers; no secret reached the log."""
    hosts = {sid: getattr(s, HOST) for sid, s in workers.items()}
    assert {sid: stack.labels(sid).get(DEFAULT_HOST_LABEL) for sid in hosts} == hosts
    report = json.loads(inst.vnf_metadata["hwaffinity"])
    assert report["hostSource"] == "host" and report["warnings"] == []
    assert {w["server"]: (w["host"], w["node"]) for w in report["workers"]} == {
        sid: (hosts[sid], stack.nodes[sid]) for sid in hosts}
    for sid in hosts:
        assert "-> host %s (host) -> node %s" % (hosts[sid], stack.nodes[sid]) in caplog.text
    key_lines = [ln for ln in ssh_params["private_key"].splitlines() if "PRIVATE KEY" not in ln]
    assert key_lines and not any(ln in caplog.text for ln in key_lines)
    assert "PRIVATE KEY" not in caplog.text
    password = stack.cloud.credentials("admin")["password"]  # the VIM's
    assert not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(password), caplog.text)


# -- flavour podaffinity (BaseHOT, Tacker v1) ------------------------------

def _keypair(cloud, master_sshd):
    """The sample's keypair ``k8s-nodes``: the public half of the key the
    driver's SSH block carries."""
    with open(master_sshd.path("user_ed25519") + ".pub") as f:
        public = f.read().strip()
    return cloud.nova("admin", version="latest").keypairs.create("k8s-nodes",
                                                                 public_key=public)


@pytest.fixture(scope="module")
def keypair(cloud, master_sshd):
    kp = _keypair(cloud, master_sshd)
    yield kp
    cloud.nova("admin", version="latest").keypairs.delete(kp.id)


@pytest.fixture(scope="module")
def podaffinity_body(cloud):
    return _body(st.V1_SAMPLE, cloud)


def _podaffinity(cloud, control_plane, k8s_package, body):
    bundle = st.v1_bundle(k8s_package, body)
    stack = Stack(cloud, control_plane, bundle["template"], bundle["files"],
                  bundle["parameters"])
    try:
        assert stack.stack.stack_status == "CREATE_COMPLETE", stack.stack.stack_status_reason
        stack.join("masterNode", "workerNode")
    except BaseException:
        stack.cleanup()
        raise
    return stack


@pytest.fixture(scope="class")
def podaffinity(cloud, control_plane, k8s_package, keypair, podaffinity_body):
    stack = _podaffinity(cloud, control_plane, k8s_package, podaffinity_body)
    yield stack
    stack.cleanup()


UBUNTU = "ubuntu-24.04-server-cloudimg-amd64"  # the VNFD's sw_image_data.name


class TestPodaffinity:
    """BaseHOT flavour, Tacker v1, on three hosts."""

    def test_masters_and_workers_spread_over_the_hosts(self, cloud, podaffinity):
        stack = podaffinity
        for vdu, group, flavor in (("masterNode", "srvgroup_master", "m1.medium"),
                                   ("workerNode", "srvgroup_worker", "m1.large")):
            servers = stack.servers(vdu)
            assert len(servers) == 3 and all(s.status == "ACTIVE" for s in servers.values())
            assert sorted(getattr(s, HOST) for s in servers.values()) == cloud.hosts
            assert all(s.key_name == "k8s-nodes" for s in servers.values())
            assert {s.image["id"] for s in servers.values()} == {cloud.info["images"][UBUNTU]}
            assert {s.flavor["original_name"] for s in servers.values()} == {flavor}
            assert all(list(s.addresses) == [cloud.network] for s in servers.values())
            g = stack.group(group)
            assert g.policy == "anti-affinity"
            assert sorted(g.members) == sorted(servers)
        # the control-plane VIP: a port of its own, allowed on every master's port
        neutron = cloud.neutron("admin")
        vip = neutron.show_port(stack.heat.resources.get(stack.stack_id, "vip_CP")
                                .physical_resource_id)["port"]
        assert vip["network_id"] == cloud.network_id
        vip_ip = vip["fixed_ips"][0]["ip_address"]
        outputs = {o["output_key"]: o["output_value"] for o in stack.stack.outputs}
        assert outputs["control_plane_vip"] == vip_ip
        for sid in stack.servers("masterNode"):
            (port,) = neutron.list_ports(device_id=sid)["ports"]
            assert [p["ip_address"] for p in port["allowed_address_pairs"]] == [vip_ip]

    def test_instantiate_end_labels_the_workers(self, manager, cloud, podaffinity,
                                                podaffinity_body, ssh_params, caplog):
        caplog.set_level(logging.DEBUG, logger="tacker_hwaffinity")
        inst = _instantiate(manager, cloud, podaffinity, _with_ssh(podaffinity_body, ssh_params))
        workers = podaffinity.servers("workerNode")
        assert len({getattr(s, HOST) for s in workers.values()}) == 3
        _assert_labelled(inst, podaffinity, workers, caplog, ssh_params)
        # the masters (found through master_node.aspect_id) are not labelled
        assert all(DEFAULT_HOST_LABEL not in podaffinity.labels(sid)
                   for sid in podaffinity.servers("masterNode"))

    def test_scale_out_past_the_hosts_is_no_valid_host(self, cloud, podaffinity):
        """Tacker's scale out of aspect worker_instance: one more worker than
        hosts. Nova refuses it; nothing is co-located."""
        stack = podaffinity
        before = {sid: getattr(s, HOST) for sid, s in stack.servers("workerNode").items()}
        assert len(before) == 3
        nested = stack.signal("worker_instance_scale_out", "worker_instance")
        assert nested.stack_status == "UPDATE_FAILED"
        assert "No valid host" in nested.stack_status_reason, nested.stack_status_reason
        # what Tacker's scale_wait reads to fail the operation
        statuses = {r.resource_status for r in stack.heat.resources.list(nested.id)}
        assert "CREATE_FAILED" in statuses
        servers = stack.servers("workerNode")
        new = [s for sid, s in servers.items() if sid not in before]
        assert len(new) == 1 and new[0].status == "ERROR"
        assert "No valid host was found" in new[0].fault["message"]
        assert getattr(new[0], HOST) is None
        # the three others are untouched, and no two ACTIVE workers share a host
        assert {sid: getattr(s, HOST) for sid, s in servers.items() if sid in before} == before
        active = [getattr(s, HOST) for s in servers.values() if s.status == "ACTIVE"]
        assert sorted(active) == cloud.hosts
        assert sorted(stack.group("srvgroup_worker").members) == sorted(servers)


# -- flavour podaffinity_tosca (heat-translator + extension, Tacker v1) ----

def _tacker_ext_vls(bundle, body):
    """The request's extVirtualLinks on the translated templates, by Tacker's
    own ``_convert_ext_vls`` (called from ``convert_inst_req_info`` on the
    main template and from ``update_nested_scaling_resources`` on the nested
    ones): each external CP's port gets the VL's network and subnet."""
    from tacker.tosca import utils as tosca_utils
    request = st.v1_request(body)
    out = copy.deepcopy(bundle)
    for hot in [out["template"]] + list(out["files"].values()):
        for vl in request.ext_virtual_links:
            tosca_utils._convert_ext_vls(hot, vl)
    return out


@pytest.fixture(scope="module")
def tosca_body(cloud):
    return _body(TOSCA_SAMPLE, cloud)


@pytest.fixture(scope="class")
def podaffinity_tosca(cloud, control_plane, k8s_package, tosca_body):
    bundle = _tacker_ext_vls(st.tosca_bundle(k8s_package), tosca_body)
    ports = [r for hot in [bundle["template"]] + list(bundle["files"].values())
             for r in hot["resources"].values() if r["type"] == "OS::Neutron::Port"]
    assert len(ports) == 2 and all(
        p["properties"]["network"] == cloud.network_id and
        p["properties"]["fixed_ips"] == [{"subnet": cloud.subnet_id}] for p in ports)
    stack = Stack(cloud, control_plane, bundle["template"], bundle["files"])
    try:
        assert stack.stack.stack_status == "CREATE_COMPLETE", stack.stack.stack_status_reason
        stack.join("masterNode", "workerNode")
        yield stack
    finally:
        stack.cleanup()


class TestPodaffinityTosca:
    """Translated flavour, Tacker v1, on the same three hosts."""

    def test_instantiate_end_labels_the_workers(self, manager, cloud, podaffinity_tosca,
                                                tosca_body, ssh_params, caplog):
        caplog.set_level(logging.DEBUG, logger="tacker_hwaffinity")
        stack = podaffinity_tosca
        workers = stack.servers("workerNode")
        assert len(workers) == 3 and all(s.status == "ACTIVE" for s in workers.values())
        assert sorted(getattr(s, HOST) for s in workers.values()) == cloud.hosts
        (master,) = stack.servers("masterNode").values()
        assert {s.image["id"] for s in list(workers.values()) + [master]} == {
            cloud.info["images"][UBUNTU]}
        g = stack.group("srvgroup_worker")
        assert g.policy == "anti-affinity" and sorted(g.members) == sorted(workers)
        assert stack.group("srvgroup_master").members == [master.id]
        inst = _instantiate(manager, cloud, stack, _with_ssh(tosca_body, ssh_params))
        _assert_labelled(inst, stack, workers, caplog, ssh_params)
        assert DEFAULT_HOST_LABEL not in stack.labels(master.id)


# -- a free host: Tacker's scale-out succeeds and scale_end labels ---------

@pytest.fixture(scope="module")
def cloud4(request):
    """Four compute hosts: one free for a scale-out step."""
    with osharness.heat_clouds(request) as start:
        yield start(4)


def test_podaffinity_scale_out_onto_a_free_host_is_labelled_by_scale_end(
        manager, cloud4, control_plane, k8s_package, master_sshd, ssh_params, caplog):
    caplog.set_level(logging.DEBUG, logger="tacker_hwaffinity")
    keypair = _keypair(cloud4, master_sshd)
    body = _with_ssh(_body(st.V1_SAMPLE, cloud4), ssh_params)
    stack = None
    try:
        stack = _podaffinity(cloud4, control_plane, k8s_package, body)
        inst = _instantiate(manager, cloud4, stack, body)
        assert len(json.loads(inst.vnf_metadata["hwaffinity"])["workers"]) == 3
        before = stack.members("worker_instance")
        nested = stack.signal("worker_instance_scale_out", "worker_instance")
        assert nested.stack_status == "UPDATE_COMPLETE", nested.stack_status_reason
        new_members = sorted(stack.members("worker_instance") - before)
        assert len(new_members) == 1
        workers = stack.servers("workerNode")
        assert len(workers) == 4 and all(s.status == "ACTIVE" for s in workers.values())
        assert sorted(getattr(s, HOST) for s in workers.values()) == cloud4.hosts
        assert sorted(stack.group("srvgroup_worker").members) == sorted(workers)
        (new,) = [sid for sid in workers if sid not in stack.nodes]
        stack.join("workerNode")  # the new VM's kubelet registers
        assert DEFAULT_HOST_LABEL not in stack.labels(new)
        # Tacker's _scale_vnf_post: scale_end with the new members' ids
        caplog.clear()
        _invoke(manager, "scale_end", inst, scale_vnf_request=tacker_objects.scale_request(
            "SCALE_OUT"), scale_out_id_list=new_members)
        _assert_labelled(inst, stack, workers, caplog, ssh_params)
        assert json.loads(inst.vnf_metadata["hwaffinity"])["hook"] == "scale_end"
    finally:
        if stack is not None:
            stack.cleanup()
        cloud4.nova("admin", version="latest").keypairs.delete(keypair.id)
