"""ServerPoll replayed on Nova 34's recorded answers.

``tests/openstack/data/server_polls.json`` holds every ``GET /servers/detail``
three pollers made during a scripted scenario on the real harness (boot, two
changes in one second, live migration, a migration held in progress,
evacuation, deletion, pages of 2), recorded by
``python tests/openstack/test_os_migration.py --capture``. The replay checks
that ServerPoll asks exactly the recorded queries, then what it returns.
"""
import copy
import datetime
import json
import logging
import os
import urllib.parse

import pytest

from tacker_hwaffinity.openstack import OpenStackError
from tacker_hwaffinity.labeling.inventory import addresses
from tacker_hwaffinity.openstack.servers import ServerPoll, ServerState

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    "openstack", "data", "server_polls.json")
# how the capture built each poller
POLLERS = {"admin": {}, "paged": {"limit": 2}, "member": {"all_tenants": False}}


@pytest.fixture(scope="module")
def recording():
    with open(DATA) as f:
        return json.load(f)


class Replay:
    """OpenStack stand-in: answers the recorded calls in order. With
    ``check``, each request must be the recorded one."""

    def __init__(self, calls, check=True):
        self.calls, self.check, self.paths = list(calls), check, []

    def get_json(self, service, name, path, expect_json=True):
        assert (service, name) == ("compute", "Nova")
        call = self.calls.pop(0)
        if self.check:
            assert path == call["path"]
        self.paths.append(path)
        return copy.deepcopy(call["answer"])


def _replay(recording, poller):
    """[(label, states, pages, answers)] of POLLER's polls, replayed."""
    calls = [c for c in recording["polls"] if c["poller"] == poller]
    fake = Replay(calls)
    poll = ServerPoll(fake, **POLLERS[poller])
    out = []
    for number in sorted({c["poll"] for c in calls}):
        mine = [c for c in calls if c["poll"] == number]
        states = poll.poll()
        out.append((mine[0]["label"], states, poll.pages, [c["answer"] for c in mine]))
    assert fake.calls == []
    return out


def _by_label(polls, label):
    return [p for p in polls if p[0] == label]


def _ids(recording):
    return recording["servers"]


@pytest.mark.parametrize("poller", sorted(POLLERS))
def test_queries_are_the_recorded_ones(recording, poller):
    polls = _replay(recording, poller)
    assert polls and all(pages == len(answers) for _, _, pages, answers in polls)


def test_first_poll_lists_everything_oldest_first(recording):
    ids = _ids(recording)
    label, states, pages, answers = _replay(recording, "admin")[0]
    assert (label, pages) == ("initial", 1)
    assert {s.id for s in states} == {s["id"] for s in answers[0]["servers"]}
    assert [s.updated for s in states] == sorted(s.updated for s in states)
    w0 = {s.id: s for s in states}[ids["w0"]]
    raw = next(s for s in answers[0]["servers"] if s["id"] == ids["w0"])
    assert w0 == ServerState(ids["w0"], "w0", "ACTIVE", None, "compute1", raw["hostId"],
                             raw["updated"], {}, tuple(addresses(raw)))
    assert w0.addresses       # the fixed address the controller maps to a node's InternalIP
    assert len(w0.host_id) == 56


def test_the_one_second_overlap_is_not_returned_again(recording):
    _, states, _, answers = _by_label(_replay(recording, "admin"), "unchanged")[0]
    assert answers[0]["servers"] and states == []


def test_two_changes_in_one_second_are_both_returned(recording):
    ids = _ids(recording)
    polls = _replay(recording, "admin")
    first = _by_label(polls, "same-second-1")[-1][1]
    second = _by_label(polls, "same-second-2")[-1][1]
    one = {s.id: s for s in first}[ids["w2"]]
    two = {s.id: s for s in second}[ids["w2"]]
    assert one.updated == two.updated            # Nova's one-second precision
    assert one.metadata != two.metadata and two.metadata["step"].startswith("second-")


def test_live_migration_and_held_migration(recording):
    ids = _ids(recording)
    polls = _replay(recording, "admin")
    migrated = _by_label(polls, "migrated")[0][1]
    assert [(s.id, s.status, s.task_state, s.host) for s in migrated] == [
        (ids["w0"], "ACTIVE", None, "compute2")]
    migrating = _by_label(polls, "migrating")[0][1]
    assert [(s.id, s.status, s.task_state, s.host) for s in migrating] == [
        (ids["w1"], "MIGRATING", "migrating", "compute2")]
    completed = _by_label(polls, "completed")[0][1]
    assert [(s.id, s.status, s.task_state, s.host) for s in completed] == [
        (ids["w1"], "ACTIVE", None, "compute3")]


