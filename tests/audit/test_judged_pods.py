"""The audit hands the engine only what the verdict reads (audit/core.py, ``_intents``):
of the judged workloads' pods their terms, constraints and node, of the others only the
pods a judged selector may select, with their labels and node. The verdicts, notes and
figures are those of a snapshot of every pod whole (what ``keep_engine`` builds for the
controller's rebalancing), on any cluster."""
from hypothesis import given, settings, strategies as st

from tacker_hwaffinity.audit import core
from tests import builders
from tests.audit.helpers import node, owner, pod

KEY = "CIS-node"
APPS = ["a", "b", "c"]
TIERS = ["x", "y"]


def selector(draw):
    """A labelSelector over the apps and tiers (match labels, expressions, or empty)."""
    how = draw(st.sampled_from(["own", "app", "tier", "in", "notin", "exists", "absent",
                                "empty"]))
    if how in ("own", "app"):
        return {"matchLabels": {"app": draw(st.sampled_from(APPS))}}
    if how == "tier":
        return {"matchLabels": {"tier": draw(st.sampled_from(TIERS))}}
    if how in ("in", "notin"):
        return {"matchExpressions": [{"key": "app", "operator": "In" if how == "in" else
                                      "NotIn", "values": draw(st.lists(
                                          st.sampled_from(APPS), min_size=1, max_size=2))}]}
    if how in ("exists", "absent"):
        return {"matchExpressions": [{"key": "tier", "operator": "Exists" if how == "exists"
                                      else "DoesNotExist"}]}
    return {}


@st.composite
def clusters(draw):
    """(nodes, pods, owners): hosts of 1-3 nodes; StatefulSets whose pods may declare
    anti-affinity or spreading on the host key, selecting their own pods or others', in
    two namespaces; pods of other workloads with no intent at all."""
    hosts = draw(st.integers(2, 4))
    nodes = [node("n%d-%d" % (h, i), "h%d" % h) for h in range(hosts)
             for i in range(draw(st.integers(1, 3)))]
    pods, owners = [], []
    for w in range(draw(st.integers(1, 6))):
        ns = draw(st.sampled_from(["default", "cnf"]))
        app = draw(st.sampled_from(APPS))
        labels = {"app": app}
        if draw(st.booleans()):
            labels["tier"] = draw(st.sampled_from(TIERS))
        intent = draw(st.sampled_from(["none", "required", "preferred", "spread"]))
        affinity, spread = None, None
        sel = selector(draw)
        if intent in ("required", "preferred"):
            t = {"topologyKey": KEY, "labelSelector": sel}
            if draw(st.booleans()):
                t["namespaces"] = ["default", "cnf"]
            affinity = (builders.affinity(req_anti=[t]) if intent == "required" else
                        builders.affinity(pref_anti=[builders.weighted(50, t)]))
        elif intent == "spread":
            spread = [{"maxSkew": 1, "topologyKey": KEY, "whenUnsatisfiable": "DoNotSchedule",
                       "labelSelector": sel}]
        name = "w%d" % w
        owners.append(owner("StatefulSet", name, ns=ns, replicas=draw(st.integers(1, 4))))
        for r in range(draw(st.integers(1, 4))):
            on = draw(st.sampled_from(nodes))["metadata"]["name"]
            pods.append(pod("%s-%d" % (name, r), on, labels, owner=("StatefulSet", name),
                            ns=ns, affinity=affinity, spread=spread))
    return nodes, pods, owners


def figures(report):
    return [w.to_json() for w in report.workloads], report.notes, report.warnings


@settings(max_examples=150, deadline=None)
@given(clusters())
def test_the_verdicts_are_those_of_every_pod_whole(cluster):
    nodes, pods, owners = cluster
    lean = core.audit(nodes, pods, KEY, owners=owners)
    whole = core.audit(nodes, pods, KEY, owners=owners, keep_engine=True)
    assert figures(lean) == figures(whole)


def test_a_pod_no_judged_term_selects_is_not_parsed():
    """Its spec could not even be parsed (a quantity no one reads): nothing asks for it."""
    nodes = [node("n1", "h1"), node("n2", "h2")]
    t = {"topologyKey": KEY, "labelSelector": {"matchLabels": {"app": "db"}}}
    pods = [pod("db-0", "n1", {"app": "db"}, owner=("StatefulSet", "db"),
                affinity=builders.affinity(req_anti=[t])),
            pod("db-1", "n1", {"app": "db"}, owner=("StatefulSet", "db"),
                affinity=builders.affinity(req_anti=[t])),
            pod("web-0", "n2", {"app": "web"}, owner=("StatefulSet", "web"))]
    pods[2]["spec"]["containers"] = [builders.container(requests={"cpu": "lots"})]
    report = core.audit(nodes, pods, KEY)
    db = next(w for w in report.workloads if w.name == "db")
    assert db.intent_met is False and len(db.violations) == 2
