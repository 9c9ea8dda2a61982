"""A translated Kubernetes-cluster VNFD on real Heat and Nova.

The package's ``podaffinity`` flavour (masters and workers, each an
AutoScalingGroup, each in its own AntiAffinityRule over a PlacementGroup) is
translated by our extension exactly as Tacker's v1 path would, then created
as a stack on the harness (real Nova 34 scheduler and compute services with
fake hypervisors, real Heat 27, fake Keystone and a fake Neutron on Nova's own
NeutronFixture; doc/openstack-harness.md).

What the test changes before ``stack create`` is what Tacker itself does
after heat-translator, nothing more:

* ``vnfm_info`` becomes ``comma_delimited_list`` (heat-translator writes
  the invalid ``list``);
* ``desired_capacity`` comes from the instantiation level instead of the
  ``DESIRED_CAPACITY`` placeholder; here a parameter per AutoScalingGroup,
  so that the test can also scale by stack update;
* images and networks come from the package and the instantiate request:
  ``cirros`` where heat-translator left ``#ADD_YOUR_IMAGE_HERE``, and the
  harness network's id where it left ``#ADD_YOUR_NETWORK_HERE``.

Everything else is deployed as translated: server groups, scheduler hints,
the parameters that carry the group id into the nested templates, the
``OS::Neutron::Port`` of every VDU and the ``OS::Heat::ScalingPolicy``
resources, which the test signals as Tacker's scale operation does.
"""
import copy
import pathlib
import sys
import uuid

import pytest
import yaml

from translate_helpers import K8S_PACKAGE, translate_file

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "openstack"))
import osharness

pytestmark = pytest.mark.openstack


def _tacker_post_process(text):
    """What Tacker v1 does to heat-translator's output before stack create
    (the network is filled in per cloud, see :func:`_with_network`)."""
    hot = yaml.safe_load(text)
    params = hot.setdefault("parameters", {}) or {}
    hot["parameters"] = params
    if "vnfm_info" in params:
        params["vnfm_info"]["type"] = "comma_delimited_list"
    for name, res in hot["resources"].items():
        props = res.get("properties") or {}
        if res["type"] == "OS::Heat::AutoScalingGroup":
            params[name + "_desired"] = {"type": "number"}
            props["desired_capacity"] = {"get_param": name + "_desired"}
        elif res["type"] == "OS::Nova::Server" and not props.get("image"):
            props["image"] = "cirros"
    return hot


def _with_network(hot, network_id):
    """The instantiate request's external network on every translated port."""
    hot = copy.deepcopy(hot)
    for res in hot["resources"].values():
        if res["type"] == "OS::Neutron::Port" and res["properties"].get("network") is None:
            res["properties"]["network"] = network_id
    return hot


@pytest.fixture(scope="module")
def translated():
    files = translate_file(K8S_PACKAGE, "podaffinity")
    main = _tacker_post_process(files.pop("main.yaml"))
    nested = {name: _tacker_post_process(text) for name, text in files.items()}
    # Nothing was stripped: ports and scaling policies are deployed.
    assert {r["type"] for r in main["resources"].values()} >= {
        "OS::Heat::AutoScalingGroup", "OS::Heat::ScalingPolicy"}
    assert all("OS::Neutron::Port" in {r["type"] for r in n["resources"].values()}
               for n in nested.values())
    return main, nested


@pytest.fixture(scope="module")
def start_cloud(request):
    with osharness.heat_clouds(request) as start:
        yield start


