"""Bound pods' inter-pod terms, grouped by identical term and counted per domain.

This is what symmetry reads (existing pods' terms acting on an incoming pod): the
InterPodAffinity plugin registers a ``TermGroups`` with ``ClusterState.extension``,
which feeds it every pod bound, unbound and restored.
"""
import itertools
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from tacker_hwaffinity.scheduling.arrays import IntArray
from tacker_hwaffinity.scheduling.model import ClassKey, Pod
from tacker_hwaffinity.scheduling.nodetable import Domains
from tacker_hwaffinity.scheduling.state import ClusterState
from tacker_hwaffinity.scheduling.terms import AffinityTerm

# Kinds of an existing pod's terms that act on incoming pods (symmetry).
EXISTING_KINDS = ("required_anti", "required_affinity", "preferred_affinity", "preferred_anti")


# Pod classes whose answer one term keeps at most: pod creators choose how many classes
# there are (each distinct set of labels is one), so what a term keeps is bounded by us;
# past it, the answers are forgotten and asked again (a few microseconds each).
MATCHES_KEPT = 256


def group_key(term: AffinityTerm) -> tuple[Hashable, int | None]:
    """Bound pods' terms are grouped by this: identical term and weight."""
    return (term.sig, term.weight)


class LabelledPod(Protocol):
    """What a term reads of the incoming pod: the engine's ``model.Pod`` or the
    extender's pod record (``webhook/podcache.py``)."""

    @property
    def namespace(self) -> str:
        """The pod's namespace."""

    @property
    def labels(self) -> Mapping[str, str]:
        """The pod's labels."""

    @property
    def class_key(self) -> ClassKey:
        """Pods alike for every selector have the same one."""


class SelectingTerm:
    """One term of bound pods (KIND: one of ``EXISTING_KINDS``) and, cached per pod
    class, which incoming pods it selects. The engine's ``TermGroup`` counts its pods
    per domain, the extender's index (``webhook/podcache.py``) per node name."""

    __slots__ = ("term", "kind", "_match")

    def __init__(self, term: AffinityTerm, kind: str) -> None:
        self.term, self.kind = term, kind
        self._match: dict[ClassKey, bool] = {}

    def matches(self, pod: LabelledPod, ns_labels: Mapping[str, str]) -> bool:
        """Does this group's term select the incoming POD (with ``class_key``,
        ``namespace`` and ``labels``) in a namespace labelled NS_LABELS?"""
        key = pod.class_key
        hit = self._match.get(key)
        if hit is None:
            if len(self._match) >= MATCHES_KEPT:
                self._match.clear()
            hit = self._match[key] = self.term.matches(pod.namespace, pod.labels, ns_labels)
        return hit

    def forget_matches(self) -> None:
        """Namespace labels changed: what the term selects must be asked again."""
        self._match.clear()


class TermGroup(SelectingTerm):
    """Bound pods' identical terms of one kind, counted per domain of the term's key."""

    __slots__ = ("domains", "counts", "total")

    def __init__(self, term: AffinityTerm, kind: str, domains: Domains) -> None:
        SelectingTerm.__init__(self, term, kind)
        self.domains = domains
        self.counts: IntArray = np.zeros(len(domains), dtype=np.int64)
        self.total = 0


class TermGroups:
    """Every bound pod's terms of every kind in ``EXISTING_KINDS``, for one state."""

    def __init__(self, state: ClusterState) -> None:
        # the state is passed to bind(), not kept: no reference cycle keeps it alive
        self._groups: dict[str, dict[Hashable, TermGroup]] = {kind: {} for kind in EXISTING_KINDS}
        # (kind, class key) -> [groups scanned, [groups selecting it]]
        self._selecting: dict[tuple[str, ClassKey], list[Any]] = {}

    def bind(self, state: ClusterState, pod: Pod, node_index: int, sign: int) -> None:
        """Count POD's terms on node NODE_INDEX (SIGN -1: take them out again)."""
        if not pod.spec.has_pod_affinity:
            return
        for kind in EXISTING_KINDS:
            groups = self._groups[kind]
            for term in pod.terms[kind]:
                gk = group_key(term)
                g = groups.get(gk)
                if g is None:
                    g = groups[gk] = TermGroup(term, kind,
                                               state.domains(term.topology_key))
                d = g.domains.ids[node_index]
                if d >= 0:
                    g.counts[d] += sign
                    g.total += sign

    def groups(self, kind: str) -> Iterable[TermGroup]:
        return self._groups[kind].values()

    def selecting(self, kind: str, pod: Pod, ns_labels: Mapping[str, str]) -> Sequence[TermGroup]:
        """The groups of KIND whose term selects POD: ``[g for g in groups(KIND) if
        g.matches(POD, NS_LABELS)]``, kept per pod class and extended as groups appear,
        so a filter pays for the groups that select the pod, not for every group."""
        groups = self._groups[kind]
        if not groups:
            return ()
        got = self._selecting.get((kind, pod.class_key))
        if got is None:
            got = self._selecting[(kind, pod.class_key)] = [0, []]
        if got[0] < len(groups):
            for g in itertools.islice(groups.values(), got[0], None):
                if g.matches(pod, ns_labels):
                    got[1].append(g)
            got[0] = len(groups)
        found: list[TermGroup] = got[1]
        return found
