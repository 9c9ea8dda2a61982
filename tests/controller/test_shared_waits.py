"""What the controller's evictions share, held as long as a tenant can hold it (issue #52,
doc/security.md): the wait for an evicted pod (its grace period is its owner's to set),
the eviction queue's head (a violator a PodDisruptionBudget blocks forever, a workload
whose replacements violate again) and the rebalancing plan's slots. Each test shows the
others proceed within our bound, on a fake clock; the API calls are stand-ins, as in
test_runner.py (kube.evict is tested against the real control plane)."""
import json
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from tacker_hwaffinity.controller import rebalance, runner
from tacker_hwaffinity.controller.rules import ANNOTATION
from tacker_hwaffinity.openstack.workers import MetadataWorkers
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.kube import evict as evictmod
from tacker_hwaffinity.kube import events, labels
from tacker_hwaffinity.kube.evict import Eviction
from tacker_hwaffinity.labeling import params
from tests import builders
from tests.controller.tick_world import Cache, Poll, State

YEAR_S = 365 * 24 * 3600
INTERVAL_S = 10                 # --eviction-interval


def rule(group, all_namespaces=False):
    """Anti-affinity on the node with the pods labelled g=GROUP (in any namespace when
    ALL_NAMESPACES)."""
    term = {"topologyKey": "kubernetes.io/hostname",
            "labelSelector": {"matchLabels": {"g": group}}}
    if all_namespaces:
        term["namespaceSelector"] = {}
    return json.dumps({"podAntiAffinity": [term]})


def violator(ns, name, node, group, created, grace=None, all_namespaces=False):
    spec = {} if grace is None else {"terminationGracePeriodSeconds": grace}
    return builders.pod(name, {"g": group}, ns=ns, on=node, phase="Running",
                        uid="u-%s-%s" % (ns, name), created=created,
                        annotations={ANNOTATION: rule(group, all_namespaces)}, **spec)


class FakeCluster:
    """The caches, the clock and a stand-in API server and kubelet: an accepted eviction
    deletes the pod at once, unless it ignores SIGTERM (then it stays Terminating, with
    its grace period as deletionGracePeriodSeconds); BLOCKED: pod keys a budget blocks;
    LAGGING: the caches do not show what an eviction did."""

    def __init__(self, monkeypatch, eviction_interval=INTERVAL_S):
        self.now, self.evicted, self.events = 0.0, [], []
        self.ignores_sigterm, self.blocked, self.lagging = set(), set(), False
        self.nodes = Cache([builders.node(n, {"kubernetes.io/hostname": n}, uid="u-" + n)
                            for n in ("w1", "w2", "w3")])
        self.pods = Cache([])
        monkeypatch.setattr(evictmod, "evict", self.evict)
        monkeypatch.setattr(events, "record_event",
                            lambda conn, obj, kind, reason, msg, comp: self.events.append(
                                (obj["metadata"]["name"], reason, msg)))
        settings = runner.Settings(params.parse({})["hwaffinity"],
                                   MetadataWorkers({"cluster": "c1"}), poll_interval=30,
                                   grace=60, eviction_interval=eviction_interval)
        self.controller = runner.Controller(None, Poll(), settings, self.nodes, self.pods,
                                            runner.Metrics(CollectorRegistry()),
                                            log=logging.getLogger("test.shared"),
                                            clock=lambda: self.now)

    def add(self, *objs):
        for obj in objs:
            self.pods.objs[(obj["metadata"]["namespace"], obj["metadata"]["name"])] = obj

    def evict(self, conn, ns, name, uid=None):
        key = "%s/%s" % (ns, name)
        self.evicted.append((self.now, key))
        if key in self.blocked:
            return Eviction("blocked", "The disruption budget needs 2 healthy pods", None)
        obj = self.pods.objs[(ns, name)]
        if self.lagging:                        # the watch has not brought it yet
            return Eviction("evicted", "", None)
        if key in self.ignores_sigterm:
            obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
            obj["metadata"]["deletionGracePeriodSeconds"] = \
                obj["spec"].get("terminationGracePeriodSeconds", 30)
        else:
            del self.pods.objs[(ns, name)]
        return Eviction("evicted", "", None)

    def run_until(self, end, step=1.0):
        while self.now < end:
            self.controller.tick()
            self.now += step

    def first_eviction(self, key):
        return next((t for t, k in self.evicted if k == key), None)


