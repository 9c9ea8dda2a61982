"""Pool scoring, ranking and grants (upstream TestAffinities and the reference's cases)."""
import os

import pytest
import yaml
from hypothesis import example, given, settings, strategies as st

from tacker_hwaffinity.numa.placement import Placer, affinity_score
from tacker_hwaffinity.numa.request import NORMAL, RESERVED, Request, request_for
from tacker_hwaffinity.numa.subjects import Pod
from tacker_hwaffinity.numa.topology import machine_from_yaml

from . import accounting
from .conftest import DATA

CR = "cri-resource-manager.intel.com/"


def server():
    return machine_from_yaml(yaml.safe_load(open(os.path.join(DATA, "server.yaml"))))


def quad(threads=2, memory="16Gi"):
    """2 sockets x 2 NUMA nodes x 4 cores, no reserved or isolated CPUs."""
    doc = {"threadsPerCore": threads, "sockets": [
        {"id": s, "nodes": [{"id": 2 * s + k, "memory": memory,
                             "cpus": "%d-%d,%d-%d" % (8 * s + 4 * k, 8 * s + 4 * k + 3,
                                                      16 + 8 * s + 4 * k,
                                                      16 + 8 * s + 4 * k + 3)}
                            for k in (0, 1)]} for s in (0, 1)]}
    return machine_from_yaml(doc)


UPSTREAM_AFFINITIES = [   # upstream pools_test.go TestAffinities: (name, affinities, expected)
    ("no affinities", {}, "NUMA node #2"),
    ("affinity to NUMA node #1", {"NUMA node #1": 1}, "NUMA node #1"),
    ("affinity to socket #1", {"socket #1": 1}, "socket #1"),
    ("equal affinities to NUMA node #1, socket #1", {"socket #1": 1, "NUMA node #1": 1},
     "NUMA node #1"),
    ("equal affinities to NUMA node #1, NUMA node #3", {"NUMA node #1": 1, "NUMA node #3": 1},
     "socket #1"),
    ("double affinity to NUMA node #1 vs. #3", {"NUMA node #1": 2, "NUMA node #3": 1},
     "socket #1"),
    ("triple affinity to NUMA node #1 vs. #3", {"NUMA node #1": 3, "NUMA node #3": 1},
     "NUMA node #1"),
    ("double affinity to NUMA node #0,#3 vs. socket #1",
     {"NUMA node #0": 2, "NUMA node #3": 2, "socket #1": 1}, "root"),
    ("equal affinity to NUMA node #0,#3 vs. socket #1",
     {"NUMA node #0": 1, "NUMA node #3": 1, "socket #1": 1}, "root"),
    ("half the affinity to NUMA node #0,#3 vs. socket #1",
     {"NUMA node #0": 1, "NUMA node #3": 1, "socket #1": 2}, "socket #1"),
]


@pytest.mark.parametrize("name,affinities,expected", UPSTREAM_AFFINITIES)
def test_upstream_affinities(name, affinities, expected):
    placer = Placer(server())
    ids = {p.name: p.id for p in placer.pools}
    req = Request(3, 0, False, NORMAL, 10000)
    _, cands = placer.rank_pools(req, {ids[k]: w for k, w in affinities.items()})
    assert cands[0].pool.name == expected


def test_upstream_reserved_no_affinities():
    placer = Placer(server())
    _, cands = placer.rank_pools(Request(0, 0, False, RESERVED, 10000), {})
    assert cands[0].pool.name == "NUMA node #0"      # holds the reserved CPU 0


def test_score_dilution_reference_example():
    placer = Placer(server())
    ids = {p.name: p for p in placer.pools}
    pa = {ids["NUMA node #1"].id: 1}
    got = {n: affinity_score(p, pa) for n, p in ids.items()}
    assert got == {"NUMA node #1": 1, "socket #1": 0.75, "root": 0.5625, "NUMA node #0": 0,
                   "NUMA node #2": 0, "NUMA node #3": 0, "socket #0": 0}
    pa = {ids["NUMA node #1"].id: -1}
    assert affinity_score(ids["NUMA node #3"], pa) == 0 == affinity_score(ids["socket #0"], pa)
    assert affinity_score(ids["root"], pa) == -0.5625


