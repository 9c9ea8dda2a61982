"""The harness itself: a second cloud with one compute host, and clean stops."""
import os
import uuid

import pytest

import osharness

pytestmark = pytest.mark.openstack


@pytest.fixture(scope="module")
def one_host_cloud(openstack_cloud_factory):
    cloud = openstack_cloud_factory(computes=1)
    yield cloud
    cloud.stop(keep_logs=True)  # free the memory now; the session end cleans up


def _boot(nova, cloud, name, group_id):
    server = nova.servers.create(name, image=cloud.image, flavor="1", nics="none",
                                 scheduler_hints={"group": group_id})
    return osharness.wait_server(nova, server.id, timeout=60)


def test_compute_count_is_configurable(one_host_cloud):
    assert one_host_cloud.hosts == ["compute1"]
    hypervisors = one_host_cloud.nova("admin").hypervisors.list()
    assert [h.hypervisor_hostname for h in hypervisors] == ["compute1"]


def test_soft_anti_affinity_colocates_when_hosts_run_out(one_host_cloud):
    cloud = one_host_cloud
    nova = cloud.nova("member", version="2.64")
    soft = nova.server_groups.create(name="soft-" + uuid.uuid4().hex[:6],
                                     policy="soft-anti-affinity")
    servers = [_boot(nova, cloud, "soft-%d" % i, soft.id) for i in range(2)]
    assert [s.status for s in servers] == ["ACTIVE", "ACTIVE"]
    assert len({s.hostId for s in servers}) == 1

    hard = nova.server_groups.create(name="hard-" + uuid.uuid4().hex[:6],
                                     policy="anti-affinity")
    first, second = (_boot(nova, cloud, "hard-%d" % i, hard.id) for i in range(2))
    assert first.status == "ACTIVE"
    assert second.status == "ERROR" and "No valid host" in second.fault["message"]


def test_stop_ends_every_process(one_host_cloud):
    cloud = one_host_cloud
    pid = cloud.cloud.proc.pid
    assert cloud.rss_bytes()["fakecloud"] > 0
    cloud.stop(keep_logs=True)
    assert not cloud.cloud.alive()
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
    assert os.path.exists(cloud.cloud.log_path)
