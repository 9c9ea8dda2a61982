"""InterPodAffinity Filter: every rule of the edge-case checklist."""
from tacker_hwaffinity.scheduling.plugins.interpod import (
    ERR_AFFINITY, ERR_ANTI, ERR_EXISTING_ANTI)

from tests.builders import affinity, namespace, node, pod, term
from .helpers import feasible, run

Z = "zone"
NODES = [node("n1", {Z: "z1", "host": "n1"}), node("n2", {Z: "z1", "host": "n2"}),
         node("n3", {Z: "z2", "host": "n3"}), node("n4", {"host": "n4"})]


def test_required_affinity_needs_one_pod_matching_all_terms():
    existing = [pod("a", {"app": "a"}, on="n1"), pod("b", {"tier": "b"}, on="n3")]
    incoming = pod("x", affinity=affinity(req_aff=[term(Z, {"app": "a"}), term(Z, {"tier": "b"})]))
    r = run(NODES, incoming, existing)
    assert feasible(r) == []
    assert r["n1"]["reasons"] == [ERR_AFFINITY]
    both = existing + [pod("c", {"app": "a", "tier": "b"}, on="n3")]
    assert feasible(run(NODES, incoming, both)) == ["n3"]


def test_affinity_fails_nodes_missing_the_topology_key():
    existing = [pod("a", {"app": "a"}, on="n4")]
    incoming = pod("x", affinity=affinity(req_aff=[term("host", {"app": "a"})]))
    assert feasible(run(NODES, incoming, existing)) == ["n4"]
    incoming = pod("x", affinity=affinity(req_aff=[term(Z, {"app": "a"})]))
    r = run(NODES, incoming, existing + [pod("b", {"app": "a"}, on="n1")])
    assert feasible(r) == ["n1", "n2"]
    assert r["n4"]["reasons"] == [ERR_AFFINITY]


def test_first_pod_of_a_self_affine_group_passes_where_keys_exist():
    incoming = pod("x", {"app": "db"}, affinity=affinity(req_aff=[term(Z, {"app": "db"})]))
    assert feasible(run(NODES, incoming)) == ["n1", "n2", "n3"]


def test_first_pod_exception_needs_the_pod_to_match_itself():
    incoming = pod("x", {"app": "web"}, affinity=affinity(req_aff=[term(Z, {"app": "db"})]))
    assert feasible(run(NODES, incoming)) == []


def test_first_pod_exception_is_lost_once_a_matching_pod_exists():
    incoming = pod("x", {"app": "db"}, affinity=affinity(req_aff=[term(Z, {"app": "db"})]))
    assert feasible(run(NODES, incoming, [pod("d", {"app": "db"}, on="n3")])) == ["n3"]


def test_pods_on_nodes_without_the_key_do_not_block_the_exception():
    incoming = pod("x", {"app": "db"}, affinity=affinity(req_aff=[term(Z, {"app": "db"})]))
    assert feasible(run(NODES, incoming, [pod("d", {"app": "db"}, on="n4")])) == [
        "n1", "n2", "n3"]


def test_anti_affinity_blocks_the_whole_domain_but_not_nodes_without_the_key():
    incoming = pod("x", affinity=affinity(req_anti=[term(Z, {"app": "a"})]))
    r = run(NODES, incoming, [pod("a", {"app": "a"}, on="n1")])
    assert feasible(r) == ["n3", "n4"]
    assert r["n2"]["reasons"] == [ERR_ANTI]


def test_incoming_pod_is_not_checked_against_itself():
    incoming = pod("x", {"app": "a"}, affinity=affinity(req_anti=[term("host", {"app": "a"})]))
    assert feasible(run(NODES, incoming)) == ["n1", "n2", "n3", "n4"]


