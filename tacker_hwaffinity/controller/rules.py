"""RequiredDuringExecution: the annotation, and which running pods break their rules.

The API server rejects ``requiredDuringSchedulingRequiredDuringExecution``, so a pod
carries the terms in one annotation, ``hwaffinity.io/required-during-execution``::

    {"podAffinity":     [<PodAffinityTerm>, ...],
     "podAntiAffinity": [<PodAffinityTerm>, ...],
     "nodeAffinity":    [<NodeSelectorTerm>, ...]}

in the Kubernetes schema (Gt/Lt allowed in label selectors, as in the engine). The
terms mean what the scheduling engine's required terms mean (namespaces and
namespaceSelector, matchLabelKeys, topology keys), evaluated against the pods running
now, the way the seed design (``001``, ``002``) specified them:

* an anti-affinity term is violated when another running pod it selects is in the
  pod's domain (the pod's node's value of the topology key);
* an affinity term is violated when no other running pod it selects is in the pod's
  domain (unless no pod it selects runs anywhere and the pod selects itself: the first
  pod of a group, as the scheduler allows it);
* node affinity (terms ORed) is violated when the pod's node matches none of them.

A node without the topology key puts its pods in no domain: their terms on that key
are neither met nor violated. Pure: no I/O; ``Cluster`` is a snapshot.
"""
from tacker_hwaffinity.scheduling.annotations import REQUIRED_DURING_EXECUTION as ANNOTATION
from tacker_hwaffinity.scheduling.annotations import Rules

__all__ = ("ANNOTATION", "Rules", "RunningPod", "Violation", "Cluster", "eviction_order",
           "Forgiveness")


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


class Cluster:
    """Running pods on nodes (``{name: labels}``) in namespaces (``{name: labels}``)."""

    def __init__(self, nodes, pods, namespaces=None):
        self.nodes = dict(nodes)
        self.namespaces = dict(namespaces or {})
        self.pods = [p for p in pods if p.node in self.nodes]
        self._by_term = {}

    def domain(self, pod, key):
        return self.nodes[pod.node].get(key)

    def _selected(self, term):
        """Running pods TERM selects (cached per term)."""
        got = self._by_term.get(term.sig)
        if got is None:
            got = self._by_term[term.sig] = [
                p for p in self.pods
                if term.matches(p.namespace, p.labels, self.namespaces.get(p.namespace, {}))]
        return got

    def violations(self, pods=None):
        """Every rule the given running PODS (default: all with rules) break now."""
        out = []
        for pod in (self.pods if pods is None else pods):
            if pod.node not in self.nodes:
                continue
            for i, term in enumerate(pod.anti):
                value = self.domain(pod, term.topology_key)
                if value is None:
                    continue
                others = [q for q in self._selected(term) if q is not pod
                          and self.domain(q, term.topology_key) == value]
                if others:
                    out.append(Violation(pod, "podAntiAffinity", "podAntiAffinity[%d]" % i,
                                         term.topology_key, value, others))
            for i, term in enumerate(pod.affinity):
                value = self.domain(pod, term.topology_key)
                if value is None:
                    continue
                selected = [q for q in self._selected(term) if q is not pod]
                if any(self.domain(q, term.topology_key) == value for q in selected):
                    continue
                if not selected and term.matches(pod.namespace, pod.labels,
                                                 self.namespaces.get(pod.namespace, {})):
                    continue        # the first pod of its group
                out.append(Violation(pod, "podAffinity", "podAffinity[%d]" % i,
                                     term.topology_key, value))
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