@pytest.fixture
def cluster(monkeypatch):
    return FakeCluster(monkeypatch)


def test_a_one_year_grace_period_holds_only_its_own_namespace_and_only_for_our_limit(
        cluster):
    """Tenant hog's pod ignores SIGTERM under a one-year grace period, and is evicted first
    (the newest violator). The other tenants' violators go at once, one per eviction
    interval; hog's next violator waits min(one year, --max-termination-wait 600 s) + the
    30 s margin, the whole of it and no longer; then the stuck pod gets its Warning."""
    cluster.add(violator("hog", "h-old", "w1", "hog", "2026-01-02T00:00:00Z"),
                violator("hog", "h-mid", "w1", "hog", "2026-01-02T00:00:01Z"),
                violator("hog", "h-new", "w1", "hog", "2026-01-02T00:00:02Z", grace=YEAR_S))
    tenants = ["t%d" % i for i in range(3)]
    for t in tenants:
        cluster.add(violator(t, "a", "w2", t, "2026-01-01T00:00:00Z"),
                    violator(t, "b", "w2", t, "2026-01-01T00:00:01Z"))
    cluster.ignores_sigterm.add("hog/h-new")
    limit = 600 + 30
    cluster.run_until(limit + 2 * INTERVAL_S)
    assert cluster.evicted[0] == (0.0, "hog/h-new")
    for i, t in enumerate(tenants):             # a turn each, one eviction interval apart
        assert cluster.first_eviction(t + "/b") == (i + 1) * INTERVAL_S
    (_, second), = [(t, k) for t, k in cluster.evicted[1:] if k.startswith("hog/")]
    assert second == "hog/h-mid"
    assert limit < cluster.first_eviction("hog/h-mid") <= limit + 1      # held to the end
    (stuck,) = [e for e in cluster.events if e[1] == "EvictionStuck"]
    assert stuck[0] == "h-new"
    assert "grace period %d s, capped at 600 s, + 30 s" % YEAR_S in stuck[2]
    assert [k for _, k in cluster.evicted].count("hog/h-new") == 1       # never again
    assert cluster.controller.metrics.stuck._value.get() == 1
    s = cluster.controller.s                # the defaults the limit above is made of
    assert (s.max_termination_wait, s.termination_margin) == (600, 30)


def test_the_cap_is_a_setting_and_a_short_grace_period_is_waited_for_as_before(cluster):
    """--max-termination-wait 60: a pod with a one-year grace period is waited for 60 s +
    the margin; one with 5 s, 5 s + the margin (the cap never lengthens a wait)."""
    cluster.controller.s.max_termination_wait = 60
    for ns, grace in (("long", YEAR_S), ("short", 5)):
        cluster.add(violator(ns, "old", "w1", ns, "2026-01-01T00:00:00Z"),
                    violator(ns, "mid", "w1", ns, "2026-01-01T00:00:01Z"),
                    violator(ns, "new", "w1", ns, "2026-01-01T00:00:02Z", grace=grace))
        cluster.ignores_sigterm.add(ns + "/new")
    cluster.run_until(200)
    start = {ns: cluster.first_eviction(ns + "/new") for ns in ("long", "short")}
    assert start == {"long": 0, "short": INTERVAL_S}
    assert 90 < cluster.first_eviction("long/mid") - start["long"] <= 91
    assert 35 < cluster.first_eviction("short/mid") - start["short"] <= 36


