"""The agent in NRI mode on a current node: the test VM (cgroup v2, systemd 257, kernel 6.12,
the systemd cgroup driver), 4 CPUs in 2 NUMA nodes (0-1, 2-3), on each of two runtimes:
trixie's containerd 1.7 (NRI enabled by its configuration) and Debian's containerd 2.x
(forky's package, NRI on by default; tests/realnode/guest/setup.sh). Every test runs on
both, the guest switching runtimes between them (``GuestVM.use_runtime``).

The agent runs in the guest from the source share (``hwaffinity agent --mode auto``, a
systemd unit); the tests drive the guest's containerd through its CRI as the kubelet
does. Each container's first process prints its own ``Cpus_allowed_list`` and
``Mems_allowed_list`` at start, read here from its CRI log: what the guest's kernel
gave it before its first instruction. The API server is unreachable on purpose:
annotations and Events wait, container starts do not.
"""
import pytest

from realnode.test_nri_containerd import FORGED, GUARANTEED_1
from realnode.test_runtime_harness import log_lines, wait_for
from realnode.vmfixture import guest_images, guest_vm  # noqa: F401  (fixtures)
from realnode.vmnode import GuestAgent, VMPod, VMRuntime
from tacker_hwaffinity.numa.cpuset import format_list, parse_list

pytestmark = pytest.mark.vm

CR = "cri-resource-manager.intel.com/"
NODES = {0: {0, 1}, 1: {2, 3}}
GUARANTEED_500M = {"cpu_shares": 512, "cpu_quota": 50000, "cpu_period": 100000,
                   "memory_limit": 64 << 20}


def rule(kind, target, weight=5):
    return {CR + kind: "c:\n- scope: {operator: AlwaysTrue}\n  match: {key: pod/name, "
                       "operator: Equals, values: [%s]}\n  weight: %d" % (target, weight)}


# runtime -> what the agent's start line says of it (NRI's runtime name and version)
RUNTIMES = {"containerd": "configured by containerd 1.7",
            "containerd2": "configured by containerd 2."}


@pytest.fixture(scope="module", params=sorted(RUNTIMES))
def node(request, guest_vm, guest_images):  # noqa: F811  (the imported fixtures)
    guest_vm.use_runtime(request.param)
    runtime = VMRuntime(guest_vm, guest_images)
    runtime.name = request.param
    yield runtime
    runtime.close()
    guest_vm.use_runtime("containerd")          # the other modules' runtime


@pytest.fixture(scope="module")
def agent(node):
    a = GuestAgent(node.vm, "--mode", "auto").start()
    yield a
    a.stop()


@pytest.fixture
def pods(node, agent):
    made = []

    def make(name, qos="guaranteed", annotations=None):
        made.append(VMPod(node, name, qos=qos, annotations=annotations))
        return made[-1]
    yield make
    if not agent.active():         # a test that stopped it leaves the next one an agent
        agent.start()
    for p in made:
        p.remove()


def seen(pod, name="c"):
    """(CPUs, memory nodes) the container's first process had at its start."""
    lines = dict(text.split(":", 1) for stream, text in log_lines(pod.log_path(name), 2, 60)
                 if stream == "stdout")
    return parse_list(lines["Cpus_allowed_list"]), parse_list(lines["Mems_allowed_list"])


def numa_node(cpus):
    found = {n for n, members in NODES.items() if cpus & members}
    assert len(found) == 1, "CPUs %s span NUMA nodes %s" % (cpus, found)
    return found.pop()


def test_mode_and_topology_in_the_start_line(node, agent):
    text = agent.text()
    assert "2 sockets, 2 NUMA nodes, 4 CPUs" in text, text
    assert "mode nri (the runtime's NRI socket /var/run/nri/nri.sock exists)" in text
    assert RUNTIMES[node.name] in text, text


