"""Strict, fast loading of kubectl output: on libyaml/C json and on the pure-Python parsers."""
import copy
import io
import json
import sys

import pytest
import yaml

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import yaml_events, yaml_strict, yamlio
from tacker_hwaffinity.scheduling.snapshot import SNAPSHOT_FIELDS, cluster_from_objects

from .loader_backends import BACKENDS, backend


@pytest.fixture(params=BACKENDS)
def parsers(request):
    with backend(request.param):
        yield request.param


def kubectl_node():
    return {"apiVersion": "v1", "kind": "Node", "metadata": {
        "annotations": {"node.alpha.kubernetes.io/ttl": "0"}, "creationTimestamp": "2024-05-02",
        "labels": {"kubernetes.io/hostname": "n1", "CIS-node": "c1"},
        "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {"f:images": {}}}}],
        "name": "n1", "resourceVersion": "7", "uid": "u1"},
        "spec": {"podCIDR": "10.244.0.0/24", "taints": [{"key": "k", "effect": "NoSchedule"}]},
        "status": {"addresses": [{"address": "10.0.0.1", "type": "InternalIP"}],
                   "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                   "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}],
                   "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                   "images": [{"names": ["app@sha256:00", "app:1"], "sizeBytes": 123}],
                   "nodeInfo": {"kubeletVersion": "v1.29.2"}}}


def kubectl_pod():
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "labels": {"app": "web"}, "managedFields": [{"manager": "kube-controller-manager"}],
        "name": "web-1", "namespace": "team", "deletionTimestamp": "2024-05-02T00:00:00Z",
        "ownerReferences": [{"kind": "Node", "name": "n1", "uid": "u1"}], "uid": "u2"},
        "spec": {"containers": [{"name": "app", "image": "app:1", "env": [{"name": "A"}],
                                 "resources": {"requests": {"cpu": "100m"}}}],
                 "nodeName": "n1", "tolerations": [{"operator": "Exists"}],
                 "affinity": {"podAntiAffinity": {
                     "requiredDuringSchedulingIgnoredDuringExecution": [{
                         "labelSelector": {"matchLabels": {"app": "web"}},
                         "topologyKey": "CIS-node"}]}},
                 "volumes": [{"name": "v", "emptyDir": {}}], "schedulerName": "default"},
        "status": {"phase": "Running", "qosClass": "Burstable", "podIP": "10.1.0.1",
                   "conditions": [{"type": "Ready", "status": "True"}],
                   "containerStatuses": [{"name": "app", "containerID": "containerd://ab"}]}}


def kubectl_list():
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
            "items": [kubectl_node(), kubectl_pod(),
                      {"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": "team", "managedFields": [{}]}}]}


def as_json(obj):
    return json.dumps(obj, indent=4)


def as_yaml(obj):
    return yaml.safe_dump(obj, default_flow_style=False)


def load(tmp_path, name, text, keep=None):
    path = tmp_path / name
    path.write_text(text)
    return [o for o, _ in yamlio.load_objects([str(path)], keep=keep)]


def error(tmp_path, name, text):
    with pytest.raises(InputError) as e:
        load(tmp_path, name, text)
    message = str(e.value)
    assert "\n" not in message and message.startswith(str(tmp_path / name) + ": ")
    return message


@pytest.mark.parametrize("dump", [as_json, as_yaml])
def test_kind_list_loads_whole(parsers, tmp_path, dump):
    objs = load(tmp_path, "snap.txt", dump(kubectl_list()))
    assert objs == kubectl_list()["items"]


def test_json_and_yaml_are_told_apart_by_content(parsers, tmp_path):
    assert load(tmp_path, "a.yaml", as_json(kubectl_pod())) == [kubectl_pod()]
    assert load(tmp_path, "b.json", as_yaml(kubectl_pod())) == [kubectl_pod()]
    # YAML flow style starts like JSON and is still YAML
    assert load(tmp_path, "c.json", "{kind: Pod, metadata: {name: a}}") == [
        {"kind": "Pod", "metadata": {"name": "a"}}]
    assert "malformed JSON" in error(tmp_path, "d.yaml", '{"kind": "Pod", "kind": "Node"}')


