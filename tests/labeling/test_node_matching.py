"""A worker's node: the node whose spec.providerID names its server first, InternalIP
second; a node whose providerID names another server (or another region) is never
matched by its address. Nodes are read from Node objects by labeling.nodes.kube_node."""
import json

from tacker_hwaffinity.labeling import kubectl, nodes, params, plan
from tacker_hwaffinity.labeling.plan import NodeIndex, Worker, node_of
from tests import builders

S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"
OLD = "99999999-9999-4999-8999-999999999999"


def node(name, ip=None, provider=None, labels=None):
    return nodes.kube_node(builders.node(name, labels, ip=ip, provider_id=provider))


def match(worker, cluster, region=None):
    return node_of(worker, NodeIndex(cluster, region))


def test_kube_node_reads_name_labels_internal_ips_and_provider_id():
    n = node("k1", "10.0.0.1", "openstack://RegionOne/" + S1, {"a": "b"})
    assert (n.name, n.internal_ips, n.labels, n.provider_id, n.provider.region) == (
        "k1", ("10.0.0.1",), {"a": "b"}, S1, "RegionOne")
    assert node("k2", "10.0.0.2").provider_id is None


def test_provider_id_wins_over_a_conflicting_internal_ip():
    cluster = [node("by-ip", "10.0.0.1"), node("by-id", "10.0.0.7", "openstack:///" + S1)]
    found, error = match(Worker("w1", S1, ["10.0.0.1"]), cluster)
    assert error is None and found.name == "by-id"


def test_both_occm_forms_match():
    for provider in ("openstack:///" + S1, "openstack://RegionOne/" + S1):
        found, error = match(Worker("w1", S1, ["10.9.9.9"]), [node("k", "10.0.0.1", provider)],
                             region="RegionOne")
        assert error is None and found.name == "k"


def test_a_reused_internal_ip_on_another_servers_node_is_not_matched():
    # the old VM's node is still there; the new VM got its address and has not joined
    cluster = [node("old", "10.0.0.5", "openstack:///" + OLD)]
    found, error = match(Worker("new", S2, ["10.0.0.5"]), cluster)
    assert found is None
    assert "InternalIP among 10.0.0.5 are another server's by their providerID " \
        "(old: openstack:///%s): an address reused by a new VM, not matched" % OLD in error
    # ... and once it has joined, its own node is matched, the old one never
    cluster.append(node("new", "10.0.0.5", "openstack:///" + S2))
    found, error = match(Worker("new", S2, ["10.0.0.5"]), cluster)
    assert error is None and found.name == "new"
    assert match(Worker("gone", OLD, ["10.0.0.4"]), cluster)[0].name == "old"


def test_junk_provider_ids_fall_back_to_the_internal_ip():
    for junk in ("aws:///us-east-1a/i-0abc123def456789", "kind://docker/kind/kind-worker", "",
                 "openstack:///" + "x" * 5000, "openstack:///not-a-uuid"):
        found, error = match(Worker("w1", S1, ["10.0.0.1"]), [node("k", "10.0.0.1", junk)])
        assert error is None and found.name == "k", junk


def test_another_regions_node_is_not_matched_and_the_error_says_why():
    cluster = [node("far", "10.0.0.1", "openstack://RegionTwo/" + S1)]
    found, error = match(Worker("w1", S1, ["10.0.0.1"]), cluster, region="RegionOne")
    assert found is None
    assert "far have a providerID naming server %s in region RegionTwo, but the credentials " \
        "are for region RegionOne" % S1 in error
    assert match(Worker("w1", S1, ["10.0.0.1"]), cluster)[0].name == "far"   # region unknown
    # a node of another region is no node by address either
    found, error = match(Worker("w2", S2, ["10.0.0.1"]), cluster, region="RegionOne")
    assert found is None and "not matched" in error


def test_ambiguity_is_an_error_naming_both_ways():
    cluster = [node("a", "10.0.0.1", "openstack:///" + S1), node("b", "10.0.0.2",
                                                                   "openstack:///" + S1)]
    assert match(Worker("w1", S1, []), cluster)[1] == \
        "several nodes have a providerID naming server %s: a, b" % S1
    cluster = [node("a", "10.0.0.1"), node("b", "10.0.0.1")]
    assert "match several nodes: a, b (none has a providerID naming server" in \
        match(Worker("w1", S1, ["10.0.0.1"]), cluster)[1]
    assert "no Kubernetes node has an InternalIP among 10.0.0.3 or a providerID naming " \
        "server %s" % S1 in match(Worker("w1", S1, ["10.0.0.3"]), cluster)[1]


def test_the_plan_labels_each_node_with_its_own_servers_host():
    cluster = [node("n1", "10.0.0.2", "openstack:///" + S1),     # n1 has S2's address
               node("n2", "10.0.0.2", "openstack:///" + S2)]
    workers = [Worker("w1", S1, ["10.0.0.1"], host="h1"),
               Worker("w2", S2, ["10.0.0.2"], host="h2")]
    p = plan.plan(workers, cluster, params.parse({})["hwaffinity"])
    assert p.errors == [] and p.desired() == {"n1": {"CIS-node": "h1"}, "n2": {"CIS-node": "h2"}}


def test_kubectl_reads_the_provider_id():
    text = json.dumps({"kind": "NodeList", "items": [
        builders.node("k", ip="10.0.0.1", provider_id="openstack:///" + S1)]})
    [n] = kubectl.parse_nodes(text)
    assert n.provider_id == S1
