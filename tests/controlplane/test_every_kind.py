"""The control plane serves every kind the project uses, at any time.

kube-apiserver 1.20 built with Go >= 1.18 and the vendored reflect2 1.0.1
corrupts memory whenever json-iterator walks a map (reflect2 calls the
runtime's map iterator with the pre-1.18 signature): requests failed at
random with panics, and a ``?pretty=true`` read of an object with labels
kills the process (doc/controlplane.md). Here, after the scheduler and the
controller manager have run for a while, one object of every kind the
project's components and tests use is created through kubectl (as a user
would), read back (also server-side pretty-printed, the path that crashed),
acted on by its controller, and the component logs must show no panic.
"""
import json
import subprocess
import time

import pytest

from . import harness

pytestmark = pytest.mark.controlplane

SETTLE_S = 20            # how long the stack has run before the first create
NEVER = {"hwaffinity.test/never-selected": "true"}   # no object carries it
PLURALS = {"Namespace": "namespaces", "Deployment": "deployments", "ReplicaSet": "replicasets",
           "StatefulSet": "statefulsets", "DaemonSet": "daemonsets", "Job": "jobs",
           "PodDisruptionBudget": "poddisruptionbudgets", "ConfigMap": "configmaps",
           "Secret": "secrets", "Lease": "leases", "Event": "events",
           "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
           "MutatingWebhookConfiguration": "mutatingwebhookconfigurations", "Pod": "pods"}


def api_path(obj):
    api = obj["apiVersion"]
    path = "/api/v1" if api == "v1" else "/apis/" + api
    if "namespace" in obj["metadata"]:
        path += "/namespaces/" + obj["metadata"]["namespace"]
    return "%s/%s/%s" % (path, PLURALS[obj["kind"]], obj["metadata"]["name"])


def manifests(ns, suffix):
    labels = {"app": "every-kind"}
    template = {"metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "pause",
                                         "resources": {"requests": {"cpu": "10m"}}}]}}

    def workload(api, kind, name, **spec):
        return {"apiVersion": api, "kind": kind,
                "metadata": {"name": name, "namespace": ns},
                "spec": dict({"selector": {"matchLabels": labels}, "template": template},
                             **spec)}

    hook = {"name": "never.hwaffinity.test", "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "failurePolicy": "Ignore",
            "objectSelector": {"matchLabels": NEVER}, "timeoutSeconds": 1,
            "clientConfig": {"url": "https://127.0.0.1:9/never"},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                       "operations": ["CREATE"], "resources": ["configmaps"]}]}
    job_template = {"metadata": {"labels": {"app": "every-kind-job"}},
                    "spec": dict(template["spec"], restartPolicy="Never")}
    return [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": "every-kind-" + suffix, "labels": {"purpose": "test"}}},
        workload("apps/v1", "Deployment", "deploy", replicas=1),
        workload("apps/v1", "ReplicaSet", "rs", replicas=1),
        workload("apps/v1", "StatefulSet", "sts", replicas=1, serviceName="sts"),
        workload("apps/v1", "DaemonSet", "ds"),
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job", "namespace": ns},
         "spec": {"template": job_template, "backoffLimit": 0}},
        {"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
         "metadata": {"name": "pdb", "namespace": ns},
         "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": ns},
         "data": {"key": "value"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "secret", "namespace": ns},
         "type": "Opaque", "stringData": {"key": "value"}},
        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
         "metadata": {"name": "lease", "namespace": ns},
         "spec": {"holderIdentity": "every-kind", "leaseDurationSeconds": 15}},
        {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "event", "namespace": ns},
         "involvedObject": {"kind": "ConfigMap", "name": "cm", "namespace": ns},
         "reason": "Tested", "message": "every kind", "type": "Normal",
         "source": {"component": "hwaffinity-test"}},
        {"apiVersion": "admissionregistration.k8s.io/v1",
         "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": "every-kind-" + suffix}, "webhooks": [hook]},
        {"apiVersion": "admissionregistration.k8s.io/v1",
         "kind": "MutatingWebhookConfiguration",
         "metadata": {"name": "every-kind-" + suffix},
         "webhooks": [dict(hook, reinvocationPolicy="Never")]},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare", "namespace": ns,
                                                         "labels": {"app": "bare"}},
         "spec": template["spec"]},
    ]


def kubectl(cp, *args, stdin=None):
    return subprocess.run([cp.bin["kubectl"], "--kubeconfig", cp.kubeconfig] + list(args),
                          input=stdin, capture_output=True, text=True, timeout=60)


