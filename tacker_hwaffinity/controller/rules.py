"""RequiredDuringExecution: the annotation, and which running pods break their rules.

The API server rejects ``requiredDuringSchedulingRequiredDuringExecution``, so a pod
carries the terms in one annotation, ``hwaffinity.io/required-during-execution``::

    {"podAffinity":     [<PodAffinityTerm>, ...],
     "podAntiAffinity": [<PodAffinityTerm>, ...],
     "nodeAffinity":    [<NodeSelectorTerm>, ...]}

in the Kubernetes schema (Gt/Lt allowed in label selectors, as in the engine).

The pod terms are judged by the scheduling engine's one evaluator
(``scheduling.plugins.interpod``), for the pod on its node and against the other pods
running now, the way the seed design (``001``, ``002``) specified them:

* an anti-affinity term is violated when another running pod it selects is in the
  pod's domain (the pod's node's value of the topology key);
* the affinity terms are violated when a term's domain holds no other running pod
  that every affinity term selects (unless no such pod runs anywhere and the pod
  selects itself: the first pod of a group, as the scheduler allows it);
* node affinity (terms ORed) is violated when the pod's node matches none of them.

A node without a term's topology key puts its pods in no domain: an anti-affinity
term on that key is met, and the affinity terms are not judged (the scheduler would
not place a pod there; this controller does not evict one for a missing label).

Every pod term is judged against every running pod at every tick, so one pod's
annotation carries at most ``MAX_POD_TERMS`` of them (``parse``): 2,500 terms, which
fit in the API server's 256 KiB of annotations, made each tick take 28 s with 5,000 pods,
for every tenant's enforcement.
Pure: no I/O; ``Cluster`` is a snapshot.
"""
import typing

import numpy as np

from tacker_hwaffinity.errors import InputError

from tacker_hwaffinity.scheduling.annotations import REQUIRED_DURING_EXECUTION as ANNOTATION
from tacker_hwaffinity.scheduling.annotations import Rules
from tacker_hwaffinity.scheduling.model import NS_NAME_LABEL, Node
from tacker_hwaffinity.scheduling.nodetable import NodeTable
from tacker_hwaffinity.scheduling.plugins import interpod

__all__ = ("ANNOTATION", "Rules", "RunningPod", "Violation", "Cluster", "eviction_order",
           "Forgiveness", "parse", "MAX_POD_TERMS")

MAX_POD_TERMS = 32      # podAffinity and podAntiAffinity terms of one pod's annotation


def parse(text):
    """The Rules of the annotation TEXT (``Rules.parse``), with at most MAX_POD_TERMS
    pod terms; InputError otherwise."""
    rules = Rules.parse(text)
    count = len(rules.affinity) + len(rules.anti)
    if count > MAX_POD_TERMS:
        raise InputError("%d podAffinity and podAntiAffinity terms, over the controller's "
                         "limit of %d (each is judged against every running pod at every "
                         "tick)" % (count, MAX_POD_TERMS), field=ANNOTATION)
    return rules


class RunningPod:
    """A pod bound to a node, with its rules resolved for its namespace and labels."""

    __slots__ = ("key", "namespace", "name", "labels", "node", "created", "priority",
                 "affinity", "anti", "rules", "uid")

    def __init__(self, namespace, name, labels, node, rules=None, created="", priority=0,
                 uid=None):
        self.namespace, self.name, self.labels, self.node = namespace, name, labels, node
        self.key = "%s/%s" % (namespace, name)
        self.created, self.priority, self.uid, self.rules = created, priority, uid, rules
        self.affinity = tuple(t.resolve(namespace, labels, True)
                              for t in (rules.affinity if rules else ()))
        self.anti = tuple(t.resolve(namespace, labels, True)
                          for t in (rules.anti if rules else ()))


class Violation:
    """POD breaks one of its rules; OTHERS are the pods that make it so (anti-affinity)."""

    __slots__ = ("pod", "kind", "field", "key", "domain", "others")

    def __init__(self, pod, kind, field, key=None, domain=None, others=()):
        self.pod, self.kind, self.field = pod, kind, field
        self.key, self.domain, self.others = key, domain, tuple(others)

    def message(self):
        if self.kind == "podAntiAffinity":
            return ("its required-during-execution anti-affinity term %s is violated: %s "
                    "run(s) in its %s domain %s" % (self.field, ", ".join(
                        p.key for p in self.others[:3]) + (" and more" if len(
                            self.others) > 3 else ""), self.key, self.domain))
        if self.kind == "podAffinity":
            return ("its required-during-execution affinity term %s is violated: no pod it "
                    "selects runs in its %s domain %s" % (self.field, self.key, self.domain))
        return ("its required-during-execution node affinity is violated: node %s matches "
                "none of its terms" % self.pod.node)


_NONE: typing.Mapping[str, str] = {}     # the labels of a namespace not known