def test_a_violator_a_budget_blocks_forever_does_not_keep_the_others_from_their_turn(
        cluster):
    """Tenant a's violators are blocked by their budget at every attempt (the server sends
    no retryAfterSeconds: retried after the eviction interval); tenant b's violator still
    gets its turn, and the blocked one keeps its EvictionBlocked Event and its retries.
    Within tenant a the seed's order holds: its first violator is retried, not passed over
    for another replica (the e2e test of a budget on a live-migrated worker needs that)."""
    cluster.add(violator("a", "x", "w1", "a", "2026-01-02T00:00:00Z"),
                violator("a", "y", "w1", "a", "2026-01-02T00:00:01Z"),
                violator("b", "p", "w2", "b", "2026-01-01T00:00:00Z"),
                violator("b", "q", "w2", "b", "2026-01-01T00:00:01Z"))
    cluster.blocked.update({"a/x", "a/y"})
    cluster.run_until(6 * INTERVAL_S + 1)
    assert cluster.first_eviction("a/y") == 0               # the seed's first
    assert cluster.first_eviction("b/q") == INTERVAL_S      # then tenant b's turn
    assert cluster.first_eviction("a/x") is None            # a's order: y, retried
    assert [k for _, k in cluster.evicted].count("a/y") >= 2    # and a retry
    assert {e[0] for e in cluster.events if e[1] == "EvictionBlocked"} == {"y"}


def test_a_workload_whose_replacements_violate_again_takes_turns_with_the_others(
        cluster, monkeypatch):
    """Tenant loop's replacement is created at once and violates again (the newest, so
    first in the seed's order every time): tenant b's older violator still gets the next
    turn."""
    cluster.add(violator("loop", "r0", "w1", "loop", "2026-01-02T00:00:00Z"),
                violator("loop", "r1", "w1", "loop", "2026-01-02T00:00:01Z"),
                violator("b", "p", "w2", "b", "2026-01-01T00:00:00Z"),
                violator("b", "q", "w2", "b", "2026-01-01T00:00:01Z"))
    evict = cluster.evict

    def replaced(conn, ns, name, uid=None):
        result = evict(conn, ns, name, uid)
        if ns == "loop":
            n = len(cluster.evicted)
            cluster.add(violator("loop", "r%d" % (n + 1), "w1", "loop",
                                 "2026-01-02T00:%02d:00Z" % n))
        return result
    monkeypatch.setattr(evictmod, "evict", replaced)
    cluster.run_until(3 * INTERVAL_S + 1)
    assert cluster.evicted[0] == (0.0, "loop/r1")
    assert cluster.first_eviction("b/q") == INTERVAL_S


def test_a_pod_whose_eviction_was_accepted_counts_against_no_one_before_the_watch_says_so(
        monkeypatch):
    """Two tenants' pods clash across namespaces; once the first is evicted, the second is
    not evicted too, even with no eviction interval and a watch that has not brought the
    first pod's deletion yet."""
    cluster = FakeCluster(monkeypatch, eviction_interval=0)
    cluster.add(violator("a", "x", "w1", "clash", "2026-01-01T00:00:01Z",
                         all_namespaces=True),
                violator("b", "y", "w1", "clash", "2026-01-01T00:00:00Z",
                         all_namespaces=True))
    cluster.lagging = True
    cluster.run_until(5)
    assert cluster.evicted == [(0.0, "a/x")]
    assert cluster.controller.metrics.violations._value.get() == 0


