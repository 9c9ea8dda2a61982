"""A grant recorded in ``hwaffinity.io/numa`` is taken back only when the engine could
have made it for that container (issue #24 item 1): anyone who can create a pod can
write that annotation. Every way a forged record can lie is placed afresh, with the
reason for the agent's Warning Event."""
import json
import logging
import time

import pytest
from hypothesis import given, settings, strategies as st
from prometheus_client import CollectorRegistry

from tacker_hwaffinity.agent import cgroupfs
from tacker_hwaffinity.agent.node import ANNOTATION, NodeState
from tacker_hwaffinity.agent.runner import REASON_RESTORE, Agent, Metrics
from tacker_hwaffinity.numa.cpuset import format_list, parse_list

from .podobjects import pod_object
from .test_agent_node import server
from .test_agent_runner import Api, make_dirs, tree  # noqa: F401 - tree is a fixture

NODE0 = "NUMA node #0"       # server.yaml: CPUs 0,4,8,...,108; 0 reserved; 4 and 60 isolated


def node0_cpus(m, count, isolated=False):
    """COUNT sharable (or isolated) CPUs of NUMA node #0, none of them reserved."""
    pool = next(p for p in NodeState(m).placer.pools if p.name == NODE0)
    return sorted(pool.isolated if isolated else pool.sharable)[:count]


def burstable(name, cpu="2", **kw):
    obj = pod_object(name, qos="Burstable", **kw)
    for c in obj["spec"]["containers"]:
        c["resources"] = {"requests": {"cpu": cpu, "memory": "1Gi"}}
    return obj


def forged(obj, container="c", **entry):
    obj["metadata"]["annotations"][ANNOTATION] = json.dumps({container: entry})
    return obj


def grant(cpus, pool=NODE0, **more):
    entry = {"pool": pool, "mems": "0", "cpuType": "normal"}
    if cpus:
        entry["exclusiveCpus"] = format_list(cpus)
    entry.update(more)
    return entry


def placed_afresh(obj):
    """Place OBJ alone on a fresh node: (its cpuset, the refusal message or None)."""
    s = NodeState(server())
    s.update(obj)
    uid = obj["metadata"]["uid"]
    (t,) = s.targets().values()
    refused = dict(s.refused(uid)).get("c")
    return s, t.cpus, refused


def test_an_honest_record_is_taken_back_without_a_warning():
    m = server()
    first = NodeState(m)
    p = pod_object("p", cpu="3")
    first.update(pod_object("early", created="2026-11-23T09:00:00Z"))
    first.update(p)
    want = first.targets()[(p["metadata"]["uid"], "c")].cpus
    p = pod_object("p", cpu="3", annotations={ANNOTATION: first.annotation(p["metadata"]["uid"])})
    s, cpus, refused = placed_afresh(p)
    assert cpus == want and refused is None
    assert s.placer.decisions[-1].replayed


def test_a_best_effort_pod_cannot_take_a_whole_numa_node():
    m = server()
    node = node0_cpus(m, 25)
    s, cpus, refused = placed_afresh(forged(pod_object("be", qos="BestEffort"), **grant(node)))
    assert "25 exclusive CPUs recorded, the engine grants 0 (BestEffort" in refused
    assert not s.placer.used                           # nothing exclusive for anyone
    assert len(cpus) >= 25                             # a pool's whole shared set
    assert ANNOTATION in refused and refused.endswith("placed afresh")


def test_more_cpus_than_requested_are_refused():
    m = server()
    s, cpus, refused = placed_afresh(forged(pod_object("g", cpu="2"), **grant(node0_cpus(m, 4))))
    assert "4 exclusive CPUs recorded, the engine grants 2 (Guaranteed, cpu request 2000m" \
        in refused
    assert len(cpus) == 2 and len(s.placer.used) == 2


def test_exclusive_cpus_for_a_burstable_pod_are_refused():
    m = server()
    s, cpus, refused = placed_afresh(forged(burstable("b"), **grant(node0_cpus(m, 2))))
    assert "2 exclusive CPUs recorded, the engine grants 0 (Burstable" in refused
    assert not s.placer.used


def test_exclusive_cpus_for_a_non_integer_guaranteed_request_are_refused():
    m = server()
    obj = forged(pod_object("f", cpu="2500m"), **grant(node0_cpus(m, 2), sharedMilliCpu=500))
    s, cpus, refused = placed_afresh(obj)
    assert "2 exclusive CPUs recorded, the engine grants 0 (Guaranteed, cpu request 2500m: " \
        "2500m shared CPU)" in refused
    assert not s.placer.used


def test_a_larger_shared_portion_is_refused():
    _, _, refused = placed_afresh(forged(burstable("b", cpu="500m"),
                                         **grant([], sharedMilliCpu=20000)))
    assert "sharedMilliCpu 20000 recorded, the engine grants 500" in refused


def test_cpus_outside_the_recorded_pool_are_refused():
    m = server()
    other = [1, 9]                 # NUMA node #1
    assert not set(other) & set(node0_cpus(m, 28))
    s, cpus, refused = placed_afresh(forged(pod_object("g"), **grant(other)))
    assert "exclusive CPUs 1,9 are not in pool 'NUMA node #0'" in refused
    assert not s.placer.decisions[-1].replayed and len(s.placer.used) == 2


