"""The controller's tick on plain objects: relabel after a settled move, evict the seed's
violator, PDB blocks, Nova failures keep the labels. The API calls are stand-ins here
(kube.labels, kube.evict and kube.events are tested against the real control plane)."""
import json
import logging

import pytest

from tacker_hwaffinity.controller import rules, runner
from tacker_hwaffinity.controller.rules import ANNOTATION
from tacker_hwaffinity.kube import evict as evictmod
from tacker_hwaffinity.kube.evict import Eviction

from .tick_world import ANTI, Cache, State, make_world


@pytest.fixture
def world(monkeypatch):
    return make_world(monkeypatch)


def test_a_live_migration_relabels_once_and_evicts_the_moved_nodes_pod(world):
    c, poll, nodes, pods, calls, now, _ = world
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]
    c.tick()
    assert calls["labels"] == [] and calls["evict"] == []     # labels already true
    poll.states = [State("1", "h2", status="MIGRATING")]
    now[0] += 30
    c.tick()
    assert calls["labels"] == []                             # wait: in progress
    poll.states = [State("1", "h2")]
    now[0] += 30
    c.tick()
    assert calls["labels"] == [("w1", {"CIS-node": "h2"})]
    assert calls["evict"] == ["a"]                            # on the node that moved
    assert any(r == "HostLabelChanged" and "from host h1 to h2" in m
               for _, r, m in calls["events"])
    now[0] += 30
    c.tick()
    assert calls["evict"] == ["a"]                            # b is fine now


def test_a_pdb_blocks_with_an_event_and_the_eviction_is_retried(world):
    c, poll, nodes, pods, calls, now, outcome = world
    poll.states = [State("1", "h1"), State("2", "h2")]
    c.tick()
    nodes.objs[("", "w1")]["metadata"]["labels"]["CIS-node"] = "h2"
    outcome["now"] = Eviction("blocked", "The disruption budget web needs 2 healthy pods", None)
    now[0] += 11
    c.tick()
    (blocked,) = [e for e in calls["events"] if e[1] == "EvictionBlocked"]
    assert "disruption budget" in blocked[2]
    n = len(calls["evict"])
    now[0] += 5
    c.tick()
    assert len(calls["evict"]) == n                           # waits before retrying
    outcome["now"] = Eviction("evicted", "", None)
    now[0] += 11
    c.tick()
    assert len(calls["evict"]) == n + 1


def test_nova_failures_keep_the_labels(world):
    c, poll, nodes, pods, calls, now, _ = world
    poll.fail = True
    c.tick()
    assert calls["labels"] == [] and c.metrics.poll_errors._value.get() == 1


def test_a_bad_annotation_is_an_event_not_an_eviction(world):
    c, poll, nodes, pods, calls, now, _ = world
    pods.objs[("default", "a")]["metadata"]["annotations"][ANNOTATION] = "{"
    poll.states = [State("1", "h1")]
    c.tick()
    assert [e[1] for e in calls["events"]] == ["RequiredDuringExecutionInvalid"]
    assert calls["evict"] == []


def test_the_host_id_label_follows_the_server_too(world):
    c, poll, nodes, pods, calls, now, _ = world
    c.s.host_id_labels = ("topology.openstack.org/host-id",)
    poll.states = [State("1", "h1"), State("2", "h2")]
    c.tick()
    assert ("w1", {"CIS-node": "h1", "topology.openstack.org/host-id": "hid-h1"}) \
        in calls["labels"]


def test_a_notification_about_a_worker_polls_at_the_next_tick(world):
    c, poll, nodes, pods, calls, now, outcome = world
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]
    c.tick()                                             # first poll at t=0
    now[0] = 5.0
    poll.states = [State("1", "h3")]                     # moved; next poll due at t=30
    c.tick()
    assert calls["labels"] == []
    c.notified("instance.live_migration_post_dest.end", "not-a-worker")
    c.tick()
    assert calls["labels"] == []                         # someone else's VM: no poll
    c.notified("instance.live_migration_post_dest.end", "1")
    c.tick()
    assert calls["labels"] == [("w1", {"CIS-node": "h3"})]
    c.notified("instance.create.end", "new-vm")          # a new VM may be a worker
    assert c.next_poll == 0.0


