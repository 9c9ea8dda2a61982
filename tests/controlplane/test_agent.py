"""The node agent for real: the test control plane, containers that are real processes in
a kubelet-shaped cgroup v1 cpuset hierarchy, and the agent as a process of its own.

Placement runs on a recorded 2-socket machine (tests/numa/data/sysfs-2socket.txt,
32 CPUs); this machine has 2. The agent's ``--cpu-map`` sends every CPU of recorded
socket N to real CPU N (and every memory node to 0), so what the kernel enforces is
checked per socket: containers pulled onto one NUMA node run on the same real CPU,
containers pushed to different sockets on different ones. The recorded decisions
(exact CPU ids, memory nodes) are checked in the pod annotation and the cgroup files.
"""
import json
import os
import signal
import subprocess
import sys
import urllib.request

import pytest
import yaml

from tacker_hwaffinity.numa import sysfs
from tacker_hwaffinity.numa.cpuset import format_list, parse_list
from tests import builders

from numa.conftest import expand_dump

from . import harness
from .containers import CgroupRuntime, allowed

pytestmark = pytest.mark.controlplane

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NODE = "agent-node"       # + "-<driver>": one node per cgroup driver
CR = "cri-resource-manager.intel.com/"
ANNOTATION = "hwaffinity.io/numa"


class AgentProcess:
    """`hwaffinity agent` run as a process, with its log kept."""

    def __init__(self, tmp, node, kubeconfig, cgroup_root, sysfs_root, kubelet_root, cpu_map):
        self.port = harness.free_port()
        self.log_path = os.path.join(tmp, "agent-%d.log" % self.port)
        self.argv = [sys.executable, "-m", "tacker_hwaffinity.cli.main", "agent",
                     "--node", node, "--kubeconfig", kubeconfig,
                     "--cgroup-root", cgroup_root, "--sysfs-root", sysfs_root,
                     "--kubelet-root", kubelet_root, "--cpu-map", cpu_map,
                     "--metrics-address", "127.0.0.1:%d" % self.port, "--resync", "5"]
        self.proc = None

    def start(self):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT,
                                     cwd=ROOT, start_new_session=True)
        harness.wait_until(self.ready, 60, what="the agent's /healthz")
        return self

    def ready(self):
        assert self.proc.poll() is None, "agent exited: %s" % self.text()
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % self.port,
                                        timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def metrics(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port, timeout=5) as r:
            return r.read().decode()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        if self.proc:
            self.log.close()

    def text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()


@pytest.fixture(scope="module", params=["systemd", "cgroupfs"])
def node_runtime(request, control_plane):
    """A node whose containers are real processes in a private cgroup hierarchy."""
    rt = CgroupRuntime(request.param)
    rt.node = "%s-%s" % (NODE, request.param)
    control_plane.add_node(rt.node, {"kubernetes.io/hostname": rt.node}, cpu="64",
                           memory="256Gi")
    kubelet = control_plane.kubelet
    kubelet.start_pod = lambda node, pod: rt.start_pod(node, pod) if node == rt.node else {}
    kubelet.stop_pod = lambda node, pod: rt.stop_pod(node, pod) if node == rt.node else None
    yield rt
    kubelet.start_pod = kubelet.stop_pod = None
    control_plane.delete_node(rt.node)
    rt.cleanup()


@pytest.fixture(scope="module")
def agent_env(control_plane, node_runtime, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("agent-%s" % node_runtime.driver))
    sysfs_root = expand_dump("sysfs-2socket.txt", os.path.join(tmp, "sys"))
    machine = sysfs.discover(sysfs_root)
    by_socket = {}
    for cid, cpu in machine.cpus.items():
        if cpu.online:
            by_socket.setdefault(cpu.socket % 2, []).append(cid)
    cpu_map = os.path.join(tmp, "cpu-map.json")
    with open(cpu_map, "w") as f:
        json.dump({"cpus": {format_list(ids): s for s, ids in by_socket.items()},
                   "mems": {"0-63": 0}}, f)
    kubelet = os.path.join(tmp, "kubelet")
    os.makedirs(kubelet)
    with open(os.path.join(kubelet, "cpu_manager_state"), "w") as f:
        json.dump({"policyName": "none", "defaultCpuSet": "", "checksum": 1}, f)
    # the agent's own identity: deploy/agent/rbac.yaml's ClusterRole, nothing more
    with open(os.path.join(ROOT, "deploy", "agent", "rbac.yaml")) as f:
        role = next(d for d in yaml.safe_load_all(f) if d["kind"] == "ClusterRole")
    control_plane.admin.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                                role, ok=(201, 409))
    kubeconfig = control_plane.user_kubeconfig("agent-" + node_runtime.driver,
                                               "hwaffinity-agent")
    env = dict(tmp=tmp, node=node_runtime.node, kubeconfig=kubeconfig,
               cgroup_root=node_runtime.cgroup_root,
               sysfs_root=sysfs_root, kubelet_root=kubelet, cpu_map=cpu_map)
    agent = AgentProcess(**env).start()
    yield env, agent, by_socket
    agent.stop()


