"""A soft-anti-affinity group's new member after another member's live migration, on
real Nova 34: it goes to a host with no member, as it does when nothing has moved. Run
on the harness's Nova without its resource audit (fakecloud.py, ``RESOURCE_AUDIT_S``),
it went to the host the migrated member had left, which still held a member: the only
host whose I/O-operation count the migration had refreshed (doc/testing.md, run C10)."""
import pytest

import osharness

pytestmark = pytest.mark.openstack


def _host(nova, server_id):
    return getattr(nova.servers.get(server_id), "OS-EXT-SRV-ATTR:host")


def test_a_new_member_avoids_the_host_a_member_left_when_another_still_holds_one(
        openstack_cloud_factory):
    cloud = openstack_cloud_factory(computes=4)
    nova = cloud.nova("admin", version="2.68")
    group = nova.server_groups.create(name="workers", policy="soft-anti-affinity")
    hint = {"group": group.id}
    for host in ("compute1", "compute3", "compute4"):      # the masters, no members
        osharness.boot(cloud, "master-" + host, host=host)
    kept = osharness.boot(cloud, "worker-a", host="compute1", scheduler_hints=hint)
    moved = osharness.boot(cloud, "worker-b", host="compute1", scheduler_hints=hint)
    osharness.boot(cloud, "worker-c", host="compute2", scheduler_hints=hint)
    assert cloud.live_migrate(moved, host="compute3") == "compute3"
    hypervisors = cloud.nova("admin", version="2.53").hypervisors

    def audited():      # each host's record counts what it holds, the moved server too
        held = {}
        for server in nova.servers.list(search_opts={"all_tenants": 1}):
            host = getattr(server, "OS-EXT-SRV-ATTR:host")
            held[host] = held.get(host, 0) + 1
        return all(h.running_vms == held.get(h.hypervisor_hostname, 0)
                   for h in hypervisors.list(detailed=True))
    osharness.wait_for(audited, 60, what="the compute hosts' resource audit")
    new = osharness.boot(cloud, "worker-healed", scheduler_hints=hint)
    assert (_host(nova, kept), _host(nova, new)) == ("compute1", "compute4")
