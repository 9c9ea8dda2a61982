"""The filters that decide feasibility besides affinity: node name, unschedulable,
taints (NoSchedule/NoExecute) and resources (cpu, memory, pods)."""
import numpy as np

from tacker_hwaffinity.scheduling.model import Taint, tolerates
from tacker_hwaffinity.scheduling.plugins import Rejection

_UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


class NodeName:
    name = "NodeName"
    REASON = "node(s) didn't match the requested node name"

    def filter(self, cycle):
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

    def filter(self, cycle):
        failed = cycle.state.unschedulable
        if not failed.any() or tolerates(cycle.pod.spec.tolerations, _UNSCHEDULABLE_TAINT):
            return None
        return Rejection(failed, codes=failed.astype(np.int8), table=((), (self.REASON,)))


class TaintToleration:
    name = "TaintToleration"

    def __init__(self):
        self._tainted = {}

    def filter(self, cycle):
        state, tols = cycle.state, cycle.pod.spec.tolerations
        tainted = self._tainted.get(id(state))
        if tainted is None:
            tainted = self._tainted[id(state)] = [
                (i, [t for t in n.taints if t.effect in ("NoSchedule", "NoExecute")])
                for i, n in enumerate(state.nodes)]
            tainted = self._tainted[id(state)] = [(i, ts) for i, ts in tainted if ts]
        if not tainted:
            return None
        bad = {}
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


# code bits: 1 too many pods, 2 cpu, 4 memory -> reasons in kube-scheduler's order
_FIT_REASONS = tuple(
    tuple(r for bit, r in ((1, "Too many pods"), (2, "Insufficient cpu"),
                           (4, "Insufficient memory")) if code & bit)
    for code in range(8))


class NodeResourcesFit:
    name = "NodeResourcesFit"

    def filter(self, cycle):
        state, req = cycle.state, cycle.pod.spec.requests
        alloc = state.alloc
        too_many = (alloc["pods"] >= 0) & (state.pod_count + 1 > alloc["pods"])
        short = {}
        for r in ("cpu", "memory"):
            if req[r] > 0:
                short[r] = (alloc[r] >= 0) & (req[r] > alloc[r] - state.requested[r])
        codes = too_many.astype(np.int8)
        for bit, r in ((2, "cpu"), (4, "memory")):
            if r in short:
                codes |= short[r].astype(np.int8) * bit
        failed = codes > 0
        if not failed.any():
            return None
        return Rejection(failed, codes=codes, table=_FIT_REASONS)
