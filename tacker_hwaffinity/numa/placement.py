"""Topology-aware placement: pool scores, ranking and grants (upstream crirm rules).

Containers are placed one at a time, in order, as upstream does; placing a
node's existing containers first rebuilds its state (replay). For each
container:

1. reserved class or namespace ``kube-system``: the root pool, no affinity;
2. otherwise A(C, C2) is summed per pool of the already placed C2
   (``poolAff``), and every pool gets the distance-weighted score
   ``sum over ancestors x: Q^dist * poolAff[x] + sum over subtree x:
   Q^(depth x - depth n) * poolAff[x]`` with Q = 0.75;
3. pools without room for the memory are filtered out, the rest sorted by:
   capacity sufficiency, affinity score, depth (deeper first), then the
   capacity tie-breaks and the lower pool id;
4. the first pool grants exclusive CPUs (whole cores first), the shared
   remainder, and its memory nodes.
"""
import functools
import time

from tacker_hwaffinity.numa import affinity as affmod
from tacker_hwaffinity.numa.cpualloc import take_cpus
from tacker_hwaffinity.numa.cpuset import format_list
from tacker_hwaffinity.numa.pools import build_pools
from tacker_hwaffinity.numa.request import NORMAL, RESERVED, request_for

Q = 0.75


class Grant:
    __slots__ = ("container", "pool", "cpu_type", "exclusive", "portion", "memory")

    def __init__(self, container, pool, cpu_type, exclusive, portion, memory):
        self.container = container
        self.pool = pool
        self.cpu_type = cpu_type
        self.exclusive = exclusive
        self.portion = portion
        self.memory = memory


class Decision:
    """The outcome of placing one container."""

    __slots__ = ("container", "request", "grant", "scores", "pool_affinity", "error", "replayed")

    def __init__(self, container, request=None, grant=None, scores=(), pool_affinity=None,
                 error=None, replayed=False):
        self.container = container
        self.request = request
        self.grant = grant
        self.scores = list(scores)
        self.pool_affinity = pool_affinity or {}
        self.error = error
        self.replayed = replayed


class Score:
    __slots__ = ("pool", "affinity", "shared", "isolated", "reserved", "colocated",
                 "memory_ok", "rank")

    def to_dict(self):
        return {"pool": self.pool.name, "id": self.pool.id, "affinity": round(self.affinity, 6),
                "sharedCapacity": self.shared, "isolatedCapacity": self.isolated,
                "reservedCapacity": self.reserved, "colocated": self.colocated,
                "memoryFits": self.memory_ok, "rank": self.rank}


class Entitlement:
    """What the engine may grant one container on this machine, whatever the state:
    CPU_TYPES, the classes in the order tried (reserved falls back to normal when the
    reserved CPUs are short); FULL exclusive CPUs, from the pool's isolated CPUs (only
    when ISOLATE, and all of them) or from its sharable ones; PORTION milli-CPU of the
    class's shared set; MEMORY bytes; ROOT_ONLY: the root pool only (the reserved
    class and kube-system), where memory is not checked. ``allocate`` grants it and
    ``refusal`` checks a recorded grant against it."""

    __slots__ = ("container", "request", "cpu_types", "full", "portion", "isolate",
                 "memory", "root_only")

    def __init__(self, container, req, root_has_reserved):
        self.container, self.request = container, req
        want = req.cpu_type
        if want == RESERVED and not root_has_reserved:
            want = NORMAL
        self.full, self.portion = req.full, req.fraction
        if want == RESERVED:
            self.full, self.portion = 0, self.portion + 1000 * self.full
        self.cpu_types = (want,) if want == NORMAL or not self.portion else (RESERVED, NORMAL)
        self.isolate, self.memory = req.isolate, req.memory
        self.root_only = want == RESERVED or container.namespace == "kube-system"

    def describe(self):
        """The container's QoS class, CPU request and what it may be granted, in words."""
        c = self.container
        return "%s, cpu request %dm: %s" % (c.pod.qosclass, c.cpu_request, _shape(self.request))


