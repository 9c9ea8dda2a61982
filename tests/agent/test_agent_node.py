"""The agent's decisions (NodeState): replay order, release, restarts, errors."""
import json
import os

from hypothesis import given, settings, strategies as st

from tacker_hwaffinity.agent.node import ANNOTATION, NodeState
from tacker_hwaffinity.numa.cpuset import parse_list
from tacker_hwaffinity.numa.placement import Placer
from tacker_hwaffinity.numa.topology import machine_from_yaml
from tacker_hwaffinity.objects.yamlio import parse_documents

from .podobjects import anti, pod_object, pull

SERVER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "numa", "data", "server.yaml")


def server():
    with open(SERVER) as f:
        return machine_from_yaml(parse_documents(f.read(), SERVER)[0], SERVER)


def socket_of(machine, cpus):
    return {machine.cpus[c].socket for c in cpus}


def test_affinity_pulls_onto_one_numa_node_and_anti_affinity_apart():
    m = server()
    s = NodeState(m)
    a = pod_object("a", created="2026-01-01T00:00:01Z")
    b = pod_object("b", annotations=pull("a", 5), created="2026-01-01T00:00:02Z")
    x = pod_object("x", annotations=anti("a", 5), created="2026-01-01T00:00:03Z")
    s.sync([x, b, a])   # listed in any order: placed in creation order
    t = {k[0]: v for k, v in s.targets().items()}
    ua, ub, ux = (o["metadata"]["uid"] for o in (a, b, x))
    assert t[ua].mems == t[ub].mems                       # one NUMA node
    assert socket_of(m, t[ua].cpus) != socket_of(m, t[ux].cpus)
    assert len(t[ua].cpus) == 2 and not t[ua].cpus & t[ub].cpus   # exclusive, 2 CPUs


def test_replay_is_stable_and_release_returns_the_cpus():
    m = server()
    pods = [pod_object("p%d" % i, created="2026-01-01T00:00:%02dZ" % i) for i in range(6)]
    first = NodeState(m)
    first.sync(pods)
    again = NodeState(m)
    again.sync(list(reversed(pods)))
    view = {k: (v.cpus, v.mems) for k, v in first.targets().items()}
    assert view == {k: (v.cpus, v.mems) for k, v in again.targets().items()}
    used = set(first.placer.used)
    first.delete(pods[2])
    assert first.placer.used == used - view[(pods[2]["metadata"]["uid"], "c")][0]
    # the others keep their CPUs
    assert all(view[k] == (v.cpus, v.mems) for k, v in first.targets().items())


def test_containers_wait_for_their_id_and_keep_the_grant_across_restarts():
    s = NodeState(server())
    p = pod_object("p", ids=False)
    assert not s.update(p) and not s.targets()
    p = pod_object("p")
    assert s.update(p)
    (t,) = s.targets().values()
    p["status"]["containerStatuses"][0]["containerID"] = "containerd://" + "f" * 64
    assert s.update(p)
    (t2,) = s.targets().values()
    assert t2.container_id == "f" * 64 and (t2.cpus, t2.mems) == (t.cpus, t.mems)
    assert not s.update(p)   # nothing new: nothing to do


def test_bad_annotation_fails_the_pods_containers_not_the_agent():
    s = NodeState(server())
    bad = pod_object("bad", annotations={"cri-resource-manager.intel.com/affinity": "c: [[["})
    good = pod_object("good")
    s.sync([bad, good])
    (msg,) = [m for _, m in s.failures(bad["metadata"]["uid"])]
    assert msg.startswith("bad annotation: ")
    assert json.loads(s.annotation(bad["metadata"]["uid"]))["c"]["error"] == msg
    assert list(s.targets()) == [(good["metadata"]["uid"], "c")]