def guaranteed(node, name, ns, annotations=None, cpu="2"):
    amounts = {"cpu": cpu, "memory": "64Mi"}
    return builders.pod(name, ns=ns, annotations=annotations or {}, on=node,
                        terminationGracePeriodSeconds=0,
                        containers=[builders.container(image="registry.invalid/pause:3.2",
                                                       requests=amounts, limits=dict(amounts))])


def rule(kind, target, weight=5):
    return {CR + kind: "c:\n- scope: {operator: AlwaysTrue}\n  match: {key: pod/name, "
                       "operator: Equals, values: [%s]}\n  weight: %d" % (target, weight)}


def create(cp, obj):
    return cp.admin.create("/api/v1/namespaces/%s/pods" % obj["metadata"]["namespace"], obj)


def decision(cp, ns, name, timeout=30):
    """The pod's hwaffinity.io/numa annotation, once the agent has written it."""
    got = {}

    def written():
        pod = cp.admin.get("/api/v1/namespaces/%s/pods/%s" % (ns, name))
        value = (pod["metadata"].get("annotations") or {}).get(ANNOTATION)
        if value:
            got.update(pod=pod, decision=json.loads(value))
        return bool(value)
    harness.wait_until(written, timeout, what="the agent's decision on %s/%s" % (ns, name))
    return got["decision"]["c"], got["pod"]


def kernel(rt, pod):
    return allowed(rt.pid_of(pod["metadata"]["uid"], "c"))


def test_affinity_anti_affinity_and_exclusive_cpus_reach_the_kernel(control_plane, node_runtime,
                                                                   agent_env, namespace):
    cp, rt = control_plane, node_runtime
    (env, agent, by_socket) = agent_env
    create(cp, guaranteed(rt.node, "a", namespace))
    a, pod_a = decision(cp, namespace, "a")
    create(cp, guaranteed(rt.node, "b", namespace, rule("affinity", "a")))
    create(cp, guaranteed(rt.node, "x", namespace, rule("anti-affinity", "a")))
    b, pod_b = decision(cp, namespace, "b")
    x, pod_x = decision(cp, namespace, "x")
    # the engine's decisions: exclusive CPUs, b on a's NUMA node, x on the other socket
    assert len(parse_list(a["exclusiveCpus"])) == 2 and a["mems"] == b["mems"] != x["mems"]
    socket_of = {c: s for s, ids in by_socket.items() for c in ids}
    sa = {socket_of[c] for c in parse_list(a["exclusiveCpus"])}
    sx = {socket_of[c] for c in parse_list(x["exclusiveCpus"])}
    assert len(sa) == 1 and sa.isdisjoint(sx)
    # ... enforced by the kernel (recorded socket N = real CPU N)
    harness.wait_until(lambda: kernel(rt, pod_a)[0] == sa, 20, what="a's CPUs in the kernel")
    assert kernel(rt, pod_b)[0] == sa and kernel(rt, pod_x)[0] == sx
    assert kernel(rt, pod_a)[1] == {0}


def test_bad_annotation_is_an_event_and_the_agent_carries_on(control_plane, node_runtime,
                                                            agent_env, namespace):
    cp, rt = control_plane, node_runtime
    create(cp, guaranteed(rt.node, "bad", namespace, {CR + "affinity": "c: [[["}))
    harness.wait_until(lambda: cp.events(namespace, "NUMAPlacementFailed", "bad"), 30,
                       what="the NUMAPlacementFailed event")
    (event,) = cp.events(namespace, "NUMAPlacementFailed", "bad")
    assert "bad annotation" in event["message"]
    create(cp, guaranteed(rt.node, "fine", namespace))
    d, _ = decision(cp, namespace, "fine")
    assert d.get("exclusiveCpus")


