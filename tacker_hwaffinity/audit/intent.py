"""A workload's declared intent on the host key, and whether its running placement meets it.

Intent: pod anti-affinity against the workload's own pods with that topologyKey
(required, preferred, or the ``hwaffinity.io/required-during-execution`` annotation's),
and topologySpreadConstraints on that key. Whether it is met is the scheduling engine's
verdict, not a second copy of the rules: each running replica is judged by the
InterPodAffinity and PodTopologySpread filters on its own node against the cluster
without itself (``ClusterState.unbind``), with only its terms on the key; preferred terms
and ``ScheduleAnyway`` constraints are judged as if they were required (met = the
preference holds now). Reasons are the filters' (the strings ``explain`` prints).
Replicas of one label set on one host share a verdict, so this costs one pair of filter
calls per (workload, host), not per pod.
"""
import copy
import itertools

from tacker_hwaffinity.scheduling import annotations as term_annotations
from tacker_hwaffinity.scheduling.labelindex import LabelIndex
from tacker_hwaffinity.scheduling.plugins import interpod
from tacker_hwaffinity.scheduling.framework import Cycle
from tacker_hwaffinity.scheduling.plugins.interpod import InterPodAffinity
from tacker_hwaffinity.scheduling.plugins.topologyspread import PodTopologySpread
from tacker_hwaffinity.scheduling.spreading import DO_NOT_SCHEDULE

_INTERPOD, _SPREAD = InterPodAffinity(), PodTopologySpread()


def mentions(obj, key):
    """Cheap pre-check on a raw pod: does it declare anything on KEY?"""
    spec = _mapping(obj.get("spec"))
    aff = _mapping(_mapping(spec.get("affinity")).get("podAntiAffinity"))
    for lst in aff.values():
        for t in lst if isinstance(lst, list) else ():
            t = t.get("podAffinityTerm", t) if isinstance(t, dict) else {}
            if isinstance(t, dict) and t.get("topologyKey") == key:
                return True
    spread = spec.get("topologySpreadConstraints")
    for c in spread if isinstance(spread, list) else ():
        if isinstance(c, dict) and c.get("topologyKey") == key:
            return True
    annotations = _mapping(_mapping(obj.get("metadata")).get("annotations"))
    return any(isinstance(annotations.get(a), str) and key in annotations[a] for a in (
        term_annotations.REQUIRED_DURING_EXECUTION, term_annotations.POD_AFFINITY))


def _mapping(value):
    """VALUE when it is a mapping, else {} (a malformed field is the parser's to name)."""
    return value if isinstance(value, dict) else {}


def declared(pod, raw, key, ns_labels):
    """The intent of engine POD (raw object RAW) on KEY: a list of dicts."""
    out = []
    own = [t for t in pod.terms["required_anti"]
           if t.topology_key == key and t.matches(pod.namespace, pod.labels, ns_labels)]
    rde = ((raw.get("metadata") or {}).get("annotations") or {}).get(
        term_annotations.REQUIRED_DURING_EXECUTION)
    n_rde = 0
    if rde is not None:
        rules = term_annotations.Rules.parse(rde)
        n_rde = sum(1 for t in rules.anti if t.topology_key == key)
    if len(own) > n_rde:
        out.append({"type": "requiredAntiAffinity", "terms": len(own) - n_rde})
    if n_rde and own:
        out.append({"type": "requiredDuringExecution", "terms": min(n_rde, len(own))})
    pref = [t for t in pod.terms["preferred_anti"]
            if t.topology_key == key and t.matches(pod.namespace, pod.labels, ns_labels)]
    if pref:
        out.append({"type": "preferredAntiAffinity", "terms": len(pref)})
    for c in pod.spread:
        if c.topology_key == key:
            out.append({"type": "topologySpread", "maxSkew": c.max_skew,
                        "whenUnsatisfiable": c.action})
    return out


def judge_pod(pod, key, ns_labels):
    """A copy of POD carrying only its own-pod terms and constraints on KEY, all hard."""
    j = copy.copy(pod)
    anti = tuple(t for kind in ("required_anti", "preferred_anti") for t in pod.terms[kind]
                 if t.topology_key == key and t.matches(pod.namespace, pod.labels, ns_labels))
    j.terms = {k: () for k in pod.terms}
    j.terms["required_anti"] = anti
    spread = []
    for c in pod.spread:
        if c.topology_key == key:
            c = copy.copy(c)
            c.action = DO_NOT_SCHEDULE
            spread.append(c)
    j.spread = tuple(spread)
    return j


def verdict(state, pod, node_index, key, index=None):
    """Reasons (list of str) why POD, bound at NODE_INDEX, breaks its intent on KEY
    there, judged without itself; [] when it holds. INDEX: ``label_index(STATE)``."""
    judge = judge_pod(pod, key, state.ns_labels(pod.namespace))
    if index is not None:
        prime(state, index, judge)
    state.unbind(pod, node_index)
    try:
        cycle = Cycle(state, judge)
        reasons = []
        r = _INTERPOD.filter_own(cycle)
        if r is not None and r.failed[node_index]:
            reasons.extend(r.reasons(node_index))
        r = _SPREAD.filter(cycle)
        if r is not None and r.failed[node_index]:
            reasons.extend(r.reasons(node_index))
        return reasons
    finally:
        state.restore(pod, node_index)


def label_index(state):
    """A ``scheduling.labelindex.LabelIndex`` of STATE's bound pods: items are
    ``(pod, node index)``."""
    index = LabelIndex()
    for pod, i in state.pods:
        index.add((pod, i), pod.labels)
    return index


def _candidates(index, selector):
    """The (pod, node index) pairs of INDEX that SELECTOR may match; None: every one."""
    sets = index.candidates(selector)
    return None if sets is None else itertools.chain.from_iterable(sets)


def prime(state, index, judge):
    """Create the counts the filters will read for JUDGE from the label index's
    candidates (exactly the counts they would build by scanning every bound pod)."""
    for t in judge.terms["required_anti"]:
        t = state.resolve_namespaces(t)
        cand = _candidates(index, t.selector)
        if cand is not None:
            state.prime_counts(interpod.counts_sig((t,)), interpod.matches_all((t,)),
                               t.topology_key, cand)
    ns = judge.namespace
    for c in judge.spread:
        cand = _candidates(index, c.selector)
        if cand is not None:
            sel = c.selector
            state.prime_node_counts(("pts", ns, sel.sig),
                                    lambda p, sel=sel: p.namespace == ns and sel.matches(
                                        p.labels), cand)
