"""Scheduling throughput on scheduler_perf-shaped clusters (pods/s, peak memory).

Each case builds ``nodes`` nodes (4 CPU, 32Gi, 110 pods, as scheduler_perf's
default node template), binds ``init`` pods of the case's template in
namespace sched-0 through the planner, then measures planning ``measured``
pods in sched-1. Upstream's thresholds (minimum pods/s in kube-scheduler's
performance job) are printed beside ours. Run: python benchmarks/bench_scheduling.py
[--quick]; each case runs once and is bounded by its pod count.

``--whole`` measures instead what a user waits for: the whole ``hwaffinity plan``
command, run cold as a subprocess (``--runs`` times per case), on snapshots
written like ``kubectl get nodes,pods,namespaces -A -o json|yaml`` prints them
(see ``whole_cases``; ``--nodes`` and ``--pods`` size them). It prints the wall time
and pods/s, the CLI's own phase times (``HWAFFINITY_TIMING``: parse = reading the
files, snapshot = building nodes and pods), the child's peak RSS (``os.wait4``), and
the parse time over a bare ``json.load`` / ``yaml.load(Loader=yaml.CSafeLoader)`` of
the same file, itself run as a cold subprocess (bounded by ``--bare-timeout``). The
YAML and JSON snapshots' runs alternate, and the ratio of each pair's wall times is the
figure the YAML target (within 1.5x of JSON) is judged on: a busy machine slows both
sides of a pair alike. ``--versus DIR`` runs the same commands from another checkout
(``git archive`` of a commit into DIR) in the same loop, and prints this tree's times
over DIR's.

    python benchmarks/bench_scheduling.py --whole [--nodes 2000 --pods 12000]
        [--runs 3] [--versus DIR] [--bare-runs 0]
"""
import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tacker_hwaffinity.scheduling import planner
from tacker_hwaffinity.scheduling.model import Node, Pod, PodSpecInfo
from tacker_hwaffinity.scheduling.profile import Profile
from tacker_hwaffinity.scheduling.state import ClusterState

GI = 1024 ** 3
RESOURCES = {"requests": {"cpu": "100m", "memory": "500Mi"}}


def _term(labels, key):
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key,
            "namespaces": ["sched-0", "sched-1"]}


TEMPLATES = {
    "anti-hostname": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        _term({"color": "green"}, "kubernetes.io/hostname")]}},
    "anti-zone": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        _term({"color": "green"}, "topology.kubernetes.io/zone")]}},
    "affinity-zone": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        _term({"color": "blue"}, "topology.kubernetes.io/zone")]}},
    "preferred-affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": _term({"color": "red"}, "kubernetes.io/hostname")}]}},
    "preferred-anti": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": _term({"color": "yellow"}, "kubernetes.io/hostname")}]}},
    "node-affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{
            "key": "topology.kubernetes.io/zone", "operator": "In",
            "values": ["zone1", "zone2"]}]}]}}},
}
COLORS = {"anti-hostname": "green", "anti-zone": "green", "affinity-zone": "blue",
          "preferred-affinity": "red", "preferred-anti": "yellow", "node-affinity": "none"}
