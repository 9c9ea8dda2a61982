import json

from hypothesis import given, settings, strategies as st

from tacker_hwaffinity.audit import core
from tacker_hwaffinity.audit.owners import workload_of
from tacker_hwaffinity.scheduling.annotations import POD_AFFINITY, REQUIRED_DURING_EXECUTION
from tacker_hwaffinity.scheduling.plugins.interpod import ERR_ANTI
from tacker_hwaffinity.scheduling.plugins.topologyspread import ERR_CONSTRAINTS

from tests.audit.helpers import anti, node, owner, pdb, pod

NODES = [node("w1", "h1"), node("w2", "h1"), node("w3", "h2"), node("w4", "h3")]


def _one(report, name):
    (w,) = [w for w in report.workloads if w.name == name]
    return w


def test_deployment_through_its_replicaset_and_desired_replicas():
    rs = owner("ReplicaSet", "web-abc", replicas=4, up=("Deployment", "web"))
    dep = owner("Deployment", "web", replicas=4)
    pods = [pod("web-abc-%d" % i, n, {"app": "web"}, ("ReplicaSet", "web-abc"))
            for i, n in enumerate(["w1", "w2", "w3"])]
    w = _one(core.audit(NODES, pods, "CIS-node", owners=[rs, dep]), "web")
    assert (w.kind, w.running, w.desired) == ("Deployment", 3, 4)
    assert (w.worst_host, w.worst_loss, w.loss_ratio) == ("h1", 2, 0.5)


def test_without_owners_the_hash_suffix_names_the_deployment():
    meta = {"name": "web-5d8f-x", "namespace": "n", "labels": {"pod-template-hash": "5d8f"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-5d8f", "controller": True}]}
    assert workload_of(meta) == ("Deployment", "web")
    meta["labels"] = {}
    assert workload_of(meta) == ("ReplicaSet", "web-5d8f")
    assert workload_of({"name": "p"}) == ("Pod", "p")


def test_daemonset_desired_from_status_else_pod_count():
    pods = [pod("ds-%d" % i, n, {"app": "ds"}, ("DaemonSet", "ds"))
            for i, n in enumerate(["w1", "w3"])]
    ds = owner("DaemonSet", "ds", status={"desiredNumberScheduled": 4})
    assert _one(core.audit(NODES, pods, "CIS-node", owners=[ds]), "ds").desired == 4
    ds = owner("DaemonSet", "ds")
    assert _one(core.audit(NODES, pods, "CIS-node", owners=[ds]), "ds").desired == 2


def test_unlabelled_node_is_its_own_host_and_not_running_pods_do_not_count():
    nodes = NODES + [node("w5")]
    pods = [pod("a", "w5", {"app": "a"}, ("StatefulSet", "s")),
            pod("b", "w4", {"app": "a"}, ("StatefulSet", "s")),
            pod("c", "w4", {"app": "a"}, ("StatefulSet", "s"), phase="Succeeded"),
            pod("d", None, {"app": "a"}, ("StatefulSet", "s"), phase="Pending")]
    r = core.audit(nodes, pods, "CIS-node")
    w = _one(r, "s")
    assert w.hosts == {"node/w5": 1, "h3": 1}
    assert r.to_json()["hosts"][-1] == {"host": "node/w5", "labelled": False, "nodes": 1}
    assert any("not scheduled" in n for n in r.notes)


def test_required_anti_affinity_met_and_unmet_with_explain_reasons():
    pods = [pod("db-%d" % i, n, {"app": "db"}, ("StatefulSet", "db"), affinity=anti("db"))
            for i, n in enumerate(["w1", "w3", "w4"])]
    w = _one(core.audit(NODES, pods, "CIS-node"), "db")
    assert w.intent == [{"type": "requiredAntiAffinity", "terms": 1}]
    assert w.intent_met is True and not w.unprotected
    pods[1]["spec"]["nodeName"] = "w2"         # now two on h1
    w = _one(core.audit(NODES, pods, "CIS-node"), "db")
    assert w.intent_met is False
    assert sorted(v["pod"] for v in w.violations) == ["db-0", "db-1"]
    assert w.violations[0]["reasons"] == [ERR_ANTI]


def test_intent_on_another_key_is_no_intent():
    pods = [pod("db-%d" % i, n, {"app": "db"}, ("StatefulSet", "db"),
                affinity=anti("db", key="kubernetes.io/hostname"))
            for i, n in enumerate(["w1", "w2"])]
    w = _one(core.audit(NODES, pods, "CIS-node"), "db")
    assert w.intent == [] and w.intent_met is None and w.unprotected


def test_preferred_anti_affinity_unmet():
    pods = [pod("w-%d" % i, n, {"app": "w"}, ("StatefulSet", "w"),
                affinity=anti("w", preferred=True)) for i, n in enumerate(["w1", "w2"])]
    w = _one(core.audit(NODES, pods, "CIS-node"), "w")
    assert w.intent[0]["type"] == "preferredAntiAffinity" and w.intent_met is False


def test_topology_spread_on_the_key():
    spread = [{"maxSkew": 1, "topologyKey": "CIS-node", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "s"}}}]
    pods = [pod("s-%d" % i, n, {"app": "s"}, ("StatefulSet", "s"), spread=spread)
            for i, n in enumerate(["w1", "w2", "w1"])]          # h1: 3, h2: 0, h3: 0
    w = _one(core.audit(NODES, pods, "CIS-node"), "s")
    assert w.intent[0]["type"] == "topologySpread"
    assert w.intent_met is False and w.violations[0]["reasons"] == [ERR_CONSTRAINTS]
    for p, n in zip(pods, ["w1", "w3", "w4"]):
        p["spec"]["nodeName"] = n
    assert _one(core.audit(NODES, pods, "CIS-node"), "s").intent_met is True


