"""The API server's typed lists (``kubectl get --raw /api/v1/nodes``: a ``NodeList`` whose
items carry no ``kind`` and no ``apiVersion``) load as the objects they hold: each item
takes the list's kind minus "List" and its apiVersion, then is pruned and checked as
any object of that kind. A plain ``List`` says nothing of its items: one without a kind
stays an error."""
import copy
import json
import os

import pytest
from hypothesis import given, settings, strategies as st

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import schema, yamlio
from tacker_hwaffinity.scheduling.snapshot import SNAPSHOT_FIELDS, cluster_from_objects

from .loader_backends import BACKENDS, backend

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CAPTURED = os.path.join(ROOT, "benchmarks", "data")


@pytest.fixture(params=BACKENDS)
def parsers(request):
    with backend(request.param):
        yield request.param


def captured(kind):
    """A Node or Pod as ``kubectl get -o json`` printed it from a real cluster."""
    with open(os.path.join(CAPTURED, "captured-%s.json" % kind)) as f:
        return json.load(f)


def api_list(kind, objects, api_version="v1"):
    """OBJECTS as the API server lists them: a KINDList, items without kind or
    apiVersion, printed compact on one line as ``kubectl get --raw`` does."""
    items = []
    for obj in objects:
        item = {k: v for k, v in copy.deepcopy(obj).items() if k not in ("kind", "apiVersion")}
        items.append(item)
    return json.dumps({"kind": kind + "List", "apiVersion": api_version,
                       "metadata": {"resourceVersion": "81234"}, "items": items},
                      separators=(",", ":"))


def renamed(obj, name):
    obj = copy.deepcopy(obj)
    obj["metadata"]["name"] = name
    return obj


NODES = [renamed(captured("node"), "worker-%d" % i) for i in (1, 2)]
PODS = [renamed(captured("pod"), "web-%d" % i) for i in (1, 2, 3)]


def load(tmp_path, name, text, keep=None):
    path = tmp_path / name
    path.write_text(text)
    return [o for o, _ in yamlio.load_objects([str(path)], keep=keep)]


@pytest.mark.parametrize("keep", [None, SNAPSHOT_FIELDS], ids=["whole", "pruned"])
def test_a_raw_node_list_and_pod_list_load_as_kubectl_get_o_json_does(parsers, tmp_path,
                                                                      keep):
    raw = load(tmp_path, "nodes.json", api_list("Node", NODES), keep) \
        + load(tmp_path, "pods.json", api_list("Pod", PODS), keep)
    as_kubectl = load(tmp_path, "all.json", json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": NODES + PODS}), keep)
    assert [(o["kind"], o["apiVersion"]) for o in raw] == [("Node", "v1")] * 2 + [("Pod", "v1")] * 3
    # the same objects, pruned alike: the items were pruned once their kind was known
    assert raw == as_kubectl
    if keep is not None:
        assert "managedFields" not in raw[0]["metadata"] and "images" not in raw[0]["status"]


def test_the_snapshot_of_raw_lists_is_the_snapshot_of_kubectl_s(tmp_path):
    raw = load(tmp_path, "nodes.json", api_list("Node", NODES), SNAPSHOT_FIELDS) \
        + load(tmp_path, "pods.json", api_list("Pod", PODS), SNAPSHOT_FIELDS)
    snapshot = cluster_from_objects([(o, "f") for o in raw])
    assert [n.name for n in snapshot.nodes] == ["worker-1", "worker-2"]
    assert sorted(p.key for p in snapshot.pods) == ["shop/web-1", "shop/web-2", "shop/web-3"]


def test_an_item_keeps_a_kind_and_api_version_of_its_own(tmp_path):
    text = json.dumps({"kind": "DeploymentList", "apiVersion": "apps/v1", "items": [
        {"metadata": {"name": "a"}},
        {"apiVersion": "apps/v1beta2", "metadata": {"name": "b"}},
        {"kind": "Service", "apiVersion": "v1", "metadata": {"name": "c"}}]})
    got = [(o["kind"], o["apiVersion"]) for o in load(tmp_path, "d.json", text)]
    assert got == [("Deployment", "apps/v1"), ("Deployment", "apps/v1beta2"), ("Service", "v1")]


def test_a_typed_list_in_yaml_too(tmp_path):
    text = "kind: PodList\napiVersion: v1\nitems:\n- metadata: {name: p, namespace: n}\n"
    assert load(tmp_path, "p.yaml", text) == [
        {"metadata": {"name": "p", "namespace": "n"}, "kind": "Pod", "apiVersion": "v1"}]


def test_an_item_of_a_plain_list_without_kind_is_still_refused(tmp_path):
    text = json.dumps({"kind": "List", "apiVersion": "v1", "items": [
        {"metadata": {"name": "n"}}]})
    (obj,) = load(tmp_path, "l.json", text)
    assert "kind" not in obj
    with pytest.raises(InputError) as e:
        cluster_from_objects([(obj, "l.json")])
    assert e.value.field == "kind" and "no kind" in e.value.message


def test_the_schema_check_sees_the_items_of_a_raw_list():
    node = copy.deepcopy(NODES[0])
    node["metadata"]["lables"] = {"x": "y"}
    found = []
    check = schema.Check(schema.release(schema.supported_minors()[-1]), report=found.extend)
    known = check.snapshot(SNAPSHOT_FIELDS)
    yamlio.parse_documents(api_list("Node", [node]), "nodes.json", SNAPSHOT_FIELDS, known)
    check.snapshot_done(known)
    assert found == ['nodes.json: Node worker-1: unknown field "metadata.lables"']


_items = st.lists(st.fixed_dictionaries(
    {"metadata": st.fixed_dictionaries({"name": st.text("abc", min_size=1, max_size=3)})},
    optional={"kind": st.sampled_from(["Pod", "Secret", None]),
              "apiVersion": st.sampled_from(["v1", "x/v2", None])}), max_size=5)


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(["Node", "Pod", "Widget", ""]), items=_items)
def test_items_without_kind_take_the_typed_list_s(kind, items):
    text = json.dumps({"kind": kind + "List", "apiVersion": "g/v9", "items": items})
    got = yamlio.parse_documents(text, "f.json")
    assert len(got) == len(items)
    for before, after in zip(items, got):
        if before.get("kind") is not None or not kind:
            assert after == before
        else:
            assert after["kind"] == kind and after["metadata"] == before["metadata"]
            assert after["apiVersion"] == (before.get("apiVersion") or "g/v9")