class Cluster:
    """Running pods on nodes (``{name: labels}``) in namespaces (``{name: labels}``)."""

    def __init__(self, nodes, pods, namespaces=None):
        self.nodes = dict(nodes)
        # a namespace carries its name label, as the API server (1.21+) and the engine set it
        self.namespaces = {name: dict(labels, **{NS_NAME_LABEL: name})
                           for name, labels in (namespaces or {}).items()}
        self.pods = [p for p in pods if p.node in self.nodes]
        self.table = NodeTable(Node(name, labels) for name, labels in self.nodes.items())
        self._selected = {}     # term sigs -> running pods every one of the terms selects
        self._counts = {}       # (term sigs, key) -> per-domain counts of those pods

    def domain(self, pod, key):
        return self.nodes[pod.node].get(key)

    def domains(self, key):
        """The node table's ``Domains`` of topology KEY."""
        return self.table.domains(key)

    def selected(self, terms):
        """Running pods that every one of TERMS (resolved) selects (cached)."""
        sig = tuple(t.sig for t in terms)
        got = self._selected.get(sig)
        if got is None:
            if len(terms) == 1:     # the common case, without a generator per pod
                t, ns = terms[0], self.namespaces
                got = [p for p in self.pods if t.matches(p.namespace, p.labels,
                                                         ns.get(p.namespace, _NONE))]
            else:
                got = [p for p in self.pods if self.selects(terms, p)]
            self._selected[sig] = got
        return got

    def selects(self, terms, pod):
        """Does every one of TERMS select the running POD?"""
        ns_labels = self.namespaces.get(pod.namespace, _NONE)
        return all(t.matches(pod.namespace, pod.labels, ns_labels) for t in terms)

    def counts(self, terms, key):
        """Per domain of KEY, how many running pods every one of TERMS selects."""
        ck = (tuple(t.sig for t in terms), key)
        got = self._counts.get(ck)
        if got is None:
            d = self.domains(key)
            at = np.fromiter((self.table.index[p.node] for p in self.selected(terms)),
                             dtype=np.int64)
            ids = d.ids[at]
            got = self._counts[ck] = np.bincount(ids[ids >= 0], minlength=len(d))
        return got

    def violations(self, pods=None):
        """Every rule the given running PODS (default: all with rules) break now."""
        out = []
        for pod in (self.pods if pods is None else pods):
            if pod.node not in self.nodes:
                continue
            view = _Judged(self, pod)
            for i, term in enumerate(pod.anti):
                if interpod.anti_hits(view, term)[0]:
                    value = self.domain(pod, term.topology_key)
                    others = [q for q in self.selected((term,)) if q is not pod
                              and self.domain(q, term.topology_key) == value]
                    out.append(Violation(pod, "podAntiAffinity", "podAntiAffinity[%d]" % i,
                                         term.topology_key, value, others))
            if pod.affinity and all(self.domain(pod, t.topology_key) is not None
                                    for t in pod.affinity) \
                    and not interpod.affinity_met(view, pod.affinity)[0]:
                i = view.first_empty(pod.affinity)
                key = pod.affinity[i].topology_key
                out.append(Violation(pod, "podAffinity", "podAffinity[%d]" % i, key,
                                     self.domain(pod, key)))
            if pod.rules is not None and pod.rules.node is not None:
                if not pod.rules.node.matches(self.nodes[pod.node], pod.node):
                    out.append(Violation(pod, "nodeAffinity", "nodeAffinity"))
        return out

    def affected_by_node(self, node, changed_keys):
        """The pods whose rules a label change of NODE (CHANGED_KEYS) can affect: pods
        with node affinity on NODE, and pods with terms on a changed key."""
        keys = set(changed_keys)
        return [p for p in self.pods
                if (p.node == node and p.rules is not None and p.rules.node is not None)
                or any(t.topology_key in keys for t in p.anti + p.affinity)]


class _Judged:
    """A ``scheduling.counts.CountsView`` (the evaluator's, ``interpod``) for one running
    POD on its node (one slot), against the other running pods: the pod itself is not
    counted."""

    __slots__ = ("cluster", "pod", "size", "_slot")

    def __init__(self, cluster, pod):
        self.cluster, self.pod, self.size = cluster, pod, 1
        self._slot = cluster.table.index[pod.node]

    def domain_ids(self, key):
        return self.cluster.domains(key).ids[self._slot:self._slot + 1]

    def matching_counts(self, terms, key):
        counts = self.cluster.counts(terms, key)
        d = self.cluster.domains(key).ids[self._slot]
        if d >= 0 and counts[d] and self.cluster.selects(terms, self.pod):
            counts = counts.copy()
            counts[d] -= 1
        return counts

    def selecting_groups(self, kind):
        return ()   # a pod answers for its own terms; another pod's are that pod's

    def selects_itself(self, terms):
        return self.cluster.selects(terms, self.pod)

    def first_empty(self, terms):
        """Index of the first term whose domain holds no pod that all TERMS select."""
        for i, t in enumerate(terms):
            d = self.domain_ids(t.topology_key)[0]
            if not self.matching_counts(terms, t.topology_key)[d]:
                return i
        return 0


def eviction_order(violations, moved_nodes=()):
    """The violators in the order to evict them, one at a time (re-evaluating after
    each): pods on nodes that just moved first (their arrival is what broke the rule),
    then the lowest priority, then the newest, then by name. Affinity violations are
    listed only once their grace has run out (the caller filters them)."""
    seen, out = set(), []
    moved = set(moved_nodes)
    for v in sorted(violations, key=lambda v: (v.pod.node not in moved, v.pod.priority,
                                               _newest_first(v.pod.created), v.pod.key)):
        if v.pod.key not in seen:
            seen.add(v.pod.key)
            out.append(v)
    return out


def _newest_first(created):
    return tuple(-ord(c) for c in created or "")


class Forgiveness:
    """When a violation counts: anti-affinity and node affinity at once; affinity only
    once it has lasted GRACE seconds (the seed's forgiveness: the pod it follows may be
    restarting). CLOCK: seconds, monotonic."""

    def __init__(self, grace, clock):
        self.grace, self.clock = grace, clock
        self._since = {}        # (pod key, field) -> first seen

    def due(self, violations):
        now = self.clock()
        seen, out = set(), []
        for v in violations:
            k = (v.pod.key, v.field)
            seen.add(k)
            if v.kind != "podAffinity":
                out.append(v)
                continue
            first = self._since.setdefault(k, now)
            if now - first >= self.grace:
                out.append(v)
        for k in [k for k in self._since if k not in seen]:   # healed: forget
            del self._since[k]
        return out