def test_reserved_cpus_are_never_exclusive():
    _, cpus, refused = placed_afresh(forged(pod_object("g"), **grant([0, 8])))
    assert "exclusive CPUs 0 are reserved CPUs" in refused
    assert 0 not in cpus


def test_isolated_cpus_only_for_a_request_that_prefers_them():
    m = server()
    iso = node0_cpus(m, 2, isolated=True)        # 4, 60
    _, cpus, refused = placed_afresh(forged(pod_object("g"), **grant(iso)))
    assert "isolated CPUs for a request that does not prefer them" in refused
    # the same record for a pod that asks for isolated CPUs is one the engine makes
    wants = {"prefer-isolated-cpus.cri-resource-manager.intel.com/pod": "true"}
    _, cpus, refused = placed_afresh(forged(pod_object("i", annotations=wants), **grant(iso)))
    assert refused is None and cpus == set(iso)


def test_an_unknown_pool_and_the_wrong_pool_for_kube_system_are_refused():
    m = server()
    _, _, refused = placed_afresh(forged(pod_object("g"), **grant(node0_cpus(m, 2),
                                                                 pool="NUMA node #9")))
    assert "pool 'NUMA node #9' is not a pool of this node" in refused
    _, _, refused = placed_afresh(forged(pod_object("k", ns="kube-system"),
                                         **grant([], sharedMilliCpu=2000, cpuType="reserved")))
    assert "pool 'NUMA node #0' recorded, the engine grants pool 'root'" in refused


def test_the_reserved_class_for_a_normal_pod_is_refused():
    _, cpus, refused = placed_afresh(forged(burstable("b", cpu="1"),
                                            **grant([], pool="root", sharedMilliCpu=1000,
                                                    cpuType="reserved")))
    assert "cpuType 'reserved' recorded, the engine grants 'normal'" in refused
    assert 0 not in cpus


def test_cpus_granted_to_another_container_are_refused():
    m = server()
    s = NodeState(m)
    a = pod_object("a")
    s.update(a)
    taken = sorted(s.targets()[(a["metadata"]["uid"], "c")].cpus)
    b = forged(pod_object("b", created="2026-11-23T10:00:01Z"),
               **grant(taken, pool=json.loads(s.annotation(a["metadata"]["uid"]))["c"]["pool"]))
    s.update(b)
    (refused,) = [msg for _, msg in s.refused(b["metadata"]["uid"])]
    assert "are granted to another container" in refused
    assert not s.targets()[(b["metadata"]["uid"], "c")].cpus & set(taken)


@pytest.mark.parametrize("value, why", [
    ("{not json", "the annotation is not JSON"),
    ("[1, 2]", "the annotation is not a JSON object"),
    ('{"c": "NUMA node #0"}', '["c"]: expected an object'),
    ('{"c": {"pool": "NUMA node #0", "sharedMilliCpu": "500"}}',
     '["c"].sharedMilliCpu: expected an integer'),
    ('{"c": {"pool": "NUMA node #0", "sharedMilliCpu": true}}',
     '["c"].sharedMilliCpu: expected an integer'),
    ('{"c": {"pool": "NUMA node #0", "sharedMilliCpu": -5}}',
     '["c"].sharedMilliCpu: expected at least 0'),
    ('{"c": {"pool": 3}}', '["c"].pool: expected a string'),
    ('{"c": {"pool": "NUMA node #0", "exclusiveCpus": "4-x"}}', '["c"].exclusiveCpus: '),
    ('{"c": {"pool": "NUMA node #0", "exclusive": "4"}}', '["c"]: unknown field "exclusive"'),
    ('{"c": {"pool": "NUMA node #0", "exclusiveCpus": "%s"}}'
     % ",".join(["0-60000"] * 5000), '["c"].exclusiveCpus: more than 8192 CPUs'),
])
def test_a_malformed_record_is_placed_afresh_with_the_reason(value, why):
    obj = pod_object("g", cpu="500m", annotations={ANNOTATION: value})
    t0 = time.process_time()
    s, cpus, refused = placed_afresh(obj)
    assert refused.startswith("the grant recorded in %s was not restored: %s"
                              % (ANNOTATION, why))
    assert not s.placer.used and cpus        # 500m: a shared CPU set
    assert time.process_time() - t0 < 5      # the 300-million-CPU list is not expanded


def test_no_record_and_an_earlier_failure_are_no_warning():
    for ann in ({}, {ANNOTATION: json.dumps({"c": {"error": "no room"}})},
                {ANNOTATION: json.dumps({"other": {"pool": "root"}})}):
        _, _, refused = placed_afresh(pod_object("g", annotations=ann))
        assert refused is None


