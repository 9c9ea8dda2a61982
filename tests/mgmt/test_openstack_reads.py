"""Worker discovery on the Heat and Nova answers captured from the real
harness (tests/mgmt/data), and the OpenStack adapter's behaviour when Heat or
Nova answer 5xx or not at all (replayed over HTTP: a real cloud here cannot
be made to fail on cue)."""
import socket
import time

import pytest
from keystoneauth1 import noauth, session as ks_session

from mgmt import openstack_replay as replay
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.labeling import inventory, params as parameters
from tacker_hwaffinity.mgmt import lifecycle
from tacker_hwaffinity.openstack import OpenStack, OpenStackError, session


def test_members_of_the_captured_stack_are_its_servers():
    doc = replay.load("heat_resources.json")
    servers = replay.load("nova_servers.json")["servers"]
    refs = inventory.members(doc["resources"], "worker_instance")
    assert len(refs) == 3 and {r.server_id for r in refs} == {s["id"] for s in servers}
    assert all(r.resource == "workerNode" and r.member_stack for r in refs)
    workers, missing = inventory.workers(servers, refs)
    assert missing == []
    by_id = {s["id"]: s for s in servers}
    for w in workers:
        s = by_id[w.server_id]
        assert w.addresses == (s["addresses"]["private"][0]["addr"],)
        assert (w.host, w.host_id) == (s["OS-EXT-SRV-ATTR:host"], s["hostId"])


def test_an_absent_aspect_and_absent_vdus_are_named():
    doc = replay.load("heat_resources.json")
    assert "no resource 'nope'" in inventory.members(doc["resources"], "nope")
    refs, missing = inventory.vdu_servers(doc["resources"], ["workerNode", "ghost"])
    # workerNode exists only inside members, not at the top: both are missing
    assert refs == [] and missing == ["workerNode", "ghost"]


def test_scaled_replay_keeps_the_shape():
    resources, servers, _ = replay.scaled(50)
    refs = inventory.members(resources, "worker_instance")
    workers, missing = inventory.workers(servers, refs)
    assert len(workers) == 50 and not missing
    assert len({w.addresses for w in workers}) == 50


def _job(stack_id, **hw):
    p = parameters.parse({"k8s_cluster_installation_param": {
        "worker_node": {"aspect_id": "worker_instance"}},
        "hwaffinity_param": dict({"openstack": {"retries": 2, "timeout": 1}}, **hw)})
    return lifecycle.Job("instantiate_end", p, stack_id=stack_id)


def _openstack(cloud, retries=2, timeout=1.0):
    return OpenStack(session(cloud.access(), timeout=timeout), retries=retries, backoff=0.01)


def test_discovery_costs_a_constant_number_of_calls():
    resources, servers, stack_id = replay.scaled(120)
    with replay.ReplayCloud(resources, servers, stack_id) as cloud:
        os_ = _openstack(cloud)
        inv = lifecycle.discover(lifecycle.Context(_job(stack_id), os_))
    assert len(inv.workers) == 120
    assert (cloud.requests["heat"], cloud.requests["nova"]) == (1, 1)
    assert os_.calls == 3  # token, Heat, Nova


def test_a_transient_5xx_is_retried():
    resources, servers, stack_id = replay.scaled(3)
    with replay.ReplayCloud(resources, servers, stack_id,
                            faults={"nova": [503], "heat": [502]}) as cloud:
        inv = lifecycle.discover(lifecycle.Context(_job(stack_id), _openstack(cloud)))
    assert len(inv.workers) == 3
    assert (cloud.requests["heat"], cloud.requests["nova"]) == (2, 2)


def test_a_lasting_5xx_fails_naming_service_request_and_answer():
    resources, servers, stack_id = replay.scaled(3)
    with replay.ReplayCloud(resources, servers, stack_id,
                            faults={"nova": [503, 503, 503]}) as cloud:
        with pytest.raises(OpenStackError) as e:
            lifecycle.discover(lifecycle.Context(_job(stack_id), _openstack(cloud)))
    assert str(e.value) == ("Nova GET /servers/detail?limit=1000: HTTP 503 Service "
                            "Unavailable: injected fault 503 (after 3 attempts)")


