"""Pick exclusive CPUs inside a pool, topology-packed.

Gives exactly the requested number of CPUs (as upstream and kubelet's static
CPU manager do), preferring:

1. whole idle cores (every online thread of the core free), so that no two
   containers share a core except for an odd remainder;
2. all of them from one NUMA node when one can hold the request: the node
   with the fewest idle cores that still fits (keeps big holes for big
   requests), lowest id on ties;
3. otherwise nodes with the most idle cores first;
4. then single threads, those whose sibling is already taken first.

When allocating in a pool above the leaves, BUDGET gives, per pool under it,
the shared capacity (milli-CPU) it has left after the shared CPU already
granted in it; PATH(cpu) names the pools a CPU belongs to (its leaf first).
First each pool gives at most its whole free CPUs (the budget rounded
down); when that cannot meet the request, the budget rounded up (an
overcommit below one CPU, and none where the budget is a whole number of
CPUs); only then are the caps dropped.
"""


def take_cpus(machine, free, count, path=None, budget=None, limit=None):
    """Choose COUNT CPUs from the set FREE; return a frozenset (raise ValueError if short).

    PATH maps a CPU to the keys of the pools it is in, its leaf first
    (default: its NUMA node); BUDGET optionally caps the CPUs taken per key, as a
    preference (milli-CPU, rounded down, then up, then dropped); LIMIT caps them
    always (CPUs).
    """
    if count > len(free):
        raise ValueError("only %d free CPUs, %d wanted" % (len(free), count))
    if path is None:
        def path(c):
            return (machine.cpus[c].node,)
    limit = limit or {}
    passes = []
    if budget:
        passes.append({g: max(0, b // 1000) for g, b in budget.items()})
        passes.append({g: max(0, -(-b // 1000)) for g, b in budget.items()})
    passes.append({})
    for caps in passes:
        for g, n in limit.items():
            caps[g] = min(caps.get(g, n), n)
        chosen = _take(machine, free, count, path, caps)
        if chosen is not None:
            return chosen
    raise ValueError("no %d of the free CPUs leave a CPU to every pool's shared containers"
                     % count)


def _take(machine, free, count, path, cap):
    cpus = machine.cpus
    paths = {c: path(c) for c in free}

    def room(c):
        return min((cap.get(k, count) for k in paths[c]), default=count)

    def take(c):
        for k in paths[c]:
            if k in cap:
                cap[k] -= 1
    free = {c for c in free if room(c) > 0}
    if count > len(free):
        return None
    cores = {}
    for c in free:
        cores.setdefault(cpus[c].core, []).append(c)
    idle = {}        # leaf -> [core thread lists] of idle cores
    for core, threads in cores.items():
        if len(threads) == len(cpus[threads[0]].siblings):
            idle.setdefault(paths[threads[0]][0], []).append(sorted(threads))
    for lst in idle.values():
        lst.sort()

    def size(n):
        return min(room(idle[n][0][0]), sum(len(t) for t in idle[n]))
    chosen = []
    fits = [(size(n), n) for n in idle if size(n) >= count]
    if fits:
        order = [min(fits)[1]]
    else:
        order = sorted(idle, key=lambda n: (-size(n), n))
    for n in order:
        for threads in idle[n]:
            if len(chosen) + len(threads) <= count and room(threads[0]) >= len(threads):
                for c in threads:
                    take(c)
                chosen.extend(threads)
            if len(chosen) == count:
                return frozenset(chosen)
    rest = sorted(free - set(chosen),
                  key=lambda c: (len([s for s in cpus[c].siblings if s in free]),
                                 paths[c][0], c))
    for c in rest:
        if len(chosen) == count:
            break
        if room(c) > 0:
            chosen.append(c)
            take(c)
    if len(chosen) < count:
        return None
    return frozenset(chosen)
