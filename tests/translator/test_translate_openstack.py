"""A translated Kubernetes-cluster VNFD on real Heat and Nova.

The package's ``podaffinity`` flavour (masters and workers, each an
AutoScalingGroup, each in its own AntiAffinityRule over a PlacementGroup) is
translated by our extension exactly as Tacker's v1 path would, then created
as a stack on the harness (real Nova 34 scheduler and compute services with
fake hypervisors, real Heat 27; doc/openstack-harness.md).

What the test changes before ``stack create``, and why:

* Tacker's own post-processing (vnfm_info type, images), as in
  test_translate_heat.py; ``desired_capacity`` becomes a parameter per
  AutoScalingGroup so that the test can scale by stack update;
* the harness has no Neutron: the ports go and every server gets
  ``networks: [{allocate_network: none}]``;
* the harness's fake Keystone cannot serve ``OS::Heat::ScalingPolicy``
  (``GET /v3/roles``), so those resources go too; Tacker would signal them,
  the test updates ``desired_capacity`` instead.

Server groups, scheduler hints and the parameters that carry the group id
into the nested templates are deployed as translated.
"""
import pathlib
import sys
import uuid

import pytest
import yaml

from translate_helpers import K8S_PACKAGE, translate_file

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "openstack"))
import osharness  # noqa: E402

pytestmark = pytest.mark.openstack

ASGS = ("master_instance", "worker_instance")


def _deployable(text):
    hot = yaml.safe_load(text)
    params = hot.setdefault("parameters", {}) or {}
    hot["parameters"] = params
    if "vnfm_info" in params:
        params["vnfm_info"]["type"] = "comma_delimited_list"
    resources = hot["resources"]
    for name in [n for n, r in resources.items()
                 if r["type"] in ("OS::Neutron::Port", "OS::Heat::ScalingPolicy")]:
        del resources[name]
    for name, res in resources.items():
        props = res.get("properties") or {}
        if res["type"] == "OS::Heat::AutoScalingGroup":
            params[name + "_desired"] = {"type": "number"}
            props["desired_capacity"] = {"get_param": name + "_desired"}
        elif res["type"] == "OS::Nova::Server":
            props["image"] = "cirros"
            props["networks"] = [{"allocate_network": "none"}]
    return hot


@pytest.fixture(scope="module")
def translated():
    files = translate_file(K8S_PACKAGE, "podaffinity")
    main = _deployable(files.pop("main.yaml"))
    nested = {name: yaml.safe_dump(_deployable(text)) for name, text in files.items()}
    return main, nested


@pytest.fixture(scope="module")
def start_cloud(request):
    python = osharness.python_or_skip()
    clouds = []
    failed_before = request.session.testsfailed

    def start(computes):
        cloud = osharness.OpenStackCloud(computes=computes, python=python)
        clouds.append(cloud)
        try:
            cloud.start()
            cloud.start_heat()
        except osharness.HarnessError as exc:
            pytest.fail("OpenStack did not start (logs in %s): %s" % (cloud.run_dir, exc),
                        pytrace=False)
        return cloud

    yield start
    keep = request.session.testsfailed > failed_before
    for cloud in clouds:
        cloud.stop(keep_logs=keep)
        if keep:
            print("\nOpenStack logs kept in %s" % cloud.run_dir)


class Deployment:
    """One stack of the translated VNF on one cloud."""

    def __init__(self, cloud, translated, workers):
        self.cloud = cloud
        self.heat = cloud.heat("admin")
        self.nova = cloud.nova("admin", version="latest")
        main, self.nested = translated
        self.main = yaml.safe_dump(main)
        params = {"master_instance_desired": 1, "worker_instance_desired": workers}
        created = self.heat.stacks.create(stack_name="k8s-" + uuid.uuid4().hex[:8],
                                          template=self.main, files=self.nested,
                                          parameters=params)
        self.stack_id = created["stack"]["id"]
        self.stack = osharness.wait_stack(self.heat, self.stack_id, timeout=240)

    def scale_workers(self, count):
        before = self.heat.stacks.get(self.stack_id)
        self.heat.stacks.update(self.stack_id, existing=True,
                                parameters={"worker_instance_desired": count})
        # update() returns before the engine records the new action.
        osharness.wait_for(
            lambda: self.heat.stacks.get(self.stack_id).updated_time != before.updated_time,
            30, what="update to start")
        self.stack = osharness.wait_stack(self.heat, self.stack_id, timeout=240)
        return self.stack

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


def _host(server):
    return getattr(server, "OS-EXT-SRV-ATTR:host")


@pytest.fixture(scope="module")
def three_hosts(start_cloud, translated):
    cloud = start_cloud(3)
    main, nested = translated
    errors = osharness.validate_heat(main, files=nested,
                                     parameters={"master_instance_desired": 1,
                                                 "worker_instance_desired": 2})
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


def test_scale_out_lands_on_the_free_host(three_hosts):
    dep = three_hosts
    stack = dep.scale_workers(3)
    assert stack.stack_status == "UPDATE_COMPLETE", stack.stack_status_reason
    workers = dep.servers("workerNode")
    assert sorted(_host(s) for s in workers) == dep.cloud.hosts
    assert sorted(dep.group("srvgroup_worker").members) == sorted(s.id for s in workers)


def test_scaling_past_the_host_count_fails_with_no_valid_host(three_hosts):
    """Same templates, same update as the scale-out that worked: only the
    number of hosts differs, so the translation is not the cause."""
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