def test_evacuation_ends_on_another_host(recording):
    ids = _ids(recording)
    seen = [s for _, states, _, _ in _by_label(_replay(recording, "admin"), "evacuating")
            for s in states if s.id == ids["w0"]]
    assert (seen[0].status, seen[0].task_state, seen[0].host) == (
        "REBUILD", "rebuilding", "compute2")
    assert (seen[-1].status, seen[-1].task_state) == ("ACTIVE", None)
    assert seen[-1].host not in ("compute2", None)
    assert all(a != b for a, b in zip(seen, seen[1:]))


def test_deleted_server_is_returned_once(recording):
    ids = _ids(recording)
    polls = _replay(recording, "admin")
    deleted = _by_label(polls, "deleted")[0][1]
    assert (ids["w2"], "DELETED") in [(s.id, s.status) for s in deleted]
    _, after, _, answers = _by_label(polls, "after-deleted")[0]
    assert ids["w2"] in {s["id"] for s in answers[0]["servers"]}   # Nova repeats it
    assert after == []


def test_member_sees_no_host_but_the_host_id_change(recording):
    ids = _ids(recording)
    polls = _replay(recording, "member")
    first, unchanged, migrated = (p[1] for p in polls)
    assert [(s.id, s.host) for s in first] == [(ids["m0"], None)]
    assert unchanged == []
    assert [s.id for s in migrated] == [ids["m0"]]
    assert migrated[0].host is None and migrated[0].host_id != first[0].host_id


def test_full_pages_follow_the_next_link(recording):
    admin_first = {s.id: s for s in _replay(recording, "admin")[0][1]}
    initial, changed = _replay(recording, "paged")
    # 4 servers in pages of 2: two full pages (each with a next link), one empty
    assert initial[2] == 3 and [len(a["servers"]) for a in initial[3]] == [2, 2, 0]
    assert {s.id: s for s in initial[1]} == admin_first
    assert changed[2] == 2 and "changes-since" in changed[3][0]["servers_links"][0]["href"]
    assert changed[1][-1].host == "compute2"   # w0, on the second page


def test_a_repeated_marker_is_an_error_not_a_loop(recording):
    full = next(c for c in recording["polls"] if c["answer"].get("servers_links"))
    fake = Replay([full] * 3, check=False)
    with pytest.raises(OpenStackError, match="repeats marker"):
        ServerPoll(fake, limit=2).poll()
    assert len(fake.paths) == 2


def test_overlap_moves_the_watermark_back(recording):
    calls = [c for c in recording["polls"] if c["poller"] == "admin"]
    fake = Replay(calls[:2], check=False)
    poll = ServerPoll(fake, overlap=5)
    poll.poll()
    assert poll.poll() == []    # the same servers again: nothing new
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    newest = max(s["updated"] for s in calls[0]["answer"]["servers"])
    since = datetime.datetime.strptime(newest, fmt) - datetime.timedelta(seconds=5)
    assert urllib.parse.urlencode({"changes-since": since.strftime(fmt)}) in fake.paths[1]


# -- which servers: all projects, the project's own, or auto (Nova's answer decides) ------

REFUSAL = ("Nova GET /servers/detail?limit=1000&all_tenants=1: HTTP 403 Forbidden: Policy "
           "doesn't allow os_compute_api:servers:detail:get_all_tenants to be performed.")


class MemberNova(Replay):
    """The member's recorded answers; a query with ``all_tenants`` gets Nova's 403 (or
    ERROR, an OpenStackError to raise instead), as Nova's default policy answers a member."""

    def __init__(self, calls, error=None):
        super().__init__(calls)
        self.error, self.refused = error, []

    def get_json(self, service, name, path, expect_json=True):
        if "all_tenants" in path:
            self.refused.append(path)
            raise self.error or OpenStackError(REFUSAL, status=403)
        return super().get_json(service, name, path, expect_json)


def _member_calls(recording):
    return [c for c in recording["polls"] if c["poller"] == "member"]


