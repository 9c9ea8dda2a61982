"""What an instantiate request makes of a CNF's manifests (csar/instantiation.py), as
Tacker v2's kubernetes_utils.get_k8s_reses_from_json_files does."""
import json

import pytest

from tacker_hwaffinity.csar import instantiation
from tacker_hwaffinity.csar.instantiation import Deployment
from tacker_hwaffinity.errors import InputError

UPF, SMF = "Files/kubernetes/upf.yaml", "Files/kubernetes/smf.yaml"


def obj(kind, name, ns=None):
    meta = {"name": name}
    if ns:
        meta["namespace"] = ns
    return {"apiVersion": "v1", "kind": kind, "metadata": meta}


def request(tmp_path, params):
    path = tmp_path / "instantiate.json"
    path.write_text(json.dumps({"flavourId": "simple", "additionalParams": params}))
    return str(path)


def test_a_request_gives_the_files_in_order_and_the_namespace(tmp_path):
    path = request(tmp_path, {"lcm-kubernetes-def-files": [SMF, UPF], "namespace": "cnf"})
    assert instantiation.from_request(path) == Deployment(
        (SMF, UPF), "cnf", "%s additionalParams.namespace" % path)
    path = request(tmp_path, {"lcm-kubernetes-def-files": [UPF]})
    assert instantiation.from_request(path) == Deployment((UPF,), None, "Tacker's default")


@pytest.mark.parametrize("params, field", [
    ({}, "additionalParams.lcm-kubernetes-def-files"),
    ({"lcm-kubernetes-def-files": []}, "additionalParams.lcm-kubernetes-def-files"),
    ({"lcm-kubernetes-def-files": [1]}, "additionalParams.lcm-kubernetes-def-files"),
    ({"lcm-kubernetes-def-files": [UPF], "namespace": 5}, "additionalParams.namespace"),
])
def test_a_request_without_what_tacker_reads_is_bad_input(tmp_path, params, field):
    with pytest.raises(InputError) as e:
        instantiation.from_request(request(tmp_path, params))
    assert e.value.field == field


def test_a_file_that_is_no_request_is_bad_input(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("[1, 2")
    with pytest.raises(InputError, match="not JSON"):
        instantiation.from_request(str(path))
    path.write_text("[]")
    with pytest.raises(InputError, match="additionalParams"):
        instantiation.from_request(str(path))


def test_the_request_deploys_its_files_in_its_order_and_overrides_their_namespace():
    objects = [(obj("Deployment", "smf", "other"), SMF), (obj("Deployment", "upf"), UPF),
               (obj("ConfigMap", "x"), "Files/kubernetes/pdb.yaml"),
               (obj("Namespace", "n"), UPF)]
    out, problems, notes = instantiation.deployed(
        objects, [SMF, UPF, "Files/kubernetes/pdb.yaml"], Deployment((UPF, SMF), "cnf", "req"))
    assert problems == []
    assert [(o["metadata"]["name"], o["metadata"].get("namespace")) for o, _ in out] == [
        ("upf", "cnf"), ("n", None), ("smf", "cnf")]
    assert notes == ["not deployed by the instantiate request (not in lcm-kubernetes-def-files)"
                     ": Files/kubernetes/pdb.yaml", 'planned in namespace "cnf" (req)']
    assert objects[0][0]["metadata"]["namespace"] == "other"     # the input is left alone


def test_a_listed_file_the_package_lacks_is_a_problem():
    _, problems, _ = instantiation.deployed([], [UPF], Deployment((UPF, SMF)))
    assert [(p.source, p.field) for p in problems] == [(SMF, "lcm-kubernetes-def-files")]
    assert "CnfDefinitionNotFound" in problems[0].message


def test_without_a_namespace_objects_land_in_theirs_or_default_and_must_agree():
    out, problems, notes = instantiation.deployed(
        [(obj("Deployment", "a"), UPF), (obj("Service", "a", "default"), UPF)], [UPF],
        Deployment())
    assert problems == [] and notes == ['planned in namespace "default" (Tacker\'s default)']
    assert {o["metadata"]["namespace"] for o, _ in out} == {"default"}
    _, problems, _ = instantiation.deployed(
        [(obj("Deployment", "a", "x"), UPF), (obj("Service", "a"), SMF)], [UPF, SMF],
        Deployment())
    assert len(problems) == 1 and "NamespaceNotUniform" in problems[0].message
    assert "2 namespaces (default, x)" in problems[0].message