def affinity_score(pool, pool_aff):
    score, q = 0.0, Q
    for a in pool.ancestors():
        score += q * pool_aff.get(a.id, 0)
        q *= Q
    for x in pool.subtree():
        w = pool_aff.get(x.id, 0)
        if w:
            score += Q ** (x.depth - pool.depth) * w
    return score


def _shape(req):
    """What the engine grants for REQ, in words."""
    if req.cpu_type == RESERVED:
        return "%dm reserved CPU" % (req.fraction + 1000 * req.full)
    parts = []
    if req.full:
        parts.append("%d exclusive CPU%s%s" % (req.full, "s" if req.full > 1 else "",
                                               " (isolated preferred)" if req.isolate else ""))
    if req.fraction or not req.full:
        parts.append("%dm shared CPU" % req.fraction)
    return " + ".join(parts)


def on_shared_set(grant):
    """Whether GRANT's cpuset holds its pool's shared CPUs: a normal grant with a shared
    portion or with no exclusive CPUs (a reserved one runs on the reserved CPUs)."""
    return grant.cpu_type == NORMAL and bool(grant.portion or not grant.exclusive)


class Placer:
    """Placement state of one machine."""

    def __init__(self, machine, prefer_isolated=True, reserved_namespaces=("kube-system",),
                 colocate_pods=False, colocate_namespaces=False, affinity_budget=None):
        self.machine = machine
        self.affinity_budget = affinity_budget   # seconds for one container's affinities
        self.pools = build_pools(machine)
        self.root = self.pools[-1]
        self.prefer_isolated = prefer_isolated
        self.reserved_namespaces = tuple(reserved_namespaces)
        self.colocate = (colocate_pods, colocate_namespaces)
        self.used = set()                 # exclusive CPUs granted
        self.shared = [0] * len(self.pools)      # milli-CPU granted as shared, per pool
        self.reserved = [0] * len(self.pools)
        self.mem = [0] * len(self.pools)
        self.sharing = [0] * len(self.pools)    # grants on the pool's shared set
        self.count = {}                   # (pool id, cpu type) -> grants
        self.grants = {}                  # container -> Grant
        self.decisions = []
        self._subtree = [p.subtree() for p in self.pools]
        self._up = [[p] + list(p.ancestors()) for p in self.pools]
        self._affinities = {}
        self._leaf_of = {c: p.id for p in self.pools if p.is_leaf for c in p.cpus}

    # -- capacities ---------------------------------------------------
    def _sub(self, arr, p):
        return sum(arr[x.id] for x in self._subtree[p.id])

    def allocatable_shared(self, p):
        return min(1000 * len(x.sharable - self.used) - self._sub(self.shared, x)
                   for x in self._up[p.id])

    def allocatable_reserved(self, p):
        if not p.reserved:
            return -1
        return min(1000 * len(x.reserved) - self._sub(self.reserved, x) for x in self._up[p.id])

    def free_memory(self, p):
        used = self._sub(self.mem, p) + sum(self.mem[a.id] for a in p.ancestors())
        return p.memory - used

    def score(self, p, req, pool_aff):
        s = Score()
        s.pool = p
        full, part = req.full, req.fraction
        if full == 0 and part == 0:
            part = 1
        s.reserved = self.allocatable_reserved(p)
        s.shared = self.allocatable_shared(p)
        s.isolated = 0
        if req.cpu_type == RESERVED:
            s.reserved -= part
        else:
            if req.isolate:
                s.isolated = len(p.isolated - self.used) - full
            if not req.isolate or s.isolated < 0:
                s.shared -= 1000 * full
            s.shared -= part
        s.colocated = self.count.get((p.id, req.cpu_type), 0)
        s.affinity = affinity_score(p, pool_aff)
        s.memory_ok = self.machine_has_no_memory_info() or req.memory <= self.free_memory(p)
        s.rank = None
        return s

    def machine_has_no_memory_info(self):
        return self.root.memory == 0

    # -- ranking ------------------------------------------------------
    @staticmethod
    def compare(req, s1, s2):
        """-1 if pool of S1 ranks before the pool of S2 (upstream compareScores).

        Upstream's rules, in its order: the pool the request fits in (isolated and shared
        CPUs for a normal container, reserved ones for a reserved one), the higher
        affinity, the deeper pool, the capacity left for the request's CPU type
        (``_compare_by_type``), the lower pool id. Inline but the last rules: the sort
        calls it for every pair."""
        if req.cpu_type == NORMAL:
            if (s2.isolated < 0 <= s1.isolated) or (s2.shared <= 0 < s1.shared):
                return -1
            if (s1.isolated < 0 <= s2.isolated) or (s1.shared <= 0 < s2.shared):
                return 1
        elif req.cpu_type == RESERVED:
            if s2.reserved < 0 <= s1.reserved:
                return -1
            if s1.reserved < 0 <= s2.reserved:
                return 1
        p1, p2 = s1.pool, s2.pool
        if s1.affinity != s2.affinity:
            return -1 if s1.affinity > s2.affinity else 1
        if p1.depth != p2.depth:
            return -1 if p1.depth > p2.depth else 1
        return Placer._compare_by_type(req, s1, s2) or (
            -1 if p1.id < p2.id else (1 if p1.id > p2.id else 0))

    @staticmethod
    def _compare_by_type(req, s1, s2):
        """-1/1 by the capacity left for the request's CPU type, else 0: reserved CPUs per
        colocated container; for a normal container, isolated CPUs when it asks for them
        (pool id on a tie), shared CPUs when it wants whole ones (pool id on a tie), then
        the fewer colocated containers and the more shared CPUs."""
        p1, p2 = s1.pool, s2.pool
        if req.cpu_type == RESERVED:
            r1, r2 = s1.reserved / (s1.colocated + 1), s2.reserved / (s2.colocated + 1)
            if r1 != r2:
                return -1 if r1 > r2 else 1
        elif req.cpu_type == NORMAL:
            if req.isolate and (s1.isolated > 0 or s2.isolated > 0):
                if s1.isolated != s2.isolated:
                    return -1 if s1.isolated > s2.isolated else 1
                return -1 if p1.id < p2.id else 1
            if req.full > 0 and (s1.shared > 0 or s2.shared > 0):
                if s1.shared != s2.shared:
                    return -1 if s1.shared > s2.shared else 1
                return -1 if p1.id < p2.id else 1
            if s1.colocated != s2.colocated:
                return -1 if s1.colocated < s2.colocated else 1
            if s1.shared != s2.shared:
                return -1 if s1.shared > s2.shared else 1
        return 0

    def rank_pools(self, req, pool_aff):
        """Scores of all pools, and the candidate pools best first."""
        scores = [self.score(p, req, pool_aff) for p in self.pools]
        cands = [s for s in scores if s.memory_ok]
        cands.sort(key=functools.cmp_to_key(lambda a, b: self.compare(req, a, b)))
        for i, s in enumerate(cands):
            s.rank = i + 1
        return scores, cands

    # -- placing ------------------------------------------------------
    def set_affinities(self, container, affinities):
        self._affinities[container] = affinities

    def pool_affinity(self, container):
        affs = self._affinities.get(container, [])
        affs = affs + affmod.implicit_affinities(container, bool(affs), *self.colocate)
        deadline = None if self.affinity_budget is None else \
            time.monotonic() + self.affinity_budget
        eff = affmod.evaluate(affs, container, list(self.grants), deadline)
        pool_aff = {}
        for c2, w in eff.items():
            pid = self.grants[c2].pool.id
            pool_aff[pid] = pool_aff.get(pid, 0) + w
        return pool_aff

    def place(self, container, replayed=False):
        """Place CONTAINER; return its Decision (with .error when it cannot be placed).

        Raises InputError for a malformed preference annotation, and its subclass
        ``affinity.OverBudget`` when the container's affinities take longer than
        ``affinity_budget`` to evaluate."""
        req = request_for(container, self.prefer_isolated, self.reserved_namespaces)
        if req.cpu_type == RESERVED and not self.root.reserved:
            req.cpu_type = NORMAL
        scores, pool_aff = [], {}
        if req.cpu_type == RESERVED or container.namespace == "kube-system":
            pool = self.root
        else:
            pool_aff = self.pool_affinity(container)
            scores, cands = self.rank_pools(req, pool_aff)
            if not cands:
                return self.record(Decision(container, req, None, scores, pool_aff,
                                             "no pool has %d bytes of free memory" % req.memory,
                                             replayed))
            pool = cands[0].pool
        try:
            grant = self.allocate(pool, req, container)
        except ValueError as e:
            return self.record(Decision(container, req, None, scores, pool_aff,
                                         "cannot allocate from %s: %s" % (pool.name, e), replayed))
        return self.record(Decision(container, req, grant, scores, pool_aff, None, replayed))

    def record(self, d):
        self.decisions.append(d)
        return d

    def entitlement(self, container, req):
        """The Entitlement of CONTAINER, whose request is REQ, on this machine."""
        return Entitlement(container, req, bool(self.root.reserved))

    def allocate(self, pool, req, container):
        """Grant CONTAINER (request REQ) its ``entitlement`` from POOL, choosing its
        exclusive CPUs; raises ValueError saying what is short (``shortfall``)."""
        ent = self.entitlement(container, req)
        exclusive = self._take_exclusive(pool, ent)
        why = None
        for cpu_type in ent.cpu_types:
            why = self.shortfall(pool, ent, cpu_type, exclusive, "wanted")
            if why is None:
                return self._commit(Grant(container, pool, cpu_type, exclusive, ent.portion,
                                          ent.memory))
        raise ValueError(why)

    def _take_exclusive(self, pool, ent):
        """ENT's exclusive CPUs from POOL: isolated ones when it prefers them and enough
        are free, else sharable ones, topology-packed (``take_cpus``); raises ValueError
        when the sharable ones lack the room."""
        if not ent.full:
            return frozenset()
        iso = pool.isolated - self.used
        path, budget = self._budget(pool)
        if ent.isolate and len(iso) >= ent.full:
            return take_cpus(self.machine, iso, ent.full, path)
        why = self._exclusive_shortfall(pool, ent.full, "wanted")
        if why:
            raise ValueError(why)
        limit = {x.id: len(x.sharable - self.used) - 1 for x in self._sharing_below(pool)}
        return take_cpus(self.machine, pool.sharable - self.used, ent.full, path, budget,
                         limit)

    def _sharing_below(self, pool):
        """The pools under POOL with a grant on their shared set (``on_shared_set``):
        each must keep a sharable CPU free, or that container's cpuset would be empty.
        POOL itself and its ancestors keep one by the capacity check
        (``_exclusive_shortfall``)."""
        return [x for x in self._subtree[pool.id][1:] if self.sharing[x.id]]

    def shortfall(self, pool, ent, cpu_type, exclusive, verb, where=""):
        """Why POOL cannot hold, now, a grant of ENT of CPU_TYPE with the EXCLUSIVE CPUs
        (free CPUs of POOL, of the kind ENT may have); None when it can. VERB ("wanted",
        "recorded") and WHERE (" in pool ...") word the answer."""
        if ent.root_only and pool is not self.root:
            return "pool %r %s, the engine grants pool %r (%s)" % (
                pool.name, verb, self.root.name, ent.describe())
        if exclusive and not exclusive <= pool.isolated:
            why = self._exclusive_shortfall(pool, ent.full, verb)
            if why:
                return why + where
            for x in self._sharing_below(pool):
                if not x.sharable - self.used - exclusive:
                    return "exclusive CPUs %s %s would leave the shared containers of " \
                        "pool %r no CPU" % (format_list(exclusive), verb, x.name)
        if not ent.root_only and not self.machine_has_no_memory_info() \
                and ent.memory > self.free_memory(pool):
            return "pool %r has not %d bytes of free memory left" % (pool.name, ent.memory)
        if ent.portion and cpu_type == NORMAL:
            left = self._shared_left(pool, exclusive)
            if left < ent.portion:
                return "%dm shared CPU %s, %dm left%s" % (ent.portion, verb, left, where)
        elif ent.portion and self.allocatable_reserved(pool) < ent.portion:
            return "%dm reserved CPU %s, %dm left%s" % (
                ent.portion, verb, max(self.allocatable_reserved(pool), 0), where)
        if cpu_type == NORMAL and (ent.portion or not exclusive) \
                and not pool.sharable - self.used - exclusive:
            return "no shared CPU left%s" % (where or " in pool %r" % pool.name)
        return None

    def _exclusive_shortfall(self, pool, full, verb):
        """Why FULL sharable CPUs of POOL cannot be granted exclusively now: upstream
        keeps the shared capacity strictly above them; None when they can."""
        left = self.allocatable_shared(pool)
        if left <= 1000 * full:
            return "%d exclusive CPUs %s, %dm shared capacity left" % (full, verb, left)
        return None

    def restore(self, container, pool_name, cpu_type, exclusive, portion):
        """Take back a grant recorded earlier (the node agent's annotation) instead of
        deciding again. The annotation is written on the pod, so anyone who can create
        the pod can write it: the grant is taken back only when it is one the engine
        could make for CONTAINER (``refusal``), and only while it fits. Returns the
        Decision: a restored one, or one with ``.error`` saying why not (then nothing
        was granted and the container is to be placed afresh).

        Raises InputError for a malformed preference annotation (as ``place``)."""
        req = request_for(container, self.prefer_isolated, self.reserved_namespaces)
        exclusive = frozenset(exclusive)
        why = self.refusal(container, req, pool_name, cpu_type, exclusive, portion)
        if why:
            return Decision(container, req, None, (), {}, why, True)
        pool = next(p for p in self.pools if p.name == pool_name)
        grant = self._commit(Grant(container, pool, cpu_type, exclusive, portion, req.memory))
        return self.record(Decision(container, req, grant, (), {}, None, True))

    def refusal(self, container, req, pool_name, cpu_type, exclusive, portion):
        """Why the recorded grant (POOL_NAME, CPU_TYPE, EXCLUSIVE CPUs, PORTION milli-CPU)
        is not one ``place`` could give CONTAINER, whose request is REQ, in some state of
        this machine, or does not fit now; None when it can be taken back.

        The grant must be the container's ``entitlement`` (any of its CPU classes: the
        reserved CPUs may have been short then; any pool with room: what the ranking
        chose depends on the containers placed then), of free CPUs of the pool of the
        kind it may have, and fit now (``shortfall``, as ``allocate`` checks it)."""
        pool = next((p for p in self.pools if p.name == pool_name), None)
        if pool is None:
            return "pool %r is not a pool of this node" % (pool_name,)
        ent = self.entitlement(container, req)
        if cpu_type not in ent.cpu_types:
            return "cpuType %r recorded, the engine grants %s (%s)" % (
                cpu_type, " or ".join(repr(t) for t in ent.cpu_types), ent.describe())
        if ent.root_only and pool is not self.root:
            return self.shortfall(pool, ent, cpu_type, exclusive, "recorded")
        if len(exclusive) != ent.full:
            return "%d exclusive CPUs recorded, the engine grants %d (%s)" % (
                len(exclusive), ent.full, ent.describe())
        if portion != ent.portion:
            return "sharedMilliCpu %d recorded, the engine grants %d (%s)" % (
                portion, ent.portion, ent.describe())
        if exclusive:
            if not exclusive <= pool.cpus:
                return "exclusive CPUs %s are not in pool %r" % (
                    format_list(exclusive - pool.cpus), pool.name)
            if exclusive & pool.reserved:
                return "exclusive CPUs %s are reserved CPUs" % format_list(
                    exclusive & pool.reserved)
            if not (exclusive <= pool.sharable
                    or (ent.isolate and exclusive <= pool.isolated)):
                return "exclusive CPUs %s mix isolated and shared CPUs or are isolated CPUs " \
                    "for a request that does not prefer them (%s)" % (format_list(exclusive),
                                                                    ent.describe())
            if exclusive & self.used:
                return "exclusive CPUs %s are granted to another container" % format_list(
                    exclusive & self.used)
        return self.shortfall(pool, ent, cpu_type, exclusive, "recorded",
                              " in pool %r" % pool.name)

    def release(self, container):
        """Give CONTAINER's grant back (the container is gone): its exclusive CPUs
        return to the shared sets, its shared and reserved portions and memory are
        freed. Returns the Grant, or None if it had none."""
        self._affinities.pop(container, None)
        grant = self.grants.get(container)
        return None if grant is None else self._uncommit(grant)

    # -- the accounting: every counter changes here, and only here ----------------
    def _commit(self, grant):
        """Count GRANT in (its exclusive CPUs, its shared or reserved portion, its
        memory, the grants of its pool and class) and record it; returns it."""
        self._count(grant, 1)
        self.used |= grant.exclusive
        self.grants[grant.container] = grant
        return grant

    def _uncommit(self, grant):
        """Undo ``_commit(GRANT)``; returns it."""
        self._count(grant, -1)
        self.used -= grant.exclusive
        del self.grants[grant.container]
        return grant

    def _count(self, grant, sign):
        pid = grant.pool.id
        if grant.portion > 0:
            (self.shared if grant.cpu_type == NORMAL else self.reserved)[pid] += \
                sign * grant.portion
        self.mem[pid] += sign * grant.memory
        if on_shared_set(grant):
            self.sharing[pid] += sign
        key = (pid, grant.cpu_type)
        n = self.count.get(key, 0) + sign
        if n:
            self.count[key] = n
        else:
            self.count.pop(key, None)

    def _shared_left(self, pool, exclusive):
        """``allocatable_shared(POOL)`` once EXCLUSIVE (CPUs not granted yet) are."""
        taken = exclusive - self.used
        self.used |= taken
        try:
            return self.allocatable_shared(pool)
        finally:
            self.used -= taken

    def _budget(self, pool):
        """Pools under POOL a CPU belongs to (leaf first), and the shared
        capacity (milli-CPU) each has left after the shared CPU granted in it."""
        up = self._up
        leaf_of = self._leaf_of

        def path(c):
            leaf = leaf_of[c]
            return (leaf,) + tuple(x.id for x in up[leaf][1:] if x.depth > pool.depth)
        budget = {}
        for x in self._subtree[pool.id][1:]:
            budget[x.id] = 1000 * len(x.sharable - self.used) - self._sub(self.shared, x)
        return path, budget

    def shared_cpus(self, pool, cpu_type):
        """The CPUs POOL's shared containers of CPU_TYPE run on now (the reserved set
        for the reserved type; else what exclusive grants left)."""
        if cpu_type == RESERVED:
            return pool.reserved
        return pool.sharable - self.used

    def cpuset(self, grant):
        """The container's current cpuset (shared sets shrink as exclusive CPUs go)."""
        shared = self.shared_cpus(grant.pool, grant.cpu_type)
        if grant.cpu_type == RESERVED or not grant.exclusive:
            return shared
        if grant.portion > 0:
            return grant.exclusive | shared
        return grant.exclusive

    @staticmethod
    def memset(grant):
        return frozenset(grant.pool.mem_nodes)
