"""The agent in cgroupfs mode (runtimes without NRI) on cgroup v2 with the systemd driver:
the test VM's containerd, the test control plane on the host, the agent in the guest.

The host's fake kubelet runs the pods bound to node ``vm-node`` as real CRI pods in
the guest (systemd cgroup driver: each container a ``cri-containerd-<id>.scope``
under the pod's slice) and reports their container IDs in the pod status, as a
kubelet does. The agent in the guest watches those pods through a forward to the
API server (guest 127.0.0.1:6443 -> host 10.0.2.2) with deploy/agent/rbac.yaml's
role, writes ``cpuset.cpus``/``cpuset.mems`` into the scopes, and each container's
process is checked in the guest's kernel, also after ``systemctl daemon-reload``.
"""
import json
import os
import urllib.parse

import pytest
import yaml

from realnode.test_runtime_harness import log_lines, wait_for
from realnode.vmfixture import guest_images, guest_vm  # noqa: F401  (fixtures)
from realnode.vmnode import GuestAgent, VMPod, VMRuntime

pytestmark = [pytest.mark.vm, pytest.mark.controlplane]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NODE = "vm-node"
API_PORT = 6443             # in the guest, on 127.0.0.1: the certificate names 127.0.0.1
SECRETS = "/run/hwaffinity-agent"


class VMKubelet:
    """The fake kubelet's runtime hooks for NODE: pods become CRI pods in the guest."""

    def __init__(self, runtime):
        self.runtime, self.pods = runtime, {}

    def start_pod(self, node, pod):
        if node != NODE:
            return {}
        uid, meta = pod["metadata"]["uid"], pod["metadata"]
        if uid not in self.pods:
            p = VMPod(self.runtime, meta["name"], namespace=meta["namespace"], uid=uid,
                      qos=pod["status"]["qosClass"], annotations=meta.get("annotations"))
            p.ids = {c["name"]: p.container(c["name"]) for c in pod["spec"]["containers"]}
            self.pods[uid] = p
        return {n: "containerd://" + cid for n, cid in self.pods[uid].ids.items()}

    def stop_pod(self, node, pod):
        p = self.pods.pop(pod["metadata"]["uid"], None)
        if p is not None:
            p.remove()


def agent_kubeconfig(vm, control_plane):
    """deploy/agent/rbac.yaml's ClusterRole for a new user; its kubeconfig in the guest."""
    with open(os.path.join(ROOT, "deploy", "agent", "rbac.yaml")) as f:
        role = next(d for d in yaml.safe_load_all(f) if d["kind"] == "ClusterRole")
    control_plane.admin.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                                role, ok=(201, 409))
    with open(control_plane.user_kubeconfig("agent-vm", role["metadata"]["name"])) as f:
        config = json.load(f)
    cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
    for holder, key in ((cluster, "certificate-authority"), (user, "client-certificate"),
                        (user, "client-key")):
        with open(holder[key]) as f:
            holder[key] = "%s/%s" % (SECRETS, os.path.basename(holder[key]))
            vm.put(holder[key], f.read(), mode=0o600)
    port = urllib.parse.urlsplit(cluster["server"]).port
    cluster["server"] = "https://127.0.0.1:%d" % API_PORT
    vm.put(SECRETS + "/kubeconfig", json.dumps(config), mode=0o600)
    vm.check("systemd-run --unit=hwaffinity-api-forward --collect socat "
             "TCP-LISTEN:%d,bind=127.0.0.1,fork,reuseaddr TCP:10.0.2.2:%d" % (API_PORT, port))
    return SECRETS + "/kubeconfig"


