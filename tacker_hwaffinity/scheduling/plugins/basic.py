"""Node name, unschedulable, and taints: NoSchedule/NoExecute filter, PreferNoSchedule score."""
import numpy as np

from tacker_hwaffinity.scheduling.arrays import BoolArray, IntArray
from tacker_hwaffinity.scheduling.framework import Cycle
from tacker_hwaffinity.scheduling.model import Taint, tolerates
from tacker_hwaffinity.scheduling.plugins import Rejection, default_normalize

_UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


class NodeName:
    name = "NodeName"
    REASON = "node(s) didn't match the requested node name"

    def filter(self, cycle: Cycle) -> Rejection | None:
        want = cycle.pod.spec.node_name
        if not want:
            return None
        failed = np.ones(len(cycle.state.nodes), dtype=bool)
        i = cycle.state.index.get(want)
        if i is not None:
            failed[i] = False
        return Rejection(failed, codes=failed.astype(np.int8), table=((), (self.REASON,)))


class NodeUnschedulable:
    name = "NodeUnschedulable"
    REASON = "node(s) were unschedulable"

    def filter(self, cycle: Cycle) -> Rejection | None:
        failed = cycle.state.unschedulable
        if not failed.any() or tolerates(cycle.pod.spec.tolerations, _UNSCHEDULABLE_TAINT):
            return None
        return Rejection(failed, codes=failed.astype(np.int8), table=((), (self.REASON,)))


class TaintToleration:
    name = "TaintToleration"

    def filter(self, cycle: Cycle) -> Rejection | None:
        state, tols = cycle.state, cycle.pod.spec.tolerations
        data = state.data(self.name)
        tainted = data.get("tainted")
        if tainted is None:
            per_node = ((i, [t for t in n.taints if t.effect in ("NoSchedule", "NoExecute")])
                        for i, n in enumerate(state.nodes))
            tainted = data["tainted"] = [(i, ts) for i, ts in per_node if ts]
        if not tainted:
            return None
        bad: dict[int, str] = {}
        for i, taints in tainted:
            for t in taints:
                if not tolerates(tols, t):
                    bad[i] = "node(s) had untolerated taint {%s: %s}" % (t.key, t.value)
                    break
        if not bad:
            return None
        failed = np.zeros(len(state.nodes), dtype=bool)
        failed[list(bad)] = True
        return Rejection(failed, lambda i: [bad[i]])

    def scores(self, cycle: Cycle, feasible: BoolArray) -> IntArray:
        """Untolerated PreferNoSchedule taints, fewer is better (reverse normalisation).
        Only tolerations with effect PreferNoSchedule or none count, as upstream."""
        state = cycle.state
        tols = tuple(t for t in cycle.pod.spec.tolerations
                     if t.effect in ("", "PreferNoSchedule"))
        data = state.data(self.name)
        preferred = data.get("prefer-no-schedule")
        if preferred is None:
            per_node = ((i, [t for t in n.taints if t.effect == "PreferNoSchedule"])
                        for i, n in enumerate(state.nodes))
            preferred = data["prefer-no-schedule"] = [(i, ts) for i, ts in per_node if ts]
        if not preferred:  # no PreferNoSchedule taint anywhere: every node scores 100
            return state.hundreds
        raw = np.zeros(len(state.nodes), dtype=np.int64)
        for i, taints in preferred:
            raw[i] = sum(1 for t in taints if not tolerates(tols, t))
        return default_normalize(raw, feasible, reverse=True)
