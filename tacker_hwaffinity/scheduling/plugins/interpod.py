"""InterPodAffinity: the one evaluator of inter-pod terms, and the engine's plugin.

The rules (kube-scheduler's ``interpodaffinity`` plugin) are written once, here,
over a small counts interface, and read by three callers:

* ``InterPodAffinity`` (plan, explain, audit) over ``ClusterState``;
* the scheduler extender (``webhook/extender.py``) over its pod index;
* the RequiredDuringExecution check (``controller/rules.py``) over running pods.

A *view* is what an evaluation reads: the counts interface, declared as
``scheduling.counts.CountsView`` (its slots are the nodes being judged).

``filter_codes`` gives each slot one code (0 passes; 1, 2, 3 index ``REASONS``),
the engine's precedence: the pod's required affinity over its required
anti-affinity over existing pods' required anti-affinity. ``raw_scores`` and
``normalize`` are the score and NormalizeScore.
"""
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import cast

import numpy as np
from numpy.typing import NDArray

from tacker_hwaffinity.scheduling.arrays import BoolArray, IntArray
from tacker_hwaffinity.scheduling.counts import CountsView
from tacker_hwaffinity.scheduling.framework import Cycle
from tacker_hwaffinity.scheduling.nodetable import spread
from tacker_hwaffinity.scheduling.plugins import Rejection
from tacker_hwaffinity.scheduling.state import DomainMatcher
from tacker_hwaffinity.scheduling.termgroups import TermGroups
from tacker_hwaffinity.scheduling.terms import NO_LABELS, AffinityTerm

NAME = "InterPodAffinity"
ERR_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_ANTI = "node(s) didn't match pod anti-affinity rules"
ERR_EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
REASONS = ((), (ERR_AFFINITY,), (ERR_ANTI,), (ERR_EXISTING_ANTI,))
PASS, AFFINITY, ANTI, EXISTING_ANTI = 0, 1, 2, 3

def anti_hits(view: CountsView, term: AffinityTerm) -> BoolArray:
    """Per slot: does its domain hold a bound pod TERM (required anti-affinity) selects?"""
    counts = view.matching_counts((term,), term.topology_key)
    if not counts.any():
        return np.zeros(view.size, dtype=bool)
    return spread(view.domain_ids(term.topology_key), counts > 0)


def affinity_met(view: CountsView, terms: Sequence[AffinityTerm]) -> BoolArray:
    """Per slot: is required affinity TERMS met? Every term's key is on the node and each
    term's domain holds a pod that all TERMS select; or no such pod runs anywhere, the
    pod selects itself and the keys are there (the first pod of a group)."""
    have_keys = np.ones(view.size, dtype=bool)
    satisfied = np.ones(view.size, dtype=bool)
    empty = True
    for t in terms:
        ids = view.domain_ids(t.topology_key)
        counts = view.matching_counts(terms, t.topology_key)
        have_keys &= ids >= 0
        satisfied &= spread(ids, counts > 0)
        empty = empty and not counts.any()
    if empty and view.selects_itself(terms):
        satisfied = have_keys
    return have_keys & satisfied


def existing_anti_hits(view: CountsView) -> BoolArray:
    """Per slot: does a bound pod's required anti-affinity that selects the incoming pod
    have a pod in the slot's domain?"""
    per_key: dict[str, IntArray] = {}
    for term, counts in view.selecting_groups("required_anti"):
        key = term.topology_key
        acc = per_key.get(key)
        per_key[key] = counts.copy() if acc is None else acc + counts
    hit = np.zeros(view.size, dtype=bool)
    for key, counts in per_key.items():
        hit |= spread(view.domain_ids(key), counts > 0)
    return hit


def filter_codes(view: CountsView, required_affinity: Sequence[AffinityTerm],
                 required_anti: Sequence[AffinityTerm], existing: bool = True) -> NDArray[np.int8]:
    """Per slot, a code into REASONS (0: passes). EXISTING: judge existing pods' required
    anti-affinity too (the filter); without it, only the pod's own terms."""
    code = np.zeros(view.size, dtype=np.int8)
    if existing:
        code[existing_anti_hits(view)] = EXISTING_ANTI
    for t in required_anti:
        code[anti_hits(view, t)] = ANTI
    if required_affinity:
        code[~affinity_met(view, required_affinity)] = AFFINITY
    return code


def raw_scores(view: CountsView, preferred_affinity: Sequence[AffinityTerm],
               preferred_anti: Sequence[AffinityTerm], hard_weight: int = 1,
               ignore_existing_preferred: bool = False) -> IntArray:
    """Per slot, the raw score: the pod's preferred terms, and the bound pods' preferred
    terms and (times HARD_WEIGHT) required affinity terms that select the pod."""
    raw = np.zeros(view.size, dtype=np.int64)
    if ignore_existing_preferred and not (preferred_affinity or preferred_anti):
        return raw
    per_key: dict[str, IntArray] = {}

    def add(key: str, counts: IntArray) -> None:
        acc = per_key.get(key)
        per_key[key] = counts if acc is None else acc + counts

    for terms, sign in ((preferred_affinity, 1), (preferred_anti, -1)):
        for t in terms:
            counts = view.matching_counts((t,), t.topology_key)
            if counts.any():
                # a preferred term has its weight (RawTerm.parse)
                add(t.topology_key, sign * cast(int, t.weight) * counts)
    for kind, sign in existing_score_kinds(hard_weight):
        for term, counts in view.selecting_groups(kind):
            w = hard_weight if kind == "required_affinity" else cast(int, term.weight)
            add(term.topology_key, sign * w * counts)
    for key, counts in per_key.items():
        raw += spread(view.domain_ids(key), counts)
    return raw


