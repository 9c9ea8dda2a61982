"""percentageOfNodesToScore: upstream's numFeasibleNodesToFind, the
configuration fields, and the note plan/explain give when it matters."""
import pytest

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling import sampling
from tacker_hwaffinity.scheduling.profile import Profile

from tests.builders import affinity, node, pod, term
from .helpers import config, plan, run


# upstream TestNumFeasibleNodesToFind (pkg/scheduler/schedule_one_test.go)
@pytest.mark.parametrize("percentage, nodes, expected", [
    (None, 10, 10),        # fewer than 100 nodes: all of them
    (40, 10, 10),
    (None, 1000, 420),     # adaptive: 50 - 1000/125 = 42 %
    (40, 1000, 400),
    (None, 6000, 300),     # adaptive floor: 5 %
    (40, 6000, 2400),
    (0, 1000, 420),        # 0 means adaptive
    (1, 1000, 100),        # never fewer than 100
    (100, 5000, 5000),
    (None, 99, 99),
    (None, 100, 100),
])
def test_num_feasible_nodes_to_find(percentage, nodes, expected):
    assert sampling.num_feasible_nodes_to_find(percentage, nodes) == expected


def _cfg(top=None, profile=None):
    cfg = config()
    if top is not None:
        cfg["percentageOfNodesToScore"] = top
    if profile is not None:
        cfg["profiles"][0]["percentageOfNodesToScore"] = profile
    return cfg


def test_the_profile_value_wins_over_the_top_level_one():
    assert Profile(_cfg(top=40)).percentage_of_nodes_to_score == 40
    assert Profile(_cfg(top=40, profile=70)).percentage_of_nodes_to_score == 70
    assert Profile(_cfg(top=40, profile=0)).percentage_of_nodes_to_score == 0
    assert Profile(_cfg()).percentage_of_nodes_to_score is None


@pytest.mark.parametrize("where, value", [("top", 101), ("top", -1), ("profile", "50"),
                                          ("profile", True), ("profile", 100.5)])
def test_out_of_range_values_are_bad_input(where, value):
    cfg = _cfg(top=value) if where == "top" else _cfg(profile=value)
    with pytest.raises(InputError) as e:
        Profile(cfg, "s.yaml")
    field = ("percentageOfNodesToScore" if where == "top"
             else "profiles[0].percentageOfNodesToScore")
    assert "field %s: not in valid range [0-100]" % field in str(e.value)
    assert str(e.value).startswith("s.yaml: KubeSchedulerConfiguration")


NODES = [node("n%03d" % i, {"kubernetes.io/hostname": "n%03d" % i, "CIS-node": "c%d" % (i % 4)})
         for i in range(200)]


def _deployment(replicas, aff=None):
    spec = {"containers": [{"name": "c", "image": "x"}]}
    if aff:
        spec["affinity"] = aff
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "d"}},
                     "template": {"metadata": {"labels": {"app": "d"}}, "spec": spec}}}


def test_plan_notes_the_sample_when_more_nodes_are_feasible_than_scored():
    p = plan(NODES, [_deployment(3)])
    assert p.complete
    notes = [n for n in p.notes if "percentageOfNodesToScore" in n]
    assert len(notes) == 1
    assert "first 100 feasible of the 200 nodes" in notes[0]
    assert "adaptive: 49%" in notes[0] and "3 pod(s)" in notes[0]
    assert "Exact regardless: whether each pod fits" in notes[0]


def test_no_note_when_the_sample_covers_every_feasible_node():
    assert not [n for n in plan(NODES[:99], [_deployment(3)]).notes
                if "percentageOfNodesToScore" in n]
    # 200 nodes, but required node affinity leaves 50 feasible: all are scored
    only_c0 = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "CIS-node", "operator": "In", "values": ["c0"]}]}]}}}
    assert not [n for n in plan(NODES, [_deployment(3, only_c0)]).notes
                if "percentageOfNodesToScore" in n]
    # 100 % scores everything
    assert not [n for n in plan(NODES, [_deployment(3)], cfg=_cfg(top=100)).notes
                if "percentageOfNodesToScore" in n]


def test_the_note_counts_only_the_pods_it_concerns():
    anti = affinity(req_anti=[term("CIS-node", {"app": "d"})])
    # required anti-affinity on 4 hosts: the first pod sees 200 feasible nodes,
    # the second 150, then 100 and 50: two pods exceed the sample of 100
    p = plan(NODES, [_deployment(4, anti)])
    assert [x.domain for x in p.placements if x.node] and p.complete
    note = [n for n in p.notes if "percentageOfNodesToScore" in n][0]
    assert "2 pod(s)" in note


def test_explain_notes_the_sample_too():
    result = run(NODES, pod("p", {"app": "x"}))
    assert any("first 100 feasible of the 200 nodes" in n for n in result[None]["notes"])
    result = run(NODES[:50], pod("p", {"app": "x"}))
    assert not any("percentageOfNodesToScore" in n for n in result[None]["notes"])
