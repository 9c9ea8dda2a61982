"""Planning: sequential binding, summaries, domains, tie-break, workload expansion."""
import pytest

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling import workloads

from tests.builders import affinity, node, pod, term, weighted
from .helpers import plan

HOSTS = [node("w%d" % i, {"CIS-node": "c%d" % (i // 2), "kubernetes.io/hostname": "w%d" % i})
         for i in range(6)]


def deployment(name, replicas, tpl_affinity=None, ns="default", labels=None):
    labels = labels or {"app": name}
    spec = {"containers": [{"name": "c", "image": "x"}]}
    if tpl_affinity:
        spec["affinity"] = tpl_affinity
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


ANTI_HOST = affinity(req_anti=[term("CIS-node", {"app": "cnf"})])


def test_required_anti_affinity_spreads_over_hosts_and_reports_the_rest():
    p = plan(HOSTS, [deployment("cnf", 4, ANTI_HOST)])
    placed = [x for x in p.placements if x.node]
    assert sorted(x.domain for x in placed) == ["c0", "c1", "c2"]
    [left] = [x for x in p.placements if not x.node]
    assert left.reasons == ["0/6 nodes are available: 6 node(s) didn't match pod anti-affinity "
                            "rules."]
    assert not p.complete
    d = p.to_dict()
    assert set(d) >= {"placements", "domains"}
    assert {k: len(v) for k, v in d["domains"].items()} == {"c0": 1, "c1": 1, "c2": 1}
    assert d["placements"][3]["node"] is None and d["placements"][3]["domain"] is None


def test_preferred_anti_affinity_fills_hosts_evenly():
    pref = affinity(pref_anti=[weighted(100, term("CIS-node", {"app": "cnf"}))])
    p = plan(HOSTS, [deployment("cnf", 6, pref)])
    assert {k: len(v) for k, v in p.domains().items()} == {"c0": 2, "c1": 2, "c2": 2}


def test_plan_is_deterministic_and_breaks_ties_by_name_then_load():
    a = plan(HOSTS, [deployment("web", 3)]).to_dict()
    b = plan(HOSTS, [deployment("web", 3)]).to_dict()
    assert a == b
    assert [x["node"] for x in a["placements"]] == ["w0", "w1", "w2"]


def test_tie_break_prefers_the_least_allocated_node():
    nodes = [node(n, {"CIS-node": n}, alloc={"cpu": "4", "memory": "8Gi", "pods": "10"})
             for n in ("a", "b")]
    busy = [pod("e", on="a", cpu="2", memory="1Gi")]
    p = plan(nodes, [pod("x", cpu="100m", memory="10Mi")], pods=busy)
    assert p.placements[0].node == "b"


def test_affinity_follows_pods_placed_earlier_in_the_same_plan():
    db = deployment("db", 1)
    app = deployment("app", 2, affinity(req_aff=[term("CIS-node", {"app": "db"})]))
    p = plan(HOSTS, [db, app])
    assert len({x.domain for x in p.placements}) == 1


def test_topology_key_and_nodes_without_it():
    nodes = [node("a", {"rack": "r1"}), node("b")]
    p = plan(nodes, [deployment("web", 2)], key="rack")
    assert [x.domain for x in p.placements] == ["r1", None]
    assert p.domains() == {"r1": [p.placements[0].pod.key]}


def test_controllers_name_and_label_their_pods():
    tpl = {"metadata": {"labels": {"app": "s"}}, "spec": {"containers": []}}
    sts = {"kind": "StatefulSet", "metadata": {"name": "db", "namespace": "ns"},
           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "s"}}, "template": tpl}}
    pods = workloads.expand(sts)
    assert [p.key for p in pods] == ["ns/db-0", "ns/db-1"]
    assert pods[1].labels["statefulset.kubernetes.io/pod-name"] == "db-1"
    assert pods[1].labels["apps.kubernetes.io/pod-index"] == "1"
    dep = workloads.expand(dict(deployment("web", 2), kind="Deployment"))
    h = dep[0].labels["pod-template-hash"]
    assert all(p.name.startswith("web-%s-" % h) and len(p.name) == len("web-%s-" % h) + 5
               for p in dep)
    assert len({p.name for p in dep}) == 2
    rs = workloads.expand(dict(deployment("rs", 3), kind="ReplicaSet"))
    assert len(rs) == 3 and all(len(p.name) == len("rs-") + 5 for p in rs)
    job = {"kind": "Job", "metadata": {"name": "j"},
           "spec": {"parallelism": 4, "completions": 3, "completionMode": "Indexed",
                    "template": tpl}}
    jp = workloads.expand(job)
    assert len(jp) == 3
    assert jp[2].name.startswith("j-2-") and jp[2].labels["job-name"] == "j"
    assert jp[2].labels["batch.kubernetes.io/job-completion-index"] == "2"


def test_selector_must_match_template_labels():
    bad = deployment("web", 1)
    bad["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    with pytest.raises(InputError) as e:
        plan(HOSTS, [bad])
    assert e.value.field == "spec.selector" and "Deployment default/web" in str(e.value)


def test_unknown_workload_kind_is_an_error_and_services_are_skipped():
    with pytest.raises(InputError) as e:
        plan(HOSTS, [{"kind": "Widget", "metadata": {"name": "w"}}])
    assert "unknown kind 'Widget'" in str(e.value)
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}
    assert plan(HOSTS, [svc, deployment("web", 1)]).complete


def test_errors_inside_templates_name_the_template_field():
    bad = deployment("web", 1, affinity(req_anti=[term("CIS-node", exprs=[
        {"key": "app", "operator": "In", "values": []}])]))
    with pytest.raises(InputError) as e:
        plan(HOSTS, [bad])
    assert e.value.field.startswith("spec.template.spec.affinity.podAntiAffinity."
                                    "requiredDuringSchedulingIgnoredDuringExecution[0]"
                                    ".labelSelector.matchExpressions[0].values")
