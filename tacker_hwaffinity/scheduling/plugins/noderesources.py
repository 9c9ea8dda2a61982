"""NodeResourcesFit (filter and scoring strategies) and NodeResourcesBalancedAllocation.

Filter: pod count, then cpu, memory, ephemeral-storage, then the scalar
resources (extended, hugepages) the pod asks for, in name order; extended
resources in ``ignoredResources`` or ``ignoredResourceGroups`` are not checked.

Scores (no normalisation, as upstream): each listed resource with a non-zero
allocatable scores, and the node's score is the weighted average. A node's
score depends only on that node, so it is kept per request and recomputed only
for the nodes pods were bound to since (``ClusterState.node_values``); scores
of infeasible nodes are left as they are (the framework never reads them). NodeResourcesFit
counts cpu and memory with kube-scheduler's non-zero defaults (100m, 200Mi for a
container without a request); BalancedAllocation counts requests as they are and
skips pods that request none of its resources (best-effort).
"""
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from tacker_hwaffinity.scheduling import resources as res
from tacker_hwaffinity.scheduling.arrays import BoolArray, FloatArray, IntArray
from tacker_hwaffinity.scheduling.framework import Cycle
from tacker_hwaffinity.scheduling.model import PodSpecInfo
from tacker_hwaffinity.scheduling.plugins import Rejection
from tacker_hwaffinity.scheduling.state import ClusterState

LEAST, MOST, RATIO = "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"
DEFAULT_RESOURCES = (("cpu", 1), ("memory", 1))
_FIXED_ORDER = ("cpu", "memory", "ephemeral-storage")
_TABLE_LIMIT = 6  # up to this many checked resources, reasons come from a code table
# (resource, weight, the pod's amount of it) of a NodeResourcesFit score
UsedResources = Sequence[tuple[str, int, int]]