def test_required_during_execution_annotation_is_intent():
    rde = json.dumps({"podAntiAffinity": [{"labelSelector": {"matchLabels": {"app": "r"}},
                                           "topologyKey": "CIS-node"}]})
    pods = [pod("r-%d" % i, n, {"app": "r"}, ("StatefulSet", "r"),
                annotations={REQUIRED_DURING_EXECUTION: rde})
            for i, n in enumerate(["w1", "w2"])]
    w = _one(core.audit(NODES, pods, "CIS-node"), "r")
    assert w.intent == [{"type": "requiredDuringExecution", "terms": 1}]
    assert w.intent_met is False


def test_pdb_after_the_worst_host():
    pods = [pod("p-%d" % i, n, {"app": "p"}, ("StatefulSet", "p"))
            for i, n in enumerate(["w1", "w2", "w3", "w4"])]
    ss = owner("StatefulSet", "p", replicas=4)
    r = core.audit(NODES, pods, "CIS-node", owners=[ss],
                   pdbs=[pdb("ok", {"matchLabels": {"app": "p"}}, max_unavailable="50%"),
                         pdb("tight", {"matchLabels": {"app": "p"}}, min_available=3),
                         pdb("other", {"matchLabels": {"app": "q"}}, min_available=3)])
    w = _one(r, "p")
    assert [(b["name"], b["holds"]) for b in w.pdbs] == [("ok", True), ("tight", False)]
    assert w.pdb_holds is False


