"""Deploy as a user does, on a real node: the image built from deploy/Dockerfile
(tools/build-image.sh), imported into the node's containerd (no registry), then the
README's steps (doc/deploy.md) with kubectl: ``kubectl apply -k deploy/`` (the image set once in
deploy/kustomization.yaml's ``images:``), the controller's Secret, the webhook's
certificate with ``hwaffinity webhook certs``, webhooks.yaml, and a second kube-scheduler
with the shipped extender configuration filled in as the README does (its client
certificate is the one the webhook answers). The pods run under a real kubelet with
containerd 1.7 (NRI), runc, CNI and kube-proxy (tests/realnode/kubenode.py), joined to a
test control plane of its own (its Services are routed here, the shared one's are not).

The control plane is Kubernetes 1.20 (the newest that builds here from Debian); deploy/
targets 1.30+. The one difference shows on apply: 1.20 serves neither policy/v1
(PodDisruptionBudget, 1.21+) nor ValidatingAdmissionPolicy (1.30+), so kubectl reports
those objects and applies everything else; the test asserts that exactly those fail.
"""
import base64
import contextlib
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest
import yaml

from ci_policy import unavailable
from tacker_hwaffinity.constants import EXTENDER_FILTER_RESOURCE, EXTENDER_SCORE_RESOURCE
import test_readme_commands as readme
from controlplane import harness

from . import kubenode
from .hwimage import image_archive
from .images import image_ref

pytestmark = [pytest.mark.realnode, pytest.mark.controlplane]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NS = "hwaffinity-system"
NODE = "realnode-1"
HOST = "compute-1"                 # the node's CIS-node label, as the MgmtDriver sets it
SCHEDULER = "hwaffinity-scheduler"
TOO_NEW = {"PodDisruptionBudget": "policy/v1",
           "ValidatingAdmissionPolicy": "admissionregistration.k8s.io/v1",
           "ValidatingAdmissionPolicyBinding": "admissionregistration.k8s.io/v1"}


def wait(predicate, timeout, what):
    return harness.wait_until(predicate, timeout, interval=0.5, what=what)


class Cluster:
    """The control plane, the node and the user's kubectl, with the deploy/ copy."""

    def __init__(self, cp, node, workdir, image):
        self.cp, self.node, self.workdir, self.image = cp, node, workdir, image
        self.kubectl_bin = harness.find_binaries()["kubectl"]

    def kubectl(self, *args, check=True, timeout=90, stdin=None):
        r = subprocess.run([self.kubectl_bin, "--kubeconfig", self.cp.kubeconfig] + list(args),
                           capture_output=True, text=True, timeout=timeout, input=stdin,
                           cwd=self.workdir)
        if check and r.returncode != 0:
            raise AssertionError("kubectl %s: %s%s" % (" ".join(args), r.stdout, r.stderr))
        return r

    def shell(self, commands, check=True, env=None, timeout=300):
        """Run README commands in one bash (variables carry over), as a user's shell does,
        with the cached kubectl and this Python's hwaffinity first on PATH; whatever
        they leave running in the background is stopped afterwards. `set -e` stops at the
        first failing command; not pipefail, which no user's shell sets: with it,
        `kubectl logs ... | head -3` fails whenever kubectl writes after head has left
        (SIGPIPE, exit 141), a race that turned one CI run red."""
        path = [os.path.dirname(self.kubectl_bin), os.path.dirname(sys.executable)]
        environ = dict(os.environ, KUBECONFIG=self.cp.kubeconfig,
                       PATH=os.pathsep.join(path + [os.environ.get("PATH", "")]), **(env or {}))
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            proc = subprocess.Popen(["bash", "-c", "set -e\n" + "\n".join(commands)],
                                    cwd=self.workdir, env=environ, stdout=out, stderr=err,
                                    text=True, start_new_session=True)
            try:
                proc.wait(timeout=timeout)
            finally:        # files, not pipes: a background command may keep them open
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(10)
            out.seek(0)
            err.seek(0)
            out, err = out.read(), err.read()
        r = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        if check and r.returncode != 0:
            raise AssertionError("%s\nexit %d\n%s%s" % ("\n".join(commands), r.returncode,
                                                       out, err))
        return r

    def settled(self, selector, count):
        """COUNT pods of SELECTOR, every one Ready and none terminating (a Deployment
        after a pod was deleted), so that kubectl's pick among them is a Ready one."""
        def done():
            pods = self.pods(selector)
            return len(pods) == count and all(
                not p["metadata"].get("deletionTimestamp") and _ready(p) for p in pods)
        wait(done, 180, "%d settled pod(s) %s" % (count, selector))

    def pods(self, selector):
        return self.cp.admin.get("/api/v1/namespaces/%s/pods" % NS,
                                 labelSelector=selector)["items"]

    def ready_pods(self, selector, count):
        def ready():
            found = [p for p in self.pods(selector)
                     if p["status"].get("phase") == "Running" and _ready(p)]
            return found if len(found) >= count else None
        return wait(ready, 180, "%d Ready pod(s) %s (kubelet log %s)"
                    % (count, selector, self.node.kubelet_log))


