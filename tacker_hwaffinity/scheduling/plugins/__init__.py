"""kube-scheduler plugins we model, each vectorised over the nodes.

A filter plugin has ``name`` and ``filter(cycle)`` returning ``None`` (the
plugin passes every node) or ``Rejection``. A score plugin has ``score(cycle)``
returning raw int64 scores over all nodes, and ``normalize(raw, feasible)``.
``prefilter(cycle)``, where a plugin has one, returns ``(message, names)``: a
message makes every node fail; ``names`` (or None for all) are the only nodes
kube-scheduler would run the filters on.
"""
import numpy as np


class Rejection:
    """The nodes a filter rejects and, lazily, why (kube-scheduler's reason strings).

    Reasons come from ``why(i)``, or for speed from ``codes`` (an int array over
    nodes) and ``table`` (code -> list of reasons).
    """

    __slots__ = ("failed", "_why", "codes", "table")

    def __init__(self, failed, why=None, codes=None, table=None):
        self.failed = failed  # bool array over nodes
        self._why = why
        self.codes, self.table = codes, table

    def reasons(self, i):
        if self.codes is not None:
            return list(self.table[int(self.codes[i])])
        return self._why(i)

    def histogram(self, mask, into):
        """Add reason -> node count over the nodes in MASK to INTO."""
        if self.codes is not None:
            counts = np.bincount(self.codes[mask], minlength=len(self.table))
            for code, n in enumerate(counts):
                if n:
                    for reason in self.table[code]:
                        into[reason] = into.get(reason, 0) + int(n)
            return
        for i in np.flatnonzero(mask):
            for reason in self._why(i):
                into[reason] = into.get(reason, 0) + 1


def default_normalize(raw, feasible, reverse=False, max_priority=100):
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
