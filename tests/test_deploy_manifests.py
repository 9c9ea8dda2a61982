"""deploy/: what `kubectl apply -k deploy/` installs, checked as an operator on Kubernetes
1.30+ and the 1.20 test control plane would find it.

- the kustomizations (one at the top, one per component) put every manifest in the apply
  path except the ones left out on purpose (the Secret example, the webhook
  configurations that need the CA, kube-scheduler's files, the plan reader's role);
  kubectl's own kustomize renders the same objects as the expansion read here;
- one namespace, hwaffinity-system, for every namespaced object, every RBAC subject, the
  webhook's Service reference and namespace exclusion, and the CLI defaults that name it;
- PodSecurity: the namespace's labels; the controller's and the webhook's pods pass the
  restricted level; the agent asks for exactly its documented minimum;
- no Secret (no `change-me`) in the apply path; PodDisruptionBudgets and the webhook's
  PriorityClass; images, ports, probes and flags agree with the CLI;
- the webhook answers the extender only to kube-scheduler's client certificate, which
  the scheduler configurations present; a NetworkPolicy per component admits only the
  port it serves (metrics: from Prometheus's namespace);
- kube-scheduler's configuration: v1 (read by `hwaffinity plan`), and the v1beta1 variant
  a real kube-scheduler 1.20 runs with;
- the 1.20-compatible objects pass the real API server's server-side dry run.
"""
import base64
import copy
import json
import os
import re
import shlex
import shutil
import subprocess

import pytest
import yaml

from ci_policy import unavailable
from controlplane import harness
from tacker_hwaffinity.cli.main import build_parser
from tacker_hwaffinity.constants import EXTENDER_RESOURCE
from tacker_hwaffinity.webhook import certs, marking, podcache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEPLOY = os.path.join(ROOT, "deploy")
NAMESPACE = "hwaffinity-system"
IMAGE = "registry.example.com/tacker-hwaffinity:latest"   # deploy/kustomization.yaml images:
IMAGE_NAME = "tacker-hwaffinity"          # what every manifest names, set once by images:
NOT_APPLIED = {  # in deploy/, deliberately outside `kubectl apply -k deploy/`
    "controller/secret.example.yaml", "webhook/webhooks.yaml",
    "webhook/scheduler-config.yaml", "webhook/scheduler-config-v1beta1.yaml",
    "rbac/plan-reader.yaml",
    "monitoring/prometheusrule.yaml"}   # its own kustomization: the CRD may not exist
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass",
                  "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
                  "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
# the volume types the PodSecurity restricted level allows
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                      "persistentVolumeClaim", "projected", "secret"}


def kustomize(directory):
    """[(path relative to deploy/, object)] of DIRECTORY's kustomization.yaml, in order,
    as kustomize would accumulate them (resources: files or directories holding their own
    kustomization). Any other kustomization field fails: this reading would not apply it."""
    with open(os.path.join(directory, "kustomization.yaml")) as f:
        k = yaml.safe_load(f)
    assert set(k) <= {"apiVersion", "kind", "resources", "images"}, \
        "%s uses fields this test does not model: %s" % (directory, sorted(k))
    assert (k["apiVersion"], k["kind"]) == ("kustomize.config.k8s.io/v1beta1", "Kustomization")
    out = []
    for entry in k["resources"]:
        path = os.path.normpath(os.path.join(directory, entry))
        assert path.startswith(directory + os.sep), "%s: %s is outside" % (directory, entry)
        assert os.path.exists(path), "%s lists %s, which does not exist" % (directory, entry)
        if os.path.isdir(path):
            out += kustomize(path)
        else:
            with open(path) as f:
                out += [(os.path.relpath(path, DEPLOY), d) for d in yaml.safe_load_all(f) if d]
    for image in k.get("images", []):       # kustomize's images transformer: name -> newName:newTag
        for _, d in out:
            for c in _containers(d):
                if c["image"] == image["name"]:
                    c["image"] = "%s:%s" % (image["newName"], image["newTag"])
    return out


def _containers(obj):
    spec = obj.get("spec", {}).get("template", {}).get("spec", {})
    return spec.get("containers", []) + spec.get("initContainers", [])


@pytest.fixture(scope="module")
def applied():
    return kustomize(DEPLOY)