def gpod(name, cpu="2", ns="default", annotations=None, memory="1Gi", containers=("c",)):
    pod = Pod(name, ns, qosclass="Guaranteed", annotations=annotations or {})
    for c in containers:
        from tacker_hwaffinity.objects.quantity import parse_quantity
        mem = int(parse_quantity(memory))
        milli = int(parse_quantity(cpu) * 1000)
        pod.add_container(c, cpu_request=milli, cpu_limit=milli, mem_request=mem, mem_limit=mem)
    return pod


def place_all(placer, pods):
    from tacker_hwaffinity.numa.affinity import pod_affinities
    out = []
    for pod in pods:
        affs = pod_affinities(pod)
        for c in pod.containers:
            placer.set_affinities(c, affs.get(c.name, []))
            out.append(placer.place(c))
    return out


def anti(target, weight=1):
    return {CR + "anti-affinity": "c:\n- scope: {operator: AlwaysTrue}\n  match: "
            "{key: pod/name, operator: Equals, values: [%s]}\n  weight: %d" % (target, weight)}


def pull(target, weight=1):
    return {CR + "affinity": "c:\n- scope: {operator: AlwaysTrue}\n  match: "
            "{key: pod/name, operator: Equals, values: [%s]}\n  weight: %d" % (target, weight)}


def test_anti_affinity_does_not_prefer_other_socket_over_sibling_numa():
    placer = Placer(quad())
    a, b = place_all(placer, [gpod("a"), gpod("b", annotations=anti("a"))])
    assert a.grant.pool.name == "NUMA node #0"
    # NUMA #1 is a sibling of #0 in socket 0; it scores 0 like the other socket's nodes
    assert b.grant.pool.name == "NUMA node #1"
    by = {s.pool.name: s.affinity for s in b.scores}
    assert by["NUMA node #0"] == -1 and by["socket #0"] == -0.75 and by["root"] == -0.5625
    assert by["NUMA node #1"] == by["NUMA node #2"] == by["socket #1"] == 0


def test_affinity_pulls_into_same_numa_node():
    placer = Placer(quad())
    a, x, b = place_all(placer, [gpod("a"), gpod("x"), gpod("b", annotations=pull("a", 5))])
    assert (a.grant.pool.name, x.grant.pool.name) == ("NUMA node #0", "NUMA node #1")
    assert b.grant.pool.name == "NUMA node #0"


def test_spread_targets_pull_into_parent():
    placer = Placer(quad())
    pods = [gpod("t1"), gpod("t2"), gpod("t3"), gpod("t4")]
    ds = place_all(placer, pods)
    where = {d.container.pod.name: d.grant.pool.name for d in ds}
    socket1 = [n for n, p in where.items() if p in ("NUMA node #2", "NUMA node #3")]
    ann = {CR + "affinity": "c:\n- scope: {operator: AlwaysTrue}\n  match: {key: pod/name, "
                            "operator: In, values: [%s]}" % ", ".join(socket1)}
    (d,) = place_all(placer, [gpod("b", annotations=ann)])
    assert d.grant.pool.name == "socket #1"


def test_order_matters():
    first = place_all(Placer(quad()), [gpod("a"), gpod("b", annotations=pull("a"))])
    second = place_all(Placer(quad()), [gpod("b", annotations=pull("a")), gpod("a")])
    assert first[1].grant.pool is not None and first[1].pool_affinity
    assert second[0].pool_affinity == {}        # its target was not placed yet


def test_exclusive_whole_cores_and_shared_remainder():
    placer = Placer(quad())
    ds = place_all(placer, [gpod("g", "2")])
    ex = ds[0].grant.exclusive
    assert ex == {0, 16}                       # one whole core: CPU 0 and its sibling 16
    be = Pod("be", qosclass="BestEffort")
    be.add_container("c")
    (d,) = place_all(placer, [be])
    assert d.grant.exclusive == set() and placer.cpuset(d.grant).isdisjoint(ex)
    assert placer.cpuset(d.grant) == d.grant.pool.sharable - ex
    assert placer.memset(d.grant) == d.grant.pool.mem_nodes


def test_three_cpus_take_a_core_and_a_half():
    placer = Placer(quad())
    (d,) = place_all(placer, [gpod("g", "3")])
    ex = sorted(d.grant.exclusive)
    assert len(ex) == 3 and {0, 16} <= set(ex)


