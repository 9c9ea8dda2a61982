"""The validating webhook keeps ``hwaffinity.io/numa`` the node agent's alone (issue #24
item 1): no pod is created with it, only the agent's ServiceAccount changes it, and no
pod template carries it."""
import copy
import json
import os
import subprocess
import sys

import pytest
import yaml

from tacker_hwaffinity.constants import DEFAULT_AGENT_SERVICE_ACCOUNT
from tacker_hwaffinity.webhook import admission

from .test_admission import pod, request, workload

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NUMA = "hwaffinity.io/numa"
AGENT = DEFAULT_AGENT_SERVICE_ACCOUNT
GRANT = json.dumps({"c": {"pool": "NUMA node #0", "exclusiveCpus": "8-35", "mems": "0",
                          "cpuType": "normal"}})
FIELD = "metadata.annotations[hwaffinity.io/numa]"


def answer(obj, user="alice", agent_user=AGENT, **kw):
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": request(obj, userInfo={"username": user,
                                                         "groups": ["system:authenticated"]},
                                          **kw)}).encode()
    status, out, _ = admission.handle("validate", body, admission.DEFAULT_ALLOWED_KEYS,
                                      agent_user)
    assert status == 200
    return json.loads(out)["response"]


def refused(obj, **kw):
    resp = answer(obj, **kw)
    assert resp["allowed"] is False and resp["status"]["code"] == 403, resp
    return resp["status"]["message"]


def allowed(obj, **kw):
    resp = answer(obj, **kw)
    return resp["allowed"] is True


def with_record(value=GRANT, **kw):
    return pod(notes={NUMA: value}, **kw)


def test_a_pod_created_with_a_record_is_refused_whoever_creates_it():
    for user in ("alice", AGENT, "system:serviceaccount:kube-system:replicaset-controller"):
        message = refused(with_record(), user=user)
        assert message.startswith("Pod web: %s: a pod may not be created with this "
                                  "annotation" % FIELD)
        assert AGENT in message
    assert allowed(pod())
    assert allowed(pod(notes={"other": "x"}))


@pytest.mark.parametrize("old, new", [
    (None, GRANT),                                      # added
    (GRANT, GRANT.replace("8-35", "8-9")),              # altered
    (GRANT, None),                                      # removed
    (GRANT, ""),                                        # emptied
])
def test_only_the_agent_changes_the_record(old, new):
    before = with_record(old) if old is not None else pod()
    after = with_record(new) if new is not None else pod()
    message = refused(after, op="UPDATE", old=before, user="alice")
    assert message.startswith("Pod web: %s: changed by alice: it records the CPUs" % FIELD)
    assert allowed(after, op="UPDATE", old=before, user=AGENT)
    # another ServiceAccount of the same name elsewhere is not the agent
    assert not allowed(after, op="UPDATE", old=before,
                       user="system:serviceaccount:default:hwaffinity-agent")
    # the user named by --agent-service-account is
    other = "system:serviceaccount:ops:numa-agent"
    assert allowed(after, op="UPDATE", old=before, user=other, agent_user=other)
    assert not allowed(after, op="UPDATE", old=before, user=AGENT, agent_user=other)


def test_updates_that_leave_the_record_alone_are_allowed():
    before = with_record()
    after = copy.deepcopy(before)
    after["metadata"]["labels"] = {"tier": "x"}
    assert allowed(after, op="UPDATE", old=before, user="alice")   # a pod from before
    assert allowed(pod(labels={"a": "b"}), op="UPDATE", old=pod(), user="alice")


def test_an_update_without_a_user_is_refused():
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": request(with_record(), op="UPDATE", old=pod())}).encode()
    out = admission.handle("validate", body).body
    response = json.loads(out)["response"]
    assert response["allowed"] is False
    assert "changed by an unnamed user" in response["status"]["message"]


def test_a_pod_template_carrying_a_record_is_refused_unless_it_did_already():
    for kind in ("Deployment", "StatefulSet", "Job", "CronJob"):
        obj = workload(kind, with_record())
        message = refused(obj)
        assert "metadata.annotations[hwaffinity.io/numa]: a pod template may not carry" \
            in message
        assert "spec." in message.split(FIELD)[0]
        assert allowed(obj, op="UPDATE", old=copy.deepcopy(obj))   # from before: scalable
    assert allowed(workload("Deployment", pod()))


