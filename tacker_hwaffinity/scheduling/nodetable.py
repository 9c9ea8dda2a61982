"""The nodes as one table, shared by every reader of the inter-pod counts.

The engine's ``ClusterState``, the extender's pod cache (``webhook/podcache.py``) and
the controller's running-pod ``Cluster`` (``controller/rules.py``) each judge pods over
one ``NodeTable``: the nodes in a fixed order, their index by name and, per topology
key, the node's domain id (``Domains``), computed on first use.
"""
from collections.abc import Iterable, Sequence
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from tacker_hwaffinity.scheduling.arrays import BoolArray, IntArray
from tacker_hwaffinity.scheduling.model import Node

ScalarT = TypeVar("ScalarT", bound=np.generic)


def spread(ids: IntArray, per_domain: NDArray[ScalarT]) -> NDArray[ScalarT]:
    """Per slot, its domain's value of PER_DOMAIN (0 where the slot has no domain: id -1)."""
    ext = np.zeros(len(per_domain) + 1, dtype=per_domain.dtype)
    ext[:-1] = per_domain
    return ext[ids]


class Domains:
    """The values of one node label: ``ids[i]`` is node i's value id, -1 if absent."""

    __slots__ = ("key", "ids", "values", "present")

    def __init__(self, key: str, nodes: Sequence[Node]) -> None:
        self.key = key
        index: dict[str, int] = {}
        ids = np.empty(len(nodes), dtype=np.int64)
        for i, n in enumerate(nodes):
            v = n.labels.get(key)
            ids[i] = -1 if v is None else index.setdefault(v, len(index))
        self.ids: IntArray = ids
        self.values = list(index)
        self.present: BoolArray = ids >= 0

    def __len__(self) -> int:
        return len(self.values)

    def spread(self, per_domain: IntArray) -> IntArray:
        """Per-node array from a per-domain array (0 where a node lacks the key)."""
        return spread(self.ids, per_domain)


class NodeTable:
    """NODES (each with ``name`` and ``labels``) in a fixed order: ``nodes``, ``index``
    (name -> position) and ``domains(key)``. The nodes do not change while it lives: a
    changed node set is a new table."""

    __slots__ = ("nodes", "index", "_domains")

    def __init__(self, nodes: Iterable[Node]) -> None:
        self.nodes = list(nodes)
        self.index = {n.name: i for i, n in enumerate(self.nodes)}
        self._domains: dict[str, Domains] = {}

    def __len__(self) -> int:
        return len(self.nodes)

    def domains(self, key: str) -> Domains:
        """The ``Domains`` of topology KEY over the nodes (computed once)."""
        d = self._domains.get(key)
        if d is None:
            d = self._domains[key] = Domains(key, self.nodes)
        return d
