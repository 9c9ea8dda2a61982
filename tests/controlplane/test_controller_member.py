"""The controller with a project member's OpenStack credentials (no admin role), end to end.

The same world as test_controller_e2e (its fixtures and helpers, reused): real Nova with
three fake compute hosts and real Heat, the real control plane and kube-scheduler, the
controller as a process. Here the VNF's stack belongs to project ``demo`` and the controller
logs in as the harness's ``member`` (Keystone user ``demo``: roles member and reader, no
admin). The fake Keystone issues that token with exactly those roles, keystonemiddleware in
Nova reads them, and Nova's real default policy then refuses ``all_tenants`` (HTTP 403) and
hides ``OS-EXT-SRV-ATTR:host``: the controller must list its project's servers and follow
Nova's per-project ``hostId`` instead, as the MgmtDriver does for a member VIM user.
"""
import logging
import time

import pytest

from . import harness
from .test_controller_e2e import (  # noqa: F401  (fixtures pytest collects from here)
    POLL, _deployment, _kill, _placed, _reset, _selection, _start, broker, cloud, label,
    stack, workers)

from osharness import boot, tail_of
from test_os_migration import _adapter, _delete, _poll_once

from tacker_hwaffinity.openstack.servers import ServerPoll

pytestmark = [pytest.mark.controlplane, pytest.mark.openstack]
LOG = "Nova refuses all_tenants to these credentials"


@pytest.fixture(scope="module")
def stack_owner():
    """The stack (and so its servers) belongs to the member's project, demo."""
    return "member"


def _host_ids(openstack_cloud, worker_vms):
    """{node: hostId of its server as the member sees it} (Nova's sha224 of project id and
    host: the member cannot see the host name)."""
    nova = openstack_cloud.nova("member")
    out = {}
    for node, (sid, _) in worker_vms.items():
        server = nova.servers.get(sid)
        assert getattr(server, "OS-EXT-SRV-ATTR:host", None) is None
        out[node] = server.hostId
    return out


def test_a_member_controller_follows_a_live_migration_by_host_id_and_evicts(
        cloud, control_plane, stack, workers, namespace, tmp_path):  # noqa: F811 (fixtures)
    cp = control_plane
    _reset(cloud, workers)
    ids = _host_ids(cloud, workers)
    assert len(set(ids.values())) == 3 and all(len(v) == 56 for v in ids.values())
    proc, log = _start(cloud, cp, tmp_path, "member", "--lease-name", "member",
                       select=_selection(stack), user="member")
    try:
        for node, host_id in ids.items():        # the first poll labels every worker
            try:
                harness.wait_until(lambda n=node, h=host_id: label(cp, n) == h, 60,
                                   what="node %s labelled with hostId %s" % (node, host_id))
            except harness.HarnessError as e:
                pytest.fail("%s; the controller's log ends:\n%s" % (e, tail_of(log)))
        text = log.read_text()
        assert "OpenStack user demo, project demo" in text
        assert "hosts by hostId" in text and text.count(LOG) == 1
        assert "get_all_tenants" in text and "Nova poll failed" not in text

        names = sorted(workers)
        cp.admin.create("/apis/apps/v1/namespaces/%s/deployments" % namespace,
                        _deployment(namespace, names))
        harness.wait_until(lambda: len(_placed(cp, namespace)) == 2, 60,
                           what="two replicas running")
        before = _placed(cp, namespace)
        moving, staying = sorted(before.values())
        third = (set(names) - {moving, staying}).pop()
        victim = next(p for p, n in before.items() if n == moving)
        t0 = time.monotonic()
        cloud.live_migrate(workers[moving][0], host=workers[staying][1])
        moved_to = cloud.nova("member").servers.get(workers[moving][0]).hostId
        assert moved_to == ids[staying]          # one project, one host: one hostId
        harness.wait_until(lambda: label(cp, moving) == ids[staying], 4 * POLL + 10,
                           what="node %s relabelled with hostId %s" % (moving, ids[staying]))
        print("relabelled %.1f s after the live migration was asked for (polls every %d s)"
              % (time.monotonic() - t0, POLL))
        harness.wait_until(lambda: victim not in _placed(cp, namespace), 30,
                           what="%s evicted" % victim)
        harness.wait_until(lambda: third in _placed(cp, namespace).values(), 60,
                           what="a replacement on %s" % third)
        after = _placed(cp, namespace)
        survivor = next(p for p, n in before.items() if n == staying)
        assert after.get(survivor) == staying                   # exactly one evicted
        # Events are recorded after the eviction and the label patch return: wait for them
        harness.wait_until(lambda: cp.events(namespace, "EvictedDuringExecution", victim), 30,
                           what="the EvictedDuringExecution Event")
        (event,) = cp.events(namespace, "EvictedDuringExecution", victim)
        assert "anti-affinity" in event["message"]
        moved_text = "moved from host %s to %s" % (ids[moving], ids[staying])
        harness.wait_until(lambda: any(moved_text in e["message"] for e in cp.admin.get(
            "/api/v1/namespaces/kube-system/events", fieldSelector=(
                "involvedObject.kind=Node,reason=HostLabelChanged,involvedObject.name="
                + moving))["items"]), 30, what="the HostLabelChanged Event")
        text = log.read_text()
        assert text.count(LOG) == 1 and "Nova poll failed" not in text    # no 403 loop
        assert text.count("HTTP 403") == 1 and proc.poll() is None
    finally:
        _kill(proc)


def test_a_member_poll_asks_all_tenants_once_then_sees_its_project_s_moves_and_deletions(
        cloud, workers, caplog):  # noqa: F811 (the fixtures imported above)
    """ServerPoll's auto scope on real Nova with the member's token: one 403 to
    ``all_tenants``, then one call per poll; ``changes-since`` shows the member its own
    project's live migrations (a new hostId) and deletions (DELETED), never another
    project's servers."""
    _reset(cloud, workers)
    others = boot(cloud, "admin-project-vm", user="admin")     # project admin's
    openstack = _adapter(cloud, "member")
    poll = ServerPoll(openstack, log=logging.getLogger("test.member"))
    with caplog.at_level(logging.INFO, "test.member"):
        before = openstack.calls
        first = {s.id: s for s in poll.poll()}
    mine = {sid for sid, _ in workers.values()}
    assert set(first) == mine and others not in first
    assert all(s.host is None and len(s.host_id) == 56 for s in first.values())
    assert poll.all_tenants is False and "get_all_tenants" in poll.refused
    assert [r.getMessage().split(" (")[0] for r in caplog.records
            if r.name == "test.member"] == [LOG]
    assert openstack.calls - before >= 2                 # the refused call and the list
    assert _poll_once(openstack, poll) == ([], 1)        # no all_tenants asked again

    node = sorted(workers)[0]
    sid, host = workers[node]
    target = next(h for h in sorted(cloud.hosts) if h != host)
    cloud.live_migrate(sid, host=target)
    cloud.live_migrate(others)                          # not the member's: never seen
    states, calls = _poll_once(openstack, poll)
    assert calls == 1
    assert [(s.id, s.status, s.host) for s in states] == [(sid, "ACTIVE", None)]
    assert states[0].host_id not in ("", first[sid].host_id)

    doomed = boot(cloud, "member-doomed", user="member")
    assert [s.id for s in poll.poll()] == [doomed]
    _delete(cloud, doomed)
    _delete(cloud, others)
    states, calls = _poll_once(openstack, poll)
    assert calls == 1 and [(s.id, s.status) for s in states] == [(doomed, "DELETED")]
