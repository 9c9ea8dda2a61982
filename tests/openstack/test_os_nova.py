"""Real Nova through python-novaclient over HTTP: anti-affinity and host facts."""
import uuid

import pytest
from novaclient import exceptions as nova_exc

import osharness

pytestmark = pytest.mark.openstack


def _boot(nova, cloud, name, group_id):
    server = nova.servers.create(name, image=cloud.image, flavor="1", nics="none",
                                 scheduler_hints={"group": group_id})
    return osharness.wait_server(nova, server.id, timeout=60)


@pytest.fixture(scope="module")
def anti_affinity_servers(openstack_cloud):
    """A member-owned anti-affinity group with one server per compute host,
    booted one after another, plus one more that cannot fit."""
    cloud = openstack_cloud
    nova = cloud.nova("member", version="2.64")
    group = nova.server_groups.create(name="ag-" + uuid.uuid4().hex[:6],
                                      policy="anti-affinity")
    servers = [_boot(nova, cloud, "worker-%d" % i, group.id)
               for i in range(len(cloud.hosts))]
    extra = _boot(nova, cloud, "worker-extra", group.id)
    yield group, servers, extra
    for server in servers + [extra]:
        try:
            nova.servers.delete(server.id)
        except nova_exc.NotFound:
            pass
    nova.server_groups.delete(group.id)


def test_anti_affinity_spreads_over_all_hosts(openstack_cloud, anti_affinity_servers):
    group, servers, _ = anti_affinity_servers
    admin = openstack_cloud.nova("admin")
    assert [s.status for s in servers] == ["ACTIVE"] * len(servers)
    hosts = [getattr(admin.servers.get(s.id), "OS-EXT-SRV-ATTR:host") for s in servers]
    assert sorted(hosts) == sorted(openstack_cloud.hosts)
    members = openstack_cloud.nova("member", version="2.64").server_groups.get(group.id)
    assert set(members.members) >= {s.id for s in servers}


def test_server_past_host_count_gets_no_valid_host(anti_affinity_servers):
    _, _, extra = anti_affinity_servers
    assert extra.status == "ERROR"
    assert "No valid host" in extra.fault["message"]


def test_admin_sees_host_member_sees_only_host_id(openstack_cloud, anti_affinity_servers):
    _, servers, _ = anti_affinity_servers
    admin = openstack_cloud.nova("admin", version="2.1")
    member = openstack_cloud.nova("member", version="2.1")
    host_of, host_id_of = {}, {}
    for s in servers:
        as_admin = admin.servers.get(s.id).to_dict()
        as_member = member.servers.get(s.id).to_dict()
        assert as_admin["OS-EXT-SRV-ATTR:host"] in openstack_cloud.hosts
        assert as_admin["OS-EXT-SRV-ATTR:hypervisor_hostname"] == as_admin[
            "OS-EXT-SRV-ATTR:host"]
        assert not any(k.startswith("OS-EXT-SRV-ATTR:") for k in as_member), as_member
        assert as_member["hostId"] == as_admin["hostId"]
        host_of[s.id] = as_admin["OS-EXT-SRV-ATTR:host"]
        host_id_of[s.id] = as_member["hostId"]
    # hostId is an opaque per-project hash of the host: distinct per host.
    assert len(set(host_id_of.values())) == len(servers)
    assert all(len(h) == 56 for h in host_id_of.values())  # sha224 hex