ZONE = "topology.kubernetes.io/zone"
# scheduler_perf's topology_spreading templates: (pod spec fields, labels)
SPREAD_TEMPLATES = {
    "spread": ({"topologySpreadConstraints": [{
        "maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"color": "blue"}}}]}, {"color": "blue"}),
    "preferred-spread": ({"topologySpreadConstraints": [{
        "maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"color": "blue"}}}]}, {"color": "blue"}),
    # no constraints: the system defaults apply, with the Service's selector
    "with-service": ({}, {"app": "scheduler-perf"}),
    "default": ({}, {}),
}
SERVICE = ("sched-1", {"app": "scheduler-perf"})  # templates/service.yaml, in service-ns
# (name, template, nodes, zones, init pods, measured pods, upstream threshold pods/s,
#  init pods' template when it differs)
CASES = (
    ("SchedulingPodAntiAffinity/hostname", "anti-hostname", 5000, 1, 1000, 2000, 60, None),
    ("SchedulingPodAntiAffinity/zone", "anti-zone", 5000, 100, 0, 2000, 60, None),
    ("SchedulingPodAffinity/zone", "affinity-zone", 5000, 1, 5000, 5000, 35, None),
    ("SchedulingPreferredPodAffinity", "preferred-affinity", 5000, 1, 5000, 5000, 90, None),
    ("SchedulingPreferredPodAntiAffinity", "preferred-anti", 5000, 1, 5000, 5000, 90, None),
    ("SchedulingNodeAffinity", "node-affinity", 5000, 1, 5000, 10000, 220, None),
    ("TopologySpreading/5000Nodes_5000Pods", "spread", 5000, 3, 5000, 5000, 460, "default"),
    ("PreferredTopologySpreading/5000Nodes_5000Pods", "preferred-spread", 5000, 3, 5000, 5000,
     340, "default"),
    ("DefaultTopologySpreading/5000Nodes_50000Pods", "with-service", 5000, 3, 5000, 50000,
     160, "default"),
)


def make_nodes(n, zones):
    return [Node("node-%05d" % i,
                 {"kubernetes.io/hostname": "node-%05d" % i,
                  ZONE: "zone%d" % (1 + i % zones)},
                 allocatable={"cpu": 4000, "memory": 32 * GI, "pods": 110})
            for i in range(n)]


def make_pods(template, namespace, count, prefix):
    """COUNT pods of TEMPLATE; pods of one case share an owner, as a ReplicaSet's would."""
    container = {"name": "c", "image": "pause", "resources": RESOURCES}
    if template in SPREAD_TEMPLATES:
        fields, labels = SPREAD_TEMPLATES[template]
        if template in ("with-service", "default"):  # templates without requests
            container = {"name": "c", "image": "pause"}
    else:
        fields, labels = {"affinity": TEMPLATES[template]}, {"color": COLORS[template]}
    spec = PodSpecInfo(dict(fields, containers=[container]))
    return [Pod(namespace, "%s-%d" % (prefix, i), labels, spec, created=False)
            for i in range(count)]


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_case(name, template, nodes, zones, init, measured, threshold, init_template, scale):
    init, measured = max(1, int(init * scale)) if init else 0, max(1, int(measured * scale))
    state = ClusterState(make_nodes(nodes, zones), services=[SERVICE])
    fw = Profile().framework()
    planner.plan(state, fw, make_pods(init_template or template, "sched-0", init, "init"))
    pods = make_pods(template, "sched-1", measured, "pod")
    t0 = time.perf_counter()
    result = planner.plan(state, fw, pods)
    dt = time.perf_counter() - t0
    placed = sum(1 for p in result.placements if p.node)
    rate = measured / dt
    return {"case": name, "nodes": nodes, "init": init, "measured": measured, "placed": placed,
            "seconds": dt, "pods_per_s": rate, "threshold": threshold,
            "x_threshold": rate / threshold, "peak_rss_mib": peak_rss_mib()}


def machine():
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor()) \
        if os.path.exists("/proc/cpuinfo") else platform.processor()
    return "machine: %d cores, %s, Python %s" % (os.cpu_count(), cpu, platform.python_version())


# --- the whole command on kubectl-shaped snapshots (--whole) ---------------------------------

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
T = "2024-05-02T08:14:%02dZ"
HASH_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def _token(key):
    """A placeholder for a per-object value: plain in YAML, like the values it stands for."""
    return "Zq%sqZ" % key


RV_TOKEN = "9182736450"  # resourceVersions are strings of digits: quoted, like this one


def _fields(*paths):
    """A managedFields ``fieldsV1`` tree from paths of |-separated keys."""
    out = {}
    for path in paths:
        d = out
        for part in path.split("|"):
            d = d.setdefault(part, {})
    return out


def plain_node(i):
    """A Node with labels, allocatable, capacity and one condition (~380 bytes of JSON)."""
    name = "node-%05d" % i
    alloc = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"labels": {"kubernetes.io/hostname": name,
                                    "CIS-node": "compute-%04d" % (i // 2),
                                    "topology.kubernetes.io/zone": "zone-%d" % (i % 50)},
                         "name": name},
            "status": {"allocatable": alloc, "capacity": dict(alloc),
                       "conditions": [{"status": "True", "type": "Ready"}]}}


NODE_CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory",
     "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"))


def realistic_node(images=25):
    """A Node as kubectl prints it, with placeholders (name, cis, zone, ip, uid, cidr)."""
    name, cidr = _token("name"), _token("cidr")
    labels = {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
              "CIS-node": _token("cis"), "kubernetes.io/arch": "amd64",
              "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
              "node.kubernetes.io/instance-type": "m1.xlarge",
              "topology.kubernetes.io/region": "region-1",
              "topology.kubernetes.io/zone": _token("zone")}
    conditions = [{"lastHeartbeatTime": T % 41, "lastTransitionTime": T % 2, "message": msg,
                   "reason": reason, "status": status, "type": kind}
                  for kind, status, reason, msg in NODE_CONDITIONS]
    images = [{"names": ["registry.example.com/team-%d/app-%d@sha256:%064x"
                         % (k % 7, k, zlib.crc32(b"%d" % k) ** 7),
                         "registry.example.com/team-%d/app-%d:1.%d.0" % (k % 7, k, k)],
               "sizeBytes": 10000000 + 7919 * k * k} for k in range(images)]
    alloc = {"cpu": "8", "ephemeral-storage": "96143180846", "hugepages-1Gi": "0",
             "hugepages-2Mi": "0", "memory": "32810516Ki", "pods": "110"}
    managed = [
        {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": _fields(
            "f:metadata|f:annotations|.",
            "f:metadata|f:annotations|f:kubeadm.alpha.kubernetes.io/cri-socket",
            "f:metadata|f:labels|f:node-role.kubernetes.io/worker"),
         "manager": "kubeadm", "operation": "Update", "time": T % 3},
        {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": _fields(
            "f:metadata|f:annotations|f:node.alpha.kubernetes.io/ttl", "f:spec|f:podCIDR",
            "f:spec|f:podCIDRs|.", 'f:spec|f:podCIDRs|v:"%s"' % cidr),
         "manager": "kube-controller-manager", "operation": "Update", "time": T % 4},
        {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": _fields(*(
            ["f:metadata|f:labels|f:" + k for k in sorted(labels)] +
            ['f:status|f:conditions|k:{"type":"%s"}|f:%s' % (c["type"], f) for c in conditions
             for f in ("lastHeartbeatTime", "lastTransitionTime", "message", "reason",
                       "status")] +
            ["f:status|f:images", "f:status|f:nodeInfo|f:bootID",
             "f:status|f:allocatable|f:ephemeral-storage",
             "f:status|f:capacity|f:ephemeral-storage"])),
         "manager": "kubelet", "operation": "Update", "subresource": "status", "time": T % 5}]
    uid = _token("uid")
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "annotations": {
                "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///run/containerd/containerd.sock",
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
            "creationTimestamp": T % 0, "labels": labels, "managedFields": managed,
            "name": name, "resourceVersion": RV_TOKEN, "uid": uid},
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr], "providerID": "openstack:///" + uid},
        "status": {
            "addresses": [{"address": _token("ip"), "type": "InternalIP"},
                          {"address": name, "type": "Hostname"}],
            "allocatable": alloc, "capacity": dict(alloc, memory="32912916Ki"),
            "conditions": conditions, "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": images,
            "nodeInfo": {"architecture": "amd64", "bootID": uid,
                         "containerRuntimeVersion": "containerd://1.7.12",
                         "kernelVersion": "6.1.0-18-amd64", "kubeProxyVersion": "v1.29.2",
                         "kubeletVersion": "v1.29.2", "machineID": _token("machine"),
                         "operatingSystem": "linux",
                         "osImage": "Debian GNU/Linux 12 (bookworm)", "systemUUID": uid}}}