def test_restart_changes_nothing_and_deleted_pods_give_cpus_back(control_plane, node_runtime,
                                                                agent_env, namespace):
    cp, rt = control_plane, node_runtime
    env, agent, _ = agent_env
    cp.wait_quiet()     # earlier tests' pods gone: only this test's pods come and go below
    create(cp, guaranteed(rt.node, "keep", namespace))
    create(cp, guaranteed(rt.node, "shared", namespace, cpu="500m"))
    keep, pod_keep = decision(cp, namespace, "keep")
    decision(cp, namespace, "shared")

    def files():
        out = {}
        for uid in (pod_keep["metadata"]["uid"],):
            d = rt.container_dir(uid, "c")
            out[d] = tuple(open(os.path.join(d, f)).read() for f in ("cpuset.cpus",
                                                                    "cpuset.mems"))
        return out
    before = files()
    agent.stop()
    again = AgentProcess(**env).start()
    try:
        # evidence, not /healthz (green once the pods are listed, before any reconcile):
        # the gauges are set at the end of a reconcile, so keep's and shared's placements
        # there mean the start's full one ran; one more reconcile (nothing on the node
        # changes: the periodic full one, --resync 5) re-read every cgroup after it
        harness.wait_until(lambda: _metric(again.metrics(), "hwaffinity_agent_containers")
                           >= 2, 30, what="the restarted agent's first full reconcile")
        harness.wait_until(lambda: _metric(again.metrics(),
                                           "hwaffinity_agent_reconcile_seconds_count") >= 2,
                           30, what="a periodic full reconcile after the first")
        assert files() == before
        assert decision(cp, namespace, "keep")[0] == keep
        assert "wrote" not in again.text().split("watching the pods")[-1]
        exclusive = _gauge(again.metrics(), "exclusive")
        cp.admin.delete("/api/v1/namespaces/%s/pods/keep" % namespace)
        harness.wait_until(lambda: _gauge(again.metrics(), "exclusive") == exclusive - 2, 30,
                           what="keep's two exclusive CPUs given back")
    finally:
        again.stop()
        agent.start()


def test_api_server_restart_mid_watch(control_plane, node_runtime, agent_env, namespace):
    cp, rt = control_plane, node_runtime
    env, agent, _ = agent_env
    cp.restart_apiserver(down_for=2)
    create(cp, guaranteed(rt.node, "after", namespace))
    d, _ = decision(cp, namespace, "after", timeout=60)
    assert d.get("exclusiveCpus")
    assert agent.proc.poll() is None


def test_static_cpu_manager_and_unknown_layout_are_refused(agent_env, tmp_path):
    env, _, _ = agent_env
    kubelet = tmp_path / "kubelet"
    kubelet.mkdir()
    (kubelet / "cpu_manager_state").write_text(json.dumps({"policyName": "static"}))
    argv = [sys.executable, "-m", "tacker_hwaffinity.cli.main", "agent", "--node", env["node"],
            "--kubeconfig", env["kubeconfig"], "--sysfs-root", env["sysfs_root"],
            "--cgroup-root", env["cgroup_root"], "--kubelet-root", str(kubelet)]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "CPU manager policy is static" in p.stderr.splitlines()[-1]
    argv[argv.index(str(kubelet))] = env["kubelet_root"]
    argv[argv.index(env["cgroup_root"])] = str(tmp_path)
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert p.returncode == 2 and "unknown cgroup layout" in p.stderr.splitlines()[-1]


def _gauge(text, kind):
    total = 0
    for line in text.splitlines():
        if line.startswith("hwaffinity_agent_pool_cpus{") and 'kind="%s"' % kind in line \
                and 'pool="root"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def _metric(text, name):
    """The value of the unlabelled sample NAME in /metrics TEXT (0 when absent)."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_agent_resident_memory_stays_under_80_mib(control_plane, node_runtime, agent_env,
                                                  namespace):
    """The agent's peak resident memory (VmHWM), after it placed, wrote, annotated and
    released pods of its own (run alone or first, the agent has done nothing yet)."""
    cp, rt = control_plane, node_runtime
    _, agent, _ = agent_env
    cp.wait_quiet()     # no pod of another test comes or goes meanwhile
    harness.wait_until(lambda: _gauge(agent.metrics(), "exclusive") == 0, 30,
                       what="no exclusive CPUs in use on %s" % rt.node)
    names = ["mem-%d" % i for i in range(6)]
    for i, name in enumerate(names):
        rules = rule("affinity" if i % 2 else "anti-affinity", names[0]) if i else None
        create(cp, guaranteed(rt.node, name, namespace, rules))
    for name in names:
        assert decision(cp, namespace, name)[0].get("exclusiveCpus")
    harness.wait_until(lambda: _gauge(agent.metrics(), "exclusive") == 2 * len(names), 30,
                       what="the agent's exclusive CPUs in use")
    for name in names:
        cp.admin.delete("/api/v1/namespaces/%s/pods/%s" % (namespace, name))
    harness.wait_until(lambda: _gauge(agent.metrics(), "exclusive") == 0, 30,
                       what="the pods' CPUs given back")
    with open("/proc/%d/status" % agent.proc.pid) as f:
        hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    print("agent peak RSS: %.1f MiB" % (hwm / 1024.0))
    assert hwm / 1024.0 < 80