class Deployment:
    """One stack of the translated VNF on one cloud."""

    def __init__(self, cloud, translated, workers):
        self.cloud = cloud
        self.heat = cloud.heat("admin")
        self.nova = cloud.nova("admin", version="latest")
        self.neutron = cloud.neutron("admin")
        main, nested = translated
        self.main = yaml.safe_dump(main)
        self.nested = {name: yaml.safe_dump(_with_network(hot, cloud.network_id))
                       for name, hot in nested.items()}
        params = {"master_instance_desired": 1, "worker_instance_desired": workers}
        created = self.heat.stacks.create(stack_name="k8s-" + uuid.uuid4().hex[:8],
                                          template=self.main, files=self.nested,
                                          parameters=params)
        self.stack_id = created["stack"]["id"]
        self.stack = osharness.wait_stack(self.heat, self.stack_id, timeout=240)

    def scale_workers(self, count):
        """Scale by stack update of the ``desired_capacity`` parameter."""
        before = self.heat.stacks.get(self.stack_id)
        self.heat.stacks.update(self.stack_id, existing=True,
                                parameters={"worker_instance_desired": count})
        # update() returns before the engine records the new action.
        osharness.wait_for(
            lambda: self.heat.stacks.get(self.stack_id).updated_time != before.updated_time,
            30, what="update to start")
        self.stack = osharness.wait_stack(self.heat, self.stack_id, timeout=240)
        return self.stack

    def signal(self, policy):
        """Signal a translated ScalingPolicy, as Tacker's scale does; returns
        the group's nested stack once the resize is over."""
        group = self.heat.resources.get(self.stack_id, "worker_instance")
        nested = group.physical_resource_id
        before = self.heat.stacks.get(nested).updated_time
        self.heat.resources.signal(self.stack_id, policy)
        osharness.wait_for(lambda: self.heat.stacks.get(nested).updated_time != before, 30,
                           what="%s to start scaling" % policy)
        done = osharness.wait_stack(self.heat, nested, timeout=240)
        # Heat refuses the next scaling until the group records this one.
        osharness.wait_for(lambda: self.heat.resources.metadata(
            self.stack_id, "worker_instance").get("scaling_in_progress") is False,
            30, what="%s to finish" % policy)
        return done

    def servers(self, vdu):
        """Nova servers of a VDU (resource name in the nested template)."""
        resources = self.heat.resources.list(self.stack_id, nested_depth=2)
        ids = [r.physical_resource_id for r in resources
               if r.resource_type == "OS::Nova::Server" and r.resource_name == vdu
               and r.physical_resource_id]
        return [self.nova.servers.get(i) for i in ids]

    def group(self, policy):
        """The Nova server group Heat made for a policy (resource named after it)."""
        res = self.heat.resources.get(self.stack_id, policy)
        return self.nova.server_groups.get(res.physical_resource_id)

    def assert_addressed(self, servers):
        """Every server has one fixed address on the harness network: the
        fixed IP of the translated port bound to it."""
        network = self.cloud.network
        for server in servers:
            (port,) = self.neutron.list_ports(device_id=server.id)["ports"]
            assert port["network_id"] == self.cloud.network_id
            addresses = [a["addr"] for a in server.addresses.get(network, [])]
            assert addresses == [port["fixed_ips"][0]["ip_address"]], (server.name, addresses)


def _host(server):
    return getattr(server, "OS-EXT-SRV-ATTR:host")


@pytest.fixture(scope="module")
def three_hosts(start_cloud, translated):
    cloud = start_cloud(3)
    main, nested = translated
    errors = osharness.validate_heat(
        main, files={n: _with_network(h, cloud.network_id) for n, h in nested.items()},
        parameters={"master_instance_desired": 1, "worker_instance_desired": 2})
    assert errors == [], errors
    return Deployment(cloud, translated, workers=2)


def test_workers_are_on_distinct_hosts(three_hosts):
    dep = three_hosts
    assert dep.stack.stack_status == "CREATE_COMPLETE", dep.stack.stack_status_reason
    workers = dep.servers("workerNode")
    assert len(workers) == 2 and all(s.status == "ACTIVE" for s in workers)
    assert len({_host(s) for s in workers}) == 2
    # Nova put them in the group named after the policy, through the
    # parameter the AutoScalingGroup passes into the nested template.
    group = dep.group("srvgroup_worker")
    assert group.policy == "anti-affinity"
    assert sorted(group.members) == sorted(s.id for s in workers)
    (master,) = dep.servers("masterNode")
    assert dep.group("srvgroup_master").members == [master.id]
    dep.assert_addressed(workers + [master])


def test_scale_out_lands_on_the_free_host(three_hosts):
    """Tacker's scale out: signal the translated ``worker_instance_scale_out``."""
    dep = three_hosts
    nested = dep.signal("worker_instance_scale_out")
    assert nested.stack_status == "UPDATE_COMPLETE", nested.stack_status_reason
    workers = dep.servers("workerNode")
    assert len(workers) == 3 and all(s.status == "ACTIVE" for s in workers)
    assert sorted(_host(s) for s in workers) == dep.cloud.hosts
    assert sorted(dep.group("srvgroup_worker").members) == sorted(s.id for s in workers)
    dep.assert_addressed(workers)


def test_scaling_past_the_host_count_fails_with_no_valid_host(three_hosts):
    """Same templates as the scale-out that worked, one worker more: only
    the number of hosts differs, so the translation is not the cause. (By
    stack update, as an instantiation level change would.)"""
    dep = three_hosts
    before = {s.id: _host(s) for s in dep.servers("workerNode")}
    assert len(before) == 3
    stack = dep.scale_workers(4)
    assert stack.stack_status == "UPDATE_FAILED"
    assert "No valid host" in stack.stack_status_reason, stack.stack_status_reason
    # The scheduler said so for the new server; the three others are untouched.
    servers = dep.servers("workerNode")
    failed = [s for s in servers if s.id not in before]
    assert failed and all(s.status == "ERROR" for s in failed)
    assert all("No valid host was found" in s.fault["message"] for s in failed)
    still = {s.id: _host(s) for s in servers if s.id in before}
    assert still == before
    assert all(s.status == "ACTIVE" for s in servers if s.id in before)