def test_auto_is_the_default_and_keeps_all_projects_when_nova_allows_them(recording, caplog):
    calls = [c for c in recording["polls"] if c["poller"] == "admin"]
    fake = Replay(calls[:2])
    poll = ServerPoll(fake, log=logging.getLogger("test.servers"))
    assert (poll.scope, poll.all_tenants) == ("auto", None)
    with caplog.at_level(logging.INFO, "test.servers"):
        poll.poll()
        poll.poll()
    assert poll.all_tenants is True and poll.refused is None
    assert all("all_tenants=1" in p for p in fake.paths)
    assert [r.getMessage() for r in caplog.records] == [
        "Nova allows all_tenants to these credentials: polling every project's servers"]
    assert poll.describe() == "every project's servers (all_tenants=1)"


def test_auto_falls_back_to_the_project_at_once_on_nova_s_403_and_for_good(recording, caplog):
    member = _member_calls(recording)
    expected = [states for _, states, _, _ in _replay(recording, "member")]
    fake = MemberNova(member)
    poll = ServerPoll(fake, scope="auto", log=logging.getLogger("test.servers"))
    with caplog.at_level(logging.INFO, "test.servers"):
        got = [poll.poll() for _ in expected]
    assert got == expected and got[0]          # the first poll already answered, not failed
    assert fake.refused == ["/servers/detail?limit=1000&all_tenants=1"]    # asked once
    assert fake.paths == [c["path"] for c in member] and fake.calls == []
    assert poll.all_tenants is False and poll.refused == REFUSAL
    assert [r.getMessage() for r in caplog.records] == [
        "Nova refuses all_tenants to these credentials (%s): polling the servers of their "
        "project only" % REFUSAL]
    assert poll.describe("demo") == ("project demo's servers only "
                                     "(Nova refuses all_tenants to these credentials)")


@pytest.mark.parametrize("error", [
    OpenStackError("Nova GET /servers/detail: HTTP 503 (after 3 attempts)"),
    OpenStackError("Nova GET /servers/detail: HTTP 401 Unauthorized", status=401),
    OpenStackError("Nova GET /servers/detail: HTTP 404 Not Found", status=404),
    OpenStackError("Nova: Keystone refused the VIM credentials"),
], ids=["5xx", "401", "404", "keystone"])
def test_auto_decides_on_a_403_only(recording, error):
    fake = MemberNova(_member_calls(recording), error=error)
    poll = ServerPoll(fake)
    for _ in range(2):                          # a failed poll, then the same question again
        with pytest.raises(OpenStackError) as raised:
            poll.poll()
        assert raised.value is error
    assert poll.all_tenants is None and poll.since is None and fake.paths == []
    assert len(fake.refused) == 2


def test_all_projects_forced_is_a_failed_poll_on_403_every_time(recording):
    fake = MemberNova(_member_calls(recording))
    poll = ServerPoll(fake, scope="all-projects")
    for _ in range(2):
        with pytest.raises(OpenStackError, match="HTTP 403"):
            poll.poll()
    assert poll.all_tenants is True and len(fake.refused) == 2 and fake.paths == []


@pytest.mark.parametrize("kwargs", [{"scope": "project"}, {"all_tenants": False}])
def test_project_never_asks_all_tenants(recording, kwargs):
    fake = MemberNova(_member_calls(recording))
    poll = ServerPoll(fake, **kwargs)
    first = poll.poll()
    assert first and fake.refused == [] and poll.scope == "project"
    assert poll.describe() == "the credentials' project's servers only"


def test_a_403_to_the_project_s_own_list_is_a_failed_poll_not_a_loop(recording):
    class Refusing(MemberNova):
        def get_json(self, service, name, path, expect_json=True):
            self.refused.append(path)
            raise OpenStackError("Nova GET %s: HTTP 403 Forbidden" % path, status=403)
    fake = Refusing([])
    poll = ServerPoll(fake)
    with pytest.raises(OpenStackError, match="HTTP 403"):
        poll.poll()
    with pytest.raises(OpenStackError, match="HTTP 403"):
        poll.poll()
    # all_tenants refused once, then the project's own list, once per poll
    assert fake.refused == ["/servers/detail?limit=1000&all_tenants=1",
                            "/servers/detail?limit=1000", "/servers/detail?limit=1000"]


def test_scope_and_all_tenants_spellings(recording):
    assert ServerPoll(None).scope == "auto"
    assert ServerPoll(None, all_tenants=True).scope == "all-projects"
    assert ServerPoll(None, all_tenants=False).scope == "project"
    assert "decided at the first poll" in ServerPoll(None).describe()
    with pytest.raises(ValueError, match="scope must be"):
        ServerPoll(None, scope="everything")