def test_unprotected_needs_two_replicas():
    pods = [pod("a", "w1", {"app": "a"}), pod("b-0", "w1", {"app": "b"}, ("StatefulSet", "b")),
            pod("b-1", "w3", {"app": "b"}, ("StatefulSet", "b"))]
    r = core.audit(NODES, pods, "CIS-node")
    assert _one(r, "b").unprotected and not _one(r, "a").unprotected
    assert r.workloads[0].name == "b"           # multi-replica first


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 5)), min_size=1, max_size=30))
def test_worst_is_max_and_hosts_sum_to_running(placements):
    nodes = [node("n%d" % i, "h%d" % (i % 4) if i < 5 else None) for i in range(6)]
    pods = [pod("p%d" % k, "n%d" % n, {"app": "w%d" % w}, ("StatefulSet", "w%d" % w))
            for k, (w, n) in enumerate(placements)]
    for w in core.audit(nodes, pods, "CIS-node").workloads:
        assert sum(w.hosts.values()) == w.running
        assert w.worst_loss == max(w.hosts.values())
        assert w.hosts[w.worst_host] == w.worst_loss
        assert 0 < w.loss_ratio <= 1


def test_a_malformed_term_annotation_is_a_note_not_the_end_of_the_audit():
    """The annotations are any pod creator's text, unchecked by the API server: a pod
    with a malformed one that names the key still counts (its labels too, for the
    others' intent), its workload's intent is not judged (nor called unprotected), and
    a note says why."""
    nodes = [node("w1", "h1"), node("w2", "h2")]
    pods = [pod("a-%d" % i, n, {"app": "a"}, ("StatefulSet", "a"), affinity=anti("a"))
            for i, n in enumerate(["w1", "w2"])]
    pods += [pod("e-%d" % i, "w1", {"app": "a"}, ("StatefulSet", "e"),
                 annotations={REQUIRED_DURING_EXECUTION: "{not json: CIS-node"})
             for i in range(2)]
    r = core.audit(nodes, pods, "CIS-node")
    by = {w.name: w for w in r.workloads}
    assert (by["e"].running, by["e"].intent_met, by["e"].unprotected) == (2, None, False)
    assert by["a"].intent_met is False      # e-0/e-1 carry app=a on h1: they still count
    (note,) = [n for n in r.notes if "intent not judged" in n]
    assert "StatefulSet default/e" in note and "pod default/e-0" in note
    assert "metadata.annotations[%s]" % REQUIRED_DURING_EXECUTION in note
    assert "not JSON" in note


def test_anti_affinity_given_in_the_pod_affinity_annotation_is_intent():
    """hwaffinity.io/pod-affinity carries the spec.affinity schema (with Gt/Lt): its
    anti-affinity on the key is the workload's intent like spec.affinity's."""
    ann = {POD_AFFINITY: json.dumps(anti("a"))}
    pods = [pod("a-%d" % i, n, {"app": "a"}, ("StatefulSet", "a"), annotations=ann)
            for i, n in enumerate(["w1", "w2"])]        # both on h1
    w = _one(core.audit(NODES, pods, "CIS-node"), "a")
    assert [i["type"] for i in w.intent] == ["requiredAntiAffinity"]
    assert w.intent_met is False and not w.unprotected


def test_a_pod_whose_evaluation_fails_is_named_in_the_report(monkeypatch):
    """One pod that makes the audit raise (a bug on an odd object) is left out, and the
    report's notes, in text and JSON, name it: no pod disappears unsaid."""
    from tacker_hwaffinity.audit import render
    count = core._count_pod

    def broken_on_b(obj, *args):
        if obj["metadata"]["name"] == "b-0":
            raise KeyError("spec")
        return count(obj, *args)
    monkeypatch.setattr(core, "_count_pod", broken_on_b)
    pods = [pod("a-0", "w1", {"app": "a"}, ("StatefulSet", "a")),
            pod("b-0", "w2", {"app": "b"}, ("StatefulSet", "b"))]
    r = core.audit([node("w1", "h1"), node("w2", "h2")], pods, "CIS-node")
    assert [w.name for w in r.workloads] == ["a"]
    line = "pod default/b-0 left out: it could not be evaluated (KeyError: 'spec')"
    assert "Note: " + line in render.to_text(r, show_all=True)
    assert line in render.to_dict(r)["notes"]