def test_multi_document_yaml_and_json_documents(parsers, tmp_path):
    text = "---\n" + as_yaml(kubectl_node()) + "---\n" + as_json(kubectl_pod()) + "\n---\n"
    assert load(tmp_path, "m.yaml", text) == [kubectl_node(), kubectl_pod()]


@pytest.mark.parametrize("dump", [as_json, as_yaml])
def test_standard_input(parsers, monkeypatch, dump):
    monkeypatch.setattr(sys, "stdin", io.StringIO(dump(kubectl_list())))
    got = yamlio.load_objects(["-"], keep=SNAPSHOT_FIELDS)
    assert [s for _, s in got] == ["<stdin>"] * 3
    assert [o["metadata"]["name"] for o, _ in got] == ["n1", "web-1", "team"]


def test_duplicate_json_key_names_file_and_line(parsers, tmp_path):
    text = ('{\n    "kind": "Pod",\n    "metadata": {\n        "name": "a",\n'
            '        "name": "b"\n    }\n}\n')
    assert error(tmp_path, "d.json", text).endswith(
        "malformed JSON at line 5, column 9: duplicate key 'name'")


def test_duplicate_yaml_key_names_file_and_line(parsers, tmp_path):
    text = "kind: Pod\nmetadata:\n  name: a\n  labels: {}\n  name: b\n"
    assert error(tmp_path, "d.yaml", text).endswith(
        "malformed YAML at line 5, column 3: duplicate key 'name'")


@pytest.mark.parametrize("dump,language", [(as_json, "JSON"), (as_yaml, "YAML")])
def test_duplicates_in_dropped_fields_are_still_errors(parsers, tmp_path, dump, language):
    text = dump(kubectl_list()).replace("kube-controller-manager", "MARK")
    key = '"manager": "MARK"' if language == "JSON" else "manager: MARK"
    dup = key + (", " if language == "JSON" else "\n" + " " * 6) + key
    text = text.replace(key, dup, 1)
    with pytest.raises(InputError) as e:
        load(tmp_path, "d.txt", text, keep=SNAPSHOT_FIELDS)
    assert "malformed %s at line" % language in str(e.value)
    assert "duplicate key 'manager'" in str(e.value)


@pytest.mark.parametrize("text,expected", [
    ('{"kind": "Pod",\n "metadata": {"name": "a"\n', "malformed JSON at line 3, column 1: "),
    ('{"kind": "Pod"} trailing', "malformed JSON at line 1, column 17: Extra data"),
    ('[{"a": 1}, {"a": 2]', "malformed JSON at line 1, column 19: "),
    ("kind: Pod\nmetadata: [a,\n", "malformed YAML at line 3, column 1: "),
    ("kind: Pod\n\tname: a\n", "malformed YAML at line 2, column 1: "),
    ("a: 1\nb: 2024-13-01\n", "malformed YAML at line 2, column 4: invalid value '2024-13-01'"),
    ("a: !!int x\n", "malformed YAML at line 1, column 4: invalid value 'x'"),
    ("a: b\x07\n", "malformed YAML at line 1, column 5: unacceptable character #x0007"),
    ("[" * 100000, "nesting too deep"),
    ("a:\n" + "".join(" " * i + "a:\n" for i in range(1, 3000)), "nesting too deep"),
    ("- " * 50000 + "x", "nesting too deep"),
])
def test_malformed_text_is_one_line(parsers, tmp_path, text, expected):
    assert expected in error(tmp_path, "bad.txt", text)


def test_json_nan_reads_as_yaml_does(parsers, tmp_path):
    assert load(tmp_path, "n.json", '{"kind": "Pod", "x": NaN}') == [{"kind": "Pod", "x": "NaN"}]


