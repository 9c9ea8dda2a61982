"""HostTracker: moves are reported once they settle; moves in progress wait."""
from tacker_hwaffinity.controller.hosts import HostTracker


class S:
    def __init__(self, id, status="ACTIVE", host="h1", host_id="x1", task_state=None):
        self.id, self.name, self.status, self.host = id, "vm-" + id, status, host
        self.host_id, self.task_state = host_id, task_state


def test_first_sight_is_not_a_move_and_a_settled_new_host_is():
    t = HostTracker()
    assert t.update([S("a"), S("b", host="h2")]) == []
    assert t.update([S("a", status="MIGRATING", task_state="migrating")]) == []
    assert t.waiting == {"a"}
    (m,) = t.update([S("a", host="h2")])
    assert (m.server_id, m.old, m.new) == ("a", "h1", "h2") and not t.waiting
    assert t.update([S("a", host="h2")]) == []            # labelled once


def test_resize_waits_until_confirmed_and_deleted_servers_are_forgotten():
    t = HostTracker()
    t.update([S("a")])
    assert t.update([S("a", status="VERIFY_RESIZE", host="h3")]) == []
    assert [m.new for m in t.update([S("a", host="h3")])] == ["h3"]
    t.update([S("a", status="DELETED")])
    assert "a" not in t.where and t.update([S("a", host="h9")]) == []


def test_host_id_for_users_who_cannot_see_hosts():
    t = HostTracker(source="hostId")
    t.update([S("a", host=None, host_id="x1")])
    (m,) = t.update([S("a", host=None, host_id="x2")])
    assert (m.old, m.new) == ("x1", "x2")


def test_a_server_first_seen_moving_has_moved_once_it_settles():
    """A controller that starts (or takes over) during a live migration, or sees a worker
    being built: where it settles is news, reported once (old host unknown)."""
    t = HostTracker()
    assert t.update([S("a", status="MIGRATING", host="h1", task_state="migrating"),
                     S("b", status="BUILD", host=None, task_state="spawning")]) == []
    moves = t.update([S("a", host="h2"), S("b", host="h3")])
    assert [(m.server_id, m.old, m.new) for m in moves] == [("a", None, "h2"), ("b", None, "h3")]
    assert t.update([S("a", host="h2"), S("b", host="h3")]) == []
