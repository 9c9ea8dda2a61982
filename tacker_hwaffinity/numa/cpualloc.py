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
"""


def take_cpus(machine, free, count):
    """Choose COUNT CPUs from the set FREE; return a frozenset (raise ValueError if short)."""
    if count > len(free):
        raise ValueError("only %d free CPUs, %d wanted" % (len(free), count))
    cpus = machine.cpus
    cores = {}
    for c in free:
        cores.setdefault(cpus[c].core, []).append(c)
    idle = {}        # node -> [core thread lists] of idle cores
    for core, threads in cores.items():
        sib = cpus[threads[0]].siblings
        if len(threads) == len(sib):
            idle.setdefault(cpus[threads[0]].node, []).append(sorted(threads))
    for lst in idle.values():
        lst.sort()
    chosen = []
    fits = [(sum(len(t) for t in lst), n) for n, lst in idle.items()
            if sum(len(t) for t in lst) >= count]
    if fits:
        order = [min(fits)[1]]
    else:
        order = sorted(idle, key=lambda n: (-sum(len(t) for t in idle[n]), n))
    for n in order:
        for threads in idle[n]:
            if len(chosen) + len(threads) <= count:
                chosen.extend(threads)
            if len(chosen) == count:
                return frozenset(chosen)
    rest = sorted(free - set(chosen),
                  key=lambda c: (len([s for s in cpus[c].siblings if s in free]), cpus[c].node, c))
    chosen.extend(rest[:count - len(chosen)])
    return frozenset(chosen)
