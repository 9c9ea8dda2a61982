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

When allocating in a pool above the leaves, BUDGET (leaf key -> CPUs) caps
what each leaf can give without overcommitting the shared CPU already granted
in it; when that cannot meet the request, each leaf may give one CPU more
(an overcommit below one CPU), and only then is the cap dropped.
"""


def take_cpus(machine, free, count, group=None, budget=None):
    """Choose COUNT CPUs from the set FREE; return a frozenset (raise ValueError if short).

    GROUP maps a CPU to its leaf (default: its NUMA node); BUDGET optionally
    caps the CPUs taken per leaf.
    """
    if count > len(free):
        raise ValueError("only %d free CPUs, %d wanted" % (len(free), count))
    if budget:
        for extra in (0, 1):    # floor budget first; then up to one CPU more per leaf
            capped = _take(machine, free, count, group,
                           {g: b + extra for g, b in budget.items()})
            if capped is not None:
                return capped
    return _take(machine, free, count, group, None)


def _take(machine, free, count, group, budget):
    cpus = machine.cpus
    group = group or (lambda c: cpus[c].node)
    if budget:
        free = {c for c in free if budget.get(group(c), count) > 0}
    if count > len(free):
        return None
    cores = {}
    for c in free:
        cores.setdefault(cpus[c].core, []).append(c)
    idle = {}        # leaf -> [core thread lists] of idle cores
    for core, threads in cores.items():
        sib = cpus[threads[0]].siblings
        if len(threads) == len(sib):
            idle.setdefault(group(threads[0]), []).append(sorted(threads))
    for lst in idle.values():
        lst.sort()
    cap = dict(budget) if budget else {}

    def room(g):
        return cap.get(g, count)

    def size(n):
        return min(room(n), sum(len(t) for t in idle[n]))
    chosen = []
    fits = [(size(n), n) for n in idle if size(n) >= count]
    if fits:
        order = [min(fits)[1]]
    else:
        order = sorted(idle, key=lambda n: (-size(n), n))
    for n in order:
        for threads in idle[n]:
            if len(chosen) + len(threads) <= count and room(n) >= len(threads):
                chosen.extend(threads)
                cap[n] = room(n) - len(threads)
            if len(chosen) == count:
                return frozenset(chosen)
    rest = sorted(free - set(chosen),
                  key=lambda c: (len([s for s in cpus[c].siblings if s in free]), group(c), c))
    for c in rest:
        if len(chosen) == count:
            break
        if room(group(c)) > 0:
            chosen.append(c)
            cap[group(c)] = room(group(c)) - 1
    if len(chosen) < count:
        return None
    return frozenset(chosen)