def test_the_agent_sends_a_warning_event_and_records_its_own_decision(tree):  # noqa: F811
    m = server()
    api = Api()
    agent = Agent(api, "n1", NodeState(m), tree, cgroupfs.Writer(tree),
                  Metrics(CollectorRegistry()), log=logging.getLogger("test.agent"))
    p = forged(pod_object("be", qos="BestEffort"), **grant(node0_cpus(m, 25)))
    make_dirs(tree, p)
    agent.on_sync([p])
    ((name, reason, message),) = api.events
    assert (name, reason) == ("be", REASON_RESTORE)
    assert message.startswith("container c: the grant recorded in %s was not restored: 25 "
                              "exclusive CPUs recorded" % ANNOTATION)
    assert "exclusiveCpus" not in json.loads(api.annotations["be"])["c"]
    agent.resync()
    assert len(api.events) == 1                        # said once


# -- properties ------------------------------------------------------------------------
SHAPES = st.tuples(st.sampled_from(["Guaranteed", "Burstable", "BestEffort"]),
                   st.sampled_from(["500m", "1", "1500m", "2", "2500m", "4"]),
                   st.sampled_from(["default", "kube-system"]),
                   st.booleans())


def _pod(i, shape):
    qos, cpu, ns, iso = shape
    ann = {"prefer-isolated-cpus.cri-resource-manager.intel.com/pod": "true"} if iso else {}
    if qos == "Burstable":
        return burstable("p%d" % i, cpu=cpu, ns=ns, annotations=ann,
                         created="2026-01-01T00:00:%02dZ" % i)
    return pod_object("p%d" % i, cpu=cpu, qos=qos, ns=ns, annotations=ann,
                      created="2026-01-01T00:00:%02dZ" % i)


@settings(max_examples=60, deadline=None)
@given(st.lists(SHAPES, min_size=1, max_size=24), st.randoms())
def test_every_grant_the_engine_makes_is_taken_back_as_it_was(shapes, rnd):
    """Honest records are never refused: a restarted agent changes nothing, whatever
    order the containers were placed in first (the order their IDs became known)."""
    m = server()
    pods = [_pod(i, sh) for i, sh in enumerate(shapes)]
    first = NodeState(m)
    for p in rnd.sample(pods, len(pods)):
        first.update(p)
    again = NodeState(m)
    recorded = []
    for p in pods:
        p = json.loads(json.dumps(p))
        value = first.annotation(p["metadata"]["uid"])
        if value:
            p["metadata"]["annotations"][ANNOTATION] = value
        recorded.append(p)
    again.sync(recorded)
    assert all(not again.refused(p["metadata"]["uid"]) for p in pods)
    view = {k: (t.cpus, t.mems) for k, t in first.targets().items()}
    assert {k: (t.cpus, t.mems) for k, t in again.targets().items()} == view


CANDIDATES = [0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 60, 61]    # reserved, isolated, others


@settings(max_examples=200, deadline=None)
@given(SHAPES, st.sampled_from(["NUMA node #0", "NUMA node #1", "socket #0", "root"]),
       st.data())
def test_a_restored_record_is_always_one_the_engine_could_make(shape, pool, data):
    """Whatever the record says, what is taken back is the container's own request:
    the number of exclusive CPUs and the shared portion the engine gives that
    container, never a reserved CPU as exclusive, never isolated CPUs unasked.
    The records drawn are near the container's request (off by one CPU or half a
    CPU, another class, another pool), where a lax check would let one through."""
    m = server()
    obj = _pod(0, shape)
    s = NodeState(m)
    probe = NodeState(m)
    probe.update(obj)
    req = probe.placer.decisions[-1].request
    count = max(0, req.full + data.draw(st.sampled_from([0, 0, 1, -1])))
    cpus = data.draw(st.sets(st.sampled_from(CANDIDATES), min_size=count, max_size=count))
    milli = data.draw(st.sampled_from([req.fraction, req.fraction + 1000 * req.full,
                                       req.fraction + 500, 0]))
    cpu_type = data.draw(st.sampled_from([req.cpu_type, "normal", "reserved"]))
    obj = forged(obj, **grant(sorted(cpus), pool=pool, sharedMilliCpu=milli, cpuType=cpu_type))
    s.update(obj)
    key = (obj["metadata"]["uid"], "c")
    container = s.placed.get(key)
    if container is None or s.refused(key[0]):
        return
    g = s.placer.grants[container]
    assert (pool, sorted(g.exclusive), g.portion, g.cpu_type) == (g.pool.name, sorted(cpus),
                                                                  milli, cpu_type)
    if g.cpu_type == "reserved":
        assert not g.exclusive and g.portion == req.fraction + 1000 * req.full
        assert g.pool is s.placer.root
    else:
        assert len(g.exclusive) == req.full
        if req.cpu_type == "normal":
            assert g.portion == req.fraction
        assert not g.exclusive & m.reserved
        assert g.exclusive <= g.pool.sharable or (req.isolate and g.exclusive <= g.pool.isolated)
    if shape[0] != "Guaranteed":
        assert not g.exclusive
    if shape[2] == "kube-system":
        assert g.pool is s.placer.root
    assert parse_list(json.loads(s.annotation(key[0]))["c"].get("exclusiveCpus", "")) \
        == set(g.exclusive)
