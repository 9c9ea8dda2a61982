"""Servers moving between compute hosts on real Nova 34, watched by ServerPoll.

Live migration (at once, or held in progress by the harness until Nova's
force-complete), evacuation and deletion, each seen by ONE
``GET /servers/detail?changes-since=`` per poll. The module has its own cloud,
so that no other test's servers change under the "nothing changed" polls.

``python tests/openstack/test_os_migration.py --capture`` records the polls of
a scripted scenario into ``tests/openstack/data/server_polls.json``, the
replay data of ``tests/openstack/test_servers.py``.
"""
import json
import os
import sys
import time

import pytest

import osharness
from tacker_hwaffinity.openstack import OpenStack, OpenStackError, auth
from tacker_hwaffinity.openstack.servers import ServerPoll

pytestmark = pytest.mark.openstack
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "server_polls.json")


def _adapter(cloud, user="admin"):
    access = dict(cloud.credentials(user), region_name=None, verify=True)
    return OpenStack(auth.session(access))


def _poll_once(openstack, poll):
    """(states, HTTP calls made) of one poll."""
    before = openstack.calls
    states = poll.poll()
    return states, openstack.calls - before


def _delete(cloud, server_id, timeout=60):
    nova = cloud.nova("admin")
    nova.servers.delete(server_id)

    def gone():
        return not [s for s in nova.servers.list(search_opts={"all_tenants": 1})
                    if s.id == server_id]
    osharness.wait_for(gone, timeout, what="server %s deleted" % server_id)


@pytest.fixture(scope="module")
def cloud(openstack_cloud_factory):
    cloud = openstack_cloud_factory(computes=3)
    yield cloud
    cloud.stop(keep_logs=True)  # free the memory now; the session end cleans up


@pytest.fixture(scope="module")
def workers(cloud):
    """Two servers of project admin: w0 on compute1, w1 on compute2."""
    return {"w0": osharness.boot(cloud, "w0", "compute1"),
            "w1": osharness.boot(cloud, "w1", "compute2")}


@pytest.fixture()
def watch(cloud, workers):
    """(adapter, poll) after a first poll listed everything (and got a token)."""
    openstack = _adapter(cloud)
    poll = ServerPoll(openstack, all_tenants=True)
    first = {s.id: s for s in poll.poll()}
    assert set(workers.values()) <= set(first)
    return openstack, poll


def test_live_migration_seen_by_one_call(cloud, workers, watch):
    openstack, poll = watch
    source, target = cloud.server(workers["w0"]), cloud.server(workers["w1"])
    assert poll.poll() == []
    assert cloud.live_migrate(workers["w0"], host=target[osharness.HOST_ATTR]) == \
        target[osharness.HOST_ATTR]

    states, calls = _poll_once(openstack, poll)
    assert calls == 1 and poll.pages == 1
    moved = {s.id: s for s in states}[workers["w0"]]
    assert (moved.status, moved.task_state, moved.host) == (
        "ACTIVE", None, target[osharness.HOST_ATTR])
    assert moved.host_id == target["hostId"] != source["hostId"]  # same project, same host
    assert moved.name == "w0" and moved.updated >= source["updated"]

    states, calls = _poll_once(openstack, poll)
    assert (states, calls) == ([], 1)


def test_scheduler_picks_another_host(cloud, workers, watch):
    openstack, poll = watch
    before = cloud.server(workers["w1"])[osharness.HOST_ATTR]
    after = cloud.live_migrate(workers["w1"])
    assert after in cloud.hosts and after != before
    states, calls = _poll_once(openstack, poll)
    assert calls == 1
    assert [(s.id, s.host) for s in states if s.id in workers.values()] == [
        (workers["w1"], after)]


def test_migration_to_its_own_host_fails_after_202(cloud, workers):
    host = cloud.server(workers["w0"])[osharness.HOST_ATTR]
    with pytest.raises(osharness.HarnessError, match="failed; it stays on"):
        cloud.live_migrate(workers["w0"], host=host, timeout=60)
    assert cloud.server(workers["w0"])["status"] == "ACTIVE"


