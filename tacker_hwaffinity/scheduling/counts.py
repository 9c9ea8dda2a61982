"""The counts interface the one inter-pod evaluator (``plugins/interpod.py``) reads.

Three views serve it: ``interpod.StateView`` (the engine's ``ClusterState``: plan,
explain, audit), the extender's ``_View`` (``webhook/extender.py``, over the pod
cache) and the controller's ``_Judged`` (``controller/rules.py``, one running pod).
``tests/scheduling/test_counts_protocol.py`` checks that each does.
"""
from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from tacker_hwaffinity.scheduling.arrays import IntArray
from tacker_hwaffinity.scheduling.terms import AffinityTerm


@runtime_checkable
class CountsView(Protocol):
    """What one evaluation reads; its slots are the nodes being judged."""

    size: int
    """The number of slots."""

    def domain_ids(self, key: str) -> IntArray:
        """Per slot, the id of its node's value of topology KEY (-1: no such label)."""

    def matching_counts(self, terms: Sequence[AffinityTerm], key: str) -> IntArray:
        """Per domain of KEY (indexed by those ids), how many bound pods every one of
        TERMS (the incoming pod's terms, namespaces resolved) selects."""

    def selecting_groups(self, kind: str) -> Iterable[tuple[AffinityTerm, IntArray]]:
        """``(term, per-domain counts over term.topology_key)`` of the bound pods' terms
        of KIND that select the incoming pod (symmetry)."""

    def selects_itself(self, terms: Sequence[AffinityTerm]) -> bool:
        """Whether every one of TERMS selects the incoming pod."""
