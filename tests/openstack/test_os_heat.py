"""Real Heat (API + convergence engine) over HTTP against real Nova.

The stack shape is what Tacker generates for a scalable VDU: an
``OS::Nova::ServerGroup`` and an ``OS::Heat::AutoScalingGroup`` whose member
is a nested template with one ``OS::Nova::Server`` placed in the group
through ``scheduler_hints``.
"""
import uuid

import pytest

import osharness

pytestmark = pytest.mark.openstack

MAIN = osharness.template("asg_anti_affinity.yaml")
WORKER = osharness.template("worker.yaml")


@pytest.fixture(scope="module")
def stack(openstack_heat):
    cloud = openstack_heat
    heat = cloud.heat("admin")
    created = heat.stacks.create(
        stack_name="vnf-" + uuid.uuid4().hex[:8], template=MAIN,
        files={"worker.yaml": WORKER},
        parameters={"worker_count": len(cloud.hosts), "image": cloud.image})
    stack_id = created["stack"]["id"]
    yield osharness.wait_stack(heat, stack_id, timeout=120)
    heat.stacks.delete(stack_id)
    try:
        osharness.wait_for(lambda: heat.stacks.get(stack_id).stack_status
                           in ("DELETE_COMPLETE", "DELETE_FAILED"), 60,
                           what="stack delete")
    except Exception:  # noqa: BLE001 - best effort; the cloud dies with the session
        pass


def _servers(heat, stack_id):
    resources = heat.resources.list(stack_id, nested_depth=2)
    return resources, [r for r in resources if r.resource_type == "OS::Nova::Server"]


def test_stack_reaches_create_complete(stack):
    assert stack.stack_status == "CREATE_COMPLETE", stack.stack_status_reason


def test_nested_listing_shows_servers(openstack_heat, stack):
    heat = openstack_heat.heat("admin")
    resources, servers = _servers(heat, stack.id)
    by_name = {r.resource_name: r for r in resources}
    assert by_name["worker_instance"].resource_type == "OS::Heat::AutoScalingGroup"
    assert by_name["srvgroup"].resource_type == "OS::Nova::ServerGroup"
    assert not hasattr(by_name["worker_instance"], "parent_resource")
    members = [r for r in resources if getattr(r, "parent_resource", None) == "worker_instance"]
    assert len(members) == len(openstack_heat.hosts)
    assert {m.resource_type for m in members} == {"worker.yaml"}
    assert len(servers) == len(openstack_heat.hosts)
    assert {s.parent_resource for s in servers} == {m.resource_name for m in members}
    assert all(s.resource_status == "CREATE_COMPLETE" for s in servers)


def test_servers_on_distinct_hosts(openstack_heat, stack):
    heat = openstack_heat.heat("admin")
    nova = openstack_heat.nova("admin")
    resources, servers = _servers(heat, stack.id)
    hosts = [getattr(nova.servers.get(s.physical_resource_id), "OS-EXT-SRV-ATTR:host")
             for s in servers]
    assert sorted(hosts) == sorted(openstack_heat.hosts)

    # The same fact through Heat's resource attributes, as a MgmtDriver
    # reads it: the member's physical_resource_id is its nested stack.
    members = {r.resource_name: r for r in resources
               if getattr(r, "parent_resource", None) == "worker_instance"}
    group_id = heat.stacks.output_show(stack.id, "group_id")["output"]["output_value"]
    via_heat = []
    for s in servers:
        member = members[s.parent_resource]
        attrs = heat.resources.get(member.physical_resource_id, "worker").attributes
        via_heat.append(attrs["OS-EXT-SRV-ATTR:host"])
        assert attrs["id"] == s.physical_resource_id
        assert attrs["hostId"]
    assert sorted(via_heat) == sorted(hosts)
    group = nova.server_groups.get(group_id)
    assert set(group.members) == {s.physical_resource_id for s in servers}


def test_scale_out_past_host_count_fails_with_no_valid_host(openstack_heat, stack):
    """Runs last in this module: it leaves the stack UPDATE_FAILED."""
    heat = openstack_heat.heat("admin")
    heat.stacks.update(stack.id, existing=True,
                       parameters={"worker_count": len(openstack_heat.hosts) + 1})
    # update() returns before the engine marks the stack IN_PROGRESS.
    osharness.wait_for(lambda: heat.stacks.get(stack.id).stack_status != "CREATE_COMPLETE",
                       30, what="update to start")
    updated = osharness.wait_stack(heat, stack.id, timeout=120)
    assert updated.stack_status == "UPDATE_FAILED"
    assert "No valid host" in updated.stack_status_reason
