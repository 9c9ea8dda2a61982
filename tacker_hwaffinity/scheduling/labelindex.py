"""Bound pods by label: the one index that finds the pods a selector may match.

The extender's pod cache keeps one per namespace, updated as pods come and go;
``hwaffinity audit`` builds one over the engine's bound pods to prime the counts it
reads. Writers call ``add``/``discard``; readers ``candidates``.
"""
from collections.abc import Hashable, Mapping
from typing import Generic, TypeVar

from tacker_hwaffinity.scheduling import selectors

# Requirements a matching item must carry the key of, with a value the index can list.
POSITIVE = (selectors.IN, selectors.EQUALS, selectors.EXISTS, selectors.GT, selectors.LT)

ItemT = TypeVar("ItemT", bound=Hashable)


class LabelIndex(Generic[ItemT]):
    """ITEMS (hashable; each added with its labels) by label: ``labels`` key -> value ->
    set of items, and ``items`` every one of them."""

    __slots__ = ("items", "labels")

    def __init__(self) -> None:
        self.items: set[ItemT] = set()
        self.labels: dict[str, dict[str, set[ItemT]]] = {}

    def __len__(self) -> int:
        return len(self.items)

    def add(self, item: ItemT, labels: Mapping[str, str]) -> None:
        """Index ITEM under each of its LABELS ({key: value})."""
        self.items.add(item)
        for k, v in labels.items():
            by_val = self.labels.get(k)
            if by_val is None:
                by_val = self.labels[k] = {}
            s = by_val.get(v)
            if s is None:
                s = by_val[v] = set()
            s.add(item)

    def discard(self, item: ItemT, labels: Mapping[str, str]) -> None:
        """Take ITEM, indexed with LABELS, out (no-op if it is not in)."""
        self.items.discard(item)
        for k, v in labels.items():
            by_val = self.labels.get(k)
            s = by_val.get(v) if by_val is not None else None
            if by_val is None or s is None:
                continue
            s.discard(item)
            if not s:
                del by_val[v]
                if not by_val:
                    del self.labels[k]

    def requirement_sets(self, r: selectors.Requirement) -> list[set[ItemT]] | None:
        """The sets holding every item that satisfies requirement R, or None when R is
        not positive (the index cannot list what it matches)."""
        if r.op not in POSITIVE:
            return None
        by_val = self.labels.get(r.key)
        if by_val is None:
            return []
        if r.op in (selectors.IN, selectors.EQUALS):
            return [by_val[v] for v in r.values if v in by_val]
        if r.op == selectors.EXISTS:
            return list(by_val.values())
        return [s for v, s in by_val.items() if r.matches({r.key: v})]  # Gt, Lt

    def candidates(self, selector: selectors.LabelSelector) -> list[set[ItemT]] | None:
        """Disjoint sets holding every item SELECTOR may match (those of its positive
        requirement with the fewest items), or None when it has no positive requirement
        (every item is a candidate: ``items``)."""
        if selector.nothing:
            return []
        best: list[set[ItemT]] | None = None
        best_size = 0
        for r in selector.requirements:
            sets = self.requirement_sets(r)
            if sets is None:
                continue
            size = sum(len(s) for s in sets)
            if best is None or size < best_size:
                best, best_size = sets, size
                if not size:
                    break
        return best
