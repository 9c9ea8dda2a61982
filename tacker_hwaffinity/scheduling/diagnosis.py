"""The mistakes behind a plan: likely input mistakes (warnings) and why replicas were left.

Pure: reads the cluster state after planning (nodes, namespaces, bound pods), the planned
pods and the ``planner.Plan``, and fills the plan's ``warnings`` (one line each, naming
the file, the object and the field) and ``unplaced`` (one record per workload with
replicas left over, its cause and limit read from the engine's own filter verdicts).
What each message means: doc/cli.md, "Warnings and the unplaced summary".
"""
import difflib
from collections.abc import Iterable, Mapping, Sequence, Set

import numpy as np

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling.arrays import BoolArray, IntArray
from tacker_hwaffinity.scheduling.model import Node, Pod, PodSpecInfo, tolerates
from tacker_hwaffinity.scheduling.planner import Placement, Plan, Unfit, Unplaced
from tacker_hwaffinity.scheduling.plugins import Rejection
from tacker_hwaffinity.scheduling.plugins.interpod import ANTI, EXISTING_ANTI
from tacker_hwaffinity.scheduling.snapshot import Nowhere
from tacker_hwaffinity.scheduling.spreading import DO_NOT_SCHEDULE, HONOR, Constraint
from tacker_hwaffinity.scheduling.state import ClusterState
from tacker_hwaffinity.scheduling.terms import AffinityTerm

# Filters whose verdict on a node depends on the node and the pod spec only, never on
# the pods bound: the nodes they pass are the nodes a workload "may use".
STATIC_FILTERS = ("NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity")
# Labels the controllers add to every replica: left out when a workload's labels are shown.
GENERATED_LABELS = frozenset((
    "pod-template-hash", "controller-revision-hash", "statefulset.kubernetes.io/pod-name",
    "apps.kubernetes.io/pod-index", "controller-uid", "batch.kubernetes.io/controller-uid",
    "job-name", "batch.kubernetes.io/job-name", "batch.kubernetes.io/job-completion-index",
    "pod-template-generation"))
MAX_NAMED_NODES = 5
# (what keeps a workload's replicas off the nodes, how many it allows: None when that is
# not a count) of one of the causes named here
Cause = tuple[str, int | None]


def diagnose(state: ClusterState, pods: Sequence[Pod], result: Plan,
             nowhere: Iterable[Nowhere] = ()) -> Plan:
    """Fill RESULT's ``warnings`` and ``unplaced`` for PODS planned on STATE (whose
    nodes carry RESULT's topology key: ``check_carried``); the DaemonSets of NOWHERE, which
    run on no node, are unplaced too (placed and desired 0)."""
    groups = workloads(pods, result.placements)
    result.warnings = (unlabelled_nodes_warning(state, groups, result.topology_key)
                       + input_warnings(state, pods, groups))
    result.unplaced = [u for u in (unplaced(state, g, result.topology_key) for g in groups)
                       if u is not None]
    result.unplaced += [{"workload": d.workload, "placed": 0, "desired": 0,
                         "reason": d.reason, "limit": 0} for d in nowhere]
    return result


def check_carried(nodes: Sequence[Node], key: str, field: str = "--topology-key") -> None:
    """InputError naming FIELD when no node of NODES carries the label KEY: no domain of
    KEY can be reported, and a plan or gate would answer another question than asked."""
    label_keys = {k for n in nodes for k in n.labels}
    if nodes and key not in label_keys:
        hint = "" if suggestion(key, label_keys) else (
            ": name a label the nodes carry (kubernetes.io/hostname: each node a domain)")
        raise InputError(missing_label(key, label_keys) + hint, field=field)


