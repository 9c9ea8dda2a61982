"""Labelling core: sanitising, parameters, worker -> host -> node planning, kubectl calls."""
import json

import pytest
from hypothesis import given, settings, strategies as st

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects.validation import label_value_error
from tacker_hwaffinity.labeling import kubectl, params, plan
from tacker_hwaffinity.labeling.sanitize import label_value


@settings(max_examples=500, deadline=None)
@given(st.text(min_size=1, max_size=120))
def test_sanitised_values_are_valid_deterministic_and_keep_valid_names(name):
    v = label_value(name)
    assert label_value_error(v) is None
    assert label_value(name) == v
    if label_value_error(name) is None:
        assert v == name


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=80), st.text(min_size=1, max_size=80))
def test_different_invalid_names_get_different_values(a, b):
    if a != b and label_value_error(a) and label_value_error(b):
        assert label_value(a) != label_value(b)


def test_sanitising_examples():
    assert label_value("compute-1.example.com") == "compute-1.example.com"
    assert label_value("rack 3/host@7").startswith("rack-3-host-7-")
    long = "c" * 80
    assert len(label_value(long)) == 63 and label_value(long).startswith("c" * 54 + "-")


REF = {"k8s_cluster_installation_param": {
    "script_path": "Scripts/install_k8s_cluster.sh",
    "master_node": {"aspect_id": "master_instance", "ssh_cp_name": "masterNode_CP1",
                    "nic_cp_name": "masterNode_CP1", "username": "ubuntu", "password": "s3cret",
                    "pod_cidr": "192.168.0.0/16"},
    "worker_node": {"aspect_id": "worker_instance", "ssh_cp_name": "workerNode_CP2",
                    "nic_cp_name": "workerNode_CP2", "username": "ubuntu", "password": "w0rk"}}}


def test_reference_block_is_accepted_as_it_is_with_our_defaults():
    p = params.parse(REF)
    assert p["worker"]["aspect_id"] == "worker_instance"
    hw = p["hwaffinity"]
    assert hw.label_keys == ("CIS-node",) and hw.host_source == "auto"
    assert hw.ssh["insecure_ignore_host_key"] is False and hw.ssh["retries"] == 3
    assert sorted(params.secrets(p)) == ["s3cret", "w0rk"]


@pytest.mark.parametrize("block,field,what", [
    ({"label_keys": ["bad key!"]}, "hwaffinity_param.label_keys[0]", "invalid"),
    ({"label_keys": "CIS-node"}, "hwaffinity_param.label_keys", "expected an array"),
    ({"label_keys": []}, "hwaffinity_param.label_keys", "at least one label key"),
    ({"host_source": "guess"}, "hwaffinity_param.host_source", "must be one of"),
    ({"on_colocation": "ignore"}, "hwaffinity_param.on_colocation", "must be one of"),
    ({"ssh": {"port": 0}}, "hwaffinity_param.ssh.port", "at least 1"),
    ({"ssh": {"prot": 22}}, "hwaffinity_param.ssh.prot", "unknown field"),
    ({"ssh": {"insecure_ignore_host_key": True, "known_hosts": "x"}},
     "hwaffinity_param.ssh.insecure_ignore_host_key", "contradicts"),
    ({"ssh": {"jump_host": {"port": "22"}}}, "hwaffinity_param.ssh.jump_host.port",
     "expected an integer"),
    ({"drain": {"timeout": -1}}, "hwaffinity_param.drain.timeout", "at least 1"),
])
def test_bad_parameters_name_the_field(block, field, what):
    with pytest.raises(InputError) as e:
        params.parse(dict(REF, hwaffinity_param=block))
    assert e.value.field == "additionalParams." + field
    assert what in e.value.message


def test_json_schema_describes_every_field_and_marks_secrets():
    s = params.json_schema()
    assert s["additionalProperties"] is False
    assert set(s["properties"]) == set(params.SPEC)
    assert s["properties"]["ssh"]["properties"]["password"]["writeOnly"] is True
    assert s["properties"]["host_source"]["enum"] == ["auto", "host", "hostId"]
    json.dumps(s)


def hw(**kw):
    return params.parse({"hwaffinity_param": kw})["hwaffinity"]


NODES = [plan.KubeNode("k-w1", ["10.0.0.11"], {"CIS-node": "compute-1"}),
         plan.KubeNode("k-w2", ["10.0.0.12"], {}),
         plan.KubeNode("k-w3", ["10.0.0.13", "fd00::13"], {"CIS-node": "old"})]


def test_plan_matches_by_internal_ip_and_only_changes_what_differs():
    workers = [plan.Worker("w1", "s1", ["10.0.0.11"], host="compute-1", host_id="h1"),
               plan.Worker("w2", "s2", ["192.168.9.9", "10.0.0.12"], host="compute-2",
                           host_id="h2"),
               plan.Worker("w3", "s3", ["fd00::13"], host="compute-3", host_id="h3")]
    p = plan.plan(workers, NODES, hw())
    assert p.source == "host" and p.errors == [] and p.warnings == []
    assert p.desired() == {"k-w1": {"CIS-node": "compute-1"}, "k-w2": {"CIS-node": "compute-2"},
                           "k-w3": {"CIS-node": "compute-3"}}
    assert p.changes() == {"k-w2": {"CIS-node": "compute-2"}, "k-w3": {"CIS-node": "compute-3"}}
    assert [m["node"] for m in p.mapping()] == ["k-w1", "k-w2", "k-w3"]


