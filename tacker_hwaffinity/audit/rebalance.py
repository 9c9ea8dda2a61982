"""Rebalance: which running replicas to evict so that each workload's intent on the host
key (``audit.intent``: its anti-affinity, required or preferred, and its topology spread
on that key) holds again after a move put replicas together. Pure: raw objects in, a
``Rebalance`` out; the controller (``controller.rebalance``) evicts.

For each workload whose intent the audit finds unmet (worst first), replicas are moved
one at a time on a copy of the cluster (the scheduling engine's ``ClusterState``):
a replica that breaks the intent where it runs (its ``intent.verdict``), from the host
that carries most of the workload's replicas first, the youngest first, is taken out,
and the default scheduler profile places its replacement (the same spec) as
kube-scheduler would. The move counts only when that placement exists, differs from
the replica's node and keeps the intent there; otherwise the next candidate is tried.
So an eviction is planned only where the engine shows the replacement has a place that
satisfies the intent: never one that would leave a replica Pending. Moves stop when
every replica keeps the intent (the fewest evictions, one per replica too many on a
host, or per unit of skew), at LIMIT evictions in all, or when no candidate can move:
then the workload is held, and the moves planned before stand (each put one replica
where it keeps the intent: fewer replicas share a host).

A PodDisruptionBudget that selects the workload's replicas is counted as the disruption
controller counts it (``audit.pdb.Budget``): a move that would leave fewer healthy
replicas than the budget's desiredHealthy is not planned, and the workload is held with
the budget's name. A workload with a replica not scheduled yet or being deleted is left
alone: an earlier eviction's replacement is on its way. So is a workload whose intent
includes the ``hwaffinity.io/required-during-execution`` annotation: the controller's
enforcement of it moves those (``controller.enforcement``).

The strategies are named as descheduler names them, so that an operator who knows
descheduler reads the Events and the metric at once.
"""
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from tacker_hwaffinity.audit import core as auditmod
from tacker_hwaffinity.audit import intent as intentmod
from tacker_hwaffinity.audit import owners as ownersmod
from tacker_hwaffinity.audit.pdb import Budget
from tacker_hwaffinity.constants import TERMINAL_PHASES
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling.framework import Framework

ANTI_AFFINITY = "RemovePodsViolatingInterPodAntiAffinity"
# the intent the controller's RequiredDuringExecution enforcement moves: left to it
ENFORCED = "requiredDuringExecution"
TOPOLOGY_SPREAD = "RemovePodsViolatingTopologySpreadConstraint"


class Eviction:
    """One replica to evict: where it runs, where its replacement goes, and why."""

    __slots__ = ("pod", "namespace", "name", "uid", "node", "to_node", "workload",
                 "strategy", "reasons")

    def __init__(self, raw, node, to_node, workload, strategy, reasons):
        meta = raw["metadata"]
        self.pod = raw
        self.namespace, self.name = meta.get("namespace") or "default", meta["name"]
        self.uid, self.node, self.to_node = meta.get("uid"), node, to_node
        self.workload, self.strategy, self.reasons = workload, strategy, list(reasons)

    @property
    def key(self):
        return "%s/%s" % (self.namespace, self.name)

    def message(self):
        kind, name = self.workload[1], self.workload[2]
        return ("%s %s: %s; its replacement fits on node %s"
                % (kind, name, "; ".join(self.reasons), self.to_node))


class Held:
    """A workload whose intent is unmet and that is not rebalanced: REASON says why;
    POD (raw) is the replica that would have moved; STRATEGY the one it would have
    moved under."""

    __slots__ = ("workload", "pod", "strategy", "reason")

    def __init__(self, workload, pod, strategy, reason):
        self.workload, self.pod, self.strategy, self.reason = workload, pod, strategy, reason


class Rebalance:
    def __init__(self, evictions, held):
        self.evictions, self.held = evictions, held


def plan(node_objs: Iterable[Mapping[str, Any]], pod_objs: Iterable[Mapping[str, Any]],
         key: str, framework: Framework, limit: int = 1,
         owners: Iterable[Mapping[str, Any]] | None = None,
         pdbs: Iterable[Mapping[str, Any]] = (),
         namespace_objs: Iterable[Mapping[str, Any]] = (),
         selector_objs: Iterable[Mapping[str, Any]] = (),
         host_override: Mapping[str, str] | None = None, report: auditmod.Report | None = None,
         skip: Collection[tuple[str, ...]] = ()) -> Rebalance:
    """The Rebalance of the cluster given as raw objects (``audit.core.audit``'s
    arguments), evicting at most LIMIT replicas; FRAMEWORK: the scheduler profile's
    (``scheduling.profile.Profile().framework()``). REPORT: ``audit.core.audit`` of these
    very arguments, when the caller has it (the controller's exposure gauges); made with
    ``keep_engine=True``, its snapshot is moved on, not copied (else it is audited again
    when a workload needs moves). SKIP: keys of workloads to leave alone this time."""
    node_objs, pod_objs = list(node_objs), list(pod_objs)

    def audited():
        return auditmod.audit(node_objs, pod_objs, key, owners=owners, pdbs=pdbs,
                              host_override=host_override, namespace_objs=namespace_objs,
                              selector_objs=selector_objs, keep_engine=True)

    def unmet_in(report):
        return [w for w in report.workloads if w.intent and w.intent_met is False
                and not any(i["type"] == ENFORCED for i in w.intent)]
    report = report or audited()
    unmet = unmet_in(report)
    if not unmet or limit <= 0:
        return Rebalance([], [])
    if report.engine is None:       # the caller's audit did not keep its snapshot
        report = audited()
        unmet = unmet_in(report)
    owner_index = ownersmod.index_owners(owners) if owners is not None else None
    unsettled = _unsettled(pod_objs, owner_index)
    # the audit's own snapshot (every running pod bound, on Nova's hosts), moved on here
    state, engine = report.engine
    budgets = _budgets(pdbs)
    evictions: list[Eviction] = []
    held: list[Held] = []
    for w in unmet:
        if len(evictions) >= limit:
            break
        if w.key in unsettled or w.key in skip:
            continue
        placed = [(engine[_key(r)], r) for r in w.pods if _key(r) in engine]
        strategy = TOPOLOGY_SPREAD if all(i["type"] == "topologySpread"
                                          for i in w.intent) else ANTI_AFFINITY
        _rebalance_workload(state, framework, key, w, placed, strategy, budgets,
                            limit - len(evictions), evictions, held)
    return Rebalance(evictions, held)