def _ready(obj):
    """True when a pod's (or node's) Ready condition is True."""
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in obj.get("status", {}).get("conditions") or [])


def readme_steps():
    """The cluster commands of the README's "Deploy to a cluster" steps (doc/deploy.md),
    in their order, as {step: [command text]}: apply, secret, webhook, scheduler, check."""
    with open(os.path.join(ROOT, "doc", "deploy.md")) as f:
        found = [c.text for c in readme.commands(f.read()) if c.needs == "cluster"]
    steps, i = {}, 0
    for name, last in (("apply", "kubectl apply -k deploy/"),
                       ("secret", "create secret generic hwaffinity-controller-vim"),
                       ("webhook", "deploy/webhook/webhooks.yaml"),
                       ("scheduler", "> hwaffinity-scheduler.yaml"),
                       ("check", "http://127.0.0.1:9465/metrics")):
        j = next(k for k in range(i, len(found)) if last in found[k])
        steps[name], i = found[i:j + 1], j + 1
    assert i == len(found), found[i:]
    return steps


def _user_steps(cluster, image_reference):
    """The README's steps 2-4, as a user runs them, on a copy of deploy/."""
    deploy = os.path.join(cluster.workdir, "deploy")
    kustomization = os.path.join(deploy, "kustomization.yaml")
    with open(kustomization) as f:
        text = f.read()
    name, _, tag = image_reference.rpartition(":")
    # the user's one edit: newName/newTag of the images: entry
    text = re.sub(r"newName: .*", "newName: " + name, text)
    text = re.sub(r"newTag: .*", "newTag: " + json.dumps(tag), text)
    with open(kustomization, "w") as f:
        f.write(text)
    # and the README's edit for a second scheduler (step 6): the webhook marks its pods
    webhook = os.path.join(deploy, "webhook", "deployment.yaml")
    with open(webhook) as f:
        text = f.read()
    assert "# - --scheduler-name=default-scheduler" in text
    with open(webhook, "w") as f:
        f.write(text.replace("# - --scheduler-name=default-scheduler",
                             "- --scheduler-name=" + SCHEDULER))
    steps = readme_steps()
    applied = cluster.shell(steps["apply"], check=False)
    failed = [line for line in applied.stderr.splitlines() if line.strip()
              and not line.startswith("Warning:")]
    # the controller's Secret, the README's command with this test's values: a Keystone
    # where nothing listens, so its polls fail and say so in its metrics
    (secret,) = steps["secret"]
    secret = secret.replace("https://keystone.example.com:5000/v3",
                            "http://%s:5000/v3" % kubenode.NODE_IP)
    cluster.shell([secret], env={"OS_PASSWORD": "not-a-password"})
    return applied, failed


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    archive = image_archive()
    if archive is None:
        unavailable("the hwaffinity image is not built (tools/build-image.sh)")
    path, reference = archive
    workdir = str(tmp_path_factory.mktemp("user"))
    shutil.copytree(os.path.join(ROOT, "deploy"), os.path.join(workdir, "deploy"))
    with kubenode.cluster_of_one(NODE, images=[path]) as (cp, node, node_seconds):
        cp.admin.patch("/api/v1/nodes/" + NODE, {"metadata": {"labels": {"CIS-node": HOST}}})
        c = Cluster(cp, node, workdir, reference)
        c.node_seconds = node_seconds
        c.applied, c.apply_failed = _user_steps(c, reference)
        yield c


