"""DaemonSets in ``plan`` (#54): one pod per node the DaemonSet controller runs it on
(NodeShouldRunDaemonPod: node name, node selector, required node affinity, NoSchedule and
NoExecute taints against the template's tolerations plus those the controller adds), each
pinned to its node as ReplaceDaemonSetPodNodeNameNodeAffinity pins it, then placed by the
engine like any pod: its requests count, and one its node has no room for stays
unschedulable with kube-scheduler's reasons. Names and labels as the controller makes
them, the same on every run."""
import re

import pytest
from hypothesis import given, settings, strategies as st

from builders import REQUIRED, container, node, pod
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling import daemonsets, diagnosis, planner, workloads
from tacker_hwaffinity.scheduling.profile import Profile
from tacker_hwaffinity.scheduling.snapshot import (
    cluster_from_objects, count_pods, first_workload_pod, workloads_from_objects)

SRC = "ds.yaml"
CONTROL_PLANE = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
ALLOC = {"cpu": "4", "memory": "8Gi", "pods": "110"}


def daemonset(name="agent", ns="kube-system", cpu="100m", annotations=None, **spec):
    """DaemonSet NAME whose one container requests CPU; SPEC: pod spec fields."""
    labels = {"app": name}
    meta = {"name": name, "namespace": ns}
    if annotations:
        meta["annotations"] = annotations
    pod_spec = dict(spec, containers=[container(requests={"cpu": cpu})])
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta,
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": pod_spec}}}


def cluster(*extra):
    """A tainted control-plane node and three workers, one of them labelled ssd."""
    return [node("cp", {"CIS-node": "h0"}, taints=[CONTROL_PLANE], alloc=ALLOC),
            node("w1", {"CIS-node": "h1", "disk": "ssd"}, alloc=ALLOC),
            node("w2", {"CIS-node": "h2"}, alloc=ALLOC),
            node("w3", {"CIS-node": "h3"}, alloc=ALLOC)] + list(extra)


def planned(nodes, *objects, pods=()):
    snap = cluster_from_objects([(o, SRC) for o in list(nodes) + list(pods)])
    made, notes, nowhere = workloads_from_objects([(o, SRC) for o in objects], snap)
    state = snap.state()
    result = planner.plan(state, Profile().framework(), made)
    return diagnosis.diagnose(state, made, result, nowhere), notes


def placed(result):
    return {p.pod.name: p.node for p in result.placements}


def test_one_pod_per_untainted_node_pinned_there():
    result, _ = planned(cluster(), daemonset())
    assert sorted(placed(result).values()) == ["w1", "w2", "w3"]
    assert result.complete
    for p in result.placements:
        assert re.fullmatch(r"agent-[bcdfghjklmnpqrstvwxz2456789]{5}", p.pod.name)
        assert p.pod.spec.required_node_raw == {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [p.node]}]}]}
        assert p.pod.owner == ("apps/v1", "DaemonSet", "agent")
        assert p.pod.owner_selector is None       # not a controller default spreading reads
        assert p.pod.workload == "DaemonSet kube-system/agent"


def test_a_toleration_of_the_control_plane_taint_runs_it_there_too():
    tolerating = daemonset(tolerations=[{"key": CONTROL_PLANE["key"], "operator": "Exists",
                                         "effect": "NoSchedule"}])
    result, _ = planned(cluster(), tolerating)
    assert sorted(placed(result).values()) == ["cp", "w1", "w2", "w3"]