def node_values(i):
    return {"name": "node-%05d" % i, "cis": "compute-%04d" % (i // 2), "zone": "zone-%d" % (i % 50),
            "ip": "10.%d.%d.%d" % (i // 65536, i // 256 % 256, i % 256),
            "uid": "%08x-0000-4000-8000-%012x" % (i, i), "cidr": "10.244.%d.0/24" % (i % 256),
            "machine": "%032x" % i, "rv": str(100000 + i)}


def realistic_pod(deploy, namespace, pod_hash, anti):
    """A Deployment's pod as kubectl prints it, with placeholders (name, uid, node, ip, ...)."""
    labels = {"app": deploy, "pod-template-hash": pod_hash, "tier": "backend"}
    rs_uid = "%08x-5555-4555-8555-%012x" % (zlib.crc32(deploy.encode()), 0)
    token, ip, host_ip = "kube-api-access-" + _token("tok"), _token("ip"), _token("hostip")
    conditions = [{"lastProbeTime": None, "lastTransitionTime": T % k, "status": "True",
                   "type": kind}
                  for k, kind in enumerate(("PodReadyToStartContainers", "Initialized", "Ready",
                                            "ContainersReady", "PodScheduled"))]
    image = "registry.example.com/team/%s:1.4.2" % deploy
    spec = {
        "containers": [{
            "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {
                "apiVersion": "v1", "fieldPath": "metadata.name"}}},
                {"name": "LOG_LEVEL", "value": "info"}],
            "image": image, "imagePullPolicy": "IfNotPresent", "name": "app",
            "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
            "readinessProbe": {"failureThreshold": 3, "httpGet": {
                "path": "/healthz", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10,
                "successThreshold": 1, "timeoutSeconds": 1},
            "resources": {"limits": {"memory": "256Mi"},
                          "requests": {"cpu": "100m", "memory": "128Mi"}},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                              "name": token, "readOnly": True}]}],
        "dnsPolicy": "ClusterFirst", "enableServiceLinks": True, "nodeName": _token("node"),
        "preemptionPolicy": "PreemptLowerPriority", "priority": 0, "restartPolicy": "Always",
        "schedulerName": "default-scheduler", "securityContext": {},
        "serviceAccount": "default", "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [{"effect": "NoExecute", "key": "node.kubernetes.io/" + key,
                         "operator": "Exists", "tolerationSeconds": 300}
                        for key in ("not-ready", "unreachable")],
        "volumes": [{"name": token, "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}],
                           "name": "kube-root-ca.crt"}},
            {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1",
                                                     "fieldPath": "metadata.namespace"},
                                        "path": "namespace"}]}}]}}]}
    if anti:
        spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"podAffinityTerm": {"labelSelector": {"matchLabels": {"app": deploy}},
                                 "topologyKey": "kubernetes.io/hostname"}, "weight": 100}]}}
    managed = [
        {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": _fields(*(
            ["f:metadata|f:generateName", "f:metadata|f:labels|.",
             "f:metadata|f:ownerReferences|.",
             'f:metadata|f:ownerReferences|k:{"uid":"%s"}' % rs_uid] +
            ["f:metadata|f:labels|f:" + k for k in labels] +
            ['f:spec|f:containers|k:{"name":"app"}|f:' + f for f in (
                "env", "image", "imagePullPolicy", "name", "ports", "readinessProbe",
                "resources", "terminationMessagePath", "terminationMessagePolicy",
                "volumeMounts")] +
            ["f:spec|f:" + f for f in ("affinity", "dnsPolicy", "enableServiceLinks",
                                       "restartPolicy", "schedulerName", "securityContext",
                                       "terminationGracePeriodSeconds")])),
         "manager": "kube-controller-manager", "operation": "Update", "time": T % 6},
        {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": _fields(*(
            ['f:status|f:conditions|k:{"type":"%s"}|f:%s' % (c["type"], f) for c in conditions
             for f in ("lastProbeTime", "lastTransitionTime", "status", "type")] +
            ["f:status|f:containerStatuses", "f:status|f:hostIP", "f:status|f:hostIPs",
             "f:status|f:phase", "f:status|f:podIP", "f:status|f:podIPs|.",
             'f:status|f:podIPs|k:{"ip":"%s"}|f:ip' % ip, "f:status|f:startTime"])),
         "manager": "kubelet", "operation": "Update", "subresource": "status", "time": T % 7}]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"creationTimestamp": T % 8, "generateName": "%s-%s-" % (deploy, pod_hash),
                     "labels": labels, "managedFields": managed, "name": _token("name"),
                     "namespace": namespace,
                     "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": True,
                                          "controller": True, "kind": "ReplicaSet",
                                          "name": "%s-%s" % (deploy, pod_hash), "uid": rs_uid}],
                     "resourceVersion": RV_TOKEN, "uid": _token("uid")},
        "spec": spec,
        "status": {"conditions": conditions, "containerStatuses": [{
            "containerID": "containerd://" + _token("cid"), "image": image,
            "imageID": "registry.example.com/team/%s@sha256:%s" % (deploy, _token("cid")),
            "lastState": {}, "name": "app", "ready": True, "restartCount": 0,
            "started": True, "state": {"running": {"startedAt": T % 9}}}],
            "hostIP": host_ip, "hostIPs": [{"ip": host_ip}], "phase": "Running", "podIP": ip,
            "podIPs": [{"ip": ip}], "qosClass": "Burstable", "startTime": T % 10}}