def test_every_kind_is_served_after_the_stack_has_run_a_while(control_plane, host_nodes,
                                                             namespace):
    cp = control_plane
    # the condition is time itself: the components have run SETTLE_S (the panics came at random)
    time.sleep(max(0.0, SETTLE_S - cp.uptime()))
    suffix = namespace[2:]
    objects = manifests(namespace, suffix)
    cp.add_node("every-kind-" + suffix, {"purpose": "test"})
    try:
        out = kubectl(cp, "apply", "-f", "-", stdin=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": objects}))
        assert out.returncode == 0, out.stderr
        for obj in objects:
            args = ["get", obj["kind"], obj["metadata"]["name"], "-o", "json"]
            if "namespace" in obj["metadata"]:
                args += ["-n", namespace]
            got = kubectl(cp, *args)
            assert got.returncode == 0, (obj["kind"], got.stderr)
            assert json.loads(got.stdout)["metadata"]["uid"]
            # server-side pretty printing walks every map with json-iterator
            status, pretty = cp.admin.request("GET", api_path(obj), query={"pretty": "true"},
                                              ok=None)
            assert status == 200, (obj["kind"], status, pretty)

        # Their controllers decode and act on them.
        def owned_pods():
            kinds = {}
            for pod in cp.pods(namespace):
                for ref in pod["metadata"].get("ownerReferences", []):
                    kinds.setdefault(ref["kind"], []).append(pod["metadata"]["name"])
            return kinds
        harness.wait_until(
            lambda: {"ReplicaSet", "StatefulSet", "DaemonSet", "Job"} <= set(owned_pods())
            and len(owned_pods()["ReplicaSet"]) == 2, 60,
            what="the Deployment, ReplicaSet, StatefulSet, DaemonSet and Job controllers' pods")
        harness.wait_until(lambda: cp.admin.get(
            "/apis/apps/v1/namespaces/%s/deployments/deploy" % namespace)["status"].get(
            "readyReplicas") == 1, 60, what="the Deployment to be ready")
        # The eviction subresource (policy/v1beta1 on 1.20); no PDB covers "bare".
        harness.wait_until(lambda: cp.pods(namespace, "app=bare")[0]["status"].get(
            "phase") == "Running", 30, what="the bare pod to run")
        assert cp.evict(namespace, "bare") == "policy/v1beta1"
        assert cp.new_panics() == {}
    finally:
        for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
                     "Namespace"):
            kubectl(cp, "delete", kind, "every-kind-" + suffix, "--wait=false")
        cp.delete_node("every-kind-" + suffix)


def test_a_panic_in_a_component_log_is_found_and_names_the_request():
    # The shape kube-apiserver 1.20 logs (util/runtime and server/filters/wrap.go).
    log = "\n".join([
        "I1123 20:01:02.000000  1 trace.go:205] Trace[1]: fine",
        'E1123 20:01:03.000000  1 runtime.go:76] Observed a panic: runtime error: invalid '
        'memory address or nil pointer dereference',
        "goroutine 4242 [running]:",
        "k8s.io/kubernetes/vendor/github.com/modern-go/reflect2.(*frozenConfig).Type2(...)",
        "E1123 20:01:03.000100  1 wrap.go:54] apiserver panic'd on POST "
        "/apis/apps/v1/namespaces/t/deployments?fieldManager=kubectl-client-side-apply",
        "E1123 20:01:04.000000  1 runtime.go:76] Observed a panic: boom",
        # and what the Go runtime prints when the corruption kills the process
        "unexpected fault address 0x0",
        "fatal error: fault",
        "[signal SIGSEGV: segmentation violation code=0x80 addr=0x0 pc=0x46981f]",
        "runtime.throw({0x4221fa6?, 0x1?})",
        "k8s.io/kubernetes/vendor/github.com/modern-go/reflect2.(*UnsafeMapType)"
        ".UnsafeIterate(...)",
    ])
    assert harness.find_panics(log) == [
        "POST /apis/apps/v1/namespaces/t/deployments?fieldManager=kubectl-client-side-apply: "
        "runtime error: invalid memory address or nil pointer dereference",
        "(no request): boom",
        "(process died) fatal error: fault in k8s.io/kubernetes/vendor/github.com/modern-go/"
        "reflect2.(*UnsafeMapType).UnsafeIterate(...)"]
    assert harness.find_panics("I1123 all fine\nW1123 a warning\n") == []