def test_node_selector_and_required_affinity_choose_the_nodes_and_the_pin_replaces_them():
    by_selector, _ = planned(cluster(), daemonset(nodeSelector={"disk": "ssd"}))
    assert list(placed(by_selector).values()) == ["w1"]
    affinity = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "CIS-node", "operator": "In", "values": ["h2", "h3"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [
                {"key": "disk", "operator": "Exists"}]}}]}}
    by_affinity, _ = planned(cluster(), daemonset(affinity=affinity))
    assert sorted(placed(by_affinity).values()) == ["w2", "w3"]
    spec = by_affinity.placements[0].pod.spec
    assert spec.required_node_raw["nodeSelectorTerms"][0] == {"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["w2"]}]}
    assert len(spec.preferred_node) == 1          # the preferred terms are kept


def test_the_template_node_name_runs_it_on_that_node_only():
    result, _ = planned(cluster(), daemonset(nodeName="w2"))
    assert list(placed(result).values()) == ["w2"]


def test_the_tolerations_the_controller_adds():
    problems = [node("notready", taints=[{"key": "node.kubernetes.io/not-ready",
                                          "effect": "NoExecute"}], alloc=ALLOC),
                node("cordoned", unschedulable=True, alloc=ALLOC,
                     taints=[{"key": "node.kubernetes.io/unschedulable",
                              "effect": "NoSchedule"}]),
                node("pressure", alloc=ALLOC, taints=[
                    {"key": "node.kubernetes.io/%s-pressure" % r, "effect": "NoSchedule"}
                    for r in ("disk", "memory", "pid")]),
                node("nonet", alloc=ALLOC, taints=[{"key": "node.kubernetes.io/network-unavailable",
                                                    "effect": "NoSchedule"}]),
                node("prefer", alloc=ALLOC, taints=[{"key": "x", "effect": "PreferNoSchedule"}]),
                node("dedicated", alloc=ALLOC, taints=[{"key": "x", "effect": "NoExecute"}])]
    result, _ = planned(problems, daemonset())
    assert sorted(placed(result).values()) == ["cordoned", "notready", "prefer", "pressure"]
    assert result.complete
    host, _ = planned(problems, daemonset(hostNetwork=True))
    assert sorted(placed(host).values()) == ["cordoned", "nonet", "notready", "prefer",
                                             "pressure"]


def test_a_toleration_matching_a_default_one_is_replaced_as_upstream():
    mine = {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
            "effect": "NoExecute", "tolerationSeconds": 30}
    spec = daemonsets.with_daemon_tolerations({"tolerations": [mine, {"key": "a"}]})
    assert spec["tolerations"][0] == daemonsets.DAEMON_TOLERATIONS[0]     # in its place
    assert spec["tolerations"][1] == {"key": "a"}
    assert spec["tolerations"][2:] == list(daemonsets.DAEMON_TOLERATIONS[1:])
    same = daemonsets.with_daemon_tolerations(spec)
    assert same["tolerations"] == spec["tolerations"]
    assert daemonsets.with_daemon_tolerations({"tolerations": "bad"}) == {"tolerations": "bad"}


def test_a_node_without_room_leaves_its_pod_unschedulable_with_the_scheduler_reasons():
    full = pod("big", ns="default", on="w2", cpu="3950m")
    result, _ = planned(cluster(), daemonset(), pods=[full])
    by_node = {p.pod.spec.required_node_raw["nodeSelectorTerms"][0]["matchFields"][0]
               ["values"][0]: p for p in result.placements}
    assert sorted(by_node) == ["w1", "w2", "w3"]
    stuck = by_node["w2"]
    assert stuck.node is None and not result.complete
    assert stuck.reasons == ["0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn't "
                             "satisfy plugin(s) [NodeAffinity]."]
    assert by_node["w1"].node == "w1" and by_node["w3"].node == "w3"


def test_the_requests_of_daemon_pods_count_for_the_pods_after_them():
    hungry = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"},
              "spec": {"containers": [container(requests={"cpu": "3500m"})]}}
    alone, _ = planned(cluster(), hungry)
    assert alone.complete
    result, _ = planned(cluster(), daemonset(cpu="1"), hungry)
    assert placed(result)["p"] is None


def test_names_and_labels_as_the_controller_makes_them_and_the_same_every_run():
    first, _ = planned(cluster(), daemonset())
    again, _ = planned(cluster(), daemonset())
    assert placed(first) == placed(again)
    p = first.placements[0].pod
    assert p.labels == {"app": "agent", "pod-template-generation": "1",
                        "controller-revision-hash": workloads.template_hash(
                            daemonset()["spec"]["template"])}
    later = daemonset(annotations={daemonsets.GENERATION_ANNOTATION: "7"})
    result, _ = planned(cluster(), later)
    assert result.placements[0].pod.labels["pod-template-generation"] == "7"
    assert daemonsets.generation({"annotations": {daemonsets.GENERATION_ANNOTATION: "0x"}}) \
        == "1"


def test_a_name_taken_in_the_cluster_moves_the_pod_to_its_next_candidate():
    result, _ = planned(cluster(), daemonset())
    taken = result.placements[0].pod.name
    again, _ = planned(cluster(), daemonset(),
                       pods=[pod(taken, ns="kube-system", on="w3")])
    assert taken not in placed(again) and len(again.placements) == 3


def test_max_pods_counts_daemon_pods_once_the_nodes_are_known():
    objects = [(daemonset(), SRC)]
    assert count_pods(objects, 10) == 0           # before the cluster is read
    nodes = cluster_from_objects([(n, SRC) for n in cluster()]).nodes
    assert count_pods(objects, 10, nodes) == 3
    snap = cluster_from_objects([(n, SRC) for n in cluster()])
    with pytest.raises(InputError) as e:
        workloads_from_objects(objects, snap, max_pods=2)
    assert e.value.obj == "DaemonSet kube-system/agent"
    assert "3 pods, over the limit of 2" in e.value.message