def pod_values(i, node):
    return {"name": "pod-%06d" % i, "uid": "%08x-4444-4444-8444-%012x" % (i, i),
            "node": "node-%05d" % node, "ip": "10.%d.%d.%d" % (64 + i // 65536, i // 256 % 256,
                                                             i % 256),
            "hostip": "192.168.%d.%d" % (node // 256, node % 256), "rv": str(200000 + i),
            "cid": "%064x" % (i * 7919 + 13), "tok": "%05x" % (i % 99991)}


def realistic_namespace(name):
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"creationTimestamp": T % 0,
                         "labels": {"kubernetes.io/metadata.name": name},
                         "managedFields": [{"apiVersion": "v1", "fieldsType": "FieldsV1",
                                            "fieldsV1": _fields(
                                                "f:metadata|f:labels|.",
                                                "f:metadata|f:labels|f:kubernetes.io/"
                                                "metadata.name"),
                                            "manager": "kubectl-create", "operation": "Update",
                                            "time": T % 0}],
                         "name": name, "resourceVersion": "17",
                         "uid": "%08x-6666-4666-8666-000000000000" % zlib.crc32(name.encode())},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}


class ListWriter:
    """Writes a ``kind: List`` the way kubectl prints it, item by item (json or yaml)."""

    def __init__(self, path, fmt):
        import yaml
        self.f, self.fmt, self.first = open(path, "w"), fmt, True
        if fmt == "json":
            self.dump = lambda o: "\n".join(" " * 8 + line
                                            for line in json.dumps(o, indent=4).split("\n"))
            self.f.write('{\n    "apiVersion": "v1",\n    "items": [\n')
        else:
            self.dump = lambda o: "- " + yaml.dump(o, Dumper=yaml.CSafeDumper,
                                                   default_flow_style=False,
                                                   width=1 << 30).rstrip("\n").replace(
                                                       "\n", "\n  ")
            self.f.write("apiVersion: v1\nitems:\n")

    def template(self, obj):
        """OBJ dumped, as a %-format string of its placeholders."""
        text = self.dump(obj).replace("%", "%%").replace(RV_TOKEN, "%(rv)s")
        return re.sub(r"Zq(\w+?)qZ", r"%(\1)s", text)

    def write(self, text):
        if self.fmt == "json" and not self.first:
            self.f.write(",\n")
        self.f.write(text if self.fmt == "json" else text + "\n")
        self.first = False

    def close(self):
        if self.fmt == "json":
            self.f.write('\n    ],\n    "kind": "List",\n    "metadata": {\n'
                         '        "resourceVersion": ""\n    }\n}\n')
        else:
            self.f.write("kind: List\nmetadata:\n  resourceVersion: \"\"\n")
        self.f.close()