@pytest.mark.parametrize("text", [
    "base: &b {a: 1}\nother: *b\n",
    "base: &b {a: 1}\nmerged:\n  <<: *b\n  c: 2\n",
    "a: !!str 1\nb: !!float '2'\nc: ! 3\n",
    "a: !!set {x, y}\n",
    "? [a]\n: b\n",
    "a: 0o17\nb: 1_000\nc: 0x1f\nd: .inf\ne: 2024-01-02 03:04:05\nf: yes\ng: ~\n",
])
def test_unusual_yaml_reads_as_safe_load(parsers, text):
    try:
        expected = yaml.safe_load(text)
    except yaml.YAMLError:
        with pytest.raises(InputError):
            yamlio.parse_documents(text, "f")
        return
    assert yamlio.parse_documents(text, "f") == [expected]


def test_snapshot_fields_are_dropped_and_the_rest_kept(parsers, tmp_path):
    for dump in (as_json, as_yaml):
        node, pod, ns = load(tmp_path, "s.txt", dump(kubectl_list()), keep=SNAPSHOT_FIELDS)
        full_node, full_pod = kubectl_node(), kubectl_pod()
        assert node["metadata"] == {"labels": full_node["metadata"]["labels"], "name": "n1"}
        assert node["status"] == {"allocatable": full_node["status"]["allocatable"],
                                  "capacity": full_node["status"]["capacity"],
                                  "images": full_node["status"]["images"]}  # ImageLocality
        assert node["spec"] == full_node["spec"]  # not listed: kept whole
        assert "managedFields" not in pod["metadata"] and pod["status"] == {"phase": "Running"}
        assert pod["metadata"]["deletionTimestamp"] == full_pod["metadata"]["deletionTimestamp"]
        assert "volumes" not in pod["spec"] and "schedulerName" not in pod["spec"]
        assert pod["spec"]["containers"] == full_pod["spec"]["containers"]
        assert pod["spec"]["affinity"] == full_pod["spec"]["affinity"]
        assert ns["metadata"] == {"name": "team"}


def plain(value, depth=0):
    """VALUE with the engine's objects turned into comparable (type, attributes) pairs."""
    if isinstance(value, (str, int, float, type(None))) or depth > 16:
        return value if depth <= 16 else type(value).__name__
    if isinstance(value, dict):
        return {k: plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v, depth + 1) for v in value]
    attrs = ({s: getattr(value, s) for s in type(value).__slots__ if hasattr(value, s)}
             if hasattr(type(value), "__slots__") else vars(value))
    return (type(value).__name__,
            {k: plain(v, depth + 1) for k, v in attrs.items() if not k.startswith("_")})


def test_dropping_fields_does_not_change_the_snapshot(parsers, tmp_path):
    text = as_yaml(kubectl_list())
    full = cluster_from_objects([(o, "f") for o in load(tmp_path, "a.yaml", text)])
    pruned = cluster_from_objects([(o, "f") for o in load(tmp_path, "a.yaml", text,
                                                          keep=SNAPSHOT_FIELDS)])
    assert len(full.pods) == len(full.nodes) == len(full.namespaces) == 1
    assert plain(full.nodes) == plain(pruned.nodes)
    assert plain(full.pods) == plain(pruned.pods)
    assert plain(full.namespaces) == plain(pruned.namespaces)
    assert full.pod_keys == pruned.pod_keys and full.notes == pruned.notes


def test_other_callers_see_every_field(parsers, tmp_path):
    assert load(tmp_path, "a.json", as_json(kubectl_list())) == kubectl_list()["items"]
    weird = copy.deepcopy(kubectl_list())
    weird["items"][0]["status"] = "not a mapping"  # left for the reader to report
    node = load(tmp_path, "b.json", as_json(weird), keep=SNAPSHOT_FIELDS)[0]
    assert node["status"] == "not a mapping"


@pytest.mark.parametrize("text", [
    as_yaml(kubectl_list()), as_yaml([1, "yes", None, {"a": [2.5, "x"]}]),
    yaml.safe_dump(kubectl_list(), default_flow_style=True), "a: '1'\nb: \"2\"\nc: 3\n",
    "x: |\n  line\n  two\ny: >\n  folded\n", "--- 1\n--- [a]\n...\n", ""])
def test_fast_path_and_strict_loader_agree(parsers, text):
    assert yaml_events.load_all(text) == yaml_strict.load_all(text)