def test_held_migration_is_seen_in_progress(cloud, workers, watch):
    openstack, poll = watch
    server_id = workers["w0"]
    source = cloud.server(server_id)[osharness.HOST_ATTR]
    target = next(h for h in cloud.hosts if h != source)
    with cloud.hold_migrations():
        cloud.live_migrate(server_id, host=target, wait=False)
        osharness.wait_for(lambda: server_id in cloud.held_migrations(), 60,
                           what="the driver to hold the migration")
        states, calls = _poll_once(openstack, poll)
        assert calls == 1
        seen = {s.id: s for s in states}[server_id]
        assert (seen.status, seen.task_state, seen.host) == ("MIGRATING", "migrating", source)
        assert [m["status"] for m in cloud.migrations_in_progress(server_id)] == ["running"]
        time.sleep(1.5)   # the condition is time itself: held, the server must not move
        later, _ = _poll_once(openstack, poll)
        assert server_id not in {s.id for s in later}
        assert cloud.server(server_id)["status"] == "MIGRATING"
        assert cloud.complete_migration(server_id) == target
    states, calls = _poll_once(openstack, poll)
    assert calls == 1
    done = {s.id: s for s in states}[server_id]
    assert (done.status, done.task_state, done.host) == ("ACTIVE", None, target)


def test_evacuation_is_seen(cloud, workers, watch):
    openstack, poll = watch
    server_id = workers["w1"]
    source = cloud.server(server_id)[osharness.HOST_ATTR]
    try:
        cloud.evacuate(server_id, wait=False)
        history = []

        def arrived():
            states, calls = _poll_once(openstack, poll)
            assert calls == 1
            history.extend(s for s in states if s.id == server_id)
            return history and history[-1].host != source and history[-1].task_state is None
        osharness.wait_for(arrived, 60, interval=0.1, what="the evacuation in the polls")
    finally:
        cloud.start_compute(source)
    assert history[0].status == "REBUILD" and history[0].host == source
    assert history[-1].status == "ACTIVE" and history[-1].host not in (None, source)
    assert all(a != b for a, b in zip(history, history[1:]))   # each state once
    # Back to the old host: its restarted compute destroyed the stale guest.
    assert cloud.live_migrate(server_id, host=source) == source


def test_deleted_server_reported_once(cloud, watch):
    openstack, poll = watch
    doomed = osharness.boot(cloud, "doomed", "compute3")
    assert [s.id for s in poll.poll()] == [doomed]
    _delete(cloud, doomed)
    states, calls = _poll_once(openstack, poll)
    assert calls == 1
    assert [(s.id, s.status, s.host) for s in states] == [(doomed, "DELETED", "compute3")]
    assert _poll_once(openstack, poll) == ([], 1)


def test_member_sees_host_id_change_only(cloud):
    openstack = _adapter(cloud, "member")
    with pytest.raises(OpenStackError, match="403"):
        ServerPoll(openstack, all_tenants=True).poll()
    poll = ServerPoll(openstack, all_tenants=False)
    mine = osharness.boot(cloud, "member-w", user="member")
    first = {s.id: s for s in poll.poll()}[mine]
    assert first.host is None and len(first.host_id) == 56
    cloud.live_migrate(mine)
    states, calls = _poll_once(openstack, poll)
    assert calls == 1
    moved = {s.id: s for s in states}[mine]
    assert moved.host is None and moved.host_id != first.host_id


def test_full_page_follows_next_link(cloud, workers):
    openstack = _adapter(cloud)
    everything = ServerPoll(openstack).poll()
    assert len(everything) >= 3
    paged = ServerPoll(openstack, limit=2)
    assert sorted(paged.poll()) == sorted(everything)
    # n servers in pages of 2: ceil(n/2) pages, plus an empty one when n is even
    assert paged.pages == len(everything) // 2 + 1


def test_a_hard_group_keeps_its_members_apart_through_a_live_migration(cloud):
    """A live migration onto the host of another member of an anti-affinity group fails,
    and the server stays where it was: through the scheduler (its filter: the migration
    ends in error, the server ACTIVE), and forced past it (compute API 2.67): the
    destination checks the group again, and Nova puts the server in ERROR, on its host.
    What a soft-anti-affinity group lets happen instead: tests/tacker_e2e/test_tacker_cnf.py."""
    nova = cloud.nova("admin", version="2.64")
    group = nova.server_groups.create(name="hard-apart", policy="anti-affinity")
    first, second = (osharness.boot(cloud, name, host, scheduler_hints={"group": group.id})
                     for name, host in (("g0", "compute2"), ("g1", "compute3")))
    try:
        with pytest.raises(osharness.HarnessError, match="it stays on compute3"):
            cloud.live_migrate(second, host="compute2")
        assert cloud.server(second)["status"] == "ACTIVE"
        with pytest.raises(osharness.HarnessError, match="server in ERROR: .*Anti-affinity "
                           "instance group policy was violated"):
            cloud.live_migrate(second, host="compute2", force=True)
        assert cloud.server(second)[osharness.HOST_ATTR] == "compute3"
    finally:
        for server_id in (first, second):
            _delete(cloud, server_id)
        nova.server_groups.delete(group.id)