def input_warnings(state: ClusterState, pods: Sequence[Pod],
                   groups: Iterable["Workload"] | None = None) -> list[str]:
    """The warnings on the workloads' own specs (topology keys, anti-affinity that misses
    their own pods) for PODS on STATE; GROUPS: ``workloads(PODS, ...)``."""
    label_keys = {k for n in state.nodes for k in n.labels}
    out: list[str] = []
    for group in groups if groups is not None else workloads(pods, ()):
        out.extend(workload_warnings(state, group, label_keys))
    return out


class Workload:
    """The pods one manifest object made (``label``: 'Kind namespace/name', ``source``:
    its file) and their placements, in scheduling order."""

    __slots__ = ("label", "source", "pods", "placements")

    def __init__(self, label: str, source: str | None) -> None:
        self.label, self.source = label, source
        self.pods: list[Pod] = []
        self.placements: list[Placement] = []

    def where(self, field: str) -> str:
        """'file: Kind ns/name: FIELD' for a message."""
        return ": ".join(p for p in (self.source, self.label, field) if p)


def workloads(pods: Iterable[Pod], placements: Iterable[Placement]) -> list[Workload]:
    """PODS grouped by the object they came from, in order of first appearance."""
    placed = {id(p.pod): p for p in placements}
    out: dict[tuple[str | None, str], Workload] = {}
    for pod in pods:
        label = pod.workload or "Pod %s" % pod.key
        w = out.get((pod.source, label))
        if w is None:
            w = out[(pod.source, label)] = Workload(label, pod.source)
        w.pods.append(pod)
        if id(pod) in placed:
            w.placements.append(placed[id(pod)])
    return list(out.values())


def suggestion(key: str, label_keys: Iterable[str]) -> str | None:
    """A label key of LABEL_KEYS that KEY was probably meant to be, or None."""
    by_lower = {k.lower(): k for k in sorted(label_keys)}
    if key.lower() in by_lower:
        return by_lower[key.lower()]
    close = difflib.get_close_matches(key, sorted(label_keys), n=1, cutoff=0.8)
    return close[0] if close else None


def missing_label(key: str, label_keys: Iterable[str]) -> str:
    """'no node carries the label "KEY"', with a likely meant key of LABEL_KEYS if any."""
    meant = suggestion(key, label_keys)
    return 'no node carries the label "%s"%s' % (
        key, ' (did you mean "%s"?)' % meant if meant else "")


def missing_label_warning(where: str, key: str, label_keys: Iterable[str]) -> str:
    """'WHERE: no node carries the label "KEY"', with a likely meant key if any."""
    return "%s: %s" % (where, missing_label(key, label_keys))


def _usable_by_any(node: Node, specs: Sequence[PodSpecInfo]) -> bool:
    """Can a pod of one of SPECS go to NODE as far as cordons and taints go?"""
    if node.unschedulable:
        return False
    taints = [t for t in node.taints if t.effect in ("NoSchedule", "NoExecute")]
    return any(all(tolerates(s.tolerations, t) for t in taints) for s in specs)


def unlabelled_nodes_warning(state: ClusterState, groups: Sequence["Workload"],
                             key: str) -> list[str]:
    """The nodes the workloads may use that lack KEY (cordoned nodes and nodes with taints
    no workload tolerates are left out): a pod placed there counts for no host."""
    specs = [g.pods[0].spec for g in groups]
    names = [n.name for n in state.nodes if key not in n.labels and _usable_by_any(n, specs)]
    if not names:
        return []
    shown = ", ".join(names[:MAX_NAMED_NODES])
    if len(names) > MAX_NAMED_NODES:
        shown += " and %d more" % (len(names) - MAX_NAMED_NODES)
    return ['%d of %d nodes have no "%s" label (%s): pods placed there count for no host'
            % (len(names), len(state.nodes), key, shown)]


