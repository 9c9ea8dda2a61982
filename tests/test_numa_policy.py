"""deploy/agent/numa-annotation-policy.yaml: the ValidatingAdmissionPolicies (Kubernetes
1.30+) that keep ``hwaffinity.io/numa`` the node agent's, and the agent to that one
annotation. The test control plane (1.20) cannot run them: their structure is checked
here, and their CEL is evaluated against sample requests with cel-python (celpy): a
missing cel-python skips those tests, and fails them under CI."""
import copy
import os
import re

import pytest
import yaml
from ci_policy import unavailable

from tacker_hwaffinity.constants import DEFAULT_AGENT_SERVICE_ACCOUNT, NUMA_ANNOTATION
from tests import builders

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLICY = os.path.join(ROOT, "deploy", "agent", "numa-annotation-policy.yaml")
AGENT_ONLY = "hwaffinity-agent-numa-annotation-only"
WRITER = "hwaffinity-numa-annotation-writer"
API = "admissionregistration.k8s.io/v1"
AGENT = DEFAULT_AGENT_SERVICE_ACCOUNT


def documents():
    with open(POLICY) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def policies():
    return {d["metadata"]["name"]: d for d in documents()
            if d["kind"] == "ValidatingAdmissionPolicy"}


def expressions(policy):
    spec = policy["spec"]
    return ([c["expression"] for c in spec.get("matchConditions", [])]
            + [v["expression"] for v in spec.get("variables", [])]
            + [v["expression"] for v in spec["validations"]])


def test_two_policies_each_bound_to_deny():
    docs = documents()
    assert {(d["apiVersion"], d["kind"]) for d in docs} == {
        (API, "ValidatingAdmissionPolicy"), (API, "ValidatingAdmissionPolicyBinding")}
    pols = policies()
    assert set(pols) == {AGENT_ONLY, WRITER}
    bindings = [d for d in docs if d["kind"] == "ValidatingAdmissionPolicyBinding"]
    assert sorted(b["spec"]["policyName"] for b in bindings) == sorted(pols)
    for b in bindings:
        assert b["spec"]["validationActions"] == ["Deny"]
        assert "paramRef" not in b["spec"]
    for p in pols.values():
        assert p["spec"]["failurePolicy"] == "Fail"
        assert all(v.get("message") for v in p["spec"]["validations"])


def _pod_rules(policy):
    return [r for r in policy["spec"]["matchConstraints"]["resourceRules"]
            if r["apiGroups"] == [""] and r["apiVersions"] == ["v1"]
            and r["resources"] == ["pods"]]


def test_they_match_pod_updates_and_the_agent_policy_only_the_agent():
    pols = policies()
    (rule,) = _pod_rules(pols[AGENT_ONLY])
    assert rule["operations"] == ["UPDATE"]
    (cond,) = pols[AGENT_ONLY]["spec"]["matchConditions"]
    assert cond["expression"].strip() == "request.userInfo.username == '%s'" % AGENT
    (rule,) = _pod_rules(pols[WRITER])
    assert set(rule["operations"]) == {"CREATE", "UPDATE"}


def test_the_agent_named_is_the_service_account_deploy_agent_ships():
    with open(os.path.join(ROOT, "deploy", "agent", "rbac.yaml")) as f:
        (sa,) = [d for d in yaml.safe_load_all(f) if d and d["kind"] == "ServiceAccount"]
    user = "system:serviceaccount:%s:%s" % (sa["metadata"]["namespace"], sa["metadata"]["name"])
    named = set()
    for p in policies().values():
        for e in expressions(p):
            named |= set(re.findall(r"'(system:serviceaccount:[^']*)'", e))
    assert named == {user} == {AGENT}


def test_the_agent_kustomization_applies_it():
    with open(os.path.join(ROOT, "deploy", "agent", "kustomization.yaml")) as f:
        assert "numa-annotation-policy.yaml" in yaml.safe_load(f)["resources"]


def test_the_cel_is_well_formed_as_far_as_plain_python_can_tell():
    """Balanced brackets and quotes; only the names a policy's CEL has (object,
    oldObject, request, variables, has, the macro variable k); every variables.X defined;
    the annotation named is the agent's."""
    for p in policies().values():
        defined = {v["name"] for v in p["spec"].get("variables", [])}
        for e in expressions(p):
            assert e.count("'") % 2 == 0, e
            bare = re.sub(r"'[^']*'", "''", e)
            depth = 0
            for ch in bare:
                depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
                assert depth >= 0, e
            assert depth == 0, e
            roots = set(re.findall(r"(?<![\w.])([A-Za-z_]\w*)", bare))
            assert roots <= {"object", "oldObject", "request", "variables", "has", "k",
                             "in"}, (roots, e)
            assert set(re.findall(r"variables\.(\w+)", bare)) <= defined, e
            for quoted in re.findall(r"'(hwaffinity\.io/[^']*)'", e):
                assert quoted == NUMA_ANNOTATION