@pytest.fixture(scope="module")
def vm_node(control_plane, guest_vm, guest_images):  # noqa: F811  (the imported fixtures)
    runtime = VMRuntime(guest_vm, guest_images)
    kubelet = VMKubelet(runtime)
    control_plane.add_node(NODE, {"kubernetes.io/hostname": NODE}, cpu="4", memory="2Gi")
    control_plane.kubelet.start_pod = kubelet.start_pod
    control_plane.kubelet.stop_pod = kubelet.stop_pod
    # the node is in the control plane the other modules share: it goes whatever happens
    # below, or their pods would be bound to it
    try:
        guest_vm.check("systemctl start kubepods.slice")     # as the kubelet does at start
        kubeconfig = agent_kubeconfig(guest_vm, control_plane)
        # the first agent start of a boot compiles its bytecode (the kubernetes client's
        # too) under TCG; on one host it did not print its start line within 180 s
        agent = GuestAgent(guest_vm, "--mode", "cgroupfs", "--resync", "3", node=NODE,
                           kubeconfig=kubeconfig).start("watching the pods of node " + NODE,
                                                        timeout=600)
        yield runtime, kubelet, agent
        agent.stop()
    finally:
        control_plane.kubelet.start_pod = control_plane.kubelet.stop_pod = None
        control_plane.delete_node(NODE)
        for p in list(kubelet.pods.values()):
            p.remove()
        guest_vm.run("systemctl stop hwaffinity-api-forward; rm -rf " + SECRETS)
        runtime.close()


def test_scopes_are_written_and_survive_daemon_reload(control_plane, vm_node, namespace):
    runtime, kubelet, agent = vm_node
    assert "mode cgroupfs (--mode cgroupfs)" in agent.text()
    assert "cgroup v2" in agent.text() and "systemd" in agent.text(), agent.text()
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "cnf", "namespace": namespace},
           "spec": {"nodeName": NODE, "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "c", "image": "registry.invalid/busybox:1",
                                    "resources": {"requests": {"cpu": "1", "memory": "64Mi"},
                                                  "limits": {"cpu": "1", "memory": "64Mi"}}}]}}
    obj = control_plane.admin.create("/api/v1/namespaces/%s/pods" % namespace, pod)
    uid = obj["metadata"]["uid"]
    wait_for(lambda: uid in kubelet.pods, 120, "the fake kubelet to start the pod in the VM")
    vmpod = kubelet.pods[uid]
    cid = vmpod.ids["c"]
    # the agent writes after the start (cgroupfs mode): the first process began unpinned
    started = dict(text.split(":\t", 1) for _, text in log_lines(vmpod.log_path("c"), 2, 60))
    assert started["Cpus_allowed_list"] == "0-3"
    cpus, mems = wait_for(lambda: runtime.pinned(cid), 60, "the agent to pin the container")
    scope = runtime.scope(vmpod, cid)
    assert runtime.vm.get(scope + "/cpuset.cpus").strip() == cpus
    assert runtime.vm.get(scope + "/cpuset.mems").strip() == mems

    def decision():
        got = control_plane.admin.get("/api/v1/namespaces/%s/pods/cnf" % namespace)
        return (got["metadata"].get("annotations") or {}).get("hwaffinity.io/numa")
    record = json.loads(wait_for(decision, 30, "the decision annotation"))
    assert record["c"]["exclusiveCpus"] == cpus and record["c"]["mems"] == mems

    # systemd 257 keeps the scope's cpuset through a daemon-reload (it sets no AllowedCPUs
    # of its own there); were it reset, the next resync (3 s) would write it again
    runtime.vm.check("systemctl daemon-reload", timeout=120)
    wait_for(lambda: runtime.pinned(cid) == (cpus, mems), 30, "the cpuset after daemon-reload")
    assert runtime.vm.get(scope + "/cpuset.cpus").strip() == cpus
    assert runtime.vm.check("systemctl show -P ActiveState cri-containerd-%s.scope"
                            % cid).strip() == "active"
    control_plane.admin.delete("/api/v1/namespaces/%s/pods/cnf" % namespace)
    wait_for(lambda: uid not in kubelet.pods, 60, "the pod to be removed from the VM")