def _objects(applied, kind=None):
    return [d for _, d in applied if kind is None or d["kind"] == kind]


def _one(applied, kind, name):
    found = [d for d in _objects(applied, kind) if d["metadata"]["name"] == name]
    assert len(found) == 1, "%d %s named %s in the apply path" % (len(found), kind, name)
    return found[0]


def _load(relpath):
    with open(os.path.join(DEPLOY, relpath)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def _pod_spec(applied, kind, name):
    return _one(applied, kind, name)["spec"]["template"]["spec"]


# -- the apply path --------------------------------------------------------------------

def test_every_manifest_is_applied_or_left_out_on_purpose(applied):
    in_path = {p for p, _ in applied}
    manifests = set()
    for dirpath, _, files in os.walk(DEPLOY):
        for f in files:
            if f.endswith(".yaml") and f != "kustomization.yaml":
                manifests.add(os.path.relpath(os.path.join(dirpath, f), DEPLOY))
    assert manifests - in_path == NOT_APPLIED
    assert not in_path & NOT_APPLIED
    with open(os.path.join(DEPLOY, "kustomization.yaml")) as f:
        assert yaml.safe_load(f)["resources"] == ["namespace.yaml", "agent", "controller",
                                                  "webhook"]
    # every component installs on its own too, after the namespace
    for component in ("agent", "controller", "webhook"):
        assert {p.split("/")[0] for p, _ in kustomize(os.path.join(DEPLOY, component))} \
            == {component}


def _kubectl_kustomize(kubectl, directory):
    p = subprocess.run([kubectl, "kustomize", directory], capture_output=True, text=True,
                       timeout=60)
    return p.returncode, [d for d in yaml.safe_load_all(p.stdout) if d] if p.returncode == 0 \
        else p.stderr


def _canonical(obj):
    return json.dumps(obj, sort_keys=True)


def _ids(objects):
    return sorted((d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])
                  for d in objects)


def test_kubectl_kustomize_renders_what_the_expansion_reads(applied):
    """Each component and the top level (directories as resources, the images: override)
    with the cached kubectl (Debian trixie's 1.32, kustomize v5; tools/build-kube.sh), and
    with the machine's kubectl too when it has one."""
    kubectl = os.path.join(harness.kube_bin_dir(), "kubectl")
    if not os.access(kubectl, os.X_OK):
        unavailable("no kubectl (tools/build-kube.sh): " + kubectl)
    for component in ("agent", "controller", "webhook"):
        directory = os.path.join(DEPLOY, component)
        status, out = _kubectl_kustomize(kubectl, directory)
        assert status == 0, out
        assert _ids(out) == _ids(d for _, d in kustomize(directory))
        # kustomize changes nothing in them (no transformer is configured)
        assert sorted(map(_canonical, out)) == sorted(_canonical(d)
                                                      for _, d in kustomize(directory))
    candidates = [kubectl]
    if shutil.which("kubectl"):
        candidates.append(shutil.which("kubectl"))
    rendered = 0
    for exe in candidates:
        status, out = _kubectl_kustomize(exe, DEPLOY)
        if status != 0:
            # kustomize v2 (kubectl < 1.21) takes no directory as a resource; nothing else
            # may go wrong
            assert "must be a file" in out, out
            continue
        assert _ids(out) == _ids(_objects(applied))
        images = {c["image"] for d in out for c in _containers(d)}
        assert images == {IMAGE}, images            # set once, in every workload
        rendered += 1
    print("deploy/ rendered whole by %d of %d kubectl(s)" % (rendered, len(candidates)))
    assert rendered >= 1


# -- one namespace ------------------------------------------------------------------------