def test_a_daemonset_that_runs_nowhere_leaves_the_plan_incomplete():
    """A selector that matches no node is a question the plan cannot answer yes to."""
    result, notes = planned(cluster(), daemonset(nodeSelector={"disk": "nvme"}))
    assert result.placements == [] and notes == [] and not result.complete
    assert [diagnosis.unplaced_line(u) for u in result.unplaced] == [
        "DaemonSet kube-system/agent: runs on none of the 4 nodes: its node selector, "
        "required node affinity and taints admit none"]
    assert planned(cluster(), daemonset(nodeSelector={"disk": "ssd"}))[0].complete


def test_explain_takes_the_pod_before_its_pin_with_the_controller_tolerations():
    pod_, count, notes = first_workload_pod([(daemonset(), SRC)])
    assert count == 0 and pod_.spec.required_node is None
    assert pod_.name.startswith("agent-") and pod_.labels["pod-template-generation"] == "1"
    keys = {t.key for t in pod_.spec.tolerations}
    assert "node.kubernetes.io/not-ready" in keys
    assert "node.kubernetes.io/network-unavailable" not in keys
    assert notes == ["DaemonSet kube-system/agent runs one pod on each node its node "
                     "selector, required node affinity and taints admit, pinned there by its "
                     "controller: %s is explained unpinned, so each node's verdict is that of "
                     "the pod it would get" % pod_.key]


def test_a_bad_template_is_named_in_the_template():
    bad = daemonset(tolerations=[{"key": "a", "operator": "Maybe"}])
    snap = cluster_from_objects([(n, SRC) for n in cluster()])
    with pytest.raises(InputError) as e:
        workloads_from_objects([(bad, SRC)], snap)
    assert e.value.field == "spec.template.spec.tolerations[0].operator"


LABELS = st.dictionaries(st.sampled_from(["a", "b", "c"]), st.sampled_from(["1", "2"]),
                         max_size=3)
TAINTS = st.lists(st.fixed_dictionaries({
    "key": st.sampled_from(["a", "b", "node.kubernetes.io/not-ready",
                            "node.kubernetes.io/network-unavailable"]),
    "effect": st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"])}), max_size=2)
TOLERATIONS = st.lists(st.fixed_dictionaries({
    "key": st.sampled_from(["a", "b"]), "operator": st.just("Exists")}), max_size=2)
EXPRESSIONS = st.lists(st.fixed_dictionaries({
    "key": st.sampled_from(["a", "b", "c"]),
    "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"])}), max_size=2)


def _expression(e):
    return dict(e, values=["1"]) if e["operator"] in ("In", "NotIn") else e


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(LABELS, TAINTS, st.booleans()), min_size=1, max_size=5), LABELS,
       st.lists(EXPRESSIONS, max_size=2), TOLERATIONS, st.booleans())
def test_the_controller_runs_a_pod_where_the_scheduler_filters_pass_its_template(
        specs, selector, terms, tolerations, host_network):
    """NodeShouldRunDaemonPod against the engine's own NodeAffinity, TaintToleration and
    NodeUnschedulable filters for the unpinned pod: the same nodes, by two readings."""
    nodes = [node("n%d" % i, labels, taints=taints, unschedulable=cordoned, alloc=ALLOC)
             for i, (labels, taints, cordoned) in enumerate(specs)]
    spec = {"nodeSelector": selector, "tolerations": tolerations, "hostNetwork": host_network}
    if terms:
        spec["affinity"] = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [
            {"matchExpressions": [_expression(e) for e in t]} for t in terms]}}}
    ds = daemonset(**spec)
    snap = cluster_from_objects([(n, SRC) for n in nodes])
    state = snap.state()
    pod_, _, _ = first_workload_pod([(ds, SRC)])
    ev = Profile().framework().evaluate(state, pod_, score=False)
    static = {"NodeAffinity", "TaintToleration", "NodeUnschedulable", "NodeName"}
    admitted = {state.nodes[i].name for i in range(len(state.nodes))
                if not any(r is not None and r.failed[i]
                           for f, r in zip(ev.filters, ev.rejections) if f.name in static)}
    made, _, _ = workloads_from_objects([(ds, SRC)], snap)
    pinned_to = {p.spec.required_node_raw["nodeSelectorTerms"][0]["matchFields"][0]
                 ["values"][0] for p in made}
    assert pinned_to == admitted


def test_explain_counts_the_daemon_pods_when_given_the_nodes():
    nodes = cluster_from_objects([(n, SRC) for n in cluster()]).nodes
    _, count, _ = first_workload_pod([(daemonset(), SRC)], nodes)
    assert count == 3