def test_apply_k_deploy_creates_everything_the_server_serves(cluster):
    """Only the objects whose API the 1.20 test server lacks fail; the rest is created."""
    print("kubectl apply -k deploy/ said on stderr:\n" + cluster.applied.stderr)
    assert cluster.apply_failed, "1.20 serves policy/v1? the docstring is stale"
    for line in cluster.apply_failed:
        assert any(kind in line or version in line for kind, version in TOO_NEW.items()) \
            or "no matches for kind" in line or "ensure CRDs are installed" in line, \
            cluster.applied.stderr
    kinds = {m.group(1) for m in re.finditer(r'kind "(\w+)"', cluster.applied.stderr)}
    assert kinds <= set(TOO_NEW), cluster.applied.stderr
    out = cluster.applied.stdout
    for obj in ("namespace/hwaffinity-system", "daemonset.apps/hwaffinity-agent",
                "deployment.apps/hwaffinity-controller", "deployment.apps/hwaffinity-webhook",
                "service/hwaffinity-webhook", "serviceaccount/hwaffinity-agent"):
        assert obj in out, out
    ds = cluster.cp.admin.get("/apis/apps/v1/namespaces/%s/daemonsets/hwaffinity-agent" % NS)
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == cluster.image


def test_the_agent_pod_runs_ready_and_pins_the_cnf_in_the_kernel(cluster):
    agent = cluster.ready_pods("app.kubernetes.io/name=hwaffinity-agent", 1)[0]
    assert agent["spec"]["nodeName"] == NODE
    log = cluster.kubectl("-n", NS, "logs", agent["metadata"]["name"]).stdout
    assert "registered with the runtime as NRI plugin" in log, log
    assert "synchronized with the runtime" in log, log
    # the VNF-B sample, with a tiny local image: 3 replicas, never two on one host
    with open(os.path.join(ROOT, "samples", "cnf", "upf-required.yaml")) as f:
        upf = yaml.safe_load(f)
    box = upf["spec"]["template"]["spec"]["containers"][0]
    box.update(image=image_ref("busybox"), command=["sleep", "3600"])
    box["resources"] = {"requests": {"cpu": "1", "memory": "64Mi"},
                        "limits": {"cpu": "1", "memory": "64Mi"}}
    cluster.kubectl("create", "namespace", "cnf")
    cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(upf))

    def running():
        pods = cluster.cp.admin.get("/api/v1/namespaces/cnf/pods",
                                    labelSelector="app=upf")["items"]
        up = [p for p in pods if p["status"].get("phase") == "Running"]
        return (up, pods) if up and len(pods) == 3 else None
    up, pods = wait(running, 120, "an upf replica Running")
    assert len(up) == 1, "one host: one replica (CIS-node anti-affinity)"
    pending = [p for p in pods if p["status"].get("phase") == "Pending"]
    assert len(pending) == 2
    pod = up[0]
    cid = pod["status"]["containerStatuses"][0]["containerID"].split("//", 1)[1]
    pid = cluster.node.container_pid(cid)
    with open("/proc/%d/status" % pid) as f:
        status = dict(line.split(":", 1) for line in f if ":" in line)
    cpus = status["Cpus_allowed_list"].strip()
    # 2 CPUs, one NUMA node: the Guaranteed 1-CPU container gets one CPU to itself
    assert cpus in ("0", "1"), cpus

    def annotated():
        p = cluster.cp.admin.get("/api/v1/namespaces/cnf/pods/" + pod["metadata"]["name"])
        return p["metadata"].get("annotations", {}).get("hwaffinity.io/numa")
    placed = json.loads(wait(annotated, 60, "the agent's hwaffinity.io/numa annotation"))
    assert placed["upf"]["exclusiveCpus"] == cpus, placed
    print("upf container (pid %d): Cpus_allowed_list %s; the agent's annotation %s"
          % (pid, cpus, placed))
    cluster.kubectl("delete", "namespace", "cnf", "--wait=false")


def test_the_controller_leads_and_hands_over(cluster):
    pods = cluster.ready_pods("app.kubernetes.io/name=hwaffinity-controller", 2)
    names = {p["metadata"]["name"] for p in pods}

    def holder():
        status, lease = cluster.cp.admin.request(
            "GET", "/apis/coordination.k8s.io/v1/namespaces/%s/leases/hwaffinity-controller"
            % NS, ok=None)
        return lease["spec"].get("holderIdentity") if status == 200 else None
    leader = wait(lambda: holder() in names and holder(), 60, "a controller leads")
    for p in pods:
        log = cluster.kubectl("-n", NS, "logs", p["metadata"]["name"]).stdout
        assert "controller %s: workers are" % p["metadata"]["name"] in log, log
    cluster.kubectl("-n", NS, "delete", "pod", leader, "--wait=false")
    wait(lambda: holder() not in (None, leader) and holder(), 90,
         "the Lease handed over from %s" % leader)