def test_existing_pods_anti_affinity_is_symmetric():
    existing = [pod("e", {"app": "e"}, on="n1",
                    affinity=affinity(req_anti=[term(Z, {"app": "x"})]))]
    r = run(NODES, pod("x", {"app": "x"}), existing)
    assert feasible(r) == ["n3", "n4"]
    assert r["n2"]["reasons"] == [ERR_EXISTING_ANTI]
    assert feasible(run(NODES, pod("y", {"app": "y"}), existing)) == ["n1", "n2", "n3", "n4"]


def test_symmetry_uses_only_the_terms_that_match():
    existing = [pod("e", on="n1", affinity=affinity(req_anti=[
        term("host", {"app": "x"}), term(Z, {"app": "other"})]))]
    assert feasible(run(NODES, pod("x", {"app": "x"}), existing)) == ["n2", "n3", "n4"]


def test_existing_pods_preferred_terms_never_filter():
    existing = [pod("e", on="n1", affinity=affinity(pref_anti=[
        {"weight": 100, "podAffinityTerm": term(Z, {"app": "x"})}]))]
    assert feasible(run(NODES, pod("x", {"app": "x"}), existing)) == ["n1", "n2", "n3", "n4"]


def test_reason_order_affinity_then_anti_then_existing():
    existing = [pod("a", {"app": "a"}, on="n1"),
                pod("e", on="n3", affinity=affinity(req_anti=[term(Z, {"app": "x"})]))]
    incoming = pod("x", {"app": "x"}, affinity=affinity(
        req_aff=[term("host", {"app": "a"})], req_anti=[term(Z, {"app": "a"})]))
    r = run(NODES, incoming, existing)
    assert r["n1"]["reasons"] == [ERR_ANTI]       # affinity holds, anti-affinity fails
    assert r["n2"]["reasons"] == [ERR_AFFINITY]   # no app=a on host n2
    assert r["n3"]["reasons"] == [ERR_AFFINITY]
    assert r["n4"]["reasons"] == [ERR_AFFINITY]


def test_namespace_defaults_to_the_pods_own():
    existing = [pod("a", {"app": "a"}, ns="other", on="n1")]
    incoming = pod("x", affinity=affinity(req_anti=[term("host", {"app": "a"})]))
    assert "n1" in feasible(run(NODES, incoming, existing))


def test_explicit_namespaces_replace_the_own_namespace():
    existing = [pod("a", {"app": "a"}, ns="default", on="n1"),
                pod("b", {"app": "a"}, ns="other", on="n2")]
    incoming = pod("x", affinity=affinity(req_anti=[term("host", {"app": "a"},
                                                         namespaces=["other"])]))
    assert feasible(run(NODES, incoming, existing)) == ["n1", "n3", "n4"]


def test_empty_namespace_selector_means_all_namespaces():
    existing = [pod("a", {"app": "a"}, ns="n-a", on="n1"),
                pod("b", {"app": "a"}, ns="n-b", on="n3")]
    incoming = pod("x", affinity=affinity(req_anti=[term("host", {"app": "a"}, ns_selector={})]))
    assert feasible(run(NODES, incoming, existing)) == ["n2", "n4"]


def test_namespace_selector_unions_with_the_list():
    nss = [namespace("team-a", {"team": "a"}), namespace("team-b", {"team": "b"}),
           namespace("plain")]
    existing = [pod("a", {"app": "a"}, ns="team-a", on="n1"),
                pod("b", {"app": "a"}, ns="team-b", on="n2"),
                pod("c", {"app": "a"}, ns="plain", on="n3")]
    incoming = pod("x", affinity=affinity(req_anti=[term(
        "host", {"app": "a"}, namespaces=["plain"], ns_selector={"matchLabels": {"team": "a"}})]))
    assert feasible(run(NODES, incoming, existing, nss)) == ["n2", "n4"]


def test_namespace_selector_never_selects_a_namespace_without_an_object():
    existing = [pod("a", {"app": "a"}, ns="ghost", on="n1")]
    incoming = pod("x", affinity=affinity(req_anti=[term(
        "host", {"app": "a"}, ns_selector={"matchExpressions": [
            {"key": "team", "operator": "DoesNotExist"}]})]))
    assert feasible(run(NODES, incoming, existing)) == ["n1", "n2", "n3", "n4"]


