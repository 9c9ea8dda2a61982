"""The node-registration webhook (``webhook.nodes``, ``/register-node``): a Node CREATE is
patched to carry the host-unknown taint, added after the taints it registers with; a node
that has it, a control-plane node and anything that is not a Node CREATE are left alone.
The patch is applied to the object as the API server applies it (test_admission's RFC
6902 applier). (The API server calling it: tests/controlplane/harness.py's probe; fuzzed with
the other webhooks in test_admission.py.)"""
import base64
import json

import pytest

from tacker_hwaffinity.constants import HOST_UNKNOWN_TAINT
from tacker_hwaffinity.webhook import admission
from tests import builders

from .test_admission import apply_patch, request

UNKNOWN = {"key": HOST_UNKNOWN_TAINT, "effect": "NoSchedule"}
OTHER = {"key": "dedicated", "value": "cnf", "effect": "NoSchedule"}
CONTROL_PLANE = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


def registered(obj, op="CREATE", **extra):
    """(outcome, the object as the API server stores it after the patch)."""
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": request(obj, op=op, **extra)}).encode()
    status, out, outcome = admission.handle("register-node", body)
    assert status == 200
    response = json.loads(out)["response"]
    assert response["allowed"] is True and response["uid"] == "uid-1"
    if "patch" not in response:
        return outcome, obj
    assert response["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(response["patch"]))
    return outcome, apply_patch(obj, ops)


def _taints(obj):
    return (obj.get("spec") or {}).get("taints")


@pytest.mark.parametrize("spec,after", [
    (None, [UNKNOWN]),
    ({}, [UNKNOWN]),
    ({"providerID": "openstack:///x"}, [UNKNOWN]),
    ({"taints": []}, [UNKNOWN]),
    ({"taints": [OTHER]}, [OTHER, UNKNOWN])])
def test_a_registering_node_gets_the_taint_after_its_own(spec, after):
    node = builders.node("w1", ip="10.0.0.1")
    if spec is None:
        del node["spec"]
    else:
        node["spec"] = spec
    outcome, stored = registered(node)
    assert outcome == "patched" and _taints(stored) == after


@pytest.mark.parametrize("taints", [[UNKNOWN], [OTHER, UNKNOWN], [CONTROL_PLANE],
                                    [{"key": "node-role.kubernetes.io/master",
                                      "effect": "NoSchedule"}]])
def test_a_node_with_the_taint_or_a_control_plane_node_is_left_alone(taints):
    outcome, stored = registered(builders.node("m1", taints=list(taints)))
    assert outcome == "allowed" and _taints(stored) == taints


@pytest.mark.parametrize("obj,op,extra", [
    (builders.node("w1"), "UPDATE", {}),
    (builders.node("w1"), "CREATE", {"subResource": "status"}),
    (builders.pod("p", {}), "CREATE", {}),
    (builders.node("w1") | {"spec": ["x"]}, "CREATE", {}),
    (builders.node("w1") | {"spec": {"taints": "x"}}, "CREATE", {})])
def test_anything_but_a_node_create_is_left_alone(obj, op, extra):
    assert registered(obj, op, **extra) == ("allowed", obj)
