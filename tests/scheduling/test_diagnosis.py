"""The mistakes behind a plan (scheduling/diagnosis.py), on a cluster of 20 workers on 5
physical hosts (four workers each, ``CIS-node`` host-0 .. host-4)."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling import diagnosis, planner
from tacker_hwaffinity.scheduling.profile import Profile
from tacker_hwaffinity.scheduling.snapshot import cluster_from_objects, workloads_from_objects

from tests.builders import affinity, container, node, term, weighted

SRC = "deploy.yaml"
ALLOC = {"cpu": "4", "memory": "8Gi", "pods": "110"}
ANTI_FIELD = ("spec.template.spec.affinity.podAntiAffinity."
              "requiredDuringSchedulingIgnoredDuringExecution[0]")


def worker(i, labels=None, **kw):
    """Worker wNN on host-(i // 4), with its hostname label."""
    base = {"CIS-node": "host-%d" % (i // 4), "kubernetes.io/hostname": "w%02d" % i}
    return node("w%02d" % i, dict(base, **(labels or {})), alloc=dict(ALLOC), **kw)


def cluster(n=20, drop_host_label=(), taint=()):
    """The 20 workers; those in DROP_HOST_LABEL lack CIS-node, those in TAINT carry a
    NoSchedule taint."""
    out = []
    for i in range(n):
        w = worker(i, taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
                   if i in taint else None)
        if i in drop_host_label:
            del w["metadata"]["labels"]["CIS-node"]
        out.append(w)
    return out


def deployment(name="web", replicas=12, aff=None, ns="default", labels=None, cpu=None,
               **spec):
    labels = labels or {"app": name}
    pod_spec = {"containers": [container(requests={"cpu": cpu} if cpu else None)]}
    if aff:
        pod_spec["affinity"] = aff
    pod_spec.update(spec)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": pod_spec}}}


def anti(key="CIS-node", labels=None, preferred=False):
    t = term(key, labels or {"app": "web"})
    return affinity(pref_anti=[weighted(100, t)]) if preferred else affinity(req_anti=[t])


def diagnose(nodes, workloads, key="CIS-node"):
    snap = cluster_from_objects([(o, "cluster.yaml") for o in nodes])
    pods, _, _ = workloads_from_objects([(w, SRC) for w in workloads], snap)
    state = snap.state()
    result = planner.plan(state, Profile().framework(), pods, key)
    return diagnosis.diagnose(state, pods, result)


def test_a_topology_key_no_node_carries_is_named_with_the_key_meant():
    p = diagnose(cluster(), [deployment(aff=anti("cis-node"))])
    assert p.complete  # kube-scheduler too places them all: nothing keeps them apart
    assert p.warnings == [
        'deploy.yaml: Deployment default/web: %s.topologyKey: no node carries the label '
        '"cis-node" (did you mean "CIS-node"?)' % ANTI_FIELD]


def test_a_close_misspelling_is_suggested_and_a_far_one_is_not():
    assert diagnosis.suggestion("CIS-nod", {"CIS-node", "zone"}) == "CIS-node"
    assert diagnosis.suggestion("rack", {"CIS-node", "zone"}) is None


def test_a_topology_key_option_no_node_carries_is_bad_input():
    nodes = cluster_from_objects([(o, "cluster.yaml") for o in cluster()]).nodes
    with pytest.raises(InputError) as e:
        diagnosis.check_carried(nodes, "cis-node")
    assert str(e.value) == ('field --topology-key: no node carries the label "cis-node" '
                            '(did you mean "CIS-node"?)')
    diagnosis.check_carried(nodes, "CIS-node")
    diagnosis.check_carried([], "cis-node")     # no node: the snapshot's own error says so


def test_spread_constraint_key_is_checked_too():
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    p = diagnose(cluster(), [deployment(replicas=2, topologySpreadConstraints=spread)])
    assert p.warnings == [
        'deploy.yaml: Deployment default/web: spec.template.spec.topologySpreadConstraints[0]'
        '.topologyKey: no node carries the label "zone"']


def test_nodes_without_the_host_label_are_named_and_counted():
    p = diagnose(cluster(drop_host_label=range(7)), [deployment(replicas=2)])
    assert p.warnings == ['7 of 20 nodes have no "CIS-node" label (w00, w01, w02, w03, w04 '
                          'and 2 more): pods placed there count for no host']


def test_unlabelled_nodes_no_workload_may_use_are_not_named():
    p = diagnose(cluster(drop_host_label=[0], taint=[0]), [deployment(replicas=2)])
    assert p.warnings == []


def test_anti_affinity_that_misses_the_workloads_own_pods():
    p = diagnose(cluster(), [deployment(aff=anti(labels={"app": "webb"}))])
    assert p.warnings == [
        "deploy.yaml: Deployment default/web: %s.labelSelector: does not select this "
        "workload's own pods (labels app=web, namespace default): its replicas are not "
        "kept apart" % ANTI_FIELD]


def test_anti_affinity_against_another_app_beside_one_on_itself_is_not_a_mistake():
    aff = affinity(req_anti=[term("CIS-node", {"app": "web"}), term("CIS-node", {"app": "db"})])
    p = diagnose(cluster(), [deployment(replicas=3, aff=aff)])
    assert p.warnings == []


def test_anti_affinity_in_another_namespace_misses_the_own_pods():
    aff = affinity(pref_anti=[weighted(100, term("CIS-node", {"app": "web"},
                                                 namespaces=["other"]))])
    p = diagnose(cluster(), [deployment(replicas=3, aff=aff)])
    assert len(p.warnings) == 1 and "namespace default" in p.warnings[0]
    assert "preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm" \
           ".labelSelector: does not select" in p.warnings[0]


def test_required_anti_affinity_limit_is_the_number_of_hosts():
    p = diagnose(cluster(), [deployment(aff=anti())])
    assert p.warnings == []
    assert p.unplaced == [{
        "workload": "Deployment default/web", "placed": 5, "desired": 12,
        "reason": "required anti-affinity on CIS-node allows at most 5 (5 hosts carry the key)",
        "limit": 5}]
    assert diagnosis.unplaced_line(p.unplaced[0]) == (
        "Deployment default/web: 5 of 12 replicas placed: required anti-affinity on CIS-node "
        "allows at most 5 (5 hosts carry the key)")


def test_required_anti_affinity_limit_counts_hosts_it_may_use():
    p = diagnose(cluster(taint=range(4)), [deployment(replicas=6, aff=anti())])
    [u] = p.unplaced
    assert u["limit"] == 4 and u["placed"] == 4
    assert u["reason"] == ("required anti-affinity on CIS-node allows at most 4 (4 of the 5 "
                           "hosts have a node it may use)")


def test_a_node_selector_matching_no_node():
    p = diagnose(cluster(), [deployment(replicas=3, nodeSelector={"disk": "ssd"})])
    assert p.unplaced[0]["reason"] == "its node selector/affinity matches none of the 20 nodes"
    assert p.unplaced[0]["limit"] == 0


def test_taints_on_every_node_it_selects():
    p = diagnose(cluster(taint=range(20)), [deployment(replicas=2)])
    assert p.unplaced[0]["reason"] == (
        "every node fail(s) kube-scheduler's node filters: 20 node(s) had untolerated taint "
        "{dedicated: x}")
    assert p.unplaced[0]["limit"] == 0


def test_insufficient_resources_names_the_resource():
    p = diagnose(cluster(), [deployment(replicas=30, cpu="3")])
    [u] = p.unplaced
    assert u["placed"] == 20 and u["limit"] is None
    assert u["reason"] == ("not enough room on any of the 20 node(s) it may use (20 "
                           "Insufficient cpu; it requests cpu 3)")


def test_topology_spread_with_a_domain_it_cannot_use():
    spread = [{"maxSkew": 1, "topologyKey": "CIS-node", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    # host-0's workers are tainted: counted (nodeTaintsPolicy Ignore) but never usable
    p = diagnose(cluster(taint=range(4)), [deployment(topologySpreadConstraints=spread)])
    [u] = p.unplaced
    assert u["placed"] == 4 and u["limit"] == 4
    assert u["reason"] == (
        "topology spread on CIS-node (maxSkew 1, DoNotSchedule) allows at most 4 matching "
        "pods (host-0 has no node it may use and holds 0, so each other CIS-node value holds "
        "at most 1)")


def test_other_causes_fall_back_to_the_engine_summary():
    aff = affinity(req_aff=[term("CIS-node", {"app": "db"})])
    p = diagnose(cluster(), [deployment(replicas=2, aff=aff)])
    assert p.unplaced[0]["reason"] == p.placements[0].reasons[0]
    assert p.unplaced[0]["reason"].startswith("0/20 nodes are available:")


def test_one_record_per_workload_and_none_when_all_placed():
    p = diagnose(cluster(), [deployment(aff=anti()), deployment("db", replicas=2)])
    assert [u["workload"] for u in p.unplaced] == ["Deployment default/web"]
    assert p.to_dict()["unplaced"] == p.unplaced
    assert p.to_dict()["warnings"] == []


@pytest.mark.parametrize("keys,text", [
    (["a/x"], "a/x"),
    (["a/x", "a/y", "a/z"], "a/x, a/y, a/z"),
    (["a/w-5", "a/w-6", "a/w-7", "a/w-11"], "a/w-5 .. a/w-11 (4 pods)"),
])
def test_pod_runs(keys, text):
    assert planner.pod_run(keys) == text


KEYS = st.sampled_from(["CIS-node", "cis-node", "CIS-nod", "zone", "kubernetes.io/hostname",
                        "rack"])


@settings(deadline=None)
@given(key=KEYS, replicas=st.integers(1, 8), preferred=st.booleans(),
       own=st.booleans(), host_key=KEYS)
def test_every_key_no_node_carries_is_warned_once_and_the_rest_never(key, replicas, preferred,
                                                                     own, host_key):
    labels = {"app": "web" if own else "other"}
    p = diagnose(cluster(5), [deployment(replicas=replicas, aff=anti(key, labels, preferred))],
                 key=host_key)
    carried = {"CIS-node", "kubernetes.io/hostname"}
    about_key = [w for w in p.warnings if w.startswith("deploy.yaml")
                 and '"%s"' % key in w and "no node carries" in w]
    assert len(about_key) == (key not in carried)
    assert not any(w.startswith("--topology-key") for w in p.warnings)   # check_carried's
    missed = [w for w in p.warnings if "does not select" in w]
    assert len(missed) == (replicas >= 2 and not own)
    for u in p.unplaced:
        assert u["placed"] < u["desired"] == replicas and u["reason"]
