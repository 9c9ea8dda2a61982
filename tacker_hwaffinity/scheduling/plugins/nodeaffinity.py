"""NodeAffinity: nodeSelector AND required node affinity (+ addedAffinity), preferred score."""
from collections.abc import Callable, Hashable, Sequence

import numpy as np

from tacker_hwaffinity.scheduling.arrays import BoolArray, IntArray
from tacker_hwaffinity.scheduling.framework import Cycle
from tacker_hwaffinity.scheduling.model import Node, PodSpecInfo
from tacker_hwaffinity.scheduling.plugins import PreFilterResult, Rejection, default_normalize
from tacker_hwaffinity.scheduling.selectors import NodeSelector, NodeSelectorTerm
from tacker_hwaffinity.scheduling.state import ClusterState

NAME = "NodeAffinity"
ERR_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_CONFLICT = "pod affinity terms conflict"


class NodeAffinity:
    name = NAME

    def __init__(self, added_required: NodeSelector | None = None,
                 added_preferred: Sequence[tuple[int, NodeSelectorTerm]] = ()) -> None:
        self.added_required = added_required  # selectors.NodeSelector or None
        self.added_preferred = tuple(added_preferred)  # ((weight, NodeSelectorTerm), ...)

    def _mask(self, state: ClusterState, key: Hashable,
              predicate: Callable[[Node], bool]) -> BoolArray:
        """Per-node boolean for a pod-spec-derived KEY, computed once per node set."""
        masks = state.data(self.name)
        got: BoolArray | None = masks.get(key)
        if got is None:
            got = masks[key] = np.fromiter((predicate(n) for n in state.nodes), dtype=bool,
                                           count=len(state.nodes))
        return got

    @staticmethod
    def _prefilter_names(spec: PodSpecInfo) -> set[str] | None:
        """Node names the pod can only go to (matchFields metadata.name In), or None."""
        sel = spec.required_node
        if sel is None or not spec.required_node_raw.get("nodeSelectorTerms"):
            return None
        names: set[str] | None = None
        for term in spec.required_node_raw.get("nodeSelectorTerms") or []:
            term_names: set[str] | None = None
            for f in (term or {}).get("matchFields") or []:
                if f.get("key") == "metadata.name" and f.get("operator") == "In":
                    s = set(f.get("values") or [])
                    term_names = s if term_names is None else term_names & s
            if term_names is None:
                return None
            names = term_names if names is None else names | term_names
        return names

    def prefilter(self, cycle: Cycle) -> PreFilterResult | None:
        """The nodes a ``metadata.name`` matchFields term allows (None: all of them)."""
        names = self._prefilter_names(cycle.pod.spec)
        if names is None:
            return None
        if not names:
            return PreFilterResult.reject(NAME, ERR_CONFLICT)
        return PreFilterResult.only(NAME, names)

    def filter(self, cycle: Cycle) -> Rejection | None:
        state, spec = cycle.state, cycle.pod.spec
        code = np.zeros(len(state.nodes), dtype=np.int8)
        if spec.node_selector or spec.required_node is not None:
            sel, req = spec.node_selector, spec.required_node

            def matches(n: Node) -> bool:
                return all(n.labels.get(k) == v for k, v in sel.items()) and (
                    req is None or req.matches(n.labels, n.name))
            only = self._prefilter_names(spec)
            if only is None:
                ok = self._mask(state, ("pod", tuple(sorted(sel.items())),
                                        None if req is None else req.sig), matches)
            else:   # as kube-scheduler, only the nodes PreFilter left are filtered: the
                ok = np.zeros(len(state.nodes), dtype=bool)     # rest fail on their names
                for name in only:   # (a DaemonSet's pod: one node, not every node)
                    j = state.index.get(name)
                    if j is not None:
                        ok[j] = matches(state.nodes[j])
            code[~ok] = 2
        if spec.annotation_node is not None:       # RequiredDuringExecution's node terms
            extra = spec.annotation_node
            code[~self._mask(state, ("annotation", extra.sig),
                             lambda n: extra.matches(n.labels, n.name))] = 2
        if self.added_required is not None:
            added = self.added_required
            code[~self._mask(state, ("added",), lambda n: added.matches(n.labels, n.name))] = 1
        failed = code > 0
        if not failed.any():
            return None
        return Rejection(failed, codes=code, table=((), (ERR_ENFORCED,), (ERR_POD,)))

    def scores(self, cycle: Cycle, feasible: BoolArray) -> IntArray:
        if not cycle.pod.spec.preferred_node and not self.added_preferred:
            return cycle.state.zeros
        return self.normalize(self.score(cycle), feasible)

    def score(self, cycle: Cycle) -> IntArray:
        state, spec = cycle.state, cycle.pod.spec
        raw = np.zeros(len(state.nodes), dtype=np.int64)
        for w, term in spec.preferred_node + self.added_preferred:
            raw += w * self._mask(state, ("pref", term.sig),
                                  term_matches(term))
        return raw

    @staticmethod
    def normalize(raw: IntArray, feasible: BoolArray) -> IntArray:
        return default_normalize(raw, feasible)


def term_matches(term: NodeSelectorTerm) -> Callable[[Node], bool]:
    """Does TERM match a node?"""
    return lambda n: term.matches(n.labels, n.name)