def _pod_get(url, tls=False):
    ctx = None
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE     # the metrics port: the pod's own serving cert
    with urllib.request.urlopen(url, timeout=10, context=ctx) as r:
        return r.read().decode()


@pytest.fixture(scope="module")
def webhook(cluster):
    """The README's step 5 as shown: certificate, Secret, rollout, webhooks.yaml."""
    cluster.shell(readme_steps()["webhook"])
    svc = cluster.kubectl("-n", NS, "get", "svc", "hwaffinity-webhook", "-o",
                          "jsonpath={.spec.clusterIP}").stdout.strip()
    with open(os.path.join(cluster.workdir, "certs", "ca.crt"), "rb") as f:
        bundle = base64.b64encode(f.read()).decode()
    return {"ip": svc, "bundle": bundle}


def test_the_readme_checks_show_every_start_line_and_the_metrics(cluster, webhook):
    cluster.settled("app.kubernetes.io/name=hwaffinity-controller", 2)
    out = cluster.shell(readme_steps()["check"]).stdout
    assert "mode nri" in out, out                          # the agent's start line
    assert re.search(r"controller hwaffinity-controller-\S+: workers are", out), out
    assert "webhook on https://0.0.0.0:8443" in out, out
    # the pod kubectl picks may be the standby (0 polls): the counter is there either way
    assert re.search(r"^hwaffinity_controller_poll_errors_total \d", out, re.M), out


def test_admission_refuses_the_seed_dos_pod_through_the_service(cluster, webhook):
    cluster.kubectl("create", "namespace", "tenant")
    term = {"topologyKey": "CIS-node", "namespaceSelector": {},
            "labelSelector": {"matchLabels": {"app": "x"}}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "greedy", "namespace": "tenant", "labels": {"app": "x"},
                        "annotations": {"hwaffinity.io/pod-affinity": json.dumps(
                            {"podAntiAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": [term]}})}},
           "spec": {"containers": [{"name": "c", "image": image_ref("busybox")}]}}
    deadline = time.monotonic() + 60
    while True:             # the API server's Service route may need a kube-proxy sync
        r = cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(pod), check=False)
        if "denied the request" in r.stderr or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert r.returncode != 0
    assert 'admission webhook "validate.hwaffinity.io" denied the request' in r.stderr, r.stderr


def test_a_scheduler_with_the_shipped_extender_config_calls_the_webhook(cluster, webhook):
    """The README's step 6 as shown, on the v1beta1 file (the 1.20 control plane): the
    scheduler presents the client certificate the webhook's --client-ca verifies."""
    steps = [c.replace("deploy/webhook/scheduler-config.yaml",
                       "deploy/webhook/scheduler-config-v1beta1.yaml")
             for c in readme_steps()["scheduler"]]
    cluster.shell(steps, env={"CLUSTER_IP": webhook["ip"]})
    made = os.path.join(cluster.workdir, "hwaffinity-scheduler.yaml")
    assert os.stat(made).st_mode & 0o077 == 0           # the client key: owner only
    with open(made) as f:
        extenders = yaml.safe_load(f)["extenders"]
    assert {e["tlsConfig"]["caData"] for e in extenders} == {webhook["bundle"]}
    assert [e["managedResources"] for e in extenders][:2] == [
        [{"name": EXTENDER_FILTER_RESOURCE, "ignoredByScheduler": True}],
        [{"name": EXTENDER_SCORE_RESOURCE, "ignoredByScheduler": True}]]
    cluster.cp.start_scheduler(SCHEDULER, extenders=extenders)
    cluster.kubectl("create", "namespace", "extended")
    # required: a one-node cluster, where kube-scheduler calls no /prioritize
    terms = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "CIS-node", "labelSelector": {
            "matchExpressions": [{"key": "version", "operator": "Gt", "values": ["1"]}]}}]}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "via-extender", "namespace": "extended",
                        "annotations": {"hwaffinity.io/pod-affinity": json.dumps(terms)}},
           "spec": {"schedulerName": SCHEDULER,
                    "containers": [{"name": "c", "image": image_ref("busybox"),
                                    "command": ["sleep", "3600"]}]}}

    def filtered():
        served = 0
        for p in cluster.ready_pods("app.kubernetes.io/name=hwaffinity-webhook", 2):
            text = _pod_get("https://%s:8443/metrics" % p["status"]["podIP"], tls=True)
            served += sum(float(v) for v in re.findall(
                r'hwaffinity_webhook_requests_total\{[^}]*path="/filter"[^}]*\} (\S+)', text))
        return served
    before = filtered()
    cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(pod))

    def running():
        p = cluster.cp.admin.get("/api/v1/namespaces/extended/pods/via-extender")
        return p if p["status"].get("phase") == "Running" else None
    # marked by the mutating webhook, placed through the extender, and admitted by the real
    # kubelet although no node advertises the resource (the kubelet drops it at admission)
    made = wait(running, 120, "the extender-scheduled pod Running")
    assert made["spec"]["nodeName"] == NODE
    # a required term alone: marked for /filter only
    assert made["spec"]["containers"][0]["resources"]["limits"] == {EXTENDER_FILTER_RESOURCE: "1"}
    assert filtered() >= before + 1


