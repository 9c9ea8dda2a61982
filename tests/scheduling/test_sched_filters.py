"""NodeAffinity, NodeName, NodeUnschedulable, TaintToleration and NodeResourcesFit filters."""
import pytest

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling.plugins import nodeaffinity as na

from tests.builders import affinity, node, pod
from .helpers import config, feasible, run

NODES = [node("n1", {"zone": "z1", "disk": "ssd"}), node("n2", {"zone": "z2"}),
         node("n3", {"zone": "z3", "disk": "ssd"})]


def required(*terms):
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}


def test_node_selector_and_required_affinity_are_anded():
    incoming = pod("p", nodeSelector={"disk": "ssd"}, affinity=affinity(node=required(
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2", "z3"]}]})))
    r = run(NODES, incoming)
    assert feasible(r) == ["n3"]
    assert r["n1"]["reasons"] == [na.ERR_POD]


def test_required_node_affinity_with_no_terms_matches_no_node():
    assert feasible(run(NODES, pod("p", affinity=affinity(node=required())))) == []


def test_match_fields_restrict_to_named_nodes():
    incoming = pod("p", affinity=affinity(node=required(
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]})))
    r = run(NODES, incoming)
    assert feasible(r) == ["n2"]
    assert r["n1"]["reasons"] == [na.ERR_POD]


def test_conflicting_match_fields_fail_prefilter():
    incoming = pod("p", affinity=affinity(node=required({"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n1"]},
        {"key": "metadata.name", "operator": "In", "values": ["n2"]}]})))
    r = run(NODES, incoming)
    assert feasible(r) == []
    assert r["n1"]["reasons"] == [na.ERR_CONFLICT]
    assert r[None]["summary"] == "0/3 nodes are available: pod affinity terms conflict."


def test_lazily_failing_term_never_matches_and_is_noted(tmp_path):
    incoming = pod("p", affinity=affinity(node=required(
        {"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["z"]}]},
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]})))
    assert feasible(run(NODES, incoming)) == ["n2"]


def test_added_required_affinity_is_scheduler_enforced():
    cfg = config(plugin_config=[{"name": "NodeAffinity", "args": {"addedAffinity": required(
        {"matchExpressions": [{"key": "disk", "operator": "Exists"}]})}}])
    r = run(NODES, pod("p", nodeSelector={"zone": "z1"}), cfg=cfg)
    assert feasible(r) == ["n1"]
    assert r["n2"]["reasons"] == [na.ERR_ENFORCED]
    assert r["n3"]["reasons"] == [na.ERR_POD]


def test_invalid_added_affinity_is_an_input_error():
    cfg = config(plugin_config=[{"name": "NodeAffinity", "args": {"addedAffinity": required(
        {"matchExpressions": [{"key": "zone", "operator": "Bogus"}]})}}])
    with pytest.raises(InputError) as e:
        run(NODES, pod("p"), cfg=cfg)
    assert "addedAffinity" in e.value.field


def test_invalid_preferred_node_term_is_an_input_error():
    incoming = pod("p", affinity=affinity(node={"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "Gt",
                                                          "values": ["x"]}]}}]}))
    with pytest.raises(InputError) as e:
        run(NODES, incoming)
    assert "preferredDuringSchedulingIgnoredDuringExecution[0].preference" in e.value.field


def test_node_name():
    r = run(NODES, pod("p", nodeName="n2"))
    assert feasible(r) == ["n2"]
    assert r["n1"]["reasons"] == ["node(s) didn't match the requested node name"]


def test_unschedulable_node_unless_tolerated():
    nodes = NODES[:2] + [node("n3", unschedulable=True)]
    r = run(nodes, pod("p"))
    assert r["n3"]["reasons"] == ["node(s) were unschedulable"]
    tol = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
            "effect": "NoSchedule"}]
    assert "n3" in feasible(run(nodes, pod("p", tolerations=tol)))


def test_taints_no_schedule_and_no_execute_filter_prefer_no_schedule_does_not():
    nodes = [node("a", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
             node("b", taints=[{"key": "gpu", "effect": "NoExecute"}]),
             node("c", taints=[{"key": "soft", "effect": "PreferNoSchedule"}])]
    r = run(nodes, pod("p"))
    assert feasible(r) == ["c"]
    assert r["a"]["reasons"] == ["node(s) had untolerated taint {k: v}"]
    assert r["b"]["reasons"] == ["node(s) had untolerated taint {gpu: }"]
    assert feasible(run(nodes, pod("p", tolerations=[{"key": "k", "value": "v"}]))) == ["a", "c"]
    assert feasible(run(nodes, pod("p", tolerations=[{"operator": "Exists"}]))) == ["a", "b", "c"]
    wrong_effect = [{"key": "k", "operator": "Exists", "effect": "NoExecute"}]
    assert feasible(run(nodes, pod("p", tolerations=wrong_effect))) == ["c"]


def test_resources_fit_and_reasons_in_upstream_order():
    nodes = [node("a", alloc={"cpu": "1", "memory": "1Gi", "pods": "2"}),
             node("b", alloc={"cpu": "4", "memory": "8Gi", "pods": "110"})]
    existing = [pod("e1", on="a", cpu="800m", memory="900Mi"), pod("e2", on="a")]
    r = run(nodes, pod("p", cpu="500m", memory="200Mi"), existing)
    assert feasible(r) == ["b"]
    assert r["a"]["reasons"] == ["Too many pods", "Insufficient cpu", "Insufficient memory"]


def test_pod_without_requests_is_checked_for_pod_count_only():
    nodes = [node("a", alloc={"cpu": "0", "memory": "0", "pods": "1"})]
    assert feasible(run(nodes, pod("p"))) == ["a"]
    assert feasible(run(nodes, pod("p"), [pod("e", on="a")])) == []


def test_missing_allocatable_is_not_checked():
    assert feasible(run([node("a")], pod("p", cpu="64", memory="1Ti"))) == ["a"]


def test_init_containers_and_limits_count_like_kube_scheduler():
    nodes = [node("a", alloc={"cpu": "2", "memory": "4Gi", "pods": "10"})]
    p = pod("p")
    p["spec"]["containers"] = [{"name": "c", "image": "x",
                                "resources": {"limits": {"cpu": "1500m"}}}]
    p["spec"]["initContainers"] = [{"name": "i", "image": "x",
                                    "resources": {"requests": {"cpu": "2500m"}}}]
    r = run(nodes, p)
    assert r["a"]["reasons"] == ["Insufficient cpu"]  # max(1.5 from limit, 2.5 init) > 2
    p["spec"]["initContainers"][0]["resources"]["requests"]["cpu"] = "1"
    assert feasible(run(nodes, p)) == ["a"]


def test_first_failing_plugin_is_reported_in_filter_order():
    nodes = [node("a", {"zone": "z1"}, taints=[{"key": "k", "effect": "NoSchedule"}],
                  unschedulable=True)]
    assert run(nodes, pod("p", nodeSelector={"zone": "z9"}))["a"]["reasons"] == [
        "node(s) were unschedulable"]
