"""ClusterState.unbind/restore and prime_counts, which the audit's intent check uses."""
from tacker_hwaffinity.audit import intent
from tacker_hwaffinity.scheduling.plugins.interpod import InterPodAffinity
from tacker_hwaffinity.scheduling.framework import Cycle
from tacker_hwaffinity.scheduling.snapshot import cluster_from_objects

from tests.audit.helpers import anti, node, pod


def _state():
    objs = [node("w1", "h1"), node("w2", "h1"), node("w3", "h2")]
    objs += [pod("a-%d" % i, n, {"app": "a"}, ("StatefulSet", "a"), affinity=anti("a"))
             for i, n in enumerate(["w1", "w2", "w3"])]
    snap = cluster_from_objects([(o, "t") for o in objs])
    return snap, snap.state()


def _codes(state, p):
    r = InterPodAffinity().filter(Cycle(state, p))
    return None if r is None else [int(c) for c in r.codes]


def test_unbind_takes_the_pod_out_and_restore_puts_it_back():
    snap, state = _state()
    p0 = snap.pods[0]
    before = _codes(state, p0)
    assert before == [2, 2, 2]          # its own anti-affinity meets a pod on every host
    state.unbind(p0, 0)
    assert _codes(state, p0) == [2, 2, 2]   # a-1 (h1) and a-2 (h2) are still there
    state.unbind(snap.pods[1], 1)
    assert _codes(state, p0) == [0, 0, 2]   # h1 is free without a-0 and a-1
    state.restore(snap.pods[1], 1)
    state.restore(p0, 0)
    assert _codes(state, p0) == before


def test_primed_counts_equal_scanned_counts():
    snap, state = _state()
    judge = intent.judge_pod(snap.pods[0], "CIS-node", {})
    primed = state
    intent.prime(primed, intent.label_index(primed), judge)
    _snap2, scanned = _state()
    (k1,) = primed._counts
    assert not scanned._counts       # created by the filter's own scan below
    InterPodAffinity().filter(Cycle(scanned, judge))
    assert list(primed._counts[k1].counts) == list(scanned._counts[k1].counts)


# --- property: the audit's shortcuts (label index, primed counts found by class,
# filter_own) give the verdicts the plain filters give on a fresh scan ------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

from tacker_hwaffinity.scheduling.plugins.topologyspread import PodTopologySpread  # noqa: E402

_APPS = ("a", "b", "c")


def _term(app, tier):
    sel = {"matchLabels": {"app": app}}
    if tier is not None:
        sel = {"matchExpressions": [{"key": "tier", "operator": "In", "values": [tier]}]}
    return {"labelSelector": sel, "topologyKey": "CIS-node"}


@st.composite
def _clusters(draw):
    n_nodes = draw(st.integers(2, 6))
    objs = [node("w%d" % i, draw(st.sampled_from(["h1", "h2", "h3", None])))
            for i in range(n_nodes)]
    for i in range(draw(st.integers(1, 12))):
        app = draw(st.sampled_from(_APPS))
        tier = draw(st.sampled_from([None, "x", "y"]))
        labels = {"app": app} if tier is None else {"app": app, "tier": tier}
        affinity = spread = None
        kind = draw(st.sampled_from(["anti", "pref", "spread", "none"]))
        if kind in ("anti", "pref"):
            t = _term(draw(st.sampled_from(_APPS)), draw(st.sampled_from([None, "x"])))
            affinity = {"podAntiAffinity": (
                {"requiredDuringSchedulingIgnoredDuringExecution": [t]} if kind == "anti"
                else {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 5, "podAffinityTerm": t}]})}
        elif kind == "spread":
            spread = [{"maxSkew": draw(st.integers(1, 2)), "topologyKey": "CIS-node",
                       "whenUnsatisfiable": "DoNotSchedule",
                       "labelSelector": {"matchLabels": {"app": app}}}]
        objs.append(pod("p%d" % i, "w%d" % draw(st.integers(0, n_nodes - 1)), labels,
                        affinity=affinity, spread=spread))
    order = draw(st.permutations(range(len(objs) - n_nodes)))
    return objs, order


def _plain_verdict(objs, k):
    """Pod K judged on a fresh state built without it, by the plain filters."""
    snap = cluster_from_objects([(o, "t") for o in objs])
    state = snap.state()
    p, i = snap.pods[k], state.index[snap.pods[k].node_name]
    judge = intent.judge_pod(p, "CIS-node", {})
    state.unbind(p, i)
    cycle = Cycle(state, judge)
    out = []
    r = InterPodAffinity().filter(cycle)
    if r is not None and int(r.codes[i]) in (1, 2):
        out.extend(r.reasons(i))
    r = PodTopologySpread().filter(cycle)
    if r is not None and r.failed[i]:
        out.extend(r.reasons(i))
    return out


@settings(max_examples=150, deadline=None)
@given(_clusters())
def test_indexed_verdicts_equal_plain_filters(cluster):
    objs, order = cluster
    snap = cluster_from_objects([(o, "t") for o in objs])
    state = snap.state()
    index = intent.label_index(state)
    for k in order:   # one shared state, judged in a random order, as audit does
        p = snap.pods[k]
        got = intent.verdict(state, p, state.index[p.node_name], "CIS-node", index)
        assert got == _plain_verdict(objs, k), (k, p.name)
