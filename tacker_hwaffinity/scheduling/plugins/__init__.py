"""kube-scheduler plugins we model, each vectorised over the nodes: the contract.

A plugin is an object with a ``name`` (kube-scheduler's plugin name) and the
extension points it implements, each taking the ``framework.Cycle`` of one pod
(``cycle.state``: the ``ClusterState``; ``cycle.pod``: the pod). Each point is a
Protocol below (``PreFilterPlugin``, ``FilterPlugin``, ``ScorePlugin``):

``prefilter(cycle)`` (optional)
    ``None`` (every node goes on to the filters) or a ``PreFilterResult`` made
    with ``PreFilterResult.reject(name, message)`` (every node fails with MESSAGE)
    or ``PreFilterResult.only(name, node_names)`` (only those nodes are filtered).
    The framework intersects the results and writes the status of the nodes left
    out, naming the plugins (kube-scheduler's "didn't satisfy plugin(s)").
``filter(cycle)``
    ``None`` (the plugin passes every node) or a ``Rejection``.
``scores(cycle, feasible)``
    the normalised scores (int64, 0..100) over every node, 0 where not feasible;
    ``cycle.state.zeros`` when the plugin skips the pod.

State: a plugin keeps what it derives for one pod in ``cycle.data(name)`` and what
it derives from the nodes alone in ``cycle.state.data(name)``; it keeps nothing
keyed by a state's identity. A plugin that counts bound pods its own way registers
that counting with ``state.extension(name, factory)``: the state feeds it every pod
bound (and, for the audit, unbound and restored) since it was made.

The plugins are built from a profile by name (``registry.REGISTRY``); the framework
(``framework.Framework``) knows no plugin by name.
"""
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from tacker_hwaffinity.scheduling.arrays import BoolArray, CodeArray, IntArray

if TYPE_CHECKING:   # the framework imports the contract: its Cycle is named for types only
    from tacker_hwaffinity.scheduling.framework import Cycle

DIDNT_SATISFY = "node(s) didn't satisfy plugin(s) [%s]"


class Plugin(Protocol):
    """What every plugin has: kube-scheduler's name of it."""

    @property
    def name(self) -> str:
        """The plugin's name in a KubeSchedulerConfiguration."""


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    """A plugin with a PreFilter (optional): found by the framework among the filters."""

    def prefilter(self, cycle: "Cycle") -> "PreFilterResult | None":
        """None, or which nodes are filtered at all (see the module's docstring)."""


class FilterPlugin(Plugin, Protocol):
    """A plugin with a Filter."""

    def filter(self, cycle: "Cycle") -> "Rejection | None":
        """None (every node passes) or the nodes it rejects."""


class ScorePlugin(Plugin, Protocol):
    """A plugin with a Score."""

    def scores(self, cycle: "Cycle", feasible: BoolArray) -> IntArray:
        """The normalised scores over every node (0 where not FEASIBLE)."""


class PreFilterResult:
    """What one plugin's PreFilter says: every node fails (``message``), or only the
    nodes in ``names`` are filtered. ``plugin``: the plugin's name."""

    __slots__ = ("plugin", "message", "names")

    def __init__(self, plugin: str, message: str | None = None,
                 names: frozenset[str] | None = None) -> None:
        self.plugin, self.message, self.names = plugin, message, names

    @classmethod
    def reject(cls, plugin: str, message: str) -> "PreFilterResult":
        return cls(plugin, message=message)

    @classmethod
    def only(cls, plugin: str, names: Iterable[str]) -> "PreFilterResult":
        return cls(plugin, names=frozenset(names))


class Rejection:
    """The nodes a filter rejects and, lazily, why (kube-scheduler's reason strings).

    Reasons come from ``why(i)``, or for speed from ``codes`` (an int array over
    nodes) and ``table`` (code -> list of reasons).
    """

    __slots__ = ("failed", "_why", "codes", "table")

    def __init__(self, failed: BoolArray, why: Callable[[int], list[str]] | None = None,
                 codes: CodeArray | None = None, table: Sequence[Sequence[str]] = ()) -> None:
        self.failed = failed  # bool array over nodes
        self._why = why
        self.codes, self.table = codes, table

    def reasons(self, i: int) -> list[str]:
        if self.codes is not None:
            return list(self.table[int(self.codes[i])])
        assert self._why is not None, "a Rejection has codes or why"
        return self._why(i)

    def histogram(self, mask: BoolArray, into: dict[str, int]) -> None:
        """Add reason -> node count over the nodes in MASK to INTO."""
        if self.codes is not None:
            counts = np.bincount(self.codes[mask], minlength=len(self.table))
            for code, n in enumerate(counts):
                if n:
                    for reason in self.table[code]:
                        into[reason] = into.get(reason, 0) + int(n)
            return
        assert self._why is not None, "a Rejection has codes or why"
        for i in np.flatnonzero(mask).tolist():
            for reason in self._why(i):
                into[reason] = into.get(reason, 0) + 1


def default_normalize(raw: IntArray, feasible: BoolArray, reverse: bool = False,
                      max_priority: int = 100) -> IntArray:
    """helper.DefaultNormalizeScore: 100 * s // max over the scored nodes."""
    out = np.zeros_like(raw)
    if not feasible.any():
        return out
    if not raw.any():
        if reverse:
            out[feasible] = max_priority
        return out
    top = max(int(raw[feasible].max()), 0)
    if top == 0:
        if reverse:
            out[feasible] = max_priority
        return out
    s = (max_priority * raw[feasible]) // top
    out[feasible] = max_priority - s if reverse else s
    return out
