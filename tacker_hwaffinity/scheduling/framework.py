"""One scheduling cycle: filter every node, score the feasible ones, pick one.

Filters run in kube-scheduler's default order and a node's status is its
first failing plugin, as in ``RunFilterPlugins``. Each score plugin gives
its normalised scores over the feasible nodes (``scores(cycle, feasible)``,
0 where a plugin skips the pod), multiplied by the plugin weight and summed.

Tie-break (kube-scheduler's selectHost picks at random, uniformly, among the
nodes with the highest total): among those, the one with the highest
least-allocated cpu/memory score for this pod, then the fewest bound pods,
then the first node name in lexicographic order. Deterministic: the same
input always gives the same plan, and the plan is one kube-scheduler can make.
"""
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from tacker_hwaffinity.scheduling import resources
from tacker_hwaffinity.scheduling.arrays import BoolArray, IntArray
from tacker_hwaffinity.scheduling.model import Pod
from tacker_hwaffinity.scheduling.plugins import (
    DIDNT_SATISFY, FilterPlugin, PreFilterPlugin, Rejection, ScorePlugin)
from tacker_hwaffinity.scheduling.state import ClusterState, PluginData

NO_NODE_AVAILABLE = "0/%d nodes are available:"


class Cycle:
    """One pod's scheduling cycle. ``data(plugin)``: the dict a plugin keeps for this
    cycle (kube-scheduler's CycleState, keyed by the plugin's name)."""

    __slots__ = ("state", "pod", "_data")

    def __init__(self, state: ClusterState, pod: Pod) -> None:
        self.state, self.pod = state, pod
        self._data: dict[str, PluginData] = {}

    def data(self, plugin: str) -> PluginData:
        got = self._data.get(plugin)
        if got is None:
            got = self._data[plugin] = {}
        return got


class Evaluation:
    """The outcome of filtering and scoring one pod against every node."""

    def __init__(self, state: ClusterState, pod: Pod, filters: Sequence[FilterPlugin],
                 rejections: Sequence[Rejection | None],
                 prefilter_msg: tuple[str, str] | None, prefilter_absent: BoolArray | None,
                 absent_reason: str = "") -> None:
        self.state, self.pod = state, pod
        self.filters = filters
        self.rejections = rejections  # aligned with filters; None = passed all nodes
        self.prefilter_msg = prefilter_msg
        self.prefilter_absent = prefilter_absent
        self.absent_reason = absent_reason
        n = len(state.nodes)
        if prefilter_msg:
            self.feasible: BoolArray = np.zeros(n, dtype=bool)
        else:
            failed = np.zeros(n, dtype=bool) if prefilter_absent is None \
                else prefilter_absent.copy()   # nodes no PreFilterResult allows
            for r in rejections:
                if r is not None:
                    failed |= r.failed
            self.feasible = ~failed
        self.scores: dict[str, IntArray] = {}
        self.total: IntArray = np.zeros(n, dtype=np.int64)

    def reasons(self, i: int) -> list[str]:
        """Reasons node I is infeasible: its first failing filter's (empty when feasible)."""
        if self.prefilter_msg:
            return [self.prefilter_msg[1]]
        for r in self.rejections:
            if r is not None and r.failed[i]:
                return r.reasons(i)
        return []

    def summary(self) -> str:
        """kube-scheduler's FitError message for a pod no node can take."""
        msg = NO_NODE_AVAILABLE % len(self.state.nodes)
        if self.prefilter_msg:
            return "%s %s." % (msg, self.prefilter_msg[1])
        histogram: dict[str, int] = {}
        remaining = ~self.feasible
        if self.prefilter_absent is not None:
            absent = remaining & self.prefilter_absent
            if absent.any():
                histogram[self.absent_reason] = int(absent.sum())
            remaining &= ~self.prefilter_absent
        for r in self.rejections:  # a node counts under its first failing plugin
            if r is not None:
                mine = remaining & r.failed
                if mine.any():
                    r.histogram(mine, histogram)
                remaining &= ~r.failed
        parts = sorted("%d %s" % (c, r) for r, c in histogram.items())
        return "%s %s." % (msg, ", ".join(parts)) if parts else msg