def test_fractional_guaranteed_requests():
    r = request_for(gpod("g", "1500m").containers[0])
    assert (r.full, r.fraction, r.isolate) == (1, 500, True)
    r = request_for(gpod("g", "2500m").containers[0])
    assert (r.full, r.fraction) == (0, 2500)
    r = request_for(gpod("g", "500m").containers[0])
    assert (r.full, r.fraction) == (0, 500)
    r = request_for(gpod("g", "4").containers[0])
    assert (r.full, r.fraction, r.isolate) == (4, 0, False)
    r = request_for(gpod("k", "4", ns="kube-system").containers[0])
    assert r.cpu_type == RESERVED


def test_mixed_request_gets_exclusive_plus_shared():
    placer = Placer(quad())
    (d,) = place_all(placer, [gpod("m", "1500m")])
    cs = placer.cpuset(d.grant)
    assert len(d.grant.exclusive) == 1 and d.grant.portion == 500
    assert d.grant.exclusive < cs and len(cs) > 1


def test_isolated_cpu_preferred_for_single_cpu():
    placer = Placer(server())
    (d,) = place_all(placer, [gpod("one", "1")])
    assert d.grant.exclusive <= placer.machine.isolated


def test_kube_system_goes_to_root_and_reserved_cpus():
    placer = Placer(server())
    (d,) = place_all(placer, [gpod("dns", "100m", ns="kube-system")])
    assert d.grant.pool.name == "root" and d.grant.cpu_type == RESERVED
    assert placer.cpuset(d.grant) == {0}
    placer = Placer(quad())      # no reserved CPUs: root pool, normal shared CPUs
    (d,) = place_all(placer, [gpod("dns", "100m", ns="kube-system")])
    assert d.grant.pool.name == "root" and d.grant.cpu_type == NORMAL


def test_capacity_exhaustion_is_reported():
    placer = Placer(quad())
    # 7 of a node's 8 CPUs fit (upstream keeps capacity strictly above the request)
    ds = place_all(placer, [gpod("big%d" % i, "7") for i in range(5)])
    assert [d.error is None for d in ds] == [True, True, True, True, False]
    assert "cannot allocate" in ds[-1].error


def test_memory_filter():
    placer = Placer(quad(memory="1Gi"))
    (d,) = place_all(placer, [gpod("m", "1", memory="1536Mi")])
    assert d.grant.pool.kind in ("socket", "root")
    filtered = [s.pool.name for s in d.scores if not s.memory_ok]
    assert sorted(filtered) == ["NUMA node #0", "NUMA node #1", "NUMA node #2", "NUMA node #3"]
    (d,) = place_all(placer, [gpod("huge", "1", memory="64Gi")])
    assert d.grant is None and "memory" in d.error


def test_replay_rebuilds_the_same_state():
    pods = [gpod("a"), gpod("b", annotations=anti("a")), gpod("c", annotations=pull("b", 3))]
    one = Placer(quad())
    place_all(one, pods)
    two = Placer(quad())
    place_all(two, pods[:2])
    place_all(two, pods[2:])
    assert [(d.grant.pool.name, d.grant.exclusive) for d in one.decisions] == \
           [(d.grant.pool.name, d.grant.exclusive) for d in two.decisions]


# Found by hypothesis: a parent pool's exclusive grant once took a whole CPU
# from a NUMA node whose shared capacity was used exactly to the CPU.
OVERCOMMIT_EXAMPLE = [
    ("2", "Guaranteed", 0, 0), ("100m", "Guaranteed", 0, 0), ("100m", "Guaranteed", 0, 0),
    ("100m", "BestEffort", 0, 0), ("100m", "BestEffort", 0, 0), ("100m", "Guaranteed", 0, 0),
    ("1500m", "Guaranteed", 0, 0), ("3", "Guaranteed", 0, 0), ("100m", "Guaranteed", 0, 0),
    ("100m", "Guaranteed", 0, 0), ("1", "Guaranteed", 1, 0), ("100m", "Guaranteed", 0, 0),
    ("1500m", "Guaranteed", 1, 0), ("2", "Guaranteed", 0, 0), ("500m", "Guaranteed", 0, 0),
    ("1", "Guaranteed", 0, 0), ("1500m", "Guaranteed", 0, 0), ("1500m", "Guaranteed", 1, 1),
    ("4", "Guaranteed", 0, 0), ("4", "Guaranteed", 0, 0), ("4", "Guaranteed", 0, 0),
    ("500m", "Guaranteed", 0, 0), ("2", "Guaranteed", 0, 0)]