def test_a_malformed_metadata_is_not_a_crash():
    obj = pod()
    obj["metadata"]["annotations"] = ["not", "a", "mapping"]
    message = refused(obj)
    assert "metadata.annotations" in message and "expected a mapping" in message


def test_the_default_agent_is_the_service_account_deploy_agent_ships():
    with open(os.path.join(ROOT, "deploy", "agent", "rbac.yaml")) as f:
        (sa,) = [d for d in yaml.safe_load_all(f) if d and d["kind"] == "ServiceAccount"]
    with open(os.path.join(ROOT, "deploy", "agent", "daemonset.yaml")) as f:
        ds = yaml.safe_load(f)
    assert ds["spec"]["template"]["spec"]["serviceAccountName"] == sa["metadata"]["name"]
    assert DEFAULT_AGENT_SERVICE_ACCOUNT == "system:serviceaccount:%s:%s" % (
        sa["metadata"]["namespace"], sa["metadata"]["name"])


def test_the_shipped_validating_webhook_sees_pod_updates():
    with open(os.path.join(ROOT, "deploy", "webhook", "webhooks.yaml")) as f:
        (hook,) = [h for d in yaml.safe_load_all(f) if d["kind"] == "ValidatingWebhookConfiguration"
                   for h in d["webhooks"]]
    rules = [r for r in hook["rules"] if "" in r["apiGroups"] and "pods" in r["resources"]]
    assert rules and {"CREATE", "UPDATE"} <= set(rules[0]["operations"])


def test_a_bad_agent_service_account_is_one_line_exit_2():
    r = subprocess.run([sys.executable, "-m", "tacker_hwaffinity.cli.main", "webhook", "serve",
                        "--no-extender", "--insecure-for-tests", "--address", "127.0.0.1:0",
                        "--agent-service-account", "hwaffinity-agent"],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert "--agent-service-account" in line and "system:serviceaccount:NAMESPACE:NAME" in line


# -- the CRI-RM affinity annotations: refused at admission as the node agent refuses them --

CRIRM = "cri-resource-manager.intel.com/affinity"


def _agent_refusal(notes):
    """The node agent's message for a pod with NOTES (what NodeState records)."""
    from tacker_hwaffinity.agent.node import NodeState
    from tacker_hwaffinity.numa.topology import machine_from_yaml
    from tacker_hwaffinity.objects.yamlio import parse_documents
    path = os.path.join(ROOT, "tests", "numa", "data", "server.yaml")
    with open(path) as f:
        state = NodeState(machine_from_yaml(parse_documents(f.read(), path)[0], path))
    obj = pod(notes=notes)
    obj["metadata"]["uid"] = "u1"
    obj["status"] = {"phase": "Running", "containerStatuses": [
        {"name": "c", "containerID": "containerd://" + "a" * 64}]}
    state.update(obj)
    (failure,) = state.failures("u1")
    return failure[1]


@pytest.mark.parametrize("text", [
    "c:\n" + "- match: {key: name, operator: In, values: [x]}\n" * 65,        # affinities
    "c:\n- match: {key: name, operator: In, values: [%s]}" % ",".join(
        "v%d" % i for i in range(65)),                                        # values
    "c:\n- match: {key: name, operator: In, values: [x]}\n  weight: " + "1" * 401,
    "c:\n- match: {key: name, operator: In, values: [0x%s]}" % ("f" * 300),
    "c:\n- &a {scope: {operator: AlwaysTrue}, match: {key: name, operator: MatchesAny, "
    "values: [%s]}}\n" % ",".join(["'*a*b'"] * 60) + "- *a\n" * 120,        # aliases
    "c:\n- match: {key: name, operator: Bogus}",                              # malformed
])
def test_the_webhook_refuses_what_the_agent_refuses_with_its_message(text):
    message = refused(pod(notes={CRIRM: text}))
    core = message.split("Pod web: ", 1)[1]
    assert core.startswith("field metadata.annotations[%s]: " % CRIRM)
    assert _agent_refusal({CRIRM: text}).endswith(core)
    # a pod template too, naming its path
    assert "spec.template.metadata.annotations[%s]" % CRIRM in refused(
        workload("Deployment", pod(notes={CRIRM: text})))


def test_an_affinity_annotation_within_the_caps_is_allowed():
    assert allowed(pod(notes={CRIRM: "c:\n- scope: {operator: AlwaysTrue}\n  match: "
                                     "{key: pod/name, operator: In, values: [db]}\n  weight: 5",
                              "resource-policy.nri.io/anti-affinity": "c: [d]"}))
