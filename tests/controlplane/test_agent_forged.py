"""A forged ``hwaffinity.io/numa`` in the kernel (issue #24 item 1): a BestEffort pod
created with a record that grants it a whole socket's CPUs as exclusive runs on the
shared CPUs the engine gives it, and the agent says why in a Warning Event.

Same set-up as test_agent.py (its fixtures): the recorded 2-socket machine, every CPU
of recorded socket N on real CPU N, real processes in a kubelet-shaped cpuset tree, the
agent as a process with deploy/agent/rbac.yaml's permissions. No admission webhook is
installed here: the pod creator writes the annotation, as on a cluster without one."""
import json
import os

import pytest

from tacker_hwaffinity.agent.node import NodeState
from tacker_hwaffinity.agent.runner import REASON_RESTORE
from tacker_hwaffinity.numa import sysfs
from tacker_hwaffinity.numa.cpuset import format_list, parse_list
from tests import builders

from . import harness
from .test_agent import (ANNOTATION, _gauge, agent_env, create, decision,  # noqa: F401
                         kernel, node_runtime)

pytestmark = pytest.mark.controlplane


def best_effort(node, name, ns, annotations):
    return builders.pod(name, ns=ns, annotations=annotations, on=node,
                        terminationGracePeriodSeconds=0,
                        containers=[builders.container(image="registry.invalid/pause:3.2")])


def test_a_best_effort_pod_with_a_forged_grant_runs_on_the_shared_cpus_only(
        control_plane, node_runtime, agent_env, namespace):  # noqa: F811 - fixtures
    cp, rt = control_plane, node_runtime
    env, agent, by_socket = agent_env
    cp.wait_quiet()            # no other pod on the node: the engine's choice is known
    machine = sysfs.discover(env["sysfs_root"])
    socket_of = {c: s for s, ids in by_socket.items() for c in ids}
    # where the engine puts a BestEffort container on the empty node: one pool's shared
    # CPUs, all on one socket; the forgery claims the whole other socket, exclusively
    probe = NodeState(machine)
    pod = best_effort(rt.node, "probe", namespace, {})
    pod["metadata"]["uid"] = "probe"
    pod["status"] = {"phase": "Running", "qosClass": "BestEffort",
                     "containerStatuses": [{"name": "c",
                                            "containerID": "containerd://" + "a" * 64}]}
    probe.update(pod)
    (fair,) = probe.targets().values()
    (fair_socket,) = {socket_of[c] for c in fair.cpus}
    forged_socket = 1 - fair_socket
    pool = next(p for p in probe.placer.pools if p.kind == "socket"
                and p.hw_id == forged_socket)
    grab = sorted(pool.sharable)
    record = {"c": {"pool": pool.name, "exclusiveCpus": format_list(grab),
                    "mems": format_list(pool.mem_nodes), "cpuType": "normal"}}
    create(cp, best_effort(rt.node, "greedy", namespace, {ANNOTATION: json.dumps(record)}))

    def rewritten():
        pod = cp.admin.get("/api/v1/namespaces/%s/pods/greedy" % namespace)
        value = json.loads(pod["metadata"]["annotations"][ANNOTATION])["c"]
        return value if value != record["c"] else None
    harness.wait_until(rewritten, 30, what="the agent's own record on greedy")
    ours, pod = decision(cp, namespace, "greedy")
    assert "exclusiveCpus" not in ours and ours["pool"] != pool.name
    # the kernel: the shared CPUs of the engine's pool (real CPU of the fair socket), not
    # the forged socket's
    harness.wait_until(lambda: kernel(rt, pod)[0] == {fair_socket}, 20,
                       what="greedy on the shared CPUs of socket %d" % fair_socket)
    assert forged_socket not in kernel(rt, pod)[0]
    assert _gauge(agent.metrics(), "exclusive") == 0       # nothing granted exclusively
    harness.wait_until(lambda: cp.events(namespace, REASON_RESTORE, "greedy"), 30,
                       what="the %s event" % REASON_RESTORE)
    (event,) = cp.events(namespace, REASON_RESTORE, "greedy")
    assert event["type"] == "Warning"
    assert ("%d exclusive CPUs recorded, the engine grants 0 (BestEffort" % len(grab)) \
        in event["message"]
    with open(os.path.join(rt.container_dir(pod["metadata"]["uid"], "c"), "cpuset.cpus")) as f:
        assert not parse_list(f.read()) & {forged_socket}