class Framework:
    """A profile made runnable: ordered filter plugins and weighted score plugins."""

    def __init__(self, filters: Iterable[FilterPlugin],
                 scorers: Iterable[tuple[ScorePlugin, int]]) -> None:
        self.filters = list(filters)
        self.scorers = list(scorers)  # [(plugin, weight)]
        self._prefilters = [f for f in self.filters if isinstance(f, PreFilterPlugin)]
        self.percentage_of_nodes_to_score: int | None = None   # see sampling.py
        self.preemption = False  # DefaultPreemption enabled (not modelled: named in notes)

    def evaluate(self, state: ClusterState, pod: Pod, score: bool = True) -> Evaluation:
        cycle = Cycle(state, pod)
        prefilter_msg, absent, absent_reason = self._prefilter(cycle)
        rejections = [] if prefilter_msg else [f.filter(cycle) for f in self.filters]
        ev = Evaluation(state, pod, self.filters, rejections, prefilter_msg, absent,
                        absent_reason)
        if score and ev.feasible.any():
            for plugin, weight in self.scorers:
                norm = plugin.scores(cycle, ev.feasible)
                ev.scores[plugin.name] = norm
                if norm is not state.zeros:
                    ev.total += weight * norm
        return ev

    def _prefilter(self, cycle: Cycle) -> tuple[tuple[str, str] | None, BoolArray | None, str]:
        """RunPreFilterPlugins: ((plugin, message) of the first plugin that rejects the
        pod, or None; the nodes no result allows (the results intersected), or None;
        their reason, naming the plugins that narrowed the nodes, sorted)."""
        allowed: frozenset[str] | None = None
        narrowed: list[str] = []
        for f in self._prefilters:
            r = f.prefilter(cycle)
            if r is None:
                continue
            if r.message:
                return (r.plugin, r.message), None, ""
            if r.names is not None:
                allowed = r.names if allowed is None else allowed & r.names
                narrowed.append(r.plugin)
        if allowed is None:
            return None, None, ""
        state = cycle.state
        absent = np.ones(len(state.nodes), dtype=bool)
        for name in allowed:
            j = state.index.get(name)
            if j is not None:
                absent[j] = False
        return None, absent, DIDNT_SATISFY % " ".join(sorted(set(narrowed)))

    def select(self, state: ClusterState, ev: Evaluation) -> int | None:
        """Index of the node to bind to, or None."""
        if not ev.feasible.any():
            return None
        # total, then least-allocated (0..100) in one key; infeasible nodes below all
        key = np.where(ev.feasible, ev.total * 128
                       + least_allocated(state, ev.pod.spec.nonzero_requests), -1)
        best = np.flatnonzero(key == key.max())
        if len(best) > 1:
            pods = state.pod_count[best]
            best = best[pods == pods.min()]
        return int(best[int(np.argmin(state.names_rank[best]))])


def least_allocated(state: ClusterState, pod_nonzero: Mapping[str, int]) -> IntArray:
    """LeastAllocated cpu/memory score (weight 1 each) of every node: the tie-break key."""
    want = (pod_nonzero["cpu"], pod_nonzero["memory"])

    def compute(nodes: IntArray) -> IntArray:
        parts: list[tuple[IntArray, int, BoolArray]] = []
        for r, w in zip(("cpu", "memory"), want):
            cap = np.maximum(state.allocatable(r)[nodes], 0)
            req = state.nonzero_requested[r][nodes] + w
            parts.append((resources.least_requested(req, cap), 1, cap > 0))
        return resources.weighted_average(parts)

    def compute_one(i: int) -> int:
        parts: list[tuple[int, int]] = []
        for r, w in zip(("cpu", "memory"), want):
            cap = max(int(state.allocatable(r)[i]), 0)
            if cap > 0:
                req = int(state.nonzero_requested[r][i]) + w
                parts.append((resources.least_requested_one(req, cap), 1))
        return resources.weighted_average_one(parts)
    return state.node_values(("tie-least-allocated", want), compute, compute_one)