def _key(raw):
    meta = raw["metadata"]
    return "%s/%s" % (meta.get("namespace") or "default", meta["name"])


def _unsettled(pod_objs, owner_index):
    """The workload keys with a replica not scheduled yet or being deleted."""
    out = set()
    for obj in pod_objs:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        if (obj.get("status") or {}).get("phase") in TERMINAL_PHASES or not meta.get("name"):
            continue
        if meta.get("deletionTimestamp") or not spec.get("nodeName"):
            kind, name = ownersmod.workload_of(meta, owner_index)
            out.add((meta.get("namespace") or "default", kind, name))
    return out


def _replacement(raw):
    """The engine's pod for the replica its controller makes when RAW is evicted: the same
    labels and spec, not bound to a node yet."""
    from tacker_hwaffinity.scheduling.model import Pod
    spec = {k: v for k, v in (raw.get("spec") or {}).items() if k != "nodeName"}
    return Pod.parse(dict(raw, spec=spec))


def _budgets(pdb_objs):
    out = []
    for obj in pdb_objs:
        try:
            out.append(Budget(obj))
        except InputError:
            continue        # the audit names a malformed budget; it protects nothing here
    return out


def _budget_refusal(budgets, w, raws, raw, moved):
    """Why evicting RAW after MOVED replicas of W (running RAWS) would break a budget,
    or None."""
    labels = raw["metadata"].get("labels") or {}
    for b in budgets:
        if b.namespace != w.namespace or not b.selector.matches(labels):
            continue
        selected = sum(1 for r in raws if b.selector.matches(
            r["metadata"].get("labels") or {}))
        after = b.after_loss(w.desired, selected, moved + 1)
        if not after["holds"]:
            return ("PodDisruptionBudget %s/%s: %d healthy, %d required; evicting one "
                    "more would break it" % (w.namespace, b.name, selected,
                                             after["desiredHealthy"]))
    return None


def _candidates(state, key, placed, judge):
    """The replicas of PLACED [((pod, node index), raw)] that break the intent where they
    run (JUDGE: their verdicts), from the host with most replicas first, youngest first."""
    domains = state.domains(key)
    count = {}
    for (pod, i), _ in placed:
        count[int(domains.ids[i])] = count.get(int(domains.ids[i]), 0) + 1
    bad = [(pi, raw, judge(pi)) for pi, raw in placed]
    bad = [b for b in bad if b[2]]
    bad.sort(key=lambda b: b[0][0].name)
    bad.sort(key=lambda b: b[1]["metadata"].get("creationTimestamp") or "", reverse=True)
    bad.sort(key=lambda b: -count[int(domains.ids[b[0][1]])])
    return bad


def _rebalance_workload(state, framework, key, w, placed, strategy, budgets, room,
                        evictions, held):
    raws = [raw for _, raw in placed]
    moved = 0

    def judge(pi):
        return intentmod.verdict(state, pi[0], pi[1], key)
    while moved < room:
        bad = _candidates(state, key, placed, judge)
        if not bad:
            return
        why = None
        for (pod, i), raw, reasons in bad:
            refusal = _budget_refusal(budgets, w, raws, raw, moved)
            if refusal:
                held.append(Held(w.key, raw, strategy, refusal))
                return
            try:
                moved_pod = _replacement(raw)
            except InputError as e:     # that workload's error: the others are planned
                held.append(Held(w.key, raw, strategy, "its pod cannot be read: %s" % e))
                return
            state.unbind(pod, i)
            ev = framework.evaluate(state, moved_pod)
            j = framework.select(state, ev)
            if j is None or j == i:
                why = ev.summary() if j is None else (
                    "the scheduler would place the replacement on node %s again"
                    % state.nodes[i].name)
                state.restore(pod, i)
                continue
            moved_pod.node_name = state.nodes[j].name
            state.bind(moved_pod, j)
            still = intentmod.verdict(state, moved_pod, j, key)
            if still:
                why = ("on node %s, where the scheduler would place the replacement: %s"
                       % (state.nodes[j].name, "; ".join(still)))
                state.unbind(moved_pod, j)
                state.restore(pod, i)
                continue
            placed = [(pi, r) for pi, r in placed if pi[0] is not pod] + [((moved_pod, j),
                                                                           raw)]
            evictions.append(Eviction(raw, pod.node_name, moved_pod.node_name, w.key,
                                      strategy, reasons))
            moved += 1
            break
        else:
            held.append(Held(w.key, bad[0][1], strategy, "no replica can move where the "
                                                         "intent holds (%s)" % why))
            return
