"""PodTopologySpread in plans: the issue's 4/1/1 case, defaults, selectors, validation."""
import pytest
from hypothesis import given, settings, strategies as st

from tacker_hwaffinity.errors import InputError

from tests.builders import container, node, pod
from .helpers import config, plan, run
from .test_sched_plan import deployment

SPREAD = "node(s) didn't match pod topology spread constraints"


def spread(key="CIS-node", skew=1, action="DoNotSchedule", labels=None, **extra):
    c = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": action}
    if labels is not None:
        c["labelSelector"] = {"matchLabels": labels}
    c.update(extra)
    return c


def spread_deployment(name, replicas, constraints, **kw):
    d = deployment(name, replicas, **kw)
    d["spec"]["template"]["spec"]["topologySpreadConstraints"] = constraints
    return d


def workers(hosts):
    """One worker per entry of HOSTS (its CIS-node value)."""
    return [node("worker-%d" % i, {"CIS-node": h, "kubernetes.io/hostname": "worker-%d" % i})
            for i, h in enumerate(hosts)]


def per_domain(p):
    return {k: len(v) for k, v in p.domains().items()}


def test_max_skew_one_over_uneven_hosts_is_two_two_two():
    """The issue's case: compute-1 holds four of six workers; kube-scheduler must place 2/2/2."""
    nodes = workers(["compute-1"] * 4 + ["compute-2", "compute-3"])
    d = spread_deployment("amf", 6, [spread(labels={"app": "amf"})])
    p = plan(nodes, [d])
    assert per_domain(p) == {"compute-1": 2, "compute-2": 2, "compute-3": 2}
    assert p.complete


def test_existing_pods_count_and_reasons_are_kube_schedulers():
    nodes = workers(["c1", "c1", "c2"]) + [node("bare")]
    d = spread_deployment("x", 4, [spread(labels={"app": "x"})])
    pods = [pod("old-%d" % i, {"app": "x"}, on="worker-0") for i in range(2)]
    p = plan(nodes, [d], pods=pods)
    # c1 holds 2 already: c2 takes the first two, then 3/3 in total
    assert per_domain(p) == {"c1": 1, "c2": 3}
    r = run(nodes, pod("in", {"app": "x"}, topologySpreadConstraints=[
        spread(labels={"app": "x"})]), pods)
    assert r["bare"]["reasons"] == [SPREAD + " (missing required label)"]
    assert r["worker-0"]["reasons"] == [SPREAD]
    assert r["worker-2"]["feasible"]


def test_min_domains_makes_the_global_minimum_zero_until_enough_domains():
    nodes = workers(["c1", "c2"])
    pods = [pod("e", {"app": "x"}, on="worker-0")]
    c = spread(labels={"app": "x"}, minDomains=3)
    r = run(nodes, pod("in", {"app": "x"}, topologySpreadConstraints=[c]), pods)
    assert not r["worker-0"]["feasible"] and r["worker-1"]["feasible"]
    pods.append(pod("f", {"app": "x"}, on="worker-1"))
    r = run(nodes, pod("in", {"app": "x"}, topologySpreadConstraints=[c]), pods)
    assert not r["worker-0"]["feasible"] and not r["worker-1"]["feasible"]  # 1 + 1 - 0 > 1


def test_node_affinity_policy_honor_counts_only_matching_nodes():
    nodes = [node("a", {"zone": "z1", "pool": "x"}), node("b", {"zone": "z2", "pool": "y"})]
    pods = [pod("e%d" % i, {"app": "x"}, on="a") for i in range(3)]
    incoming = pod("in", {"app": "x"}, nodeSelector={"pool": "x"},
                   topologySpreadConstraints=[spread("zone", labels={"app": "x"})])
    cfg = config(plugins={"filter": {"disabled": [{"name": "*"}],
                                     "enabled": [{"name": "PodTopologySpread"}]}})
    assert run(nodes, incoming, pods, cfg=cfg)["a"]["feasible"]  # z2 not counted: 3+1-3
    incoming["spec"]["topologySpreadConstraints"][0]["nodeAffinityPolicy"] = "Ignore"
    assert not run(nodes, incoming, pods, cfg=cfg)["a"]["feasible"]  # 3+1-0 > 1


def test_terminating_and_other_namespace_pods_do_not_count():
    nodes = workers(["c1", "c2"])
    pods = [pod("t", {"app": "x"}, on="worker-0", deleting=True),
            pod("o", {"app": "x"}, ns="other", on="worker-0")]
    r = run(nodes, pod("in", {"app": "x"}, topologySpreadConstraints=[
        spread(labels={"app": "x"})]), pods)
    assert r["worker-0"]["feasible"] and r["worker-1"]["feasible"]


