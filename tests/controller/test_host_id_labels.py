"""The standard host-id labels (issue #41 item 2): ``--openstack-host-id-label`` and
``--scs-host-id-label`` keep ``topology.openstack.org/host-id`` and
``topology.scs.community/host-id`` equal to Nova's hostId, in the same plan and the same
write as ``CIS-node``, through each kind of move Nova makes: live migration, evacuation,
resize (confirmed and reverted) and a heal that replaces the VM. The API calls are the
stand-ins of ``tick_world``."""
import pytest

from tacker_hwaffinity.constants import OPENSTACK_HOST_ID_LABEL, SCS_HOST_ID_LABEL
from tacker_hwaffinity.errors import InputError
from tests.controller.test_runner import world  # noqa: F401 (a fixture)
from tests.controller.tick_world import State

KEYS = (OPENSTACK_HOST_ID_LABEL, SCS_HOST_ID_LABEL)


def on(host, host_id=None):
    """The labels of a node whose VM is on HOST (hostId HOST_ID, else "hid-HOST")."""
    return {"CIS-node": host, OPENSTACK_HOST_ID_LABEL: host_id or "hid-" + host,
            SCS_HOST_ID_LABEL: host_id or "hid-" + host}


def state(id, host, status="ACTIVE", task=None):
    s = State(id, host, status=status)
    s.task_state = task
    return s


@pytest.fixture
def labelled(world):  # noqa: F811 (the fixture imported above)
    """The world of test_runner with both flags, after the first poll labelled the three
    workers (their nodes had CIS-node only, as the MgmtDriver leaves them)."""
    c, poll, nodes, _pods, calls, now, _ = world
    c.s.host_id_labels = KEYS
    poll.states = [state("1", "h1"), state("2", "h2"), state("3", "h3")]
    c.tick()
    assert sorted(calls["labels"]) == [("w1", on("h1")), ("w2", on("h2")), ("w3", on("h3"))]
    del calls["labels"][:]

    def tick(*states):
        poll.states = list(states)
        now[0] += 30
        c.tick()
        return list(calls["labels"])
    return tick, nodes, calls


def test_a_live_migration_moves_all_three_labels_in_one_write(labelled):
    tick, nodes, calls = labelled
    assert tick(state("1", "h1", "MIGRATING", "migrating")) == []      # in progress
    assert tick(state("1", "h2")) == [("w1", on("h2"))]
    assert nodes.get(None, "w1")["metadata"]["labels"] == on("h2")
    event = [m for n, r, m in calls["events"] if r == "HostLabelChanged" and n == "w1"][-1]
    assert "from host h1 to h2" in event and "%s=hid-h2" % SCS_HOST_ID_LABEL in event


def test_an_evacuation_moves_them_once_it_settles(labelled):
    tick, _nodes, _calls = labelled
    assert tick(state("1", "h1", "REBUILD", "rebuilding")) == []
    assert tick(state("1", "h3", "ACTIVE", "rebuild_spawning")) == []  # a task still runs
    assert tick(state("1", "h3")) == [("w1", on("h3"))]


def test_a_confirmed_resize_moves_them_and_a_reverted_one_does_not(labelled):
    tick, _nodes, _calls = labelled
    assert tick(state("2", "h2", "RESIZE", "resize_migrating")) == []
    assert tick(state("2", "h3", "VERIFY_RESIZE")) == []           # not confirmed yet
    assert tick(state("2", "h3")) == [("w2", on("h3"))]
    assert tick(state("3", "h3", "RESIZE", "resize_migrating"),
                state("3", "h1", "VERIFY_RESIZE"),
                state("3", "h1", "REVERT_RESIZE", "resize_reverting")) == [("w2", on("h3"))]
    assert tick(state("3", "h3")) == [("w2", on("h3"))]            # back home: no write


def test_a_heal_that_replaces_the_vm_labels_its_node_with_the_new_servers_host(labelled):
    tick, _nodes, _calls = labelled
    healed = State("4", "h3", ip="10.0.0.1")        # a new server with w1's address
    assert tick(State("1", "h1", status="DELETED"), healed) == [("w1", on("h3"))]


def test_a_stale_host_id_label_alone_is_corrected_at_a_new_term(labelled, world):  # noqa: F811
    tick, nodes, calls = labelled
    c = world[0]
    nodes.get(None, "w3")["metadata"]["labels"][OPENSTACK_HOST_ID_LABEL] = "hid-h1"  # OCCM's
    c.term.stale = True                             # a new term relabels every worker
    assert tick() == [("w3", on("h3"))]


def test_a_member_user_sees_host_ids_only_and_every_label_carries_them(world):  # noqa: F811
    c, poll, _nodes, _pods, calls, now, _ = world
    c.s.host_id_labels = KEYS
    member = [state(i, "h" + i) for i in ("1", "2", "3")]
    for s in member:
        s.host = None                               # a member sees no host names
    poll.states = member
    c.tick()
    assert ("w1", on("hid-h1", "hid-h1")) in calls["labels"]


def test_without_the_flags_no_host_id_label_is_written(world):  # noqa: F811
    c, poll, _nodes, _pods, calls, _now, _ = world
    poll.states = [state("1", "h2")]
    c.tick()
    assert calls["labels"] == [("w1", {"CIS-node": "h2"})]


def _config(flags):
    from tacker_hwaffinity.cli import controller as cli_controller
    from tacker_hwaffinity.cli.main import build_parser
    args = build_parser("controller").parse_args(
        ["controller", "--worker-metadata", "c=1"] + flags)
    return cli_controller.config(args)


@pytest.mark.parametrize("flags, keys", [
    ([], ()),
    (["--openstack-host-id-label"], (OPENSTACK_HOST_ID_LABEL,)),
    (["--scs-host-id-label"], (SCS_HOST_ID_LABEL,)),
    (["--scs-host-id-label", "--openstack-host-id-label"], KEYS),
    # the older generic flag keeps working, and names a key once whichever way it is given
    (["--host-id-label", OPENSTACK_HOST_ID_LABEL], (OPENSTACK_HOST_ID_LABEL,)),
    (["--openstack-host-id-label", "--host-id-label", OPENSTACK_HOST_ID_LABEL,
      "--host-id-label", "example.org/host"], (OPENSTACK_HOST_ID_LABEL, "example.org/host")),
])
def test_the_flags_name_the_keys(flags, keys):
    assert _config(flags).host_id_labels == keys


def test_a_key_that_is_also_a_host_label_is_refused():
    with pytest.raises(InputError, match="a host label of --params label_keys"):
        _config(["--openstack-host-id-label", "--params",
                 '{"label_keys": ["CIS-node", "%s"]}' % OPENSTACK_HOST_ID_LABEL])
