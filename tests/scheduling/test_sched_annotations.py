"""plan/explain honour the two term annotations as the extender and webhook apply them."""
import json

import pytest

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling import annotations
from tacker_hwaffinity.scheduling.plugins.interpod import ERR_AFFINITY, ERR_ANTI
from tacker_hwaffinity.scheduling.plugins.nodeaffinity import ERR_POD

from tests.builders import affinity, node, pod, term
from .helpers import feasible, plan, run

K = "CIS-node"
NODES = [node("n1", {K: "h1", "rack": "r1"}), node("n2", {K: "h2", "rack": "r1"}),
         node("n3", {K: "h3", "rack": "r2"})]
EXISTING = [pod("v2", {"version": "2"}, on="n1"), pod("v5", {"version": "5"}, on="n2")]
GT3 = term(K, exprs=[{"key": "version", "operator": "Gt", "values": ["3"]}])


def annotated(name, labels=None, **ann):
    p = pod(name, labels)
    p["metadata"]["annotations"] = {
        k.replace("_", "-").replace("hwaffinity-io-", "hwaffinity.io/"): json.dumps(v)
        for k, v in ann.items()}
    return p


def test_pod_affinity_annotation_equals_the_same_terms_in_the_spec():
    in_spec = pod("x", affinity=affinity(req_aff=[GT3]))
    in_ann = annotated("x", hwaffinity_io_pod_affinity=affinity(req_aff=[GT3]))
    assert feasible(run(NODES, in_spec, EXISTING)) == feasible(run(NODES, in_ann, EXISTING)) \
        == ["n2"]
    assert run(NODES, in_ann, EXISTING)["n1"]["reasons"] == [ERR_AFFINITY]


def test_required_during_execution_terms_apply_at_scheduling_time():
    lt3 = term(K, exprs=[{"key": "version", "operator": "Lt", "values": ["3"]}])
    incoming = annotated("x", hwaffinity_io_required_during_execution={
        "podAntiAffinity": [lt3],
        "nodeAffinity": [{"matchExpressions": [{"key": "rack", "operator": "In",
                                                "values": ["r1"]}]}]})
    r = run(NODES, incoming, EXISTING)
    assert feasible(r) == ["n2"]
    assert r["n1"]["reasons"] == [ERR_ANTI]
    assert ERR_POD in r["n3"]["reasons"]


def test_template_annotations_reach_every_replica():
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": "default"},
           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}, "annotations": {
                        annotations.POD_AFFINITY: json.dumps(affinity(req_anti=[
                            term(K, {"app": "web"})]))}},
                        "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    result = plan(NODES, [dep])
    placed = [p.node for p in result.placements]
    assert len(placed) == 2 and None not in placed and len(set(placed)) == 2
    dep["spec"]["replicas"] = 4         # three hosts: the fourth replica fits nowhere
    assert [p.node for p in plan(NODES, [dep]).placements].count(None) == 1


@pytest.mark.parametrize("name,value,field", [
    (annotations.POD_AFFINITY, "{", "metadata.annotations[hwaffinity.io/pod-affinity]"),
    (annotations.POD_AFFINITY, json.dumps({"podAffinity": {"required": []}}),
     "metadata.annotations[hwaffinity.io/pod-affinity].podAffinity"),
    (annotations.REQUIRED_DURING_EXECUTION, json.dumps({"podAntiAffinity": [{}]}),
     "metadata.annotations[hwaffinity.io/required-during-execution].podAntiAffinity[0]"),
    (annotations.REQUIRED_DURING_EXECUTION, json.dumps([]),
     "metadata.annotations[hwaffinity.io/required-during-execution]"),
])
def test_malformed_annotations_name_the_field(name, value, field):
    with pytest.raises(InputError) as e:
        annotations.scheduling_terms({name: value})
    assert e.value.field.startswith(field)
    assert annotations.malformed({name: value}).startswith("field " + field)


def test_pods_without_the_annotations_have_no_extra_terms():
    assert annotations.scheduling_terms({"other": "x"}) is None
    assert annotations.scheduling_terms(None) is None
    assert annotations.malformed({"other": "{"}) is None