def test_a_migrated_server_s_port_detaches(cloud):
    """The guest moves with its interfaces: a port detached after a live migration
    leaves the server (Heat detaches a server's port before it deletes the server on a
    scale-in or a heal)."""
    nova = cloud.nova("admin", version="2.68")
    server_id = osharness.boot(cloud, "mover", "compute1")
    try:
        cloud.live_migrate(server_id, host="compute3")
        (port,) = nova.servers.interface_list(server_id)
        nova.servers.interface_detach(server_id, port.port_id)
        osharness.wait_for(lambda: not nova.servers.interface_list(server_id), 30,
                           what="the port detached from %s" % server_id)
    finally:
        _delete(cloud, server_id)


# -- capture (python tests/openstack/test_os_migration.py --capture) -------

class _Recorder:
    """OpenStack stand-in that records every ``get_json`` (path and answer)."""

    def __init__(self, openstack, log, poller):
        self.openstack, self.log, self.poller = openstack, log, poller
        self.label, self.number = None, 0

    def get_json(self, service, name, path, expect_json=True):
        answer = self.openstack.get_json(service, name, path, expect_json)
        self.log.append({"poller": self.poller, "poll": self.number, "label": self.label,
                         "path": path, "answer": answer})
        return answer


def _capture():
    cloud = osharness.OpenStackCloud(computes=3, python=osharness.openstack_python())
    cloud.start()
    log, names = [], {}
    try:
        admin = _adapter(cloud)
        main, paged = _Recorder(admin, log, "admin"), _Recorder(admin, log, "paged")
        member = _Recorder(_adapter(cloud, "member"), log, "member")
        polls = {"admin": ServerPoll(main), "paged": ServerPoll(paged, limit=2),
                 "member": ServerPoll(member, all_tenants=False)}
        recorders = {"admin": main, "paged": paged, "member": member}

        def poll(poller, label):
            recorders[poller].label = label
            recorders[poller].number += 1
            return polls[poller].poll()

        def updated(server_id):
            return [s["updated"] for s in log[-1]["answer"]["servers"] if s["id"] == server_id]

        for name, host in (("w0", "compute1"), ("w1", "compute2"), ("w2", "compute3")):
            names[name] = osharness.boot(cloud, name, host)
        names["m0"] = osharness.boot(cloud, "m0", user="member")
        poll("admin", "initial")
        poll("admin", "unchanged")
        poll("member", "initial")
        poll("paged", "initial")
        nova = cloud.nova("admin")
        for attempt in range(10):   # two changes of w2 within one second
            while time.time() % 1 > 0.2:
                time.sleep(0.01)
            nova.servers.set_meta(names["w2"], {"step": "first-%d" % attempt})
            poll("admin", "same-second-1")
            first = updated(names["w2"])
            nova.servers.set_meta(names["w2"], {"step": "second-%d" % attempt})
            poll("admin", "same-second-2")
            if updated(names["w2"]) == first:
                break
        cloud.live_migrate(names["w0"], host="compute2")
        poll("admin", "migrated")
        poll("paged", "changed")
        poll("member", "unchanged")
        with cloud.hold_migrations():
            cloud.live_migrate(names["w1"], host="compute3", wait=False)
            osharness.wait_for(lambda: names["w1"] in cloud.held_migrations(), 60,
                               what="the held migration")
            poll("admin", "migrating")
            cloud.complete_migration(names["w1"])
        poll("admin", "completed")
        source = cloud.server(names["w0"])[osharness.HOST_ATTR]
        cloud.evacuate(names["w0"], wait=False)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            states = poll("admin", "evacuating")
            if any(s.id == names["w0"] and s.host != source and s.task_state is None
                   for s in states):
                break
            time.sleep(0.1)
        cloud.start_compute(source)
        cloud.live_migrate(names["m0"])
        poll("member", "migrated")
        _delete(cloud, names["w2"])
        poll("admin", "deleted")
        poll("admin", "after-deleted")
    finally:
        cloud.stop()
    doc = {"about": "GET /servers/detail answers of real Nova 34 (tests/openstack harness, "
                    "3 fake computes), recorded by `python tests/openstack/"
                    "test_os_migration.py --capture`; pollers: admin (all_tenants), paged "
                    "(all_tenants, limit=2), member (own project)",
           "servers": names, "polls": log}
    os.makedirs(os.path.dirname(DATA), exist_ok=True)
    with open(DATA, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print("recorded %d calls into %s" % (len(log), DATA))


if __name__ == "__main__":
    if sys.argv[1:] != ["--capture"]:
        sys.exit("usage: python tests/openstack/test_os_migration.py --capture")
    _capture()