def workload_warnings(state: ClusterState, group: Workload, label_keys: Set[str]
                      ) -> list[str]:
    """Topology keys no node carries, anti-affinity that misses the workload's own pods."""
    pod = group.pods[0]
    out: list[str] = []
    if state.nodes:
        fields = [(t.field, t.topology_key) for ts in pod.spec.raw_terms.values() for t in ts]
        fields += [(c.field, c.topology_key) for c in pod.spec.spread]
        out += [missing_label_warning(group.where(f + ".topologyKey"), key, label_keys)
                for f, key in fields if key not in label_keys]
    out += self_selection_warnings(state, group)
    return out


def _selects(state: ClusterState, term: AffinityTerm, pod: Pod) -> bool:
    """Does TERM (resolved) select POD, by the engine's own matching?"""
    return state.resolve_namespaces(term).matches(pod.namespace, pod.labels,
                                                  state.ns_labels(pod.namespace))


def self_selection_warnings(state: ClusterState, group: Workload) -> list[str]:
    """A workload of 2+ replicas whose anti-affinity terms, every one of them, miss its
    own pods (labelSelector, namespaces or namespaceSelector): nothing keeps its
    replicas apart. One line per term."""
    pod = group.pods[0]
    terms = pod.terms["required_anti"] + pod.terms["preferred_anti"]
    if len(group.pods) < 2 or not terms or any(_selects(state, t, pod) for t in terms):
        return []
    labels = ",".join("%s=%s" % kv for kv in sorted(pod.labels.items())
                      if kv[0] not in GENERATED_LABELS) or "none"
    return ["%s: does not select this workload's own pods (labels %s, namespace %s): its "
            "replicas are not kept apart"
            % (group.where(t.field + ".labelSelector"), labels, pod.namespace) for t in terms]


def unplaced(state: ClusterState, group: Workload, host_key: str) -> Unplaced | None:
    """The record of GROUP's left-over replicas, or None when all were placed."""
    left = [p for p in group.placements if p.node is None]
    if not left:
        return None
    placed = len(group.placements) - len(left)
    first = left[0]
    assert first.unfit is not None, "an unplaced pod carries the engine's verdicts"
    reason, limit = cause(state, first.pod, first.unfit, host_key)
    if reason is None:
        reason, limit = first.reasons[0], None
    return {"workload": group.label, "placed": placed, "desired": len(group.placements),
            "reason": reason, "limit": limit}


def unplaced_line(record: Unplaced) -> str:
    """The text line of one ``unplaced`` record."""
    if not record["desired"]:
        return "%s: %s" % (record["workload"], record["reason"])
    return "%s: %d of %d replicas placed: %s" % (record["workload"], record["placed"],
                                                 record["desired"], record["reason"])


def _histogram(rejection: Rejection, mask: BoolArray) -> str:
    counts: dict[str, int] = {}
    rejection.histogram(mask, counts)
    return ", ".join("%d %s" % (n, r) for r, n in sorted(counts.items(), key=lambda x: -x[1]))


def cause(state: ClusterState, pod: Pod, unfit: Unfit,
          host_key: str) -> tuple[str | None, int | None]:
    """(reason, limit) of why no node took POD, from UNFIT (the engine's verdicts); (None,
    None) when it is none of the causes named here."""
    if unfit.prefilter:
        return unfit.prefilter[1], 0
    n = len(state.nodes)
    rej = unfit.rejections
    off = unfit.absent.copy() if unfit.absent is not None else np.zeros(n, dtype=bool)
    for name in STATIC_FILTERS:
        if name in rej:
            off |= rej[name].failed
    usable = ~off
    if not usable.any():
        return static_cause(state, rej), 0
    for explain in (anti_cause, spread_cause, resources_cause):
        got = explain(state, pod, rej, usable, host_key)
        if got is not None:
            return got
    return None, None


def _only(rej: Mapping[str, Rejection], usable: BoolArray, plugin: str) -> BoolArray:
    """The nodes PLUGIN alone keeps the pod from, among USABLE: every other dynamic
    filter passes them."""
    mask: BoolArray = usable.copy()
    for name, r in rej.items():
        if name != plugin and name not in STATIC_FILTERS:
            mask &= ~r.failed
    return mask