def test_auto_falls_back_to_host_id_for_every_worker_when_hosts_are_hidden():
    workers = [plan.Worker("w1", "s1", ["10.0.0.11"], host="compute-1", host_id="h1"),
               plan.Worker("w2", "s2", ["10.0.0.12"], host=None, host_id="h2")]
    p = plan.plan(workers, NODES, hw())
    assert p.source == "hostId"
    assert p.desired() == {"k-w1": {"CIS-node": "h1"}, "k-w2": {"CIS-node": "h2"}}


def test_forced_host_without_admin_rights_is_an_error_that_says_why():
    p = plan.plan([plan.Worker("w1", "s1", ["10.0.0.11"], host_id="h1")], NODES,
                  hw(host_source="host"))
    assert len(p.errors) == 1 and "admin role" in p.errors[0] and "w1 (server s1)" in p.errors[0]
    assert p.desired() == {}


def test_unmatched_and_ambiguous_workers_are_reported():
    nodes = NODES + [plan.KubeNode("dup", ["10.0.0.12"], {})]
    workers = [plan.Worker("w9", "s9", ["10.9.9.9"], host="c9"),
               plan.Worker("w2", "s2", ["10.0.0.12"], host="c2")]
    errs = plan.plan(workers, nodes, hw()).errors
    assert "no Kubernetes node has an InternalIP among 10.9.9.9 or a providerID naming " \
        "server s9" in errs[0]
    assert "match several nodes: dup, k-w2 (none has a providerID naming server s2)" in errs[1]


def test_colocation_warns_or_fails():
    workers = [plan.Worker("w1", "s1", ["10.0.0.11"], host="compute-1"),
               plan.Worker("w2", "s2", ["10.0.0.12"], host="compute-1")]
    warn = plan.plan(workers, NODES, hw())
    assert warn.errors == [] and "w1, w2 share compute host compute-1" in warn.warnings[0]
    fail = plan.plan(workers, NODES, hw(on_colocation="fail"))
    assert fail.warnings == [] and "share compute host" in fail.errors[0]


def test_zone_label_and_extra_keys():
    workers = [plan.Worker("w1", "s1", ["10.0.0.11"], host="compute-1", zone="az 1")]
    p = plan.plan(workers, NODES, hw(label_keys=["CIS-node", "example.com/host"],
                                     zone_label_key="topology.kubernetes.io/zone"))
    labels = p.desired()["k-w1"]
    assert labels["example.com/host"] == "compute-1"
    assert labels["topology.kubernetes.io/zone"].startswith("az-1-")


def test_apply_labels_is_one_call_with_every_node():
    argv, stdin = kubectl.apply_labels({"b": {"k": "2"}, "a": {"k": "1"}})
    assert argv[:3] == ["kubectl", "apply", "--server-side"] and "--force-conflicts" in argv
    doc = json.loads(stdin)
    assert [i["metadata"]["name"] for i in doc["items"]] == ["a", "b"]
    assert doc["items"][0] == {"apiVersion": "v1", "kind": "Node",
                               "metadata": {"name": "a", "labels": {"k": "1"}}}


def test_parse_nodes_and_bad_output():
    text = json.dumps({"kind": "List", "items": [{"metadata": {"name": "n", "labels": {"a": "b"}},
                       "status": {"addresses": [{"type": "Hostname", "address": "n"},
                                                {"type": "InternalIP", "address": "10.1.1.1"}]}}]})
    [node] = kubectl.parse_nodes(text)
    assert (node.name, node.internal_ips, node.labels, node.provider) == (
        "n", ("10.1.1.1",), {"a": "b"}, None)
    for bad in ("not json", "[]", json.dumps({"kind": "NodeList", "items": [{}]})):
        with pytest.raises(kubectl.KubectlOutputError):
            kubectl.parse_nodes(bad)


def test_drain_and_delete_arguments():
    assert kubectl.drain("n1", 300) == ["kubectl", "drain", "n1", "--ignore-daemonsets",
                                        "--timeout=300s", "--delete-emptydir-data"]
    assert kubectl.delete_nodes(["b", "a"])[-2:] == ["a", "b"]


def test_the_documented_json_schema_is_the_generated_one():
    import json
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "..", "doc",
                        "hwaffinity_param.schema.json")
    with open(path) as f:
        assert json.load(f) == params.json_schema(), \
            "regenerate doc/hwaffinity_param.schema.json from params.json_schema()"


def _waits(fields, path=()):
    """(path, field) of every number the requester sets that we wait or retry by."""
    for name, f in fields.items():
        if f.fields:
            yield from _waits(f.fields, path + (name,))
        elif f.type in ("number", "integer") and (name.endswith("timeout") or name == "retries"):
            yield path + (name,), f


@pytest.mark.parametrize("path,field", list(_waits(params.SPEC)),
                         ids=lambda p: ".".join(p) if isinstance(p, tuple) else "")
def test_a_requester_cannot_set_a_wait_past_our_maximum(path, field):
    # doc/security.md: a lifecycle hook holds a conductor worker for at most the schema's
    # maxima, whatever the VNF requester's additionalParams ask
    assert field.maximum is not None
    block = value = {}
    for name in path[:-1]:
        value = value.setdefault(name, {})
    value[path[-1]] = field.maximum + 1
    with pytest.raises(InputError) as e:
        params.parse(dict(REF, hwaffinity_param=block))
    assert e.value.field == "additionalParams.hwaffinity_param." + ".".join(path)
    assert "at most" in e.value.message
