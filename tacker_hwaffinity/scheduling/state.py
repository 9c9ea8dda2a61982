"""Cluster state for scheduling: nodes as arrays, bound pods as incremental counts.

Everything a scheduling decision needs is kept per topology domain and
updated when a pod is bound, the way kube-scheduler's PreFilter state
counts topology pairs, so deciding for one pod costs O(distinct terms)
plus a few vector operations over the nodes, not O(pods x nodes).
"""
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Protocol, TypeAlias, TypeVar, cast

import numpy as np
from numpy.typing import NDArray

from tacker_hwaffinity.scheduling import selectors
from tacker_hwaffinity.scheduling.arrays import BoolArray, IntArray
from tacker_hwaffinity.scheduling.model import ClassKey, Namespace, Node, Pod
from tacker_hwaffinity.scheduling.nodetable import Domains, NodeTable
from tacker_hwaffinity.scheduling.resources import node_allocatable
from tacker_hwaffinity.scheduling.selectors import NOTHING, LabelSelector
from tacker_hwaffinity.scheduling.terms import AffinityTerm

# The controllers whose selector kube-scheduler's default spreading reads (DefaultSelector).
SELECTOR_OWNERS = (("v1", "ReplicationController"), ("apps/v1", "ReplicaSet"),
                   ("apps/v1", "StatefulSet"))

# Does a bound pod count (the pod, its namespace's labels)?
DomainMatcher: TypeAlias = Callable[[Pod, Mapping[str, str]], bool]
NodeMatcher: TypeAlias = Callable[[Pod], bool]
# What a plugin keeps for a state or a cycle, by keys of its own (``data(plugin)``).
PluginData: TypeAlias = dict[Hashable, Any]
# A controller of pods: (namespace, apiVersion, kind, name).
ControllerKey: TypeAlias = tuple[str | None, ...]


class Extension(Protocol):
    """A plugin's own counting of bound pods, registered with ``ClusterState.extension``."""

    def bind(self, state: "ClusterState", pod: Pod, node_index: int, sign: int) -> None:
        """Count POD on node NODE_INDEX (SIGN 1), or take it out again (SIGN -1)."""


ExtensionT = TypeVar("ExtensionT", bound=Extension)


class DomainCounts:
    """How many bound pods matching MATCHER sit in each domain of one topology key."""

    __slots__ = ("matcher", "domains", "counts", "total", "_cache")

    def __init__(self, matcher: DomainMatcher, domains: Domains) -> None:
        self.matcher, self.domains = matcher, domains
        self.counts: IntArray = np.zeros(len(domains), dtype=np.int64)
        self.total = 0
        self._cache: dict[ClassKey, bool] = {}

    def add(self, pod: Pod, node_index: int, ns_labels: Mapping[str, str],
            sign: int = 1) -> None:
        d = self.domains.ids[node_index]
        if d < 0:
            return
        hit = self._cache.get(pod.class_key)
        if hit is None:
            hit = self._cache[pod.class_key] = self.matcher(pod, ns_labels)
        if hit:
            self.counts[d] += sign
            self.total += sign


class NodeCounts:
    """Per node, how many bound, non-terminating pods MATCHER selects (PodTopologySpread)."""

    __slots__ = ("matcher", "counts", "_cache")

    def __init__(self, matcher: NodeMatcher, n: int) -> None:
        self.matcher = matcher
        self.counts: IntArray = np.zeros(n, dtype=np.int64)
        self._cache: dict[ClassKey, bool] = {}

    def add(self, pod: Pod, node_index: int, sign: int = 1) -> None:
        if pod.terminating:
            return
        hit = self._cache.get(pod.class_key)
        if hit is None:
            hit = self._cache[pod.class_key] = self.matcher(pod)
        if hit:
            self.counts[node_index] += sign