def test_host_or_host_id_waits_for_the_first_workers_seen(world):
    """A member's controller started before its workers exist: the first poll has none,
    so nothing is decided yet; its workers then show hostId only (Nova hides the host from
    members) and are labelled with it, the MgmtDriver's choice (labeling.plan.choose_source),
    not left on "host" (nothing would ever be labelled)."""
    c, poll, nodes, pods, calls, now, _ = world
    poll.states = []
    c.tick()
    assert c.hosts.tracker is None and calls["labels"] == []
    member = [State("1", "h1"), State("2", "h2")]
    for s in member:
        s.host = None                                    # as Nova shows it to a member
    poll.states = member
    now[0] += 30
    c.tick()
    assert c.hosts.tracker.source == "hostId"
    assert sorted(calls["labels"]) == [("w1", {"CIS-node": "hid-h1"}),
                                       ("w2", {"CIS-node": "hid-h2"})]
    poll.states = [State("1", "h3")]
    poll.states[0].host = None
    now[0] += 30
    c.tick()
    assert calls["labels"][-1] == ("w1", {"CIS-node": "hid-h3"})


# -- issue #24: namespaces, a stuck eviction, the lease before each side effect, memory --

def bare(name, node_name, ns="default", labels=None, rule=None, created="2026-01-01T00:00:01Z",
         grace=None):
    obj = {"metadata": {"name": name, "namespace": ns, "uid": "u-%s-%s" % (ns, name),
                        "labels": dict(labels or {}), "creationTimestamp": created,
                        "annotations": {ANNOTATION: rule} if rule else {}},
           "spec": {"nodeName": node_name}, "status": {"phase": "Running"}}
    if grace is not None:
        obj["spec"]["terminationGracePeriodSeconds"] = grace
    return obj


def namespace_obj(name, labels):
    return {"metadata": {"name": name, "uid": "u-ns-" + name, "labels": labels}}


AFFINITY_TO_DATA = json.dumps({"podAffinity": [{
    "topologyKey": "CIS-node", "labelSelector": {"matchLabels": {"app": "db"}},
    "namespaceSelector": {"matchLabels": {"team": "data"}}}]})


def test_a_namespace_selector_term_is_evaluated_with_the_namespaces_labels(world):
    """front (namespace web) follows app=db pods of the namespaces labelled team=data: the
    db pod of namespace data on its node satisfies it, so it stays past the grace; once
    that namespace loses the label, the term is broken and front is evicted after it."""
    c, poll, nodes, pods, calls, now, _ = world
    pods.objs = {}
    for p in (bare("front", "w1", "web", {"app": "front"}, AFFINITY_TO_DATA),
              bare("db", "w1", "data", {"app": "db"})):
        pods.objs[(p["metadata"]["namespace"], p["metadata"]["name"])] = p
    c.namespaces = Cache([namespace_obj("web", {}), namespace_obj("data", {"team": "data"})])
    for _ in range(4):
        c.tick()
        now[0] += 61                        # past the 60 s grace each time
    assert calls["evict"] == [] and c.metrics.violations._value.get() == 0
    c.namespaces.objs[("", "data")]["metadata"]["labels"] = {}
    c.tick()
    assert calls["evict"] == []             # broken now: the grace starts
    now[0] += 61
    c.tick()
    assert calls["evict"] == ["front"]