def test_every_component_serves_metrics_on_its_pod_address(cluster, webhook):
    agent = cluster.ready_pods("app.kubernetes.io/name=hwaffinity-agent", 1)[0]
    text = _pod_get("http://%s:9464/metrics" % agent["status"]["podIP"])
    assert "hwaffinity_agent_decisions_total" in text
    controllers = "app.kubernetes.io/name=hwaffinity-controller"
    cluster.settled(controllers, 2)

    def polls_failed():     # the leader polled the Keystone where nothing listens
        total = 0.0
        for p in cluster.pods(controllers):
            text = _pod_get("http://%s:9465/metrics" % p["status"]["podIP"])
            assert "hwaffinity_controller_poll_errors_total" in text
            total += sum(float(v) for v in re.findall(
                r"^hwaffinity_controller_poll_errors_total (\S+)", text, re.M))
        return total >= 1
    wait(polls_failed, 90, "the leader's failed Nova polls counted")
    for p in cluster.ready_pods("app.kubernetes.io/name=hwaffinity-webhook", 2):
        text = _pod_get("https://%s:8443/metrics" % p["status"]["podIP"], tls=True)
        assert "hwaffinity_webhook_requests_total" in text
        log = cluster.kubectl("-n", NS, "logs", p["metadata"]["name"]).stdout
        assert "webhook on https://" in log, log


def test_nothing_runs_with_more_rbac_than_the_shipped_roles(cluster):
    """Every binding whose subject is one of our ServiceAccounts comes from deploy/, and
    no component logged a refusal (403) from the API server."""
    shipped = set()
    for dirpath, _dirs, files in os.walk(os.path.join(ROOT, "deploy")):
        for name in files:
            if name.endswith(".yaml"):
                with open(os.path.join(dirpath, name)) as f:
                    for doc in yaml.safe_load_all(f):
                        if doc and doc.get("kind") in ("RoleBinding", "ClusterRoleBinding"):
                            shipped.add((doc["kind"], doc["metadata"]["name"]))
    ours = set()
    for kind, path in (("ClusterRoleBinding",
                        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"),
                       ("RoleBinding", "/apis/rbac.authorization.k8s.io/v1/rolebindings")):
        for b in cluster.cp.admin.get(path)["items"]:
            if any(s.get("kind") == "ServiceAccount" and s.get("namespace") == NS
                   for s in b.get("subjects") or []):
                ours.add((kind, b["metadata"]["name"]))
    assert ours and ours <= shipped, ours - shipped
    for selector in ("app.kubernetes.io/name=hwaffinity-agent",
                     "app.kubernetes.io/name=hwaffinity-controller",
                     "app.kubernetes.io/name=hwaffinity-webhook"):
        for p in cluster.pods(selector):
            if p["status"].get("phase") != "Running":
                continue
            log = cluster.kubectl("-n", NS, "logs", p["metadata"]["name"]).stdout
            assert "forbidden" not in log.lower(), log


def test_the_node_figures(cluster):
    """How long the node took to join (printed; the real-node tests must stay < 6 min)."""
    print("real node: kubelet + containerd + kube-proxy Ready in %.1f s" % cluster.node_seconds)
    assert cluster.node_seconds < 120