class ClusterState:
    """Nodes, namespaces and bound pods, with the counts the plugins read.

    SERVICES: ``[(namespace, selector map)]``; CONTROLLERS: ``{(namespace, apiVersion,
    kind, name): LabelSelector}`` of ReplicaSets, StatefulSets and ReplicationControllers:
    what default topology spreading derives a pod's selector from.
    """

    def __init__(self, nodes: Iterable[Node], namespaces: Iterable[Namespace] = (),
                 services: Iterable[tuple[str, Mapping[str, str]]] = (),
                 controllers: Mapping[ControllerKey, LabelSelector] | None = None) -> None:
        self.table = NodeTable(nodes)   # nodes, index and domains (scheduling/nodetable.py)
        self.nodes, self.index = self.table.nodes, self.table.index
        self.namespaces = {ns.name: ns for ns in namespaces}
        self.services = list(services)
        self.controllers = dict(controllers or {})
        n = len(self.nodes)
        self.alloc: dict[str, IntArray] = {}
        self.requested: dict[str, IntArray] = {
            r: np.zeros(n, dtype=np.int64) for r in ("cpu", "memory")}
        self.nonzero_requested: dict[str, IntArray] = {
            r: np.zeros(n, dtype=np.int64) for r in ("cpu", "memory")}
        for r in ("cpu", "memory", "pods"):
            self.allocatable(r)
        self.pod_count: IntArray = np.zeros(n, dtype=np.int64)
        self.unschedulable: BoolArray = np.array([node.unschedulable for node in self.nodes],
                                                 dtype=bool)
        names = np.array([x.name for x in self.nodes])
        self.names_rank: NDArray[np.intp] = np.argsort(np.argsort(names, kind="stable"))
        self.pods: list[tuple[Pod, int]] = []  # (pod, node index), in binding order
        self.absent: set[int] = set()  # id() of pods taken out of the counts by unbind()
        # DomainCounts/NodeCounts of counts()/node_counts(), in order
        self._made: list[DomainCounts | NodeCounts] = []
        # class key -> [counts scanned, [the counts it is in]]
        self._hits: dict[ClassKey, list[Any]] = {}
        # counts made by prime_*: kept out of _made, found by class
        self._primed: list[DomainCounts | NodeCounts] = []
        # class key -> [primed counts that select it]
        self._primed_hits: dict[ClassKey, list[DomainCounts | NodeCounts]] = {}
        self._counts: dict[tuple[Hashable, str], DomainCounts] = {}
        self._node_counts: dict[Hashable, NodeCounts] = {}
        # plugin name -> its bind-time counting (extension())
        self._extensions: dict[str, Extension] = {}
        self._default_selectors: dict[Hashable, LabelSelector | None] = {}
        self._node_values: dict[Hashable, list[Any]] = {}   # key -> [values, pods seen]
        # plugin name -> what it derives from the nodes (data())
        self._plugin_data: dict[str, PluginData] = {}
        # shared results for plugins that score every node alike (never modified)
        self.zeros: IntArray = np.zeros(n, dtype=np.int64)
        self.zeros.setflags(write=False)
        self.hundreds: IntArray = np.full(n, 100, dtype=np.int64)
        self.hundreds.setflags(write=False)

    def data(self, plugin: str) -> PluginData:
        """The dict PLUGIN (its name) keeps for this state: values it derives from the
        nodes only (masks, image scores), which do not change while the state lives."""
        got = self._plugin_data.get(plugin)
        if got is None:
            got = self._plugin_data[plugin] = {}
        return got

    def allocatable(self, resource: str) -> IntArray:
        """Allocatable RESOURCE per node (resources.UNCHECKED where it is not checked)."""
        a = self.alloc.get(resource)
        if a is None:
            a = self.alloc[resource] = np.array(
                [node_allocatable(node, resource) for node in self.nodes], dtype=np.int64)
        return a

    def requested_of(self, resource: str) -> IntArray:
        """Sum of the bound pods' requests of RESOURCE per node, kept up to date."""
        r = self.requested.get(resource)
        if r is None:
            r = self.requested[resource] = np.zeros(len(self.nodes), dtype=np.int64)
            for pod, i in self.pods:
                r[i] += pod.spec.requests.get(resource, 0)
        return r

    def node_values(self, key: Hashable, compute: Callable[[IntArray], IntArray],
                    compute_one: Callable[[int], int] | None = None) -> IntArray:
        """Per-node values that depend only on each node and what is bound to it (a
        resource score for one request, say), kept up to date: COMPUTE(idx) gives them
        for the node indices IDX, all nodes at first and then only the nodes pods were
        bound to since; COMPUTE_ONE(i), if given, for one node (faster than an array
        of one). Callers must not modify the array."""
        values: IntArray
        seen: int
        got = self._node_values.get(key)
        bound = len(self.pods)
        if got is None:
            values = compute(np.arange(len(self.nodes)))
            self._node_values[key] = [values, bound]
            return values
        values, seen = got
        if seen < bound:
            if bound - seen == 1 and compute_one is not None:
                i = self.pods[seen][1]
                values[i] = compute_one(i)
                got[1] = bound
                return values
            if bound - seen == 1:
                changed = np.array([self.pods[seen][1]], dtype=np.int64)
            else:
                changed = np.unique(np.fromiter((i for _, i in self.pods[seen:]),
                                                dtype=np.int64))
            values[changed] = compute(changed)
            got[1] = bound
        return values

    def node_counts(self, sig: Hashable, matcher: NodeMatcher) -> IntArray:
        """Per-node counts of bound non-terminating pods for MATCHER (identified by SIG)."""
        c = self._node_counts.get(sig)
        if c is None:
            c = self._node_counts[sig] = NodeCounts(matcher, len(self.nodes))
            self._made.append(c)
            for pod, i in self.pods:
                if not self.absent or id(pod) not in self.absent:
                    c.add(pod, i)
        return c.counts

    def default_selector(self, pod: Pod) -> LabelSelector | None:
        """helper.DefaultSelector: the selectors of the Services that select POD and of
        its controlling ReplicaSet, StatefulSet or ReplicationController; None if empty."""
        key = (pod.namespace, pod.class_key, pod.owner, id(pod.owner_selector))
        if key in self._default_selectors:
            return self._default_selectors[key]
        merged: dict[str, str] = {}
        for ns, sel in self.services:
            if ns == pod.namespace and all(pod.labels.get(k) == v for k, v in sel.items()):
                merged.update(sel)
        owner_sel = pod.owner_selector
        if owner_sel is None and pod.owner is not None and pod.owner[:2] in SELECTOR_OWNERS:
            owner_sel = self.controllers.get((pod.namespace,) + tuple(pod.owner))
        if owner_sel is not None and pod.owner is not None \
                and pod.owner[:2] == SELECTOR_OWNERS[0]:
            for r in owner_sel.requirements:  # an RC's selector is a plain label map
                merged[r.key] = r.values[0]
            owner_sel = None
        reqs = [selectors.Requirement(k, selectors.EQUALS, [v]) for k, v in merged.items()]
        if owner_sel is not None and not owner_sel.nothing:
            reqs.extend(owner_sel.requirements)
        got = selectors.LabelSelector(reqs) if reqs else None
        self._default_selectors[key] = got
        return got

    def ns_labels(self, namespace: str) -> Mapping[str, str]:
        ns = self.namespaces.get(namespace)
        return ns.labels if ns is not None else {}

    def domains(self, key: str) -> Domains:
        """The node table's ``Domains`` of topology KEY."""
        return self.table.domains(key)

    def counts(self, sig: Hashable, matcher: DomainMatcher, key: str) -> DomainCounts:
        """DomainCounts for MATCHER (identified by SIG) over topology KEY, kept up to date."""
        ck = (sig, key)
        c = self._counts.get(ck)
        if c is None:
            c = self._counts[ck] = DomainCounts(matcher, self.domains(key))
            self._made.append(c)
            for pod, i in self.pods:
                if not self.absent or id(pod) not in self.absent:
                    c.add(pod, i, self.ns_labels(pod.namespace))
        return c

    def extension(self, name: str,
                  factory: Callable[["ClusterState"], ExtensionT]) -> ExtensionT:
        """The bind-time counting plugin NAME keeps (``FACTORY(state)``, made once):
        an object whose ``bind(state, pod, node_index, sign)`` this state calls for every pod
        bound (sign 1) since, and for ``unbind`` (-1) and ``restore`` (1); the pods
        bound before it was made are fed to it first."""
        ext = self._extensions.get(name)
        if ext is None:
            ext = self._extensions[name] = factory(self)
            for pod, i in self.pods:
                if not self.absent or id(pod) not in self.absent:
                    ext.bind(self, pod, i, 1)
        return cast(ExtensionT, ext)    # the one FACTORY of NAME made it

    def bind(self, pod: Pod, node_index: int) -> None:
        """Record POD as running on node NODE_INDEX and update every count."""
        self.pods.append((pod, node_index))
        self.pod_count[node_index] += 1
        requests = pod.spec.requests
        for r, arr in self.requested.items():
            arr[node_index] += requests.get(r, 0)
        for r, arr in self.nonzero_requested.items():
            arr[node_index] += pod.spec.nonzero_requests[r]
        ns_labels = self.ns_labels(pod.namespace)
        for domain_counts in self._counts.values():
            domain_counts.add(pod, node_index, ns_labels)
        for node_counts in self._node_counts.values():
            node_counts.add(pod, node_index)
        for c in self._primed:  # a class first seen now: let unbind find its counts
            if self._selects(c, pod):
                hits = self._primed_hits.setdefault(pod.class_key, [])
                if c not in hits:
                    hits.append(c)
        for ext in self._extensions.values():
            ext.bind(self, pod, node_index, 1)

    def prime_counts(self, sig: Hashable, matcher: DomainMatcher, key: str,
                     pods: Iterable[tuple[Pod, int]]) -> None:
        """Create the DomainCounts ``counts(SIG, MATCHER, KEY)`` would, from PODS
        [(pod, node index)] alone: for a caller that knows no other bound pod matches
        (``hwaffinity audit`` finds the candidates in a label index), so creating them
        costs O(candidates), not O(bound pods). No-op when they exist."""
        ck = (sig, key)
        if ck not in self._counts:
            c = self._counts[ck] = DomainCounts(matcher, self.domains(key))
            self._prime(c, pods)

    def prime_node_counts(self, sig: Hashable, matcher: NodeMatcher,
                          pods: Iterable[tuple[Pod, int]]) -> None:
        """``prime_counts`` for ``node_counts(SIG, MATCHER)``."""
        if sig not in self._node_counts:
            c = self._node_counts[sig] = NodeCounts(matcher, len(self.nodes))
            self._prime(c, pods)

    def _prime(self, c: DomainCounts | NodeCounts, pods: Iterable[tuple[Pod, int]]) -> None:
        # the classes a primed count selects are known from its candidates, so unbind
        # finds it by class instead of testing every count against every new class
        self._primed.append(c)
        for pod, i in pods:
            if self._selects(c, pod):
                if id(pod) not in self.absent:
                    self._add(c, pod, i, 1)
                hits = self._primed_hits.setdefault(pod.class_key, [])
                if not hits or hits[-1] is not c:
                    hits.append(c)

    def _selects(self, c: DomainCounts | NodeCounts, pod: Pod) -> bool:
        hit = c._cache.get(pod.class_key)
        if hit is None:
            hit = c._cache[pod.class_key] = (
                c.matcher(pod, self.ns_labels(pod.namespace)) if isinstance(c, DomainCounts)
                else c.matcher(pod))
        return hit

    def _add(self, c: DomainCounts | NodeCounts, pod: Pod, node_index: int, sign: int) -> None:
        if isinstance(c, DomainCounts):
            c.add(pod, node_index, self.ns_labels(pod.namespace), sign)
        else:
            c.add(pod, node_index, sign)

    def unbind(self, pod: Pod, node_index: int) -> None:
        """Take the bound POD out of the counts the filters read (pod, domain and node
        counts, the plugins' extensions), as if it were not running; ``restore`` puts it back.
        ``hwaffinity audit`` judges each running replica against the cluster without
        itself this way. Resource sums and ``node_values`` are left as they are."""
        self._shift(pod, node_index, -1)
        self.absent.add(id(pod))

    def restore(self, pod: Pod, node_index: int) -> None:
        """Undo ``unbind(POD, NODE_INDEX)``."""
        self.absent.discard(id(pod))
        self._shift(pod, node_index, 1)

    def _shift(self, pod: Pod, node_index: int, sign: int) -> None:
        self.pod_count[node_index] += sign
        # only the counts that select the pod's class: each count is tested once per class
        hits = self._hits.get(pod.class_key)
        if hits is None:
            hits = self._hits[pod.class_key] = [0, []]
        for c in self._made[hits[0]:]:
            if self._selects(c, pod):
                hits[1].append(c)
        hits[0] = len(self._made)
        for c in hits[1]:
            self._add(c, pod, node_index, sign)
        for c in self._primed_hits.get(pod.class_key, ()):
            self._add(c, pod, node_index, sign)
        for ext in self._extensions.values():
            ext.bind(self, pod, node_index, sign)

    def resolve_namespaces(self, term: AffinityTerm) -> AffinityTerm:
        """Incoming-pod term with its namespaceSelector turned into names (PreFilter)."""
        sel = term.ns_selector
        if sel.nothing or sel.everything:
            return term
        names = set(term.namespaces)
        names.update(ns.name for ns in self.namespaces.values() if sel.matches(ns.labels))
        return term.with_namespaces(names, NOTHING)