# -- evaluated, where cel-python is installed ----------------------------------------------
def _evaluate(policy, obj, old, operation, user):
    """The messages of POLICY's failed validations for the request (None: not matched),
    the way the API server runs a ValidatingAdmissionPolicy."""
    try:
        import celpy
    except ImportError:
        unavailable("cel-python (module celpy) is not installed: the policies' CEL is not "
                    "evaluated (pip install cel-python)")
    env = celpy.Environment()

    def run(expr, act):
        return env.program(env.compile(expr)).evaluate(act)
    spec = policy["spec"]
    rule = _pod_rules(policy)[0]
    if operation not in rule["operations"]:
        return None
    act = {"object": celpy.json_to_cel(obj), "oldObject": celpy.json_to_cel(old),
           "request": celpy.json_to_cel({"operation": operation,
                                         "userInfo": {"username": user}})}
    for cond in spec.get("matchConditions", []):
        if not bool(run(cond["expression"], act)):
            return None
    variables = {}
    for v in spec.get("variables", []):      # in order: each sees those before it
        act["variables"] = celpy.celtypes.MapType(
            {celpy.celtypes.StringType(k): x for k, x in variables.items()})
        variables[v["name"]] = run(v["expression"], act)
    act["variables"] = celpy.celtypes.MapType(
        {celpy.celtypes.StringType(k): x for k, x in variables.items()})
    out = []
    for v in spec["validations"]:
        result = run(v["expression"], act)
        assert isinstance(result, celpy.celtypes.BoolType), (v["expression"], result)
        if not bool(result):
            out.append(v["message"])
    return out


def pod(annotations=None, labels=None, finalizers=None):
    return builders.pod("p", labels, uid="u1", annotations=annotations, finalizers=finalizers,
                        on="n1", containers=[builders.container()])


def _changed(base, edit):
    out = copy.deepcopy(base)
    edit(out)
    return out


BASE = pod({"team": "a"}, {"app": "web"}, ["example.org/keep"])


@pytest.mark.parametrize("new, why", [
    (_changed(BASE, lambda o: o["metadata"]["annotations"].update({NUMA_ANNOTATION: "{}"})),
     None),
    (_changed(BASE, lambda o: o["metadata"]["labels"].update(app="db")), "not its labels"),
    (_changed(BASE, lambda o: o["metadata"].pop("labels")), "not its labels"),
    (_changed(BASE, lambda o: o["metadata"]["annotations"].update(team="b")),
     "not its other annotations"),
    (_changed(BASE, lambda o: o["metadata"]["annotations"].pop("team")),
     "not its other annotations"),
    (_changed(BASE, lambda o: o["metadata"].update(finalizers=[])),
     "not its finalizers or owners"),
    (_changed(BASE, lambda o: o["spec"]["containers"][0].update(image="y")), "not its spec"),
])
def test_the_agent_may_change_only_the_annotation(new, why):
    failed = _evaluate(policies()[AGENT_ONLY], new, BASE, "UPDATE", AGENT)
    if why is None:
        assert failed == []
    else:
        (message,) = failed
        assert message.endswith(why)
    # anyone else is not this policy's concern
    assert _evaluate(policies()[AGENT_ONLY], new, BASE, "UPDATE", "alice") is None


def test_the_agent_may_record_on_a_pod_without_annotations():
    bare = pod()
    new = pod({NUMA_ANNOTATION: "{}"})
    assert _evaluate(policies()[AGENT_ONLY], new, bare, "UPDATE", AGENT) == []


def test_nobody_creates_a_record_and_only_the_agent_changes_it():
    writer = policies()[WRITER]
    recorded = pod({NUMA_ANNOTATION: '{"c":{"pool":"root"}}'})
    (message,) = _evaluate(writer, recorded, None, "CREATE", "alice")
    assert "may not be created" in message
    assert _evaluate(writer, pod({"x": "y"}), None, "CREATE", "alice") == []
    assert _evaluate(writer, pod(), None, "CREATE", AGENT) == []
    for old, new in ((pod(), recorded), (recorded, pod()),
                     (recorded, pod({NUMA_ANNOTATION: "{}"}))):
        (message,) = _evaluate(writer, new, old, "UPDATE", "alice")
        assert "only the hwaffinity node agent" in message
        assert _evaluate(writer, new, old, "UPDATE", AGENT) == []
    relabelled = _changed(recorded, lambda o: o["metadata"].update(labels={"a": "b"}))
    assert _evaluate(writer, relabelled, recorded, "UPDATE", "alice") == []