def test_existing_pods_namespace_selector_reads_the_incoming_namespace_labels():
    nss = [namespace("prod", {"env": "prod"}), namespace("dev", {"env": "dev"})]
    existing = [pod("e", ns="infra", on="n1", affinity=affinity(req_anti=[term(
        "host", {"app": "x"}, ns_selector={"matchLabels": {"env": "prod"}})]))]
    assert feasible(run(NODES, pod("x", {"app": "x"}, ns="prod"), existing, nss)) == [
        "n2", "n3", "n4"]
    assert "n1" in feasible(run(NODES, pod("x", {"app": "x"}, ns="dev"), existing, nss))


def test_nil_label_selector_matches_no_pod():
    incoming = pod("x", affinity=affinity(req_anti=[term("host")]))
    assert feasible(run(NODES, incoming, [pod("a", {"app": "a"}, on="n1")])) == [
        "n1", "n2", "n3", "n4"]


def test_terminal_pods_are_ignored_and_terminating_pods_count():
    incoming = pod("x", affinity=affinity(req_anti=[term("host", {"app": "a"})]))
    done = [pod("a", {"app": "a"}, on="n1", phase="Succeeded"),
            pod("b", {"app": "a"}, on="n2", phase="Failed")]
    assert feasible(run(NODES, incoming, done)) == ["n1", "n2", "n3", "n4"]
    leaving = [pod("c", {"app": "a"}, on="n3", phase="Running", deleting=True)]
    assert "n3" not in feasible(run(NODES, incoming, leaving))


def test_not_in_and_does_not_exist_select_pods_without_the_key():
    incoming = pod("x", affinity=affinity(req_anti=[term("host", exprs=[
        {"key": "app", "operator": "NotIn", "values": ["web"]}])]))
    existing = [pod("a", {"other": "1"}, on="n1"), pod("b", {"app": "web"}, on="n2")]
    assert feasible(run(NODES, incoming, existing)) == ["n2", "n3", "n4"]


def test_match_label_keys_scope_the_term_to_the_same_revision():
    t = term("host", {"app": "web"}, matchLabelKeys=["pod-template-hash"])
    existing = [pod("old", {"app": "web", "pod-template-hash": "v1"}, on="n1"),
                pod("new", {"app": "web", "pod-template-hash": "v2"}, on="n2")]
    incoming = pod("x", {"app": "web", "pod-template-hash": "v2"},
                   affinity=affinity(req_anti=[t]))
    assert feasible(run(NODES, incoming, existing)) == ["n1", "n3", "n4"]


def test_mismatch_label_keys_exclude_the_same_tenant():
    t = term("host", exprs=[{"key": "tenant", "operator": "Exists"}], mismatchLabelKeys=["tenant"])
    existing = [pod("a", {"tenant": "t1"}, on="n1"), pod("b", {"tenant": "t2"}, on="n2")]
    incoming = pod("x", {"tenant": "t1"}, affinity=affinity(req_anti=[t]))
    assert feasible(run(NODES, incoming, existing)) == ["n1", "n3", "n4"]


def test_gt_lt_in_pod_affinity_selects_a_label_range_and_is_noted():
    existing = [pod("a", {"foo": "25"}, on="n1"), pod("b", {"foo": "35"}, on="n3")]
    incoming = pod("x", affinity=affinity(req_aff=[term(Z, exprs=[
        {"key": "foo", "operator": "Gt", "values": ["20"]},
        {"key": "foo", "operator": "Lt", "values": ["30"]}])]))
    r = run(NODES, incoming, existing)
    assert feasible(r) == ["n1", "n2"]


def test_pods_bound_to_unknown_nodes_count_for_nothing():
    incoming = pod("x", affinity=affinity(req_anti=[term(Z, {"app": "a"})]))
    assert feasible(run(NODES, incoming, [pod("a", {"app": "a"}, on="elsewhere")])) == [
        "n1", "n2", "n3", "n4"]
