"""Resource names and the NodeResources score functions, vectorised over nodes.

A node that gives no ``status.allocatable`` (nor ``capacity``) is not checked
for any resource: snapshots written by hand often leave it out. A node that
gives some is checked as kube-scheduler checks it, except that a missing
``cpu``, ``memory``, ``pods`` or ``ephemeral-storage`` stays unchecked (a
missing extended resource or hugepage size counts as 0, so a pod asking for
it does not fit, as upstream). Unchecked amounts are ``UNCHECKED`` (-1) and
score as kube-scheduler scores an allocatable of 0: the resource is left out.
"""
from collections.abc import Callable, Sequence

import numpy as np

from tacker_hwaffinity.scheduling.arrays import BoolArray, FloatArray, IntArray
from tacker_hwaffinity.scheduling.model import Node

UNCHECKED = -1
BASIC = ("cpu", "memory", "pods", "ephemeral-storage")
MAX_NODE_SCORE = 100
MAX_CUSTOM_PRIORITY_SCORE = 10  # RequestedToCapacityRatio shape scores are 0..10


def is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    """v1helper.IsExtendedResourceName: outside kubernetes.io, not a quota 'requests.' name."""
    return not is_native(name) and not name.startswith("requests.")


def is_scalar(name: str) -> bool:
    """schedutil.IsScalarResourceName: extended, hugepages-*, kubernetes.io/* or
    attachable-volumes-* resources."""
    return (is_extended(name) or name.startswith("hugepages-")
            or "kubernetes.io/" in name
            or name.startswith("attachable-volumes-"))


def node_allocatable(node: Node, name: str) -> int:
    v = node.allocatable.get(name)
    if v is not None:
        return v
    if not node.allocatable or name in BASIC:
        return UNCHECKED
    return 0


def least_requested(requested: IntArray, capacity: IntArray) -> IntArray:
    out = np.zeros(len(capacity), dtype=np.int64)
    ok = (capacity > 0) & (requested <= capacity)
    out[ok] = ((capacity[ok] - requested[ok]) * MAX_NODE_SCORE) // capacity[ok]
    return out


def most_requested(requested: IntArray, capacity: IntArray) -> IntArray:
    out = np.zeros(len(capacity), dtype=np.int64)
    ok = capacity > 0
    req = np.minimum(requested, capacity)  # requested may exceed: pods without requests
    out[ok] = (req[ok] * MAX_NODE_SCORE) // capacity[ok]
    return out


def broken_linear(shape: Sequence[tuple[int, int]]) -> Callable[[IntArray], IntArray]:
    """helper.BuildBrokenLinearFunction over ((utilization, score), ...), vectorised."""
    def f(p: IntArray) -> IntArray:
        out = np.full(len(p), shape[-1][1], dtype=np.int64)
        done = np.zeros(len(p), dtype=bool)
        for i, (u, s) in enumerate(shape):
            hit = ~done & (p <= u)
            if i == 0:
                out[hit] = s
            else:
                pu, ps = shape[i - 1]
                # Go's integer division truncates toward zero
                num = (s - ps) * (p[hit] - pu)
                out[hit] = ps + np.sign(num) * (np.abs(num) // (u - pu))
            done |= hit
        return out
    return f


def weighted_average(parts: Sequence[tuple[IntArray, int, BoolArray]], rounded: bool = False,
                     skip_zero: bool = False) -> IntArray:
    """Scores of several resources -> one: sum(score * weight) / sum(weight) over the
    resources a node has (capacity > 0; SKIP_ZERO: and score > 0), per node."""
    n = len(parts[0][0]) if parts else 0
    total = np.zeros(n, dtype=np.int64)
    weights = np.zeros(n, dtype=np.int64)
    for score, weight, present in parts:
        use = present & (score > 0) if skip_zero else present
        total += np.where(use, score * weight, 0)
        weights += np.where(use, weight, 0)
    out = np.zeros(n, dtype=np.int64)
    ok = weights > 0
    if rounded:  # math.Round of a non-negative float: half away from zero
        out[ok] = np.floor(total[ok] / weights[ok] + 0.5).astype(np.int64)
    else:
        out[ok] = total[ok] // weights[ok]
    return out


def balanced(fractions: Sequence[FloatArray], present: Sequence[BoolArray]) -> IntArray:
    """NodeResourcesBalancedAllocation: (1 - std of the used fractions) * 100, truncated."""
    n = len(present[0]) if present else 0
    count = np.zeros(n, dtype=np.int64)
    for p in present:
        count += p
    fr = [np.where(p, np.minimum(f, 1.0), 0.0) for f, p in zip(fractions, present)]
    std = np.zeros(n, dtype=np.float64)
    two = count == 2
    if two.any():  # upstream's shortcut for two resources: |f1 - f2| / 2
        firsts = np.zeros(n, dtype=np.float64)
        seconds = np.zeros(n, dtype=np.float64)
        seen = np.zeros(n, dtype=np.int64)
        for f, p in zip(fr, present):
            firsts = np.where(p & (seen == 0), f, firsts)
            seconds = np.where(p & (seen == 1), f, seconds)
            seen += p
        std[two] = np.abs((firsts[two] - seconds[two]) / 2)
    more = count > 2
    if more.any():
        total = np.zeros(n, dtype=np.float64)
        for f in fr:
            total += f
        mean = np.where(more, total / np.maximum(count, 1), 0.0)
        acc = np.zeros(n, dtype=np.float64)
        for f, p in zip(fr, present):
            acc += np.where(p, (f - mean) * (f - mean), 0.0)
        std[more] = np.sqrt(acc[more] / count[more])
    return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)


# One node at a time (ClusterState.node_values' compute_one): the same integer and
# float operations as the vector forms above, on Python numbers.

def least_requested_one(requested: int, capacity: int) -> int:
    if capacity <= 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_one(requested: int, capacity: int) -> int:
    if capacity <= 0:
        return 0
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def weighted_average_one(parts: Sequence[tuple[int, int]], rounded: bool = False,
                         skip_zero: bool = False) -> int:
    """PARTS: [(score, weight)] of the resources the node has."""
    total = weights = 0
    for score, weight in parts:
        if skip_zero and score <= 0:
            continue
        total += score * weight
        weights += weight
    if weights == 0:
        return 0
    if rounded:
        return int(np.floor(total / weights + 0.5))
    return total // weights


def balanced_one(fractions: Sequence[float]) -> int:
    """FRACTIONS of the resources the node has, in order."""
    fr = [min(f, 1.0) for f in fractions]
    std = 0.0
    if len(fr) == 2:
        std = abs((fr[0] - fr[1]) / 2)
    elif len(fr) > 2:
        total = 0.0
        for f in fr:
            total += f
        mean = total / len(fr)
        acc = 0.0
        for f in fr:
            acc = acc + (f - mean) * (f - mean)
        std = float(np.sqrt(acc / len(fr)))
    return int((1 - std) * MAX_NODE_SCORE)
