"""PodTopologySpread: DoNotSchedule constraints filter, ScheduleAnyway constraints score.

Counts: per node, the bound pods of the incoming pod's namespace that the
constraint's selector matches, terminating pods left out; kept up to date on
every binding (``ClusterState.node_counts``), and summed per domain of the
topology key over the nodes a constraint counts (they have every key of the
pod's constraints and pass its nodeAffinityPolicy/nodeTaintsPolicy).

Filter: a node without the key fails ("missing required label"); otherwise
``count(domain) + (1 if the pod matches its own selector) - global minimum``
must not exceed ``maxSkew``; the global minimum is 0 while there are fewer
domains than ``minDomains``.

Score: pods without their own constraints get the default constraints (system
defaults: hostname maxSkew 3 and zone maxSkew 5, ScheduleAnyway) with the
selector of their Services and controller; ``count * log(domains + 2) +
maxSkew - 1`` per constraint, rounded; normalised so the fewest matching pods
scores 100, nodes lacking a key score 0.
"""
import math
from collections.abc import Hashable, Iterable, Sequence

import numpy as np

from tacker_hwaffinity.constants import HOSTNAME
from tacker_hwaffinity.scheduling.arrays import BoolArray, IntArray
from tacker_hwaffinity.scheduling.framework import Cycle
from tacker_hwaffinity.scheduling.model import tolerates
from tacker_hwaffinity.scheduling.plugins import Rejection
from tacker_hwaffinity.scheduling.spreading import (
    DO_NOT_SCHEDULE, HONOR, SCHEDULE_ANYWAY, SYSTEM_DEFAULTS, Constraint, RawConstraint)
from tacker_hwaffinity.scheduling.state import ClusterState

NAME = "PodTopologySpread"
ERR_CONSTRAINTS = "node(s) didn't match pod topology spread constraints"
ERR_LABEL = ERR_CONSTRAINTS + " (missing required label)"
_REASONS = ((), (ERR_LABEL,), (ERR_CONSTRAINTS,))


