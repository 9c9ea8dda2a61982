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


class _PoolCaps:
    """How many more CPUs each pool may give in one allocation: CAP, charged per CPU taken.

    PATHS maps a free CPU to the keys of the pools it is in, its leaf first; a
    pool without a cap may give all COUNT CPUs.
    """

    def __init__(self, paths, cap, count):
        self.paths = paths
        self.cap = cap
        self.count = count

    def room(self, c):
        """How many more CPUs the pools of CPU C may give together."""
        return min((self.cap.get(k, self.count) for k in self.paths[c]), default=self.count)

    def take(self, c):
        """Charge CPU C to the capped pools it is in."""
        for k in self.paths[c]:
            if k in self.cap:
                self.cap[k] -= 1


def _idle_cores(cpus, free, paths):
    """Leaf -> the sorted thread lists of its idle cores (every online thread in FREE)."""
    cores = {}
    for c in free:
        cores.setdefault(cpus[c].core, []).append(c)
    idle = {}
    for threads in cores.values():
        if len(threads) == len(cpus[threads[0]].siblings):
            idle.setdefault(paths[threads[0]][0], []).append(sorted(threads))
    for lst in idle.values():
        lst.sort()
    return idle


def _leaf_order(idle, caps, count):
    """The leaves to take idle cores from, in turn: the one with the fewest idle CPUs
    (within its room) that holds COUNT, lowest id on ties; else all, most idle CPUs first."""
    def size(n):
        return min(caps.room(idle[n][0][0]), sum(len(t) for t in idle[n]))
    fits = [(size(n), n) for n in idle if size(n) >= count]
    if fits:
        return [min(fits)[1]]
    return sorted(idle, key=lambda n: (-size(n), n))


def _take_idle_cores(idle, count, caps, chosen):
    """Add whole idle cores to CHOSEN (leaf by leaf) while they fit; True once it holds COUNT."""
    for n in _leaf_order(idle, caps, count):
        for threads in idle[n]:
            if len(chosen) + len(threads) <= count and caps.room(threads[0]) >= len(threads):
                for c in threads:
                    caps.take(c)
                chosen.extend(threads)
            if len(chosen) == count:
                return True
    return False


def _take_threads(cpus, free, count, caps, chosen):
    """Fill CHOSEN up to COUNT with single threads of FREE, those with fewer free siblings
    first, then by leaf and id."""
    rest = sorted(free - set(chosen),
                  key=lambda c: (len([s for s in cpus[c].siblings if s in free]),
                                 caps.paths[c][0], c))
    for c in rest:
        if len(chosen) == count:
            break
        if caps.room(c) > 0:
            chosen.append(c)
            caps.take(c)


def _take(machine, free, count, path, cap):
    """COUNT CPUs of FREE, no more from a pool than its CAP allows, as a frozenset (None if
    they cannot be found); CAP is charged for the CPUs taken."""
    caps = _PoolCaps({c: path(c) for c in free}, cap, count)
    free = {c for c in free if caps.room(c) > 0}
    if count > len(free):
        return None
    chosen = []
    if _take_idle_cores(_idle_cores(machine.cpus, free, caps.paths), count, caps, chosen):
        return frozenset(chosen)
    _take_threads(machine.cpus, free, count, caps, chosen)
    if len(chosen) < count:
        return None
    return frozenset(chosen)