def write_realistic(path, fmt, nodes, pods, per_deployment=100, namespaces=30):
    """NODES nodes and PODS bound pods (Deployments of PER_DEPLOYMENT, a third with
    preferred anti-affinity) in NAMESPACES namespaces, kubectl-shaped."""
    out = ListWriter(path, fmt)
    tpl = out.template(realistic_node())
    for i in range(nodes):
        out.write(tpl % node_values(i))
    for d in range(0, pods, per_deployment):
        deploy = "svc-%d" % (d // per_deployment)
        pod_hash = "".join(HASH_CHARS[int(c, 16) % 27] for c in "%010x" % zlib.crc32(
            deploy.encode()))
        tpl = out.template(realistic_pod(deploy, "team-%d" % (d // per_deployment % namespaces),
                                         pod_hash, anti=d // per_deployment % 3 == 0))
        for i in range(d, min(pods, d + per_deployment)):
            out.write(tpl % dict(pod_values(i, i % nodes), name="%s-%s-%05x" % (
                deploy, pod_hash, i)))
    for name in ["default", "kube-system"] + ["team-%d" % k for k in range(namespaces)]:
        out.write(out.dump(realistic_namespace(name)))
    out.close()


def write_plain(path, nodes):
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
                   "items": [plain_node(i) for i in range(nodes)]}, f)


def write_deployment(path, replicas):
    """REPLICAS pods with required anti-affinity on kubernetes.io/hostname, in namespace
    bench, created by the same file (plan refuses a namespace nothing creates)."""
    labels = {"app": "bench"}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": [namespace, {
                   "apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "bench", "namespace": "bench"},
                   "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                            "template": {"metadata": {"labels": labels}, "spec": {
                                "affinity": {"podAntiAffinity": {
                                    "requiredDuringSchedulingIgnoredDuringExecution": [
                                        {"labelSelector": {"matchLabels": labels},
                                         "topologyKey": "kubernetes.io/hostname"}]}},
                                "containers": [{"name": "app", "image": "app:1",
                                                "resources": {"requests": {
                                                    "cpu": "100m", "memory": "128Mi"}}}]}}}}]},
                  f, indent=2)