def test_affinity_anti_affinity_exclusive_cpus_and_the_shared_pool(node, agent, pods):
    # 500m each: shared CPUs of one pool. (A whole CPU for b beside a would take the last
    # shared CPU of a's socket, which the topology-aware ranking never does while another
    # pool has some: b would go to the root pool.)
    a = pods("a")
    ca = a.container("c", resources=GUARANTEED_500M)
    b = pods("b", annotations=rule("affinity", "a"))
    b.container("c", resources=GUARANTEED_500M)
    x = pods("x", annotations=rule("anti-affinity", "a"))
    cx = x.container("c", resources=GUARANTEED_500M)
    (cpus_a, mems_a), (cpus_b, mems_b), (cpus_x, mems_x) = seen(a), seen(b), seen(x)
    # affinity: b on a's NUMA node; anti-affinity: x on the other; memory follows
    assert mems_a == {numa_node(cpus_a)} and cpus_a == NODES[numa_node(cpus_a)], (cpus_a, mems_a)
    assert (cpus_b, mems_b) == (cpus_a, mems_a)
    assert mems_x == {numa_node(cpus_x)} != mems_a and cpus_x == NODES[numa_node(cpus_x)]
    # the runtime applied it through systemd: the container's scope carries the cpuset
    scope = node.scope(a, ca)
    assert parse_list(node.vm.get(scope + "/cpuset.cpus")) == cpus_a
    assert node.vm.check("systemctl show -P ActiveState cri-containerd-%s.scope"
                         % ca).strip() == "active"
    # a whole CPU is exclusive: from the pool with more shared room, x's; x's set shrinks
    # through an NRI update (no cgroup write of the agent's), and grows back at removal
    g = pods("g")
    g.container("c", resources=GUARANTEED_1)
    cpus_g, mems_g = seen(g)
    assert len(cpus_g) == 1 and cpus_g < cpus_x and mems_g == mems_x
    rest = format_list(cpus_x - cpus_g)
    wait_for(lambda: node.allowed(cx)[0] == rest, 60, "x's shared set to shrink to " + rest)
    g.remove()
    wait_for(lambda: node.allowed(cx)[0] == format_list(cpus_x), 60, "x's set to grow back")


def test_init_container_is_pinned_and_a_resize_places_again(node, agent, pods):
    pod = pods("init")
    pod.container("init", args=("grep -E 'Cpus_allowed_list|Mems_allowed_list' "
                                "/proc/self/status",), resources=GUARANTEED_1)
    cpus, mems = seen(pod, "init")
    assert len(cpus) == 1 and mems == {numa_node(cpus)}
    cid = pod.container("c", resources=GUARANTEED_1)
    cpus, mems = seen(pod)
    assert len(cpus) == 1 and mems == {numa_node(cpus)}
    node.cri.update_resources(cid, cpu_shares=512, cpu_quota=50000, cpu_period=100000,
                              memory_limit=64 << 20)
    # 500m is no whole CPU: the shared CPUs of a NUMA node's pool now, and its memory
    shared = {(format_list(cpus), str(n)) for n, cpus in NODES.items()}
    wait_for(lambda: node.allowed(cid) in shared, 60, "the resize to be placed")
    assert "resized: placed again" in agent.text()


def test_a_forged_annotation_is_ignored(node, agent, pods):
    # what the agent would have granted, forged: CPU 3 to itself, memory of node 1
    forged = FORGED.replace('"socket0"', '"socket1"').replace('"exclusiveCpus": "0"',
                                                              '"exclusiveCpus": "3"')
    pod = pods("forged", qos="besteffort", annotations={"hwaffinity.io/numa": forged})
    pod.container("c", resources={"cpu_shares": 2, "cpu_period": 100000})
    cpus, mems = seen(pod)
    assert cpus in NODES.values() and mems == {numa_node(cpus)}    # a pool's shared CPUs
    agent.wait_log("hwaffinity.io/numa; the agent's own checkpoint is the record")


def test_a_killed_agent_never_stops_a_start_and_a_restart_changes_nothing(node, agent, pods):
    agent.signal("KILL")
    wait_for(lambda: not agent.active(), 30, "the agent to die")
    pod = pods("killed")
    cid = pod.container("c", resources=GUARANTEED_1)
    assert seen(pod) == ({0, 1, 2, 3}, {0, 1})            # started, unpinned
    agent.start()
    assert "1 container(s)" in agent.text() and "1 cpuset(s) corrected" in agent.text()
    # the runtime applies the Synchronize reply's updates after the agent logged them
    pinned = wait_for(lambda: node.pinned(cid), 30, "the resync to pin the container")
    assert pinned[1] == str(numa_node(parse_list(pinned[0]))), pinned
    agent.stop()
    agent.start()
    assert "0 cpuset(s) corrected" in agent.text(), agent.text()
    assert node.allowed(cid) == pinned