def test_a_pod_stuck_terminating_is_reported_and_the_next_violator_is_evicted(world, monkeypatch):
    """The first victim never goes (its node is down): the next eviction waits its grace
    period (5 s) plus the margin (30 s) after the eviction, no longer; then a Warning
    Event on it, the next violator is evicted, and the stuck pod is never picked again."""
    c, poll, nodes, pods, calls, now, outcome = world
    rule = json.dumps({"podAntiAffinity": [{"topologyKey": "CIS-node",
                                            "labelSelector": {"matchLabels": {"g": "x"}}}]})
    rule_y = rule.replace('"x"', '"y"')
    pods.objs = {}
    for p in (bare("x-new", "w1", labels={"g": "x"}, rule=rule, grace=5),
              bare("x-old", "w1", labels={"g": "x"}, rule=rule, created="2026-01-01T00:00:00Z"),
              bare("y-new", "w2", labels={"g": "y"}, rule=rule_y),
              bare("y-old", "w2", labels={"g": "y"}, rule=rule_y, created="2026-01-01T00:00:00Z")):
        pods.objs[("default", p["metadata"]["name"])] = p

    def evict(conn, ns, name, uid=None):
        calls["evict"].append(name)
        obj = pods.objs[(ns, name)]
        if name == "x-new":                 # accepted, and stuck Terminating
            obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"
            obj["metadata"]["deletionGracePeriodSeconds"] = 5
        else:
            pods.objs.pop((ns, name))
        return Eviction("evicted", "", None)
    monkeypatch.setattr(evictmod, "evict", evict)
    assert c.s.termination_margin == runner.TERMINATION_MARGIN_S == 30
    c.tick()
    assert calls["evict"] == ["x-new"]
    for dt in (11, 10, 13.9):               # 34.9 s after the eviction: still waiting
        now[0] += dt
        c.tick()
    assert calls["evict"] == ["x-new"]
    assert not [e for e in calls["events"] if e[1] == "EvictionStuck"]
    now[0] += 0.2
    c.tick()
    (stuck,) = [e for e in calls["events"] if e[1] == "EvictionStuck"]
    assert stuck[0] == "x-new" and "grace period 5 s + 30 s" in stuck[2]
    assert calls["evict"] == ["x-new", "y-new"]
    assert c.metrics.stuck._value.get() == 1
    for _ in range(3):
        now[0] += 11
        c.tick()
    assert calls["evict"].count("x-new") == 1 and "x-old" not in calls["evict"]


def test_nothing_is_done_unless_the_lease_is_confirmed_right_before(world):
    """leading() says no: the tick is abandoned before its first side effect; the lease
    lost between a relabel and the eviction that follows in the same tick: no eviction.
    The next term relabels every worker from Nova's view (not only the moves seen)."""
    c, poll, nodes, pods, calls, now, _ = world
    answers = []
    c.term.leading = lambda: answers.pop(0) if answers else False
    poll.states = [State("1", "h2"), State("2", "h2"), State("3", "h3")]   # w1 moved
    c.tick()
    assert calls["labels"] == [] and calls["evict"] == [] and calls["events"] == []
    assert c.metrics.abandoned._value.get() == 1 and c.hosts.resync
    poll.states = [State("1", "h2")]        # no change: only the resync relabels w1
    now[0] += 30
    answers[:] = [True]                     # the relabel, then the lease is gone
    c.tick()
    assert calls["labels"] == [("w1", {"CIS-node": "h2"})]
    assert calls["evict"] == [] and calls["events"] == []   # not the Event, nor the eviction
    answers[:] = [True] * 10
    now[0] += 30
    c.tick()
    assert calls["evict"] == ["a"]


def test_stand_down_waits_for_the_side_effect_in_flight_and_stops_the_tick(world, monkeypatch):
    import threading
    c, poll, nodes, pods, calls, now, _ = world
    ended = threading.Event()               # the elector's is_leader, cleared before on_stopped
    c.term.leading = lambda: not ended.is_set()
    nodes.objs[("", "w1")]["metadata"]["labels"]["CIS-node"] = "h2"    # a and b now clash
    entered, go = threading.Event(), threading.Event()
    evicted = []

    def slow_evict(conn, ns, name, uid=None):
        entered.set()
        go.wait(10)
        evicted.append(name)
        return Eviction("evicted", "", None)
    monkeypatch.setattr(evictmod, "evict", slow_evict)
    poll.fail = True
    ticking = threading.Thread(target=c.tick)
    ticking.start()
    assert entered.wait(10)
    ended.set()
    down = threading.Thread(target=c.stand_down)
    down.start()
    down.join(0.2)
    assert down.is_alive()                  # the eviction is still being sent
    go.set()
    down.join(10)
    ticking.join(10)
    assert not down.is_alive() and evicted == ["b"] and c.term.stale
    assert calls["events"] == []            # the Event after it was not sent: term over