class NodeResourcesFit:
    name = "NodeResourcesFit"

    def __init__(self, strategy: str = LEAST,
                 resources: Iterable[tuple[str, int]] = DEFAULT_RESOURCES,
                 shape: Sequence[tuple[int, int]] = (), ignored: Iterable[str] = (),
                 ignored_groups: Iterable[str] = ()) -> None:
        self.strategy, self.resources = strategy, tuple(resources)
        self.ignored, self.ignored_groups = frozenset(ignored), frozenset(ignored_groups)
        if strategy == RATIO:
            scaled = tuple((u, s * (res.MAX_NODE_SCORE // res.MAX_CUSTOM_PRIORITY_SCORE))
                           for u, s in shape)
            self._ratio = res.broken_linear(scaled)
        self._tables: dict[tuple[str, ...], tuple[tuple[str, ...], ...]] = {}

    def _checked(self, req: Mapping[str, int]) -> list[str]:
        """Resources to check for a pod requesting REQ, in upstream's order."""
        names = [r for r in _FIXED_ORDER if req.get(r, 0) > 0]
        for r in sorted(req):
            if r in _FIXED_ORDER or req[r] == 0 or not res.is_scalar(r):
                continue
            if res.is_extended(r) and (r in self.ignored
                                       or r.split("/")[0] in self.ignored_groups):
                continue
            names.append(r)
        return names

    def filter(self, cycle: Cycle) -> Rejection | None:
        state, req = cycle.state, cycle.pod.spec.requests
        pods = state.allocatable("pods")
        too_many = (pods >= 0) & (state.pod_count + 1 > pods)
        names = self._checked(req)
        shorts: list[BoolArray] = []
        for r in names:
            alloc = state.allocatable(r)
            shorts.append((alloc >= 0) & (req[r] > alloc - state.requested_of(r)))
        if len(names) <= _TABLE_LIMIT:
            codes = too_many.astype(np.int16)
            for bit, short in enumerate(shorts, 1):
                codes |= short.astype(np.int16) << bit
            failed = codes > 0
            if not failed.any():
                return None
            return Rejection(failed, codes=codes, table=self._table(tuple(names)))
        failed = too_many.copy()
        for short in shorts:
            failed |= short

        def why(i: int) -> list[str]:
            out = ["Too many pods"] if too_many[i] else []
            return out + ["Insufficient %s" % r for r, s in zip(names, shorts) if s[i]]
        return Rejection(failed, why) if failed.any() else None

    def _table(self, names: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
        got = self._tables.get(names)
        if got is None:
            labels = ("Too many pods",) + tuple("Insufficient %s" % r for r in names)
            got = self._tables[names] = tuple(
                tuple(label for bit, label in enumerate(labels) if code >> bit & 1)
                for code in range(1 << len(labels)))
        return got

    def _request(self, spec: PodSpecInfo, name: str) -> int | None:
        """The pod's amount of resource NAME as this score counts it, or None to skip it."""
        if name in spec.nonzero_requests:
            return spec.nonzero_requests[name]
        want = spec.requests.get(name, 0)
        return None if want == 0 and res.is_scalar(name) else want

    def scores(self, cycle: Cycle, feasible: BoolArray) -> IntArray:
        state, spec = cycle.state, cycle.pod.spec
        used = tuple((name, weight, want) for name, weight in self.resources
                     if (want := self._request(spec, name)) is not None)
        return state.node_values(("fit", id(self), used),
                                 lambda idx: self._score(state, used, idx),
                                 lambda i: self._score_one(state, used, i))

    def _score_one(self, state: ClusterState, used: UsedResources, i: int) -> int:
        parts: list[tuple[int, int]] = []
        for name, weight, want in used:
            if name in state.nonzero_requested:
                requested = int(state.nonzero_requested[name][i]) + want
            else:
                requested = int(state.requested_of(name)[i]) + want
            alloc = max(int(state.allocatable(name)[i]), 0)
            if alloc == 0:
                continue
            if self.strategy == LEAST:
                score = res.least_requested_one(requested, alloc)
            elif self.strategy == MOST:
                score = res.most_requested_one(requested, alloc)
            else:
                util = requested * res.MAX_NODE_SCORE // alloc if requested <= alloc \
                    else res.MAX_NODE_SCORE
                score = int(self._ratio(np.array([util], dtype=np.int64))[0])
            parts.append((score, weight))
        return res.weighted_average_one(parts, rounded=self.strategy == RATIO,
                                        skip_zero=self.strategy == RATIO)

    def _score(self, state: ClusterState, used: UsedResources, idx: IntArray) -> IntArray:
        parts: list[tuple[IntArray, int, BoolArray]] = []
        for name, weight, want in used:
            if name in state.nonzero_requested:
                requested = state.nonzero_requested[name][idx] + want
            else:
                requested = state.requested_of(name)[idx] + want
            alloc = np.maximum(state.allocatable(name)[idx], 0)
            if self.strategy == LEAST:
                score = res.least_requested(requested, alloc)
            elif self.strategy == MOST:
                score = res.most_requested(requested, alloc)
            else:
                util = np.full(len(alloc), res.MAX_NODE_SCORE, dtype=np.int64)
                ok = (alloc > 0) & (requested <= alloc)
                util[ok] = requested[ok] * res.MAX_NODE_SCORE // alloc[ok]
                score = self._ratio(util)
            parts.append((score, weight, alloc > 0))
        if not parts:
            return np.zeros(len(idx), dtype=np.int64)
        return res.weighted_average(parts, rounded=self.strategy == RATIO,
                                    skip_zero=self.strategy == RATIO)


class NodeResourcesBalancedAllocation:
    name = "NodeResourcesBalancedAllocation"

    def __init__(self, resources: Iterable[tuple[str, int]] = DEFAULT_RESOURCES) -> None:
        self.resources = tuple(resources)

    def scores(self, cycle: Cycle, feasible: BoolArray) -> IntArray:
        state, spec = cycle.state, cycle.pod.spec
        wants = [spec.requests.get(name, 0) for name, _ in self.resources]
        if not any(wants):  # best-effort pod: PreScore returns Skip
            return state.zeros
        used = tuple((name, want) for (name, _), want in zip(self.resources, wants)
                     if not (want == 0 and res.is_scalar(name)))
        return state.node_values(("balanced", used), lambda idx: self._score(state, used, idx),
                                 lambda i: self._score_one(state, used, i))

    @staticmethod
    def _score_one(state: ClusterState, used: Sequence[tuple[str, int]], i: int) -> int:
        fractions: list[float] = []
        for name, want in used:
            alloc = max(int(state.allocatable(name)[i]), 0)
            if alloc > 0:
                fractions.append((int(state.requested_of(name)[i]) + want) / alloc)
        return res.balanced_one(fractions)

    @staticmethod
    def _score(state: ClusterState, used: Sequence[tuple[str, int]], idx: IntArray) -> IntArray:
        fractions: list[FloatArray] = []
        present: list[BoolArray] = []
        for name, want in used:
            alloc = np.maximum(state.allocatable(name)[idx], 0)
            requested = state.requested_of(name)[idx] + want
            ok = alloc > 0
            f = np.zeros(len(idx), dtype=np.float64)
            f[ok] = requested[ok] / alloc[ok]
            fractions.append(f)
            present.append(ok)
        if not present:
            return np.full(len(idx), res.MAX_NODE_SCORE, dtype=np.int64)
        return res.balanced(fractions, present)