def existing_score_kinds(hard_weight: int) -> tuple[tuple[str, int], ...]:
    """(kind, sign) of the bound pods' terms that score an incoming pod they select."""
    return _SCORE_KINDS_HARD if hard_weight > 0 else _SCORE_KINDS


_SCORE_KINDS = (("preferred_affinity", 1), ("preferred_anti", -1))
_SCORE_KINDS_HARD = _SCORE_KINDS + (("required_affinity", 1),)


def normalize(raw: IntArray, feasible: BoolArray) -> IntArray:
    """Min-max over the scored nodes, float64 then truncated (upstream NormalizeScore)."""
    out = np.zeros_like(raw)
    if not feasible.any():
        return out
    s = raw[feasible]
    lo, hi = int(s.min()), int(s.max())
    if hi > lo:
        f = 100.0 * ((s - lo).astype(np.float64) / float(hi - lo))
        out[feasible] = np.trunc(f).astype(np.int64)
    return out


def counts_sig(terms: Sequence[AffinityTerm]) -> Hashable:
    """The ``ClusterState.counts`` signature of the pods every one of TERMS selects."""
    return ("all", tuple(t.sig for t in terms)) if len(terms) > 1 else ("one", terms[0].sig)


def matches_all(terms: Sequence[AffinityTerm]) -> DomainMatcher:
    """Matcher for a bound pod that every one of TERMS (resolved incoming terms) selects."""
    if len(terms) == 1:
        term = terms[0]
        return lambda pod, _ns_labels: term.matches(pod.namespace, pod.labels, NO_LABELS)
    return lambda pod, _ns_labels: all(t.matches(pod.namespace, pod.labels, NO_LABELS)
                                       for t in terms)


class StateView:
    """A ``counts.CountsView`` over ``ClusterState`` for one cycle's pod (every node a
    slot)."""

    __slots__ = ("state", "pod", "size", "groups", "_ns_labels")

    def __init__(self, cycle: Cycle) -> None:
        self.state, self.pod = cycle.state, cycle.pod
        self.size = len(self.state.nodes)
        self.groups = self.state.extension(NAME, TermGroups)  # symmetry's counting
        self._ns_labels: Mapping[str, str] | None = None

    def domain_ids(self, key: str) -> IntArray:
        return self.state.domains(key).ids

    def matching_counts(self, terms: Sequence[AffinityTerm], key: str) -> IntArray:
        return self.state.counts(counts_sig(terms), matches_all(terms), key).counts

    def selecting_groups(self, kind: str) -> Iterable[tuple[AffinityTerm, IntArray]]:
        if self._ns_labels is None:
            self._ns_labels = self.state.ns_labels(self.pod.namespace)
        groups = self.groups.selecting(kind, self.pod, self._ns_labels)
        return [(g.term, g.counts) for g in groups if g.total] if groups else ()

    def selects_itself(self, terms: Sequence[AffinityTerm]) -> bool:
        return matches_all(terms)(self.pod, NO_LABELS)


class InterPodAffinity:
    name = NAME

    def __init__(self, hard_pod_affinity_weight: int = 1,
                 ignore_preferred_terms_of_existing_pods: bool = False) -> None:
        self.hard_weight = hard_pod_affinity_weight
        self.ignore_existing_preferred = ignore_preferred_terms_of_existing_pods

    @staticmethod
    def incoming_terms(cycle: Cycle, kind: str) -> tuple[AffinityTerm, ...]:
        data = cycle.data(NAME)
        got: tuple[AffinityTerm, ...] | None = data.get(kind)
        if got is None:
            got = data[kind] = tuple(cycle.state.resolve_namespaces(t)
                                           for t in cycle.pod.terms[kind])
        return got

    def filter(self, cycle: Cycle) -> Rejection | None:
        return self._filter(cycle, existing=True)

    def filter_own(self, cycle: Cycle) -> Rejection | None:
        """The filter without the existing pods' terms (code 3): only whether the
        incoming pod's own required terms hold; ``hwaffinity audit`` judges intent so."""
        return self._filter(cycle, existing=False)

    def _filter(self, cycle: Cycle, existing: bool) -> Rejection | None:
        code = filter_codes(StateView(cycle), self.incoming_terms(cycle, "required_affinity"),
                            self.incoming_terms(cycle, "required_anti"), existing)
        failed = code > 0
        if not failed.any():
            return None
        return Rejection(failed, codes=code, table=REASONS)

    def scores(self, cycle: Cycle, feasible: BoolArray) -> IntArray:
        raw = self.score(cycle)
        return normalize(raw, feasible) if raw.any() else cycle.state.zeros

    def score(self, cycle: Cycle) -> IntArray:
        return raw_scores(StateView(cycle), self.incoming_terms(cycle, "preferred_affinity"),
                          self.incoming_terms(cycle, "preferred_anti"), self.hard_weight,
                          self.ignore_existing_preferred)

    normalize = staticmethod(normalize)