def test_what_the_controller_remembers_does_not_grow_with_pod_churn(world):
    """Pods with a bad annotation (an Event each), violators a PDB blocks (a retry time
    each) and pods stuck Terminating come and go: the per-pod memos stay small."""
    c, poll, nodes, pods, calls, now, outcome = world
    outcome["now"] = Eviction("blocked", "The disruption budget web needs 2 healthy pods", None)
    nodes.objs[("", "w1")]["metadata"]["labels"]["CIS-node"] = "h2"
    sizes = []
    for i in range(200):
        bad = bare("bad-%d" % i, "w3", rule="{")
        clash = [bare("c%d-%s" % (i, s), "w1", labels={"app": "web"}, rule=ANTI,
                      created="2026-01-01T00:%02d:%02dZ" % (i // 60, i % 60)) for s in "ab"]
        for p in [bad] + clash:
            pods.objs[("default", p["metadata"]["name"])] = p
        now[0] += 11
        c.tick()
        for p in [bad] + clash:
            del pods.objs[("default", p["metadata"]["name"])]
        e = c.enforcement
        sizes.append((len(c.events.reported), len(e.rules.parsed), len(e.blocked_until),
                      len(e.stuck), len(e.forgiveness._since)))
    assert len([e for e in calls["events"] if e[1] == "RequiredDuringExecutionInvalid"]) == 200
    assert len([e for e in calls["events"] if e[1] == "EvictionBlocked"]) >= 100
    assert max(max(s) for s in sizes[-50:]) <= 8, sizes[-1]


def object_errors(c, kind):
    return sum(s.value for m in c.metrics.object_errors.collect() for s in m.samples
               if s.name.endswith("_total") and s.labels["kind"] == kind)


def test_a_pod_or_node_that_cannot_be_read_is_skipped_and_the_tick_goes_on(world, caplog):
    c, poll, nodes, pods, calls, now, _ = world
    pods.objs[("default", "odd")] = {"metadata": {"namespace": "default", "name": "odd",
                                                  "uid": "u-odd", "labels": ["x"]},
                                     "spec": {"nodeName": "w1"}, "status": "Running"}
    pods.objs[("default", "nameless")] = {"metadata": {"uid": "u-nameless"}}
    nodes.objs[("", "w9")] = {"metadata": {"uid": "u-w9", "labels": {"CIS-node": "h9"}}}
    poll.states = [State("1", "h1"), State("2", "h2")]
    c.tick()
    nodes.objs[("", "w1")]["metadata"]["labels"]["CIS-node"] = "h2"
    now[0] += 11
    with caplog.at_level(logging.ERROR, logger="test.controller"):
        c.tick()
    assert len(calls["evict"]) == 1             # a violator, despite the others
    assert object_errors(c, "pod") >= 2 and object_errors(c, "node") >= 1
    assert any(r == "HwaffinityControllerError" and name == "odd"
               for name, r, _m in calls["events"])


def test_a_bug_ends_the_tick_not_the_loop(world, monkeypatch):
    c, poll, nodes, pods, calls, now, _ = world
    monkeypatch.setattr(c.enforcement, "enforce", lambda *a: 1 / 0)
    c.tick()
    assert object_errors(c, "tick") == 1



def test_a_parser_bug_is_counted_and_logged_not_blamed_on_the_pod(world, monkeypatch, caplog):
    """Only an InputError is an invalid annotation (an Event on the pod); another
    exception of the parser is a bug: logged with its traceback and counted once per
    annotation text, no Event blames the pod, and the tick goes on."""
    c, poll, nodes, pods, calls, now, _ = world

    def broken(text):
        raise RuntimeError("parser bug")
    monkeypatch.setattr(rules.Rules, "parse", staticmethod(broken))
    poll.states = [State("1", "h1")]
    with caplog.at_level(logging.ERROR, logger="test.controller"):
        c.tick()
        now[0] += 11
        c.tick()
    assert not [e for e in calls["events"] if e[1] == "RequiredDuringExecutionInvalid"]
    assert c.metrics.object_errors.labels("pod", "RuntimeError")._value.get() == 2  # a, b
    assert any("parser bug" in r.getMessage() and r.exc_info for r in caplog.records)
    assert object_errors(c, "tick") == 0


def test_an_exposure_failure_is_counted(world, monkeypatch):
    c, poll, nodes, pods, calls, now, _ = world

    class Broken:
        key = "CIS-node"

        def update(self, *a):
            raise RuntimeError("audit bug")
    c.exposure = Broken()
    poll.states = [State("1", "h1")]
    c.tick()
    assert object_errors(c, "exposure") == 1 and object_errors(c, "tick") == 0