def test_annotation_records_pool_exclusive_cpus_and_memory_nodes():
    s = NodeState(server())
    p = pod_object("p")
    s.update(p)
    d = json.loads(s.annotation(p["metadata"]["uid"]))["c"]
    (t,) = s.targets().values()
    grant = s.placer.grants[s.placed[t.key]]
    assert d["pool"] == grant.pool.name and d["cpuType"] == grant.cpu_type == "normal"
    assert parse_list(d["exclusiveCpus"]) == t.cpus and len(t.cpus) == 2    # what is written
    assert parse_list(d["mems"]) == t.mems and t.mems


def test_terminal_and_deleted_pods_are_released():
    s = NodeState(server())
    p = pod_object("p")
    s.update(p)
    p["status"]["phase"] = "Succeeded"
    assert s.update(p) and not s.targets() and not s.placer.used
    s.update(pod_object("q"))
    s.sync([])
    assert not s.targets() and not s.placer.used


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["1", "2", "500m", "3"]),
                          st.sampled_from(["Guaranteed", "Burstable"])), min_size=1, max_size=12),
       st.data())
def test_release_restores_the_placer_exactly(specs, data):
    """Placing then releasing any subset leaves the placer as if those were never placed."""
    m = server()
    pods = [pod_object("p%d" % i, cpu=cpu, qos=qos, created="2026-01-01T00:00:%02dZ" % i)
            for i, (cpu, qos) in enumerate(specs)]
    gone = data.draw(st.sets(st.integers(0, len(pods) - 1)))
    s = NodeState(m)
    s.sync(pods)
    for i in sorted(gone):
        s.delete(pods[i])
    placer = s.placer
    granted = [placer.grants[c] for c in s.placed.values()]
    assert placer.used == frozenset().union(*[g.exclusive for g in granted])
    assert sum(placer.shared) == sum(g.portion for g in granted if g.cpu_type == "normal")
    assert sum(placer.mem) == sum(g.memory for g in granted)
    for i in range(len(pods)):      # and once everything is gone: the empty placer
        s.delete(pods[i])
    fresh = Placer(m)
    assert (placer.used, placer.shared, placer.reserved, placer.mem, placer.count,
            placer.grants) == (fresh.used, fresh.shared, fresh.reserved, fresh.mem,
                               fresh.count, fresh.grants)


def annotated(state, obj):
    obj = json.loads(json.dumps(obj))
    obj["metadata"]["annotations"][ANNOTATION] = state.annotation(obj["metadata"]["uid"])
    return obj


def test_a_restarted_agent_takes_back_the_recorded_grants_whatever_the_history():
    m = server()
    first = NodeState(m)
    early = [pod_object("old%d" % i, created="2026-01-01T00:00:0%dZ" % i) for i in range(3)]
    late = [pod_object("p%d" % i, cpu=c, created="2026-01-01T00:01:0%dZ" % i)
            for i, c in enumerate(("2", "500m", "4", "1"))]
    first.sync(early + late)
    for p in early:                 # the old pods went away after the others were placed
        first.delete(p)
    view = {k: (v.cpus, v.mems) for k, v in first.targets().items()}
    again = NodeState(m)
    again.sync([annotated(first, p) for p in late])
    assert {k: (v.cpus, v.mems) for k, v in again.targets().items()} == view
    # a replay without the annotations decides afresh (here: differently)
    fresh = NodeState(m)
    fresh.sync(late)
    assert {k: (v.cpus, v.mems) for k, v in fresh.targets().items()} != view


def test_a_recorded_grant_that_no_longer_fits_is_decided_again():
    s = NodeState(server())
    a = pod_object("a")
    s.update(a)
    twin = pod_object("twin", created="2026-11-23T10:00:01Z")
    twin["metadata"]["annotations"][ANNOTATION] = s.annotation(a["metadata"]["uid"])
    s.update(twin)        # claims a's CPUs: taken, so it gets its own
    t = {k[0]: v.cpus for k, v in s.targets().items()}
    assert not t[a["metadata"]["uid"]] & t[twin["metadata"]["uid"]]
