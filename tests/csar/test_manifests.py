"""Manifests against the kubernetes client's models, as the API server decodes them."""
import pytest

from tacker_hwaffinity.csar import manifests
from tests.builders import container, pod


def _check(obj):
    return [(p.field, p.message) for p in manifests.check(obj, "m.yaml")]


def test_valid_pod():
    assert _check(pod("p", containers=[container()])) == []


@pytest.mark.parametrize("value", [1, 0.5, "500m", "2Gi", "1e3"])
def test_quantities_may_be_numbers_or_strings(value):
    c = {"name": "c", "resources": {"limits": {"cpu": value}, "requests": {"memory": value}}}
    assert _check(pod("p", containers=[c])) == []


def test_bad_quantity_and_non_string_env():
    c = {"name": "c", "resources": {"limits": {"cpu": "lots"}}, "env": [{"name": "A",
                                                                         "value": 5}]}
    assert _check(pod("p", containers=[c])) == [
        ("spec.containers[0].env[0].value", "Input should be a valid string, got 5"),
        ("spec.containers[0].resources.limits.cpu",
         "'lots' is not a quantity (expected e.g. 500m, 1.5, 2Gi)")]


def test_python_field_names_are_unknown_to_the_api():
    assert _check(pod("p", containers=[container()], node_selector={"a": "b"})) == [
        ("spec.node_selector", "unknown field (the API calls it nodeSelector)")]


def test_missing_required_field_and_name():
    obj = pod("p", containers=[{"image": "i"}])
    del obj["metadata"]["name"]
    assert _check(obj) == [("metadata.name", "required field is missing"),
                           ("spec.containers[0].name", "required field is missing")]


def test_int_or_string_field():
    c = {"name": "c", "readinessProbe": {"tcpSocket": {"port": 1.5}}}
    assert _check(pod("p", containers=[c])) == [
        ("spec.containers[0].readinessProbe.tcpSocket.port",
         "Input should be a valid integer, got 1.5; Input should be a valid string, got 1.5")]


@pytest.mark.parametrize("api_version, kind", [
    ("v1", "Deployment"), ("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition"),
    ("apps/v9", "Deployment")])
def test_kind_the_api_does_not_serve(api_version, kind):
    (found,) = manifests.check({"apiVersion": api_version, "kind": kind,
                                "metadata": {"name": "x"}}, "m.yaml")
    assert found.field == "kind"
    assert found.message.startswith("kind %s of %s is not in the kubernetes client" % (
        kind, api_version))


def test_models_of_other_groups():
    assert manifests.model("autoscaling/v2", "HorizontalPodAutoscaler").__name__ == \
        "V2HorizontalPodAutoscaler"
    assert manifests.model("events.k8s.io/v1", "Event").__name__ == "EventsV1Event"
    assert manifests.model("v1", "Namespace").__name__ == "V1Namespace"


def test_missing_kind():
    assert _check({"apiVersion": "v1", "metadata": {"name": "x"}}) == [
        ("kind", "missing (every object needs apiVersion and kind)")]