def test_a_namespace_flooding_events_delays_the_tick_by_a_few_requests_only(
        cluster, monkeypatch):
    """Tenant flood's hundred new pods each earn an Event (a bad annotation), each an API
    request inside the tick: tenant b's violator is evicted in the same tick after at most
    EVENTS_PER_NAMESPACE_PER_TICK of them; the others are sent at the next ticks."""
    budget = 10                             # a namespace's Events a tick
    bad = [builders.pod("bad-%03d" % i, ns="flood", on="w3", phase="Running",
                        uid="u-bad-%d" % i, annotations={ANNOTATION: "{"})
           for i in range(100)]
    cluster.add(*bad)
    cluster.add(violator("b", "p", "w2", "b", "2026-01-01T00:00:00Z"),
                violator("b", "q", "w2", "b", "2026-01-01T00:00:01Z"))
    evict, before = cluster.evict, []

    def counted(conn, ns, name, uid=None):
        before.append(len(cluster.events))
        return evict(conn, ns, name, uid)
    monkeypatch.setattr(evictmod, "evict", counted)
    cluster.controller.tick()
    assert before == [budget]
    cluster.run_until(100 // budget)
    invalid = [e[0] for e in cluster.events if e[1] == "RequiredDuringExecutionInvalid"]
    assert sorted(invalid) == sorted(p["metadata"]["name"] for p in bad)   # once each
    from tacker_hwaffinity.controller import events as eventlog
    assert eventlog.EVENTS_PER_NAMESPACE_PER_TICK == budget


@pytest.mark.parametrize("value", ["-1", "inf", "nan"])
def test_the_wait_flags_take_a_finite_number_of_seconds_only(value):
    from tests.controller.test_host_id_labels import _config
    for flag in ("--max-termination-wait", "--termination-margin"):
        with pytest.raises(InputError, match="field %s: must be 0 or more seconds, and "
                                             "finite, got" % flag):
            _config([flag, value])
    assert _config(["--max-termination-wait", "60"]).max_termination_wait == 60
    assert _config([]).max_termination_wait == runner.MAX_TERMINATION_WAIT_S == 600


TENANT = st.tuples(st.integers(2, 3), st.sets(st.integers(0, 2)),
                   st.sets(st.integers(0, 2)), st.sampled_from([5, 3600, YEAR_S]))


@given(st.lists(TENANT, min_size=1, max_size=4))
def test_every_namespace_gets_its_turn_within_one_round_whatever_the_others_hold(tenants):
    """Any tenants, each with 2-3 violators of which any are blocked by their budget
    forever and any ignore SIGTERM under any grace period: each namespace's first
    eviction attempt comes within one round (one eviction interval per namespace), and
    none is attempted twice before every namespace had its first."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        cluster = FakeCluster(monkeypatch)
        for t, (count, blocked, stubborn, grace) in enumerate(tenants):
            ns = "t%d" % t
            for i in range(count):
                cluster.add(violator(ns, "p%d" % i, "w1", ns, "2026-01-0%dT00:00:0%d"
                                     % (1 + t % 3, i), grace=grace))
                if i in blocked:
                    cluster.blocked.add("%s/p%d" % (ns, i))
                if i in stubborn:
                    cluster.ignores_sigterm.add("%s/p%d" % (ns, i))
        cluster.run_until(len(tenants) * INTERVAL_S + 1, step=INTERVAL_S / 2)
    first = {}
    for t, key in cluster.evicted:
        first.setdefault(key.partition("/")[0], t)
    assert sorted(first.values()) == [i * INTERVAL_S for i in range(len(tenants))]


def wide(ns, name, node, terms, created):
    """A pod labelled g=NS whose annotation has TERMS anti-affinity terms, the last one
    selecting g=NS (its neighbours)."""
    text = json.dumps({"podAntiAffinity": [
        {"topologyKey": "kubernetes.io/hostname",
         "labelSelector": {"matchLabels": {"g": ns if i == terms - 1 else "x%d" % i}}}
        for i in range(terms)]})
    return builders.pod(name, {"g": ns}, ns=ns, on=node, phase="Running",
                        uid="u-%s-%s" % (ns, name), created=created,
                        annotations={ANNOTATION: text})


def test_a_pod_with_more_terms_than_our_limit_is_invalid_not_judged_at_every_tick(
        cluster):
    """Each pod term is judged against every running pod at every tick (2,500 terms made
    each tick take 28 s with 5,000 pods): a pod with 33 gets a RequiredDuringExecutionInvalid
    Event and is judged without rules; one with 32 is enforced."""
    limit = 32
    for ns, terms, node in (("over", limit + 1, "w1"), ("at", limit, "w2")):
        cluster.add(wide(ns, "a", node, terms, "2026-01-01T00:00:01Z"),
                    builders.pod("b", {"g": ns}, ns=ns, on=node, phase="Running",
                                 uid="u-%s-b" % ns))
    cluster.run_until(3 * INTERVAL_S)
    assert [k for _, k in cluster.evicted] == ["at/a"]
    (invalid,) = [e for e in cluster.events if e[1] == "RequiredDuringExecutionInvalid"]
    assert invalid[0] == "a" and "33 podAffinity and podAntiAffinity terms, over the " \
        "controller's limit of 32" in invalid[2]
    from tacker_hwaffinity.controller import rules
    assert rules.MAX_POD_TERMS == limit


def test_another_projects_vm_creations_do_not_make_every_tick_a_nova_poll(cluster):
    """Any project's instance.create.end may concern a worker-to-be, so each asks for a
    poll (and the exposure audit after it); a tenant creating ten VMs a second gets one
    poll per MIN_POLL_GAP_S (5 s), not one per tick."""
    c, polls = cluster.controller, []
    c.hosts.poll_nova.poll = lambda: polls.append(cluster.now) or []
    vm = 0
    while cluster.now < 60:
        for _ in range(10):
            vm += 1
            c.notified("instance.create.end", "tenant-vm-%d" % vm)
        c.tick()
        cluster.now += 1
    assert polls == [5.0 * i for i in range(12)]


# -- the rebalancing plan's slots: one workload the server never lets move --

def replica(app, name, node_name, created):
    anti = builders.affinity(req_anti=[builders.term("CIS-node", {"app": app})])
    return builders.pod(name, {"app": app}, on=node_name, phase="Running", uid="u-" + name,
                        created=created, affinity=anti, owner=("ReplicaSet", app),
                        containers=[builders.container()])


def test_a_workload_whose_evictions_the_server_always_blocks_sits_out_the_next_run(
        monkeypatch):
    """Two workloads colocated by one migration, one rebalancing eviction a poll: the one
    planned first is blocked by the server at every attempt (a budget the controller
    cannot read); the other is moved at the next poll, not never."""
    nodes = Cache([builders.node(n, {"CIS-node": h}, ip=ip, uid="u-" + n,
                                 alloc={"cpu": "8", "memory": "16Gi", "pods": "110"})
                   for n, ip, h in (("w1", "10.0.0.1", "h1"), ("w2", "10.0.0.2", "h2"),
                                    ("w3", "10.0.0.3", "h3"))])
    pods = Cache([replica(app, "%s-%s" % (app, n), n, "2026-01-01T00:00:0%d" % i)
                  for app in ("web", "db") for i, n in enumerate(("w1", "w2"))])
    monkeypatch.setattr(labels, "apply_node_labels",
                        lambda conn, name, new, uid=None:
                        nodes.objs[("", name)]["metadata"]["labels"].update(new))
    monkeypatch.setattr(events, "record_event", lambda *a: None)
    attempts = []

    def evict(conn, ns, name, uid=None, dry_run=False):
        attempts.append(name)
        if name.split("-")[0] == attempts[0].split("-")[0]:     # the first workload's
            return Eviction("blocked", "Cannot evict pod as it would violate the pod's "
                                       "disruption budget.", None)
        del pods.objs[(ns, name)]
        return Eviction("evicted", "", None)
    monkeypatch.setattr(evictmod, "evict", evict)
    registry, poll, now = CollectorRegistry(), Poll(), [0.0]
    settings = runner.Settings(params.parse({})["hwaffinity"],
                               MetadataWorkers({"cluster": "c1"}), poll_interval=30)
    c = runner.Controller(None, poll, settings, nodes, pods, runner.Metrics(registry),
                          log=logging.getLogger("test.shared"), clock=lambda: now[0],
                          rebalance=rebalance.RebalanceInputs(
                              "CIS-node", 1, (), Cache([]),
                              rebalance.RebalanceMetrics(registry)))
    poll.states = [State("1", "h1"), State("2", "h2"), State("3", "h3")]
    c.tick()
    for _ in range(3):                      # w1's VM settles on h2: both workloads clash
        poll.states = [State("1", "h2")]
        now[0] += 30
        c.tick()
    blocked = attempts[0].split("-")[0]
    moved = [a for a in attempts if not a.startswith(blocked)]
    assert len(moved) == 1 and attempts.index(moved[0]) == 1, attempts
    assert attempts[2].startswith(blocked)  # and its retry comes after
