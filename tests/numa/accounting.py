"""The placement accounting's invariant pass (as nri-plugins' ``checkAllocations``),
for tests to run after each operation: ``problems(placer)`` recomputes every counter
of a ``numa.placement.Placer`` (``agent.node.NodeState.placer``) from its grants."""
from collections import Counter

from tacker_hwaffinity.numa.placement import on_shared_set
from tacker_hwaffinity.numa.request import NORMAL, RESERVED


def _grant_problems(placer, container, g, owner):
    """What is wrong with grant G of CONTAINER in PLACER, in words; OWNER maps the CPUs
    granted exclusively so far to their container, and gets G's."""
    out = []
    name = "grant of %s" % getattr(container, "name", container)
    if g.container is not container:
        out.append("%s: recorded under another container" % name)
    for cpu in g.exclusive:
        if cpu in owner:
            out.append("CPU %d granted exclusively twice" % cpu)
        owner[cpu] = container
    if not g.exclusive <= g.pool.cpus:
        out.append("%s: exclusive CPUs outside pool %s" % (name, g.pool.name))
    if g.exclusive & g.pool.reserved or (g.cpu_type == RESERVED and g.exclusive):
        out.append("%s: reserved CPUs granted exclusively" % name)
    if not (g.exclusive <= g.pool.sharable or g.exclusive <= g.pool.isolated):
        out.append("%s: exclusive CPUs mix isolated and sharable ones" % name)
    if g.portion < 0 or g.memory < 0:
        out.append("%s: a negative portion or memory" % name)
    if not placer.cpuset(g):
        out.append("%s: an empty cpuset" % name)
    return out


def _pool_problems(placer, shared, reserved, mem, sharing):
    """What is inconsistent in the per-pool counters of PLACER, in words: SHARED, RESERVED,
    MEM and SHARING (grants on the shared set) are those recomputed from its grants, by
    pool id."""
    out = []
    for p in placer.pools:
        for what, kept, want in (("shared", placer.shared, shared),
                                 ("reserved", placer.reserved, reserved),
                                 ("memory", placer.mem, mem),
                                 ("grants on the shared set", placer.sharing, sharing)):
            if kept[p.id] != want[p.id]:
                out.append("pool %s: %s counted %d, granted %d" % (p.name, what, kept[p.id],
                                                                    want[p.id]))
        if placer.allocatable_shared(p) <= -1000:
            out.append("pool %s: shared CPU overcommitted by a whole CPU or more" % p.name)
        if p.reserved and placer.allocatable_reserved(p) < 0:
            out.append("pool %s: reserved CPU overcommitted" % p.name)
    return out


def problems(placer):
    """What is inconsistent in PLACER's accounting, in words ([] when nothing)."""
    out = []
    owner = {}
    shared, reserved, mem, sharing = Counter(), Counter(), Counter(), Counter()
    count = Counter()
    for container, g in placer.grants.items():
        out.extend(_grant_problems(placer, container, g, owner))
        (shared if g.cpu_type == NORMAL else reserved)[g.pool.id] += g.portion
        mem[g.pool.id] += g.memory
        sharing[g.pool.id] += on_shared_set(g)
        count[(g.pool.id, g.cpu_type)] += 1
    if set(owner) != placer.used:
        out.append("CPUs counted as granted %s, granted %s" % (sorted(placer.used),
                                                             sorted(owner)))
    out.extend(_pool_problems(placer, shared, reserved, mem, sharing))
    if placer.count != {k: n for k, n in count.items() if n}:
        out.append("grants per pool and class counted %s, made %s" % (placer.count,
                                                                    dict(count)))
    return out