@settings(max_examples=40, deadline=None)
@example(seq=OVERCOMMIT_EXAMPLE)
@given(st.lists(st.tuples(st.sampled_from(["100m", "500m", "1", "1500m", "2", "3", "4"]),
                          st.sampled_from(["Guaranteed", "Burstable", "BestEffort"]),
                          st.integers(-3, 3), st.integers(0, 20)), min_size=1, max_size=25))
def test_invariants_random_sequences(seq):
    placer = Placer(quad())
    pods = []
    for i, (cpu, qos, w, target) in enumerate(seq):
        ann = pull("p%d" % target, w) if w else {}
        p = gpod("p%d" % i, cpu, annotations=ann)
        p.qosclass = qos
        pods.append(p)
    ds = place_all(placer, pods)
    taken = set()
    for d in ds:
        if d.grant is None:
            assert d.error
            continue
        ex = d.grant.exclusive
        assert not (ex & taken), "exclusive CPUs granted twice"
        taken |= ex
        assert placer.cpuset(d.grant) <= d.grant.pool.cpus
        assert ex <= d.grant.pool.cpus
    for p in placer.pools:     # a leaf is never overcommitted by a whole CPU
        assert placer.allocatable_shared(p) > -1000


def _req(cpu, ann, ns="default", qos="Guaranteed"):
    p = gpod("p", cpu, ns=ns, annotations=ann)
    p.qosclass = qos
    r = request_for(p.containers[0])
    return (r.full, r.fraction, r.isolate, r.cpu_type)


CRP = "cri-resource-manager.intel.com"
NRP = "resource-policy.nri.io"


@pytest.mark.parametrize("cpu,ann,expected", [
    ("1", {}, (1, 0, True, NORMAL)),
    ("1", {"prefer-isolated-cpus.%s/pod" % CRP: "false"}, (1, 0, False, NORMAL)),
    ("1", {"prefer-shared-cpus.%s/container.c" % CRP: "true"}, (0, 1000, False, NORMAL)),
    ("1", {"prefer-shared-cpus.%s/container.other" % CRP: "true"}, (1, 0, True, NORMAL)),
    ("1500m", {"prefer-shared-cpus.%s" % NRP: "1"}, (0, 1500, False, NORMAL)),
    ("2", {"prefer-isolated-cpus.%s/pod" % CRP: "true"}, (2, 0, True, NORMAL)),
    ("2", {}, (2, 0, False, NORMAL)),
    ("2", {"prefer-shared-cpus.%s/pod" % CRP: "True"}, (0, 2000, False, NORMAL)),
    ("2400m", {}, (0, 2400, False, NORMAL)),
    ("2400m", {"prefer-shared-cpus.%s/pod" % CRP: "false"}, (2, 400, False, NORMAL)),
    ("1", {"prefer-reserved-cpus.%s/pod" % CRP: "true"}, (0, 1000, False, RESERVED)),
])
def test_cpu_preferences(cpu, ann, expected):
    assert _req(cpu, ann) == expected


def test_reserved_namespace_opt_out_and_bad_value():
    assert _req("1", {}, ns="kube-system")[3] == RESERVED
    assert _req("1", {"prefer-reserved-cpus.%s/pod" % CRP: "false"}, ns="kube-system")[3] == NORMAL
    from tacker_hwaffinity.errors import InputError
    with pytest.raises(InputError, match="prefer-isolated-cpus"):
        _req("1", {"prefer-isolated-cpus.%s/pod" % CRP: "maybe"})


# -- one statement of what a container may be granted: allocate and refusal agree ----

CPUS = ["0", "100m", "500m", "1", "1500m", "2", "2500m", "3", "4", "7"]


def _container(i, cpu, qos, ns, memory, prefs):
    ann = {"prefer-%s-cpus.%s/pod" % (k, CR[:-1]): v for k, v in prefs.items()}
    p = gpod("p%d" % i, cpu, ns=ns, annotations=ann, memory=memory)
    p.qosclass = qos
    return p.containers[0]


containers = st.builds(
    _container, st.integers(0, 10 ** 6), st.sampled_from(CPUS),
    st.sampled_from(["Guaranteed", "Burstable", "BestEffort"]),
    st.sampled_from(["default", "kube-system"]), st.sampled_from(["0", "256Mi", "3Gi", "20Gi"]),
    st.dictionaries(st.sampled_from(["isolated", "shared", "reserved"]),
                    st.sampled_from(["true", "false"]), max_size=3))


