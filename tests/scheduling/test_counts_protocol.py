"""The seams of the one inter-pod evaluator: each counts view serves ``CountsView``, and
the engine, the extender's cache and the controller share one node table."""
import inspect

import numpy as np
import pytest

from tacker_hwaffinity.controller import rules
from tacker_hwaffinity.scheduling import counts
from tacker_hwaffinity.scheduling.framework import Cycle
from tacker_hwaffinity.scheduling.labelindex import LabelIndex
from tacker_hwaffinity.scheduling.nodetable import NodeTable
from tacker_hwaffinity.scheduling.plugins import interpod
from tacker_hwaffinity.scheduling.selectors import parse_label_selector
from tacker_hwaffinity.scheduling.snapshot import cluster_from_objects
from tacker_hwaffinity.webhook import extender
from tacker_hwaffinity.webhook.podcache import PodCache
from tests.builders import node, pod

NODES = [node("n1", {"zone": "a"}), node("n2", {"zone": "b"}), node("n3")]
PODS = [pod("p1", {"app": "db"}, on="n1"), pod("p2", {"app": "web"}, on="n2")]
MEMBERS = ("domain_ids", "matching_counts", "selecting_groups", "selects_itself")


def _engine_view():
    snap = cluster_from_objects([(o, "t") for o in NODES + PODS])
    state = snap.state()
    return interpod.StateView(Cycle(state, snap.pods[0])), state


def _extender_view():
    cache = PodCache()
    cache.sync_nodes(NODES)
    cache.sync_pods(PODS)
    reads = cache.reader()
    rec = reads.describe_pod(PODS[0])
    return extender._View(reads, rec, ["n1", "n2", "n3"], extender._LastNodes()), cache


def _controller_view():
    cluster = rules.Cluster({"n1": {"zone": "a"}, "n2": {"zone": "b"}, "n3": {}},
                            [rules.RunningPod("default", "p1", {"app": "db"}, "n1")])
    return rules._Judged(cluster, cluster.pods[0]), cluster


VIEWS = {"engine": _engine_view, "extender": _extender_view, "controller": _controller_view}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_each_counts_view_serves_the_protocol(name):
    view, _ = VIEWS[name]()
    assert isinstance(view, counts.CountsView)
    for member in MEMBERS:   # the same parameters as declared, not only the names
        declared = list(inspect.signature(getattr(counts.CountsView, member)).parameters)
        assert list(inspect.signature(getattr(type(view), member)).parameters) == declared


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_each_counts_view_reads_the_shared_node_table(name):
    view, owner = VIEWS[name]()
    table = owner.reader().node_table() if name == "extender" else owner.table
    assert isinstance(table, NodeTable)
    assert table.domains("zone") is table.domains("zone")       # computed once
    ids = view.domain_ids("zone")
    assert isinstance(ids, np.ndarray) and len(ids) == view.size


def test_the_node_table_is_the_one_domains():
    table = NodeTable(cluster_from_objects([(o, "t") for o in NODES]).nodes)
    d = table.domains("zone")
    assert table.index == {"n1": 0, "n2": 1, "n3": 2} and len(table) == 3
    assert d.values == ["a", "b"] and d.ids.tolist() == [0, 1, -1]


def test_label_index_candidates_hold_every_match_and_forget_what_is_discarded():
    idx = LabelIndex()
    for i, labels in enumerate([{"app": "db", "tier": "1"}, {"app": "web", "tier": "2"},
                                {"app": "db"}]):
        idx.add(i, labels)

    def cands(expr):
        sets = idx.candidates(parse_label_selector(expr, "selector"))
        return None if sets is None else set().union(*sets)

    assert cands({"matchLabels": {"app": "db"}}) == {0, 2}
    assert cands({"matchLabels": {"app": "db", "tier": "1"}}) == {0}   # the smaller set
    assert cands({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}) == {0, 1}
    assert cands({"matchExpressions": [{"key": "tier", "operator": "Gt",
                                        "values": ["1"]}]}) == {1}
    assert cands({"matchExpressions": [{"key": "app", "operator": "NotIn",
                                        "values": ["db"]}]}) is None
    idx.discard(0, {"app": "db", "tier": "1"})
    assert cands({"matchLabels": {"tier": "1"}}) == set() and len(idx) == 2
    assert "1" not in idx.labels["tier"]