class PodTopologySpread:
    name = NAME

    def __init__(self, default_constraints: Iterable[RawConstraint] = SYSTEM_DEFAULTS,
                 system_defaulted: bool = True) -> None:
        self.defaults = tuple(default_constraints)
        self.system_defaulted = system_defaulted

    def constraints(self, cycle: Cycle, action: str) -> tuple[Constraint, ...]:
        """The pod's constraints for ACTION: its own, or the defaults (getConstraints)."""
        data = cycle.data(NAME)
        got: tuple[Constraint, ...] | None = data.get(action)
        if got is not None:
            return got
        pod = cycle.pod
        if pod.spread:
            got = tuple(c for c in pod.spread if c.action == action)
        else:
            got = ()
            defaults = [c for c in self.defaults if c.action == action]
            selector = cycle.state.default_selector(pod) if defaults else None
            if selector is not None:
                got = tuple(c.resolve(pod.labels, True).with_selector(selector)
                            for c in defaults)
        data[action] = got
        return got

    @staticmethod
    def _has_keys(state: ClusterState, constraints: Sequence[Constraint]) -> BoolArray:
        mask = np.ones(len(state.nodes), dtype=bool)
        for c in constraints:
            mask &= state.domains(c.topology_key).present
        return mask

    @staticmethod
    def _included(cycle: Cycle, c: Constraint) -> BoolArray | None:
        """Nodes constraint C counts pods on, by its node inclusion policies (or None: all)."""
        state, spec = cycle.state, cycle.pod.spec
        mask: BoolArray | None = None
        key: Hashable
        if c.affinity_policy == HONOR and (spec.node_selector or spec.required_node is not None):
            sel, req = spec.node_selector, spec.required_node
            key = ("affinity", tuple(sorted(sel.items())), None if req is None else req.sig)
            masks = state.data(NAME)  # nodes do not change during a plan
            mask = masks.get(key)
            if mask is None:
                mask = masks[key] = np.fromiter(
                    (all(n.labels.get(k) == v for k, v in sel.items())
                     and (req is None or req.matches(n.labels, n.name)) for n in state.nodes),
                    dtype=bool, count=len(state.nodes))
        if c.taints_policy == HONOR:
            tols = spec.tolerations
            key = ("taints", tuple((t.key, t.operator, t.value, t.effect) for t in tols))
            masks = state.data(NAME)
            tmask: BoolArray | None = masks.get(key)
            if tmask is None:
                tmask = masks[key] = np.fromiter(
                    (all(tolerates(tols, t) for t in n.taints
                         if t.effect in ("NoSchedule", "NoExecute")) for n in state.nodes),
                    dtype=bool, count=len(state.nodes))
            mask = tmask if mask is None else mask & tmask
        return mask

    @staticmethod
    def _node_counts(cycle: Cycle, c: Constraint) -> IntArray:
        pod = cycle.pod
        ns, sel = pod.namespace, c.selector
        return cycle.state.node_counts(
            ("pts", ns, sel.sig),
            lambda p: p.namespace == ns and sel.matches(p.labels))

    def filter(self, cycle: Cycle) -> Rejection | None:
        constraints = self.constraints(cycle, DO_NOT_SCHEDULE)
        if not constraints:
            return None
        state, pod = cycle.state, cycle.pod
        n = len(state.nodes)
        eligible = self._has_keys(state, constraints)
        code = np.zeros(n, dtype=np.int8)
        for c in constraints:
            domains = state.domains(c.topology_key)
            counted = eligible
            included = self._included(cycle, c)
            if included is not None:
                counted = counted & included
            ids = domains.ids[counted]
            per_domain = np.bincount(ids, weights=self._node_counts(cycle, c)[counted],
                                     minlength=len(domains)).astype(np.int64)
            present = np.bincount(ids, minlength=len(domains)) > 0
            n_domains = int(present.sum())
            minimum: int | None
            if n_domains == 0:
                minimum = None  # no domain: every skew passes (the minimum is MaxInt32)
            elif n_domains < c.min_domains:
                minimum = 0
            else:
                minimum = int(per_domain[present].min())
            open_ = code == 0
            code[open_ & ~domains.present] = 1
            if minimum is not None:
                self_match = 1 if c.selector.matches(pod.labels) else 0
                skew = domains.spread(per_domain) + self_match - minimum
                code[open_ & domains.present & (skew > c.max_skew)] = 2
        failed = code > 0
        if not failed.any():
            return None
        return Rejection(failed, codes=code, table=_REASONS)

    def scores(self, cycle: Cycle, feasible: BoolArray) -> IntArray:
        state, pod = cycle.state, cycle.pod
        n = len(state.nodes)
        out = np.zeros(n, dtype=np.int64)
        constraints = self.constraints(cycle, SCHEDULE_ANYWAY)
        if not constraints or not feasible.any():
            return out
        require_all = bool(pod.spread) or not self.system_defaulted
        has_keys = self._has_keys(state, constraints)
        scored = feasible & has_keys if require_all else feasible.copy()
        raw = np.zeros(n, dtype=np.float64)
        for c in constraints:
            domains = state.domains(c.topology_key)
            counts = self._node_counts(cycle, c)
            if c.topology_key == HOSTNAME:
                size = int(scored.sum())
                per_node = counts
            else:
                # domains of the scored nodes; without the key a node's value is "" (-1)
                ids = domains.ids
                used = np.zeros(len(domains) + 1, dtype=bool)
                used[ids[scored]] = True  # index -1 is the "" domain
                size = int(used.sum())
                counted = has_keys.copy() if require_all else np.ones(n, dtype=bool)
                included = self._included(cycle, c)
                if included is not None:
                    counted &= included
                sums = np.bincount(ids[counted] % (len(domains) + 1),
                                   weights=counts[counted], minlength=len(domains) + 1)
                per_node = np.where(domains.present, sums[ids], 0)
            weight = math.log(size + 2)
            raw += np.where(domains.present, per_node * weight + (c.max_skew - 1), 0.0)
        node_score = np.floor(raw + 0.5).astype(np.int64)  # math.Round, non-negative
        if not scored.any():
            return out
        lo, hi = int(node_score[scored].min()), int(node_score[scored].max())
        if hi == 0:
            out[scored] = 100
        else:
            out[scored] = 100 * (hi + lo - node_score[scored]) // hi
        return out