def whole_cases(tmp, nodes, pods):
    """(name, snapshot file, workload file, pods planned), writing the files into TMP."""
    replicas = 2000
    workload = os.path.join(tmp, "deploy.json")
    write_deployment(workload, replicas)
    plain = os.path.join(tmp, "plain-%d.json" % nodes)
    write_plain(plain, nodes)
    cases = [("plain %d nodes (json)" % nodes, plain, workload, replicas)]
    for fmt in ("json", "yaml"):
        path = os.path.join(tmp, "realistic.%s" % fmt)
        write_realistic(path, fmt, nodes, pods)
        cases.append(("%d nodes, %d pods (%s)" % (nodes, pods, fmt), path, workload, replicas))
    return cases


def _run_child(cmd, timeout, env=None, cwd=ROOT):
    """(wall seconds, peak RSS MiB, exit status, stderr) of CMD run in CWD, killed after
    TIMEOUT s."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=cwd)
        killer = threading.Timer(timeout, child.kill)
        killer.start()
        _, status, usage = os.wait4(child.pid, 0)  # this child's own rusage
        wall = time.perf_counter() - t0
        killer.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return wall, usage.ru_maxrss / 1024.0, child.returncode, err.read().decode()


BARE = {"json": "import json; json.load(open(%r))",
        "yaml": "import yaml; yaml.load(open(%r), Loader=yaml.CSafeLoader)"}


def bare_load(path, timeout):
    """Seconds of a bare parse of PATH in a cold child (reading included), None on timeout."""
    fmt = "json" if path.endswith(".json") else "yaml"
    code = ("import time; t = time.perf_counter(); %s; "
            "print(time.perf_counter() - t)" % (BARE[fmt] % path))
    with tempfile.TemporaryFile() as out:
        try:
            subprocess.run([sys.executable, "-c", code], stdout=out, timeout=timeout, check=True)
        except subprocess.TimeoutExpired:
            return None
        out.seek(0)
        return float(out.read())


def plan_once(snapshot, workload, timeout, code=ROOT):
    """(wall s, peak RSS MiB, {phase: s}) of ``hwaffinity plan`` from the checkout CODE."""
    env = dict(os.environ, HWAFFINITY_TIMING="1", PYTHONPATH=code)
    got = _run_child([sys.executable, "-m", "tacker_hwaffinity.cli.main", "plan",
                      "--cluster", snapshot, workload], timeout, env, cwd=code)
    wall, rss, status, err = got
    m = re.search(r"timing: (.*)", err)
    if status != 0 or not m:
        raise SystemExit("hwaffinity plan failed (exit %d): %s" % (status, err.strip()))
    phases = dict((k, float(v)) for k, v in (p.split("=") for p in m.group(1).split()))
    return wall, rss, phases


def _span(values, fmt="%.2f"):
    lo, hi = min(values), max(values)
    return fmt % lo if fmt % lo == fmt % hi else "%s-%s" % (fmt % lo, fmt % hi)


def _median(values):
    return sorted(values)[len(values) // 2]


def _timed_runs(cases, runs, codes):
    """{(case name, code): [(wall, rss, phases)]}: every case from every checkout of CODES
    once a round, RUNS rounds, so that the runs compared with each other alternate."""
    got = {}
    for _ in range(runs):
        for name, snapshot, workload, _pods in cases:
            for code in codes:
                got.setdefault((name, code), []).append(
                    plan_once(snapshot, workload, timeout=600, code=code))
    return got


def run_whole(runs, nodes, pods, bare_runs, bare_timeout, keep, versus=None):
    print(machine())
    tmp = tempfile.mkdtemp(prefix="hwaffinity-bench-")
    t0 = time.perf_counter()
    cases = whole_cases(tmp, nodes, pods)
    print("snapshots written in %.0f s under %s: %s" % (
        time.perf_counter() - t0, tmp, ", ".join(
            "%s %.1f MB" % (os.path.basename(c[1]), os.path.getsize(c[1]) / 1e6)
            for c in cases)))
    codes = [ROOT] + ([os.path.abspath(versus)] if versus else [])
    print("%-30s %5s %11s %11s %11s %11s %11s %9s %9s" % (
        "case (hwaffinity plan, cold)", "pods", "wall s", "pods/s", "parse s", "snapshot s",
        "bare s", "x bare", "peak MiB"))
    got = _timed_runs(cases, runs, codes)
    ok = True
    for name, snapshot, workload, pods_planned in cases:
        bare = []
        for _ in range(bare_runs):
            b = bare_load(snapshot, bare_timeout)
            if b is None:  # too slow: once is enough to say so
                bare = []
                break
            bare.append(b)
        for code in codes:
            runs_of = got[(name, code)]
            walls, rss = [g[0] for g in runs_of], [g[1] for g in runs_of]
            parse = [g[2]["parse"] for g in runs_of]
            snap = [g[2]["snapshot"] for g in runs_of]
            ratio = (_span([p / b for p in parse for b in bare]) if bare
                     else "<%.2f" % (max(parse) / bare_timeout) if bare_runs else "-")
            label = name if code == ROOT else "  from %s" % os.path.basename(code)
            print("%-30s %5d %11s %11s %11s %11s %11s %9s %9s" % (
                label, pods_planned, _span(walls), _span([pods_planned / w for w in walls],
                                                         "%.0f"),
                _span(parse), _span(snap),
                _span(bare) if bare else ">%d" % bare_timeout if bare_runs else "-", ratio,
                _span(rss, "%.0f")))
            sys.stdout.flush()
            if code != ROOT:
                continue
            if name.startswith("plain"):
                ok = ok and min(pods_planned / w for w in walls) >= 1500
            else:
                ok = ok and max(rss) < 2048 and (not bare or max(parse) <= 1.5 * min(bare))
    json_case, yaml_case = cases[1][0], cases[2][0]
    for code in codes:
        pairs = [y[0] / j[0] for j, y in zip(got[(json_case, code)], got[(yaml_case, code)])]
        print("YAML / JSON whole command, %d interleaved pairs%s: %s (median %.2f; target "
              "1.5)" % (len(pairs), "" if code == ROOT else " from %s" % code, _span(pairs),
                        _median(pairs)))
        if code == ROOT:
            ok = ok and _median(pairs) <= 1.5
    for code in codes[1:]:
        for name, *_ in cases:
            mine = [g[0] for g in got[(name, ROOT)]]
            theirs = [g[0] for g in got[(name, code)]]
            rel = [m / t for m, t in zip(mine, theirs)]
            print("this tree / %s, %s: %s of its wall time (median %.2f)"
                  % (os.path.basename(code), name, _span(rel), _median(rel)))
    print("targets (plain: >= 1500 pods/s; realistic: parse <= 1.5 x bare, peak < 2048 MiB; "
          "YAML within 1.5x of JSON): %s" % ("met" if ok else "NOT met"))
    if not keep:
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a tenth of the pods (smoke run)")
    ap.add_argument("--case", help="run only cases whose name contains this")
    ap.add_argument("--whole", action="store_true",
                    help="time the whole 'hwaffinity plan' command on kubectl-shaped snapshots")
    ap.add_argument("--runs", type=int, default=3, help="--whole: cold runs per case")
    ap.add_argument("--bare-runs", type=int, default=3,
                    help="--whole: bare parser runs per snapshot")
    ap.add_argument("--bare-timeout", type=int, default=120,
                    help="--whole: seconds a bare parse may take before it is reported as more")
    ap.add_argument("--keep", action="store_true", help="--whole: keep the snapshot files")
    ap.add_argument("--nodes", type=int, default=5000, help="--whole: nodes of the snapshots")
    ap.add_argument("--pods", type=int, default=30000,
                    help="--whole: bound pods of the realistic snapshots")
    ap.add_argument("--versus", metavar="DIR",
                    help="--whole: also run the commands from the checkout DIR, alternating")
    args = ap.parse_args(argv)
    scale = 0.1 if args.quick else 1.0
    if args.whole:
        return run_whole(args.runs, args.nodes, int(args.pods * scale), args.bare_runs,
                         args.bare_timeout, args.keep, args.versus)
    print(machine())
    print("%-38s %6s %6s %6s %7s %9s %9s %7s %9s" % (
        "case", "nodes", "init", "pods", "placed", "pods/s", "upstream", "x", "peakMiB"))
    ok = True
    for case in CASES:
        if args.case and args.case not in case[0]:
            continue
        r = run_case(*case, scale=scale)
        ok = ok and r["x_threshold"] >= 10
        print("%-38s %6d %6d %6d %7d %9.0f %9d %7.1f %9.0f" % (
            r["case"], r["nodes"], r["init"], r["measured"], r["placed"], r["pods_per_s"],
            r["threshold"], r["x_threshold"], r["peak_rss_mib"]))
        sys.stdout.flush()
    print("target (>= 10x upstream threshold, peak < 1024 MiB): %s" % ("met" if ok else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