def test_a_hanging_service_times_out():
    resources, servers, stack_id = replay.scaled(3)
    with replay.ReplayCloud(resources, servers, stack_id,
                            faults={"heat": [("hang", 3), ("hang", 3)]}) as cloud:
        with pytest.raises(OpenStackError) as e:
            lifecycle.discover(lifecycle.Context(_job(stack_id),
                                                 _openstack(cloud, retries=1, timeout=0.5)))
    assert "Heat GET /stacks/%s/resources?nested_depth=2: no answer" % stack_id in str(e.value)
    assert "(after 2 attempts)" in str(e.value)


def test_a_4xx_is_not_retried():
    resources, servers, stack_id = replay.scaled(3)
    with replay.ReplayCloud(resources, servers, stack_id, faults={"heat": [404]}) as cloud:
        with pytest.raises(OpenStackError, match="HTTP 404"):
            lifecycle.discover(lifecycle.Context(_job(stack_id), _openstack(cloud)))
    assert cloud.requests["heat"] == 1


def test_a_wrong_aspect_is_reported_before_nova_is_asked():
    resources, servers, stack_id = replay.scaled(3)
    p = parameters.parse({"k8s_cluster_installation_param": {
        "worker_node": {"aspect_id": "workers"}}})
    with replay.ReplayCloud(resources, servers, stack_id) as cloud:
        with pytest.raises(InputError, match="worker_node.aspect_id: the stack has no "
                                             "resource 'workers'"):
            lifecycle.discover(lifecycle.Context(
                lifecycle.Job("instantiate_end", p, stack_id=stack_id), _openstack(cloud)))
    assert cloud.requests["nova"] == 0


def test_a_master_vdu_that_is_not_scaled_is_found_by_vdu_id():
    """The TOSCA flavour has one master, a server of the top stack."""
    import copy
    resources, servers, stack_id = replay.scaled(2)
    master = copy.deepcopy(servers[-1])
    master["id"], master["name"] = "master-server-id", "masterNode"
    top = {"resource_name": "masterNode", "resource_type": "OS::Nova::Server",
           "physical_resource_id": master["id"], "links": [
               {"rel": "stack", "href": "http://h/v1/p/stacks/vnf/%s" % stack_id}]}
    p = parameters.parse({"k8s_cluster_installation_param": {
        "master_node": {"vdu_id": "masterNode"}, "worker_node": {"aspect_id": "worker_instance"}}})
    with replay.ReplayCloud(resources + [top], servers + [master], stack_id) as cloud:
        inv = lifecycle.discover(lifecycle.Context(
            lifecycle.Job("instantiate_end", p, stack_id=stack_id), _openstack(cloud)))
        assert [m.server_id for m in inv.masters] == ["master-server-id"]
        assert len(inv.workers) == 2
        p["master"]["vdu_id"] = "ghost"
        with pytest.raises(InputError, match="k8s_cluster_installation_param.master_node."
                                             "vdu_id: the stack has no server ghost"):
            lifecycle.discover(lifecycle.Context(
                lifecycle.Job("instantiate_end", p, stack_id=stack_id), _openstack(cloud)))


def test_a_cloud_that_never_answers_holds_a_read_for_our_timeouts_only():
    # doc/security.md: an OpenStack read holds a hook, the controller's tick or relabel for
    # at most (retries + 1) x the session's timeout plus the backoff, whatever the cloud does
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)                    # connections complete, no byte is ever answered
        url = "http://127.0.0.1:%d" % silent.getsockname()[1]
        sess = ks_session.Session(auth=noauth.NoAuth(endpoint=url), timeout=0.5)
        os_ = OpenStack(sess, retries=2, backoff=0.05)
        started = time.monotonic()
        with pytest.raises(OpenStackError) as e:
            os_.stack_resources("s1")
        took = time.monotonic() - started
    assert "no answer" in str(e.value) and "after 3 attempts" in str(e.value)
    assert took < 3 * 0.5 + 0.05 + 0.1 + 2.0