def _blocked_by(rej: Mapping[str, Rejection], usable: BoolArray,
                plugin: str) -> tuple[Rejection, BoolArray] | None:
    """(PLUGIN's verdict, the nodes it alone keeps the pod from among USABLE) when there
    are such nodes and it fails the pod on every one of them; None otherwise."""
    verdict = rej.get(plugin)
    if verdict is None:
        return None
    cand = _only(rej, usable, plugin)
    if not cand.any() or not verdict.failed[cand].all():
        return None
    return verdict, cand


def static_cause(state: ClusterState, rej: Mapping[str, Rejection]) -> str:
    """Why no node passes the filters of the node alone (selector, taints, cordons)."""
    n = len(state.nodes)
    na = rej.get("NodeAffinity")
    allowed = ~na.failed if na is not None else np.ones(n, dtype=bool)
    if not allowed.any():
        return "its node selector/affinity matches none of the %d nodes" % n
    which = ("the %d node(s) its node selector/affinity matches" % int(allowed.sum())
             if na is not None else "every node")
    parts = [_histogram(rej[name], allowed & rej[name].failed)
             for name in ("NodeName", "NodeUnschedulable", "TaintToleration")
             if name in rej and (allowed & rej[name].failed).any()]
    return "%s fail(s) kube-scheduler's node filters: %s" % (which, "; ".join(parts))


def _domains_phrase(state: ClusterState, key: str, usable: BoolArray,
                    host_key: str) -> tuple[int, str]:
    """'N hosts carry the key' (KEY the host key) or 'N KEY values', over USABLE nodes."""
    values = {n.labels[key] for n, ok in zip(state.nodes, usable) if ok and key in n.labels}
    every = {n.labels[key] for n in state.nodes if key in n.labels}
    noun = "hosts" if key == host_key else "%s values" % key
    if len(values) == len(every):
        text = ("%d hosts carry the key" % len(values) if key == host_key
                else "%d distinct %s" % (len(values), noun))
    else:
        text = "%d of the %d %s have a node it may use" % (len(values), len(every), noun)
    return len(values), text


def anti_cause(state: ClusterState, pod: Pod, rej: Mapping[str, Rejection], usable: BoolArray,
               host_key: str) -> Cause | None:
    """The pod's own required anti-affinity against its replicas: at most one per domain."""
    got = _blocked_by(rej, usable, "InterPodAffinity")
    if got is None:
        return None
    ipa, cand = got
    if ipa.codes is None:
        return None
    codes = set(int(c) for c in ipa.codes[cand])
    if codes == {EXISTING_ANTI}:
        return ("required anti-affinity of pods already running keeps it off every node it "
                "may use", None)
    if codes != {ANTI}:
        return None
    own = [t for t in pod.terms["required_anti"] if _selects(state, t, pod)]
    if not own:
        return ("its required anti-affinity keeps it off every node it may use: each is in "
                "a domain that holds a pod the terms select", None)
    best: tuple[int, str] | None = None
    for t in own:
        limit, text = _domains_phrase(state, t.topology_key, usable, host_key)
        if best is None or limit < best[0]:
            best = (limit, "required anti-affinity on %s allows at most %d (%s)"
                    % (t.topology_key, limit, text))
    assert best is not None, "own is not empty"
    return best[1], best[0]


def _spread_counts(state: ClusterState, pod: Pod, c: Constraint) -> IntArray:
    """Per node, the bound non-terminating pods constraint C counts (namespace, selector)."""
    counts = np.zeros(len(state.nodes), dtype=np.int64)
    for p, i in state.pods:
        if not p.terminating and p.namespace == pod.namespace and c.selector.matches(p.labels):
            counts[i] += 1
    return counts