def test_match_label_keys_scope_the_count_to_the_pods_revision():
    nodes = workers(["c1", "c2"])
    pods = [pod("old%d" % i, {"app": "x", "rev": "1"}, on="worker-0") for i in range(2)]
    c = spread(labels={"app": "x"}, matchLabelKeys=["rev"])
    r = run(nodes, pod("in", {"app": "x", "rev": "2"}, topologySpreadConstraints=[c]), pods)
    assert r["worker-0"]["feasible"]  # the old revision's pods are not counted
    r = run(nodes, pod("in", {"app": "x", "rev": "1"}, topologySpreadConstraints=[c]), pods)
    assert not r["worker-0"]["feasible"]


def test_system_default_spreading_uses_the_replica_sets_selector():
    """A Deployment without constraints still spreads over hostnames (score only)."""
    nodes = workers(["c1", "c1"])
    p = plan(nodes, [deployment("web", 4)])
    assert sorted(x.node for x in p.placements) == ["worker-0", "worker-0", "worker-1",
                                                     "worker-1"]
    r = plan(nodes, [deployment("web", 1)], key="kubernetes.io/hostname")
    assert r.complete


def test_default_spreading_reads_services_and_list_defaults():
    nodes = [node("a", {"zone": "z1"}), node("b", {"zone": "z2"})]
    pods = [pod("e%d" % i, {"app": "x"}, on="a") for i in range(2)]
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
           "spec": {"selector": {"app": "x"}}}
    cfg = config(plugin_config=[{"name": "PodTopologySpread", "args": {
        "defaultingType": "List",
        "defaultConstraints": [spread("zone", action="DoNotSchedule")]}}])
    incoming = pod("in", {"app": "x"})
    assert not run(nodes, incoming, pods + [svc], cfg=cfg)["a"]["feasible"]
    assert run(nodes, incoming, pods, cfg=cfg)["a"]["feasible"]  # no Service: no selector


@pytest.mark.parametrize("constraint,field,message", [
    (spread(skew=0), "maxSkew", "greater than zero"),
    (spread(action="Sometimes"), "whenUnsatisfiable", "unsupported value"),
    (spread(key=""), "topologyKey", "non-empty"),
    (spread(action="ScheduleAnyway", minDomains=2), "minDomains", "DoNotSchedule"),
    (spread(matchLabelKeys=["rev"]), "matchLabelKeys", "labelSelector is not set"),
    (spread(labels={"a": "b"}, nodeTaintsPolicy="Always"), "nodeTaintsPolicy", "Honor or Ignore"),
    (spread(labels={"a": "b"}, maxskew=1), "topologySpreadConstraints[0]", "unknown field"),
])
def test_bad_constraints_name_the_field(constraint, field, message):
    with pytest.raises(InputError) as e:
        plan(workers(["c1"]), [spread_deployment("x", 1, [constraint])])
    assert field in e.value.field and message in str(e.value)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["h1", "h2", "h3", "h4"]), min_size=1, max_size=9),
       st.integers(1, 3), st.integers(1, 12))
def test_do_not_schedule_never_exceeds_max_skew(hosts, skew, replicas):
    """With nothing else in the way, the planned spread over the domains that have
    workers never exceeds maxSkew, and every replica is placed."""
    p = plan(workers(hosts), [spread_deployment("x", replicas, [
        spread(skew=skew, labels={"app": "x"})])])
    assert p.complete
    counts = [per_domain(p).get(h, 0) for h in set(hosts)]
    assert max(counts) - min(counts) <= skew


def test_explain_and_plan_read_a_service_beside_the_workload(tmp_path):
    """Default spreading's selector comes from a Service in the pod's own file."""
    import json

    import yaml

    from .test_sched_cli import cli
    nodes = [node("a", {"zone": "z1"}), node("b", {"zone": "z2"})]
    pods = [pod("e%d" % i, {"app": "x"}, on="a") for i in range(2)]
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(nodes + pods))
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
           "spec": {"selector": {"app": "x"}}}
    workload = tmp_path / "pod.yaml"
    workload.write_text(yaml.safe_dump_all([svc, pod("in", {"app": "x"},
                                                     containers=[container()])]))
    sched = tmp_path / "sched.yaml"
    sched.write_text(yaml.safe_dump(config(plugin_config=[{"name": "PodTopologySpread", "args": {
        "defaultingType": "List", "defaultConstraints": [spread("zone")]}}])))
    out = cli("explain", "--cluster", str(cluster), "--pod", str(workload),
              "--scheduler-config", str(sched), "-o", "json")
    assert out.returncode == 0, out.stderr
    by_name = {n["name"]: n for n in json.loads(out.stdout)["nodes"]}
    assert by_name["a"]["reasons"] == [SPREAD] and by_name["b"]["feasible"]
    out = cli("plan", "--cluster", str(cluster), str(workload), "--topology-key", "zone",
              "--scheduler-config", str(sched), "-o", "json")
    assert out.returncode == 0, out.stderr
    assert [p["node"] for p in json.loads(out.stdout)["placements"]] == ["b"]