def _entitled_grant(placer, pool, container, req, cpu_type):
    """A grant of the container's entitlement from POOL's free CPUs (None: too few)."""
    ent = placer.entitlement(container, req)
    iso = pool.isolated - placer.used
    free = iso if ent.isolate and len(iso) >= ent.full else pool.sharable - placer.used
    if len(free) < ent.full:
        return None
    return cpu_type, frozenset(sorted(free)[:ent.full]), ent.portion


@settings(deadline=None)
@given(st.sampled_from(["server", "quad"]), st.lists(containers, max_size=12), containers,
       st.integers(0, 12))
def test_refusal_is_none_exactly_when_allocate_succeeds(kind, before, container, pool_at):
    """On any state (containers placed before), for any request and pool: allocate
    succeeds exactly when refusal takes its grant back; when allocate fails, refusal
    refuses every grant of the container's entitlement from the pool's free CPUs."""
    placer = Placer(server() if kind == "server" else quad(memory="4Gi"))
    for c in before:
        placer.place(c)
    assert accounting.problems(placer) == []
    pool = placer.pools[pool_at % len(placer.pools)]
    req = request_for(container)
    try:
        g = placer.allocate(pool, req, container)
    except ValueError:
        g = None
    if g is not None:
        assert accounting.problems(placer) == []
        placer.release(container)
        assert placer.refusal(container, req, pool.name, g.cpu_type, g.exclusive,
                              g.portion) is None
        return
    for cpu_type in placer.entitlement(container, req).cpu_types:
        grant = _entitled_grant(placer, pool, container, req, cpu_type)
        if grant is not None:
            assert placer.refusal(container, req, pool.name, *grant) is not None


@settings(deadline=None)
@given(st.sampled_from(["server", "quad"]), st.lists(st.tuples(containers, st.booleans()),
                                                     max_size=30))
def test_the_accounting_holds_after_each_place_restore_and_release(kind, steps):
    """The invariant pass (tests/numa/accounting.py) after every operation: place,
    release, and restore of the grant just released."""
    placer = Placer(server() if kind == "server" else quad(memory="4Gi"))
    for c, again in steps:
        d = placer.place(c)
        assert accounting.problems(placer) == []
        if d.grant is None or not again:
            continue
        g = placer.release(c)
        assert accounting.problems(placer) == []
        back = placer.restore(c, g.pool.name, g.cpu_type, g.exclusive, g.portion)
        assert back.error is None, back.error
        assert accounting.problems(placer) == []


def test_exclusive_cpus_from_a_socket_leave_each_numa_nodes_shared_containers_a_cpu():
    """Found by the accounting invariant: 7 exclusive CPUs from socket #0 were all
    taken from NUMA node #0, whose 0-CPU container was left an empty cpuset (runc
    reads an empty cpuset as "unchanged", so it kept running on the new exclusive
    CPUs). A pool holding a grant on its shared set keeps one sharable CPU."""
    placer = Placer(quad(memory="4Gi"))
    for i, cpu in enumerate(["0", "0", "1", "1", "1", "1", "7"]):
        c = _container(i, cpu, "Guaranteed", "default", "0", {})
        assert placer.place(c).grant is not None
        assert accounting.problems(placer) == []
    shared = [g for g in placer.grants.values() if not g.exclusive]
    assert [g.pool.name for g in shared] == ["NUMA node #0", "NUMA node #1"]
    assert all(placer.cpuset(g) for g in shared)


def test_a_pool_whose_sharable_cpus_are_all_granted_refuses_a_shared_container():
    """With no shared container there yet, a socket's exclusive grant may take all of a
    NUMA node's CPUs; a shared container is then refused there, not given nothing."""
    placer = Placer(quad(memory="4Gi"))
    socket0, numa0 = (next(p for p in placer.pools if p.name == n)
                      for n in ("socket #0", "NUMA node #0"))
    big = _container(1, "8", "Guaranteed", "default", "0", {})
    placer.allocate(socket0, request_for(big), big)
    assert not numa0.sharable - placer.used
    shared = _container(2, "0", "BestEffort", "default", "0", {})
    with pytest.raises(ValueError, match="no shared CPU left in pool 'NUMA node #0'"):
        placer.allocate(numa0, request_for(shared), shared)
    assert accounting.problems(placer) == []
