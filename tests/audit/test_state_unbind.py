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
    intent.prime(primed, intent.LabelIndex(primed), judge)
    _snap2, scanned = _state()
    (k1,) = primed._counts
    assert not scanned._counts       # created by the filter's own scan below
    InterPodAffinity().filter(Cycle(scanned, judge))
    assert list(primed._counts[k1].counts) == list(scanned._counts[k1].counts)