def spread_limit(state: ClusterState, pod: Pod, c: Constraint, rej: Mapping[str, Rejection],
                 cand: BoolArray) -> tuple[int, str] | None:
    """(limit, text) of DoNotSchedule constraint C when a domain it counts has no node
    the pod may use (its count is stuck, so the others stay within maxSkew of it); None
    when every domain is open."""
    domains = state.domains(c.topology_key)
    counted = domains.present.copy()
    if c.affinity_policy == HONOR and "NodeAffinity" in rej:
        counted &= ~rej["NodeAffinity"].failed
    if c.taints_policy == HONOR and "TaintToleration" in rej:
        counted &= ~rej["TaintToleration"].failed
    if not counted.any():
        return None
    ids = domains.ids[counted]
    per_domain = np.bincount(ids, weights=_spread_counts(state, pod, c)[counted],
                             minlength=len(domains)).astype(np.int64)
    present = np.bincount(ids, minlength=len(domains)) > 0
    open_ = np.bincount(domains.ids[cand & domains.present], minlength=len(domains)) > 0
    n_domains = int(present.sum())
    below_min = n_domains < c.min_domains
    minimum = 0 if below_min else int(per_domain[present].min())
    closed = present & ~open_
    if not below_min and not (closed & (per_domain == minimum)).any():
        return None
    cap = minimum + c.max_skew
    limit = int(np.where(closed, per_domain, np.maximum(per_domain, cap))[present].sum())
    if below_min:
        why = "%d domain(s) of %s, fewer than minDomains %d: each holds at most %d" % (
            n_domains, c.topology_key, c.min_domains, c.max_skew)
    else:
        stuck = sorted(domains.values[i] for i in np.flatnonzero(closed & (per_domain
                                                                          == minimum)))
        why = "%s has no node it may use and holds %d, so each other %s value holds at " \
              "most %d" % (", ".join(stuck), minimum, c.topology_key, cap)
    return limit, "topology spread on %s (maxSkew %d, DoNotSchedule) allows at most %d " \
                  "matching pods (%s)" % (c.topology_key, c.max_skew, limit, why)


def spread_cause(state: ClusterState, pod: Pod, rej: Mapping[str, Rejection], usable: BoolArray,
                 _host_key: str) -> Cause | None:
    """The pod's own DoNotSchedule topology spread constraints."""
    got = _blocked_by(rej, usable, "PodTopologySpread")
    if got is None:
        return None
    pts, cand = got
    hard = [c for c in pod.spread if c.action == DO_NOT_SCHEDULE]
    if hard and pts.codes is not None and (pts.codes[cand] == 1).all():
        keys = ", ".join(sorted({c.topology_key for c in hard}))
        return "topology spread on %s: no node it may use carries the key" % keys, 0
    for c in hard:
        limited = spread_limit(state, pod, c, rej, cand)
        if limited is not None:
            return limited[1], limited[0]
    return None


def _amount(resource: str, value: int) -> str:
    if resource == "cpu":
        return "%g" % (value / 1000.0) if value % 1000 == 0 else "%dm" % value
    if resource in ("memory", "ephemeral-storage") and value % (1 << 20) == 0:
        return "%dMi" % (value >> 20)
    return str(value)


def resources_cause(state: ClusterState, pod: Pod, rej: Mapping[str, Rejection],
                    usable: BoolArray, _host_key: str) -> Cause | None:
    """No node it may use has room: which resources, and what the pod asks."""
    got = _blocked_by(rej, usable, "NodeResourcesFit")
    if got is None:
        return None
    fit, cand = got
    counts: dict[str, int] = {}
    fit.histogram(cand, counts)
    short = sorted(r[len("Insufficient "):] for r in counts if r.startswith("Insufficient "))
    asks = ", ".join("%s %s" % (r, _amount(r, pod.spec.requests.get(r, 0))) for r in short)
    return ("not enough room on any of the %d node(s) it may use (%s; it requests %s)"
            % (int(cand.sum()), _histogram(fit, cand), asks or "a pod slot"), None)