def test_one_namespace_for_everything(applied):
    (ns,) = _objects(applied, "Namespace")
    assert ns["metadata"]["name"] == NAMESPACE
    assert applied[0][1] is ns                          # created before what lives in it
    for path, d in applied:
        meta = d["metadata"]
        if d["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in meta, "%s: %s %s" % (path, d["kind"], meta["name"])
        else:
            assert meta.get("namespace") == NAMESPACE, "%s: %s %s" % (
                path, d["kind"], meta["name"])
        for subject in d.get("subjects") or []:
            if subject["kind"] == "ServiceAccount":
                assert subject["namespace"] == NAMESPACE, path
        assert "kube-system" not in yaml.safe_dump(d), path
    for relpath in NOT_APPLIED - {"rbac/plan-reader.yaml"}:
        for d in _load(relpath):
            if d.get("kind") == "Secret":
                assert d["metadata"]["namespace"] == NAMESPACE


def test_the_webhooks_and_the_cli_defaults_name_the_same_namespace(applied):
    service = _one(applied, "Service", "hwaffinity-webhook")
    for hook_config in _load("webhook/webhooks.yaml"):
        for hook in hook_config["webhooks"]:
            ref = hook["clientConfig"]["service"]
            assert (ref["name"], ref["namespace"]) == (service["metadata"]["name"], NAMESPACE)
            assert ref["port"] in [p["port"] for p in service["spec"]["ports"]]
            if all(rule["scope"] == "Cluster" for rule in hook["rules"]):
                assert "namespaceSelector" not in hook      # it would not apply
                continue
            (expr,) = hook["namespaceSelector"]["matchExpressions"]
            assert expr["key"] == "kubernetes.io/metadata.name" and expr["operator"] == "NotIn"
            assert set(expr["values"]) == {"kube-system", NAMESPACE}
    args = build_parser("webhook").parse_args(["webhook", "certs", "--out", "x"])
    assert args.namespace == NAMESPACE and args.service == service["metadata"]["name"]
    serve = build_parser("webhook").parse_args(["webhook", "serve"])
    (agent_sa,) = [d for d in _objects(applied, "ServiceAccount")
                   if d["metadata"]["name"] == "hwaffinity-agent"]
    assert serve.agent_service_account == "system:serviceaccount:%s:%s" % (
        NAMESPACE, agent_sa["metadata"]["name"])
    assert _pod_spec(applied, "DaemonSet", "hwaffinity-agent")["serviceAccountName"] == \
        agent_sa["metadata"]["name"]


def test_the_controller_lease_lives_in_its_own_namespace(applied, monkeypatch):
    """--lease-namespace defaults to POD_NAMESPACE (the downward API), where the Role is,
    and to the same namespace outside a pod."""
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    args = build_parser("controller").parse_args(["controller", "--stack", "s"])
    assert args.lease_namespace == NAMESPACE
    (container,) = _pod_spec(applied, "Deployment", "hwaffinity-controller")["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    role = _one(applied, "Role", "hwaffinity-controller-lease")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert role["rules"][0]["resources"] == ["leases"]


# -- PodSecurity --------------------------------------------------------------------------

def test_namespace_pod_security_labels(applied):
    labels = _one(applied, "Namespace", NAMESPACE)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"   # the agent only
    assert labels["pod-security.kubernetes.io/warn"] == "restricted"
    assert labels["pod-security.kubernetes.io/audit"] == "restricted"
    # what the webhooks' exclusion matches (the API server sets it itself from 1.21)
    assert labels["kubernetes.io/metadata.name"] == NAMESPACE


def restricted_violations(spec):
    """What of the PodSecurity restricted level (and our read-only root) SPEC breaks."""
    bad = []
    pod_sc = spec.get("securityContext") or {}
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            bad.append(key)
    for v in spec.get("volumes") or []:
        kinds = set(v) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            bad.append("volume %s: %s" % (v["name"], sorted(kinds)))
    containers = (spec.get("containers") or []) + (spec.get("initContainers") or [])
    for c in containers:
        sc = c.get("securityContext") or {}
        name = c["name"]

        def field(key):
            return sc.get(key, pod_sc.get(key))
        if field("runAsNonRoot") is not True:
            bad.append("%s: runAsNonRoot" % name)
        if field("runAsUser") == 0:
            bad.append("%s: runAsUser 0" % name)
        if (field("seccompProfile") or {}).get("type") not in ("RuntimeDefault", "Localhost"):
            bad.append("%s: seccompProfile" % name)
        if sc.get("allowPrivilegeEscalation") is not False:
            bad.append("%s: allowPrivilegeEscalation" % name)
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []) or set(caps.get("add") or []) - {
                "NET_BIND_SERVICE"}:
            bad.append("%s: capabilities" % name)
        if sc.get("privileged"):
            bad.append("%s: privileged" % name)
        if sc.get("readOnlyRootFilesystem") is not True:
            bad.append("%s: readOnlyRootFilesystem" % name)
        if any(p.get("hostPort") for p in c.get("ports") or []):
            bad.append("%s: hostPort" % name)
    return bad


def test_controller_and_webhook_pass_the_restricted_level(applied):
    for name in ("hwaffinity-controller", "hwaffinity-webhook"):
        spec = _pod_spec(applied, "Deployment", name)
        assert restricted_violations(spec) == [], name
    # the check itself refuses what the old manifests had (no seccomp profile) and root
    spec = copy.deepcopy(_pod_spec(applied, "Deployment", "hwaffinity-webhook"))
    del spec["securityContext"]["seccompProfile"]
    assert restricted_violations(spec) == ["webhook: seccompProfile"]
    assert restricted_violations(_pod_spec(applied, "DaemonSet", "hwaffinity-agent"))


def test_the_image_runs_as_the_manifests_non_root_user(applied):
    with open(os.path.join(DEPLOY, "Dockerfile")) as f:
        users = [line.split()[1] for line in f if line.startswith("USER ")]
    assert users == ["65534:65534"]           # numeric: the kubelet can verify runAsNonRoot
    for name in ("hwaffinity-controller", "hwaffinity-webhook"):
        sc = _pod_spec(applied, "Deployment", name)["securityContext"]
        assert "%s:%s" % (sc["runAsUser"], sc["runAsGroup"]) == users[0]


def test_the_agent_asks_for_its_documented_minimum(applied):
    spec = _pod_spec(applied, "DaemonSet", "hwaffinity-agent")
    assert not any(spec.get(k) for k in ("hostNetwork", "hostPID", "hostIPC"))
    (c,) = spec["containers"]
    sc = c["securityContext"]
    assert sc["runAsUser"] == 0 and not sc.get("privileged")
    assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    host = {v["name"]: v["hostPath"] for v in spec["volumes"]}
    assert set(host) == {v["name"] for v in spec["volumes"]}          # nothing else
    assert {n: h["path"] for n, h in host.items()} == {
        "cgroup": "/sys/fs/cgroup", "cpus": "/sys/devices/system",
        "kubelet-config": "/var/lib/kubelet/config.yaml",
        "cpu-manager-state": "/var/lib/kubelet/cpu_manager_state",
        "nri": "/var/run/nri", "state": "/var/lib/hwaffinity"}
    # never the kubelet's whole directory (every pod's Secrets are under it), never a type
    # that lets the runtime make a directory where a kubelet file belongs
    assert host["kubelet-config"]["type"] == host["cpu-manager-state"]["type"] == "FileOrCreate"
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    writable = {n for n, m in mounts.items() if not m.get("readOnly")}
    assert writable == {"cgroup", "nri", "state"}    # nri: the socket is connected to
    args = c["args"]
    assert "--mode=auto" in args and "--nri-socket=/host/run/nri/nri.sock" in args
    assert "--state-dir=/host/var/lib/hwaffinity" in args


# -- credentials, availability, priority --------------------------------------------------

def test_no_secret_in_the_apply_path(applied):
    assert _objects(applied, "Secret") == []
    assert "change-me" not in yaml.safe_dump_all(_objects(applied))
    (example,) = _load("controller/secret.example.yaml")
    (container,) = _pod_spec(applied, "Deployment", "hwaffinity-controller")["containers"]
    assert container["envFrom"] == [{"secretRef": {"name": example["metadata"]["name"]}}]
    with open(os.path.join(DEPLOY, "controller", "secret.example.yaml")) as f:
        text = f.read()
    command = re.search(r"#\s+(kubectl -n (\S+) create secret generic (\S+) .*?)\n#\n",
                        text, re.S)
    assert command, "secret.example.yaml: no `kubectl create secret generic` line"
    assert (command.group(2), command.group(3)) == (NAMESPACE, example["metadata"]["name"])
    words = shlex.split(command.group(1).replace("\\\n#", " "))
    literals = {w.split("=", 2)[1] for w in words if w.startswith("--from-literal=")}
    assert literals == set(example["stringData"])          # the same keys as the example


def test_pdbs_keep_one_replica_of_each_deployment(applied):
    budgets = {d["metadata"]["name"]: d for d in _objects(applied, "PodDisruptionBudget")}
    for deployment in _objects(applied, "Deployment"):
        name = deployment["metadata"]["name"]
        assert deployment["spec"]["replicas"] == 2
        pdb = budgets.pop(name)
        assert pdb["apiVersion"] == "policy/v1" and pdb["spec"]["minAvailable"] == 1
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
        assert pdb["spec"]["selector"] == deployment["spec"]["selector"]
    assert budgets == {}


def test_the_webhook_has_its_own_priority_class(applied):
    name = _pod_spec(applied, "Deployment", "hwaffinity-webhook")["priorityClassName"]
    assert not name.startswith("system-")
    pc = _one(applied, "PriorityClass", name)
    assert pc["value"] == 1000000000 and pc["globalDefault"] is False   # the user maximum


# -- the CLI's view of the manifests ---------------------------------------------------------

def _parse(container):
    args = container["args"]
    return build_parser(args[0]).parse_args(args)


def test_images_ports_probes_and_flags_agree_with_the_cli(applied):
    workloads = [("DaemonSet", "hwaffinity-agent", "metrics_address"),
                 ("Deployment", "hwaffinity-controller", "metrics_address"),
                 ("Deployment", "hwaffinity-webhook", "address")]
    for kind, name, flag in workloads:
        template = _one(applied, kind, name)["spec"]["template"]
        (c,) = template["spec"]["containers"]
        assert c["image"] == IMAGE
        args = _parse(c)                               # the real parser takes every flag
        port = int(getattr(args, flag).rsplit(":", 1)[1])
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        assert list(ports.values()) == [port], name
        assert template["metadata"]["annotations"]["prometheus.io/port"] == str(port)
        probes = [c[k] for k in ("livenessProbe", "readinessProbe", "startupProbe") if k in c]
        assert probes, name
        for probe in probes:
            assert probe["httpGet"]["port"] in ports
            assert probe["httpGet"]["path"] in ("/healthz", "/readyz", "/livez")
            assert probe["httpGet"].get("scheme", "HTTP") == (
                "HTTPS" if flag == "address" else "HTTP")
    service = _one(applied, "Service", "hwaffinity-webhook")
    (c,) = _pod_spec(applied, "Deployment", "hwaffinity-webhook")["containers"]
    assert service["spec"]["ports"][0]["targetPort"] in {p["name"] for p in c["ports"]}
    assert service["spec"]["selector"].items() <= _one(
        applied, "Deployment", "hwaffinity-webhook")["spec"]["template"]["metadata"][
        "labels"].items()


def _mounted(container, path):
    return any(path == m["mountPath"] or path.startswith(m["mountPath"].rstrip("/") + "/")
               for m in container["volumeMounts"])


def test_every_file_a_flag_names_is_mounted(applied):
    (c,) = _pod_spec(applied, "Deployment", "hwaffinity-webhook")["containers"]
    args = _parse(c)
    assert _mounted(c, args.cert) and _mounted(c, args.key) and _mounted(c, args.client_ca)
    (c,) = _pod_spec(applied, "DaemonSet", "hwaffinity-agent")["containers"]
    args = _parse(c)
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    assert mounts[args.kubelet_config] == "kubelet-config"
    assert mounts[args.cpu_manager_state] == "cpu-manager-state"
    assert mounts[args.cgroup_root] == "cgroup"
    assert mounts[os.path.join(args.sysfs_root, "devices/system")] == "cpus"


def test_the_webhook_answers_the_extender_only_to_the_schedulers_certificate(applied):
    """The Deployment passes the TLS Secret's ca.crt as --client-ca and kube-scheduler's
    name (what `webhook certs` issues), and both scheduler configurations present a
    client certificate."""
    from tacker_hwaffinity.cli import webhook as cli
    from tacker_hwaffinity.webhook.certs import CLIENT_NAME
    spec = _pod_spec(applied, "Deployment", "hwaffinity-webhook")
    (c,) = spec["containers"]
    args = _parse(c)
    assert not args.no_extender and not args.allow_anonymous_extender
    assert args.client_name == [CLIENT_NAME]
    assert cli._extender_access(args, (args.cert, args.key)).startswith(
        "extender for client certificates of /tls/ca.crt")
    mount = next(m for m in c["volumeMounts"] if args.client_ca.startswith(m["mountPath"]))
    volume = next(v for v in spec["volumes"] if v["name"] == mount["name"])
    assert volume["secret"]["secretName"] == "hwaffinity-webhook-tls"
    assert os.path.dirname(args.client_ca) == os.path.dirname(args.cert)   # one Secret
    for config in _scheduler_configs():
        for extender in config["extenders"]:
            assert extender["tlsConfig"] == {"caData": "CA_BUNDLE", "certData": "CLIENT_CERT",
                                             "keyData": "CLIENT_KEY"}


def test_a_network_policy_per_component_admits_only_its_port(applied):
    """Ingress only, on the port each component serves (the CLI flag the manifest passes):
    metrics from Prometheus's namespace; the webhook's port from anywhere (the API server
    and kube-scheduler run on the host network; the extender checks client
    certificates)."""
    policies = {d["metadata"]["name"]: d for d in _objects(applied, "NetworkPolicy")}
    workloads = {"hwaffinity-agent": ("DaemonSet", "metrics_address"),
                 "hwaffinity-controller": ("Deployment", "metrics_address"),
                 "hwaffinity-webhook": ("Deployment", "address")}
    assert set(policies) == set(workloads)
    for name, (kind, flag) in workloads.items():
        policy, template = policies[name], _one(applied, kind, name)["spec"]["template"]
        assert policy["apiVersion"] == "networking.k8s.io/v1"
        assert policy["metadata"]["namespace"] == NAMESPACE
        assert policy["spec"]["podSelector"]["matchLabels"].items() <= \
            template["metadata"]["labels"].items()
        assert policy["spec"]["policyTypes"] == ["Ingress"]
        (c,) = template["spec"]["containers"]
        port = int(getattr(_parse(c), flag).rsplit(":", 1)[1])
        (rule,) = policy["spec"]["ingress"]
        assert rule["ports"] == [{"protocol": "TCP", "port": port}], name
        if name == "hwaffinity-webhook":
            assert "from" not in rule
        else:
            assert rule["from"] == [{"namespaceSelector": {"matchLabels": {
                "kubernetes.io/metadata.name": "monitoring"}}}], name
    assert not any(spec.get("hostNetwork") for spec in (
        _pod_spec(applied, kind, name) for name, (kind, _) in workloads.items()))


# -- kube-scheduler's configuration --------------------------------------------------------

def _scheduler_configs():
    (v1,) = _load("webhook/scheduler-config.yaml")
    (old,) = _load("webhook/scheduler-config-v1beta1.yaml")
    return v1, old


def test_scheduler_config_is_v1_and_the_v1beta1_variant_has_the_same_extender(tmp_path):
    from tacker_hwaffinity.intake.read import profile as load_profile
    v1, old = _scheduler_configs()
    assert v1["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert old["apiVersion"] == "kubescheduler.config.k8s.io/v1beta1"
    assert v1["extenders"] == old["extenders"]
    # one entry per verb, each calling for the resource the webhook marks a pod with for
    # it, and one for the pods marked with the single resource of before (both verbs)
    verbs = [(e.get("filterVerb"), e.get("prioritizeVerb"), e["managedResources"])
             for e in v1["extenders"]]
    assert verbs == [
        ("filter", None, [{"name": podcache.MARKS[podcache.FILTER][0],
                           "ignoredByScheduler": True}]),
        (None, "prioritize", [{"name": podcache.MARKS[podcache.SCORE][0],
                               "ignoredByScheduler": True}]),
        ("filter", "prioritize", [{"name": EXTENDER_RESOURCE, "ignoredByScheduler": True}])]
    for verb, marks in podcache.MARKS.items():
        assert marks == (marking.resource_of(verb), EXTENDER_RESOURCE)
    assert len({e["urlPrefix"] for e in v1["extenders"]}) == 1
    assert {e["weight"] for e in v1["extenders"] if "prioritizeVerb" in e} == {1}
    # `hwaffinity plan --scheduler-config` takes the shipped file as it is
    profile = load_profile(os.path.join(DEPLOY, "webhook", "scheduler-config.yaml"))
    assert "scheduler extenders are configured but not modelled" in profile.notes


@pytest.mark.controlplane
def test_a_real_kube_scheduler_1_20_takes_the_v1beta1_extenders(control_plane, tmp_path):
    """The 1.20 test scheduler runs with the v1beta1 variant's block (its placeholders
    filled); it refuses an unknown field there, so a typo would not start."""
    _, old = _scheduler_configs()
    issued = certs.issue([], ["127.0.0.1"], days=1)
    filled = json.dumps(old["extenders"]).replace("CLUSTER_IP", "127.0.0.1").replace(
        "CA_BUNDLE", base64.b64encode(issued.ca).decode()).replace(
        "CLIENT_CERT", base64.b64encode(issued.client_cert).decode()).replace(
        "CLIENT_KEY", base64.b64encode(issued.client_key).decode())
    extenders = json.loads(filled)
    scheduler = control_plane.start_scheduler("hw-deploy-config", extenders)
    try:
        assert scheduler.alive()
    finally:
        scheduler.stop()
    typo = copy.deepcopy(extenders)
    typo[1]["noSuchField"] = True
    with pytest.raises(harness.HarnessError, match="noSuchField"):
        control_plane.start_scheduler("hw-deploy-typo", typo, timeout=30)
    # why the pods of the one resource of before have an entry of their own
    shared = copy.deepcopy(extenders)
    shared[0]["managedResources"].append({"name": EXTENDER_RESOURCE, "ignoredByScheduler": True})
    with pytest.raises(harness.HarnessError, match="duplicate extender managed resource name"):
        control_plane.start_scheduler("hw-deploy-shared", shared, timeout=30)


# -- the real API server -------------------------------------------------------------------

def _for_1_20(applied, namespace, ca_bundle):
    """The applied objects and the webhook configurations as a 1.20 server takes them:
    PDBs as policy/v1beta1 (the same fields), the ValidatingAdmissionPolicy (1.30+) left
    out, everything moved to NAMESPACE (a fresh one per run)."""
    out = []
    docs = [d for _, d in applied] + _load("webhook/webhooks.yaml")
    for d in copy.deepcopy(docs):
        if d["kind"].startswith("ValidatingAdmissionPolicy") or d["kind"] == "Namespace":
            continue
        if d["kind"] == "PodDisruptionBudget":
            d["apiVersion"] = "policy/v1beta1"
        text = yaml.safe_dump(d).replace(NAMESPACE, namespace)
        text = text.replace("CA_BUNDLE", ca_bundle)
        d = yaml.safe_load(text)
        if d["kind"] in CLUSTER_SCOPED:
            d["metadata"]["name"] = "%s-%s" % (namespace, d["metadata"]["name"])
        out.append(d)
    return out


@pytest.mark.controlplane
def test_the_api_server_accepts_the_manifests_in_a_dry_run(control_plane, applied):
    """kubectl 1.20 `apply --dry-run=server --validate=true` (the server's OpenAPI schema
    rejects unknown or misplaced fields) of every object 1.20 serves."""
    kubectl = control_plane.bin.get("kubectl")
    if not kubectl:
        unavailable("no kubectl next to the control plane")
    namespace = "hwdeploy-" + os.urandom(3).hex()
    ns = copy.deepcopy(_one(applied, "Namespace", NAMESPACE))
    ns["metadata"]["name"] = namespace
    control_plane.admin.create("/api/v1/namespaces", ns)
    try:
        control_plane.wait_namespace_ready(namespace)
        objects = _for_1_20(applied, namespace, base64.b64encode(b"-----CA-----").decode())
        p = subprocess.run([kubectl, "--kubeconfig", control_plane.kubeconfig, "apply",
                            "--dry-run=server", "--validate=true", "-f", "-"],
                           input=yaml.safe_dump_all(objects), capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, p.stderr
        lines = [line for line in p.stdout.splitlines() if line.strip()]
        assert len(lines) == len(objects) and all("(server dry run)" in line
                                                  for line in lines), p.stdout
        # and the server does refuse a broken one (the check can fail)
        broken = copy.deepcopy(objects)
        deployment = next(d for d in broken if d["kind"] == "Deployment")
        deployment["spec"]["template"]["spec"]["securityContext"]["seccompProfile"] = {
            "type": "NoSuchType"}
        p = subprocess.run([kubectl, "--kubeconfig", control_plane.kubeconfig, "apply",
                            "--dry-run=server", "-f", "-"], input=yaml.safe_dump(deployment),
                           capture_output=True, text=True, timeout=120)
        assert p.returncode != 0 and "seccompProfile" in p.stderr
    finally:
        control_plane.delete_namespace(namespace)
