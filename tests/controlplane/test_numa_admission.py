"""``hwaffinity.io/numa`` through the real API server and the validating webhook (issue
#24 item 1): a pod creator cannot write it, nobody but the agent's ServiceAccount can
change it, and the agent's own merge patch (a Pod UPDATE, as ``kube.events`` sends it)
goes through.

The webhook runs admission-only (``--no-extender``) with ``--agent-service-account``
naming a real ServiceAccount of this module, whose token the "agent" client uses;
deploy/webhook/webhooks.yaml's validating configuration is pointed at it and at this
module's namespaces only."""
import base64
import copy
import json
import os
import subprocess
import sys

import pytest
import yaml

from tests import builders

from . import harness

pytestmark = pytest.mark.controlplane
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LABEL = "hwaffinity-numa-admission-test"
NUMA = "hwaffinity.io/numa"
RECORD = json.dumps({"c": {"pool": "root", "exclusiveCpus": "0-31", "cpuType": "normal"}})


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "tacker_hwaffinity.cli.main"] + list(args),
                          capture_output=True, text=True, cwd=ROOT, timeout=60, **kw)


@pytest.fixture(scope="module")
def agent_account(control_plane):
    """A ServiceAccount standing for the agent, with deploy/agent/rbac.yaml's ClusterRole,
    and a client that speaks as it (its token)."""
    cp = control_plane
    ns = "numa-agent-" + os.urandom(3).hex()
    cp.create_namespace(ns)
    cp.wait_namespace_ready(ns)
    cp.admin.create("/api/v1/namespaces/%s/serviceaccounts" % ns, {
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "hwaffinity-agent"}})
    with open(os.path.join(ROOT, "deploy", "agent", "rbac.yaml")) as f:
        role = next(d for d in yaml.safe_load_all(f) if d["kind"] == "ClusterRole")
    cp.admin.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", role,
                     ok=(201, 409))
    binding = "numa-admission-" + ns
    cp.admin.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": binding},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": role["metadata"]["name"]},
        "subjects": [{"kind": "ServiceAccount", "name": "hwaffinity-agent", "namespace": ns}]})
    token = {}

    def has_token():
        sa = cp.admin.get("/api/v1/namespaces/%s/serviceaccounts/hwaffinity-agent" % ns)
        for ref in sa.get("secrets") or []:
            secret = cp.admin.get("/api/v1/namespaces/%s/secrets/%s" % (ns, ref["name"]))
            if (secret.get("data") or {}).get("token"):
                token["value"] = base64.b64decode(secret["data"]["token"]).decode()
        return bool(token)
    harness.wait_until(has_token, 30, what="the agent ServiceAccount's token")
    client = harness.KubeClient(cp.server, cp.pki.ca_crt, token=token["value"])
    yield "system:serviceaccount:%s:hwaffinity-agent" % ns, client
    cp.admin.delete("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/" + binding)
    cp.delete_namespace(ns)


@pytest.fixture(scope="module")
def validating(control_plane, agent_account, tmp_path_factory):
    user, _ = agent_account
    out = tmp_path_factory.mktemp("numa-webhook")
    r = _cli("webhook", "certs", "--out", str(out), "--ip", "127.0.0.1")
    assert r.returncode == 0, r.stderr
    bundle = r.stdout.strip().split("caBundle: ", 1)[1]
    proc, url, context = harness.serve_webhook(
        ["--no-extender", "--agent-service-account", user], out, out / "webhook.log",
        what="the admission-only webhook")
    with open(os.path.join(ROOT, "deploy", "webhook", "webhooks.yaml")) as f:
        doc = next(copy.deepcopy(d) for d in yaml.safe_load_all(f)
                   if d["kind"] == "ValidatingWebhookConfiguration")
    doc["metadata"]["name"] = "hwaffinity-validate-numa-test"
    for hook in doc["webhooks"]:
        hook["clientConfig"] = {"url": url + "/validate", "caBundle": bundle}
        hook["namespaceSelector"]["matchLabels"] = {LABEL: "yes"}
    path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    control_plane.admin.create(path, doc)
    yield
    control_plane.admin.delete(path + "/" + doc["metadata"]["name"])
    proc.terminate()
    proc.wait(15)


@pytest.fixture
def ns(control_plane, validating):
    name = control_plane.create_namespace("numa-" + os.urandom(4).hex(), labels={LABEL: "yes"})
    yield name
    control_plane.delete_namespace(name)


def _pod(name, annotations=None):
    return builders.pod(name, ns=None, annotations=annotations or {}, on="nowhere",
                        terminationGracePeriodSeconds=0,
                        containers=[builders.container(image="registry.invalid/pause:3.2")])


def _refused(call):
    """The API server's message of a refused call (harness.ApiError)."""
    with pytest.raises(harness.ApiError) as e:
        call()
    assert e.value.status == 403, e.value
    return str(e.value)


def _until_enforced(cp, ns):
    """The API server picks a new webhook configuration up asynchronously: wait until a
    forged create is refused (each try that got through is deleted)."""
    def refused():
        status, _ = cp.admin.request("POST", "/api/v1/namespaces/%s/pods" % ns,
                                     _pod("probe", {NUMA: RECORD}), ok=None)
        if status == 201:
            cp.admin.delete("/api/v1/namespaces/%s/pods/probe" % ns)
        return status == 403
    harness.wait_until(refused, 30, what="the validating webhook in force")


def test_a_forged_record_is_refused_and_only_the_agent_changes_it(control_plane, agent_account,
                                                                 ns):
    cp = control_plane
    agent_user, agent = agent_account
    _until_enforced(cp, ns)
    pods = "/api/v1/namespaces/%s/pods" % ns
    message = _refused(lambda: cp.admin.create(pods, _pod("greedy", {NUMA: RECORD})))
    assert "metadata.annotations[hwaffinity.io/numa]: a pod may not be created with this " \
        "annotation" in message
    cp.admin.create(pods, _pod("plain"))
    message = _refused(lambda: cp.admin.patch(pods + "/plain",
                                              {"metadata": {"annotations": {NUMA: RECORD}}}))
    assert "changed by " in message and agent_user in message
    # the agent's own write: a merge patch of the annotation, as kube.events sends it
    mine = json.dumps({"c": {"pool": "root", "cpuType": "normal"}})
    patched = agent.patch(pods + "/plain", {"metadata": {"annotations": {NUMA: mine}}})
    assert patched["metadata"]["annotations"][NUMA] == mine
    # ... which nobody else may now alter or remove; other changes stay allowed
    _refused(lambda: cp.admin.patch(pods + "/plain", {"metadata": {"annotations": {NUMA: None}}}))
    relabelled = cp.admin.patch(pods + "/plain", {"metadata": {"labels": {"tier": "web"}}})
    assert relabelled["metadata"]["annotations"][NUMA] == mine
