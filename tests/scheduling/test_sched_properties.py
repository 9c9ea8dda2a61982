"""Invariants (hypothesis) and loader fuzzing: a result or InputError, never anything else."""
import string

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects.yamlio import parse_documents
from tacker_hwaffinity.scheduling.profile import Profile
from tacker_hwaffinity.scheduling.snapshot import cluster_from_objects, workloads_from_objects

from tests.builders import affinity, node, pod, term, weighted
from .helpers import feasible, run

KEYS = ["zone", "host", "rack"]
VALUES = ["a", "b", "c"]
APPS = ["x", "y", "z"]

label_sets = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)
nodes_st = st.lists(label_sets, min_size=1, max_size=6).map(
    lambda ls: [node("n%d" % i, labels) for i, labels in enumerate(ls)])


@st.composite
def a_term(draw):
    return term(draw(st.sampled_from(KEYS)), {"app": draw(st.sampled_from(APPS))})


affinities = st.builds(
    lambda ra, rn, pa, pn: affinity(req_aff=ra or None, req_anti=rn or None,
                                    pref_aff=[weighted(3, t) for t in pa] or None,
                                    pref_anti=[weighted(2, t) for t in pn] or None),
    st.lists(a_term(), max_size=2), st.lists(a_term(), max_size=2),
    st.lists(a_term(), max_size=2), st.lists(a_term(), max_size=2))


@st.composite
def cluster(draw):
    nodes = draw(nodes_st)
    pods = [pod("e%d" % i, {"app": draw(st.sampled_from(APPS))},
                on="n%d" % draw(st.integers(0, len(nodes) - 1)), affinity=draw(affinities))
            for i in range(draw(st.integers(0, 5)))]
    return nodes, pods


SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(cluster(), affinities, st.integers(0, 5))
def test_an_unrelated_pod_never_makes_a_feasible_node_infeasible(c, aff, where):
    nodes, pods = c
    incoming = pod("in", {"app": "x"}, affinity=aff)
    before = feasible(run(nodes, incoming, pods))
    unrelated = pod("u", {"unrelated": "yes"}, on="n%d" % (where % len(nodes)))
    assert set(before) <= set(feasible(run(nodes, incoming, pods + [unrelated])))


@SETTINGS
@given(nodes_st, st.sampled_from(KEYS), st.integers(0, 5))
def test_required_anti_affinity_is_symmetric(nodes, key, where):
    target = "n%d" % (where % len(nodes))
    a = dict(affinity=affinity(req_anti=[term(key, {"app": "b"})]))
    # A (with anti-affinity to B) placed first; then B cannot join A's domain ...
    blocked_b = set(feasible(run(nodes, pod("b", {"app": "b"}), [pod("a", on=target, **a)])))
    # ... and B placed first; then A cannot join B's domain: the same nodes either way.
    blocked_a = set(feasible(run(nodes, pod("a", **a), [pod("b", {"app": "b"}, on=target)])))
    assert blocked_a == blocked_b
    value = next(n["metadata"]["labels"].get(key) for n in nodes
                 if n["metadata"]["name"] == target)
    same = {n["metadata"]["name"] for n in nodes
            if value is not None and n["metadata"]["labels"].get(key) == value}
    assert blocked_a == {n["metadata"]["name"] for n in nodes} - same


@SETTINGS
@given(cluster(), affinities)
def test_scores_are_within_0_and_100_and_total_is_the_weighted_sum(c, aff):
    nodes, pods = c
    r = run(nodes, pod("in", {"app": "y"}, affinity=aff), pods)
    for name, n in r.items():
        if name is None or not n["feasible"]:
            continue
        assert all(0 <= v <= 100 for v in n["scores"].values())
        weights = dict(Profile().scores)
        assert n["total"] == sum(weights[k] * v for k, v in n["scores"].items())


# Fuzzing: arbitrary YAML-shaped data in every place an object is read.
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True),
                    st.text(alphabet=string.ascii_letters + "-/.:{}[]*", max_size=8))
json_like = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from([
        "kind", "metadata", "name", "namespace", "labels", "spec", "affinity", "podAffinity",
        "podAntiAffinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
        "preferredDuringSchedulingIgnoredDuringExecution", "labelSelector", "matchLabels",
        "matchExpressions", "key", "operator", "values", "topologyKey", "weight",
        "podAffinityTerm", "nodeSelectorTerms", "template", "replicas", "selector", "status",
        "allocatable", "taints", "tolerations", "containers", "resources", "requests",
        "namespaceSelector", "namespaces", "matchLabelKeys", "nodeName", "effect", "cpu",
        "topologySpreadConstraints", "maxSkew", "whenUnsatisfiable", "minDomains",
        "nodeAffinityPolicy", "nodeTaintsPolicy", "images", "names", "sizeBytes", "overhead",
        "initContainers", "hugepages-1Gi", "ownerReferences", "pluginConfig", "args",
        "scoringStrategy", "defaultConstraints", "defaultingType", "volumes", "profiles"]),
        inner, max_size=4)), max_leaves=25)
kinds = st.sampled_from(["Pod", "Node", "Namespace", "Deployment", "StatefulSet", "Job",
                         "ReplicaSet", "Service", "ReplicationController", "Bogus", None])


def obj_of(kind, body):
    if isinstance(body, dict):
        body = dict(body)
        if kind is not None:
            body["kind"] = kind
    return body


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kinds, json_like)
def test_loaders_never_raise_anything_but_input_error(kind, body):
    obj = obj_of(kind, body)
    for load in (lambda: cluster_from_objects([(obj, "f")]),
                 lambda: workloads_from_objects([(obj, "f")]),
                 lambda: Profile(obj, "f")):
        try:
            load()
        except InputError as e:
            assert str(e)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_yaml_parser_never_raises_anything_but_input_error(text):
    try:
        parse_documents(text, "f")
    except InputError as e:
        assert "f" in str(e)


@settings(max_examples=100, deadline=None)
@given(kinds, json_like)
def test_round_tripped_yaml_objects_load_or_fail_cleanly(kind, body):
    text = yaml.safe_dump(obj_of(kind, body))
    try:
        for obj in parse_documents(text, "f"):
            cluster_from_objects([(obj, "f")])
    except InputError:
        pass


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["PodTopologySpread", "NodeResourcesFit",
                        "NodeResourcesBalancedAllocation"]),
       st.one_of(json_like, st.fixed_dictionaries({}, optional={
           "scoringStrategy": st.fixed_dictionaries({}, optional={
               "type": st.sampled_from(["LeastAllocated", "MostAllocated",
                                        "RequestedToCapacityRatio", "x"]),
               "resources": json_like, "requestedToCapacityRatio": json_like}),
           "defaultingType": st.sampled_from(["List", "System", "", 3]),
           "defaultConstraints": json_like, "resources": json_like,
           "ignoredResources": json_like})))
def test_plugin_args_never_raise_anything_but_input_error(name, args):
    raw = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"pluginConfig": [{"name": name, "args": args}]}]}
    try:
        Profile(raw, "f").framework()
    except InputError as e:
        assert str(e)
