"""The scheduler extender's view of the cluster: nodes, namespaces, bound pods and
pending (assumed) pods, fed by informers and read by :mod:`extender` and
:mod:`marking`. What it keeps and why, and how assume/confirm works:
``doc/webhook.md``. Pure: no HTTP, no client.

One pod is that pod's problem: a malformed ``hwaffinity.io/`` annotation keeps the pod
without its extended terms (the extender refuses it at filter time, the validating
webhook at admission), and any other failure to index a pod skips that pod; both are
logged once per pod and annotation, and counted in
``hwaffinity_webhook_cache_pod_errors_total{reason}``. The watch and the list go on.

One pod's terms cost every decision bounded work: a pod with more than
``MAX_EXTENDED_TERMS`` extended terms, or a selector of more than
``MAX_SELECTOR_REQUIREMENTS`` requirements, is malformed (the extender refuses it with
the field named), and the lock is held for one term's selection at a time
(``select``, ``selecting``), never for a whole decision, so that the watch, the
admission webhooks and the other callers get it between two terms.

Readers apart from writers: the informers write through :class:`PodCache` (``on_*``,
``sync_*``) and the extender records the pods it lets through (``assume``); every read
goes through the cache's :class:`PodCacheView` (``PodCache.reader()``), whose methods
take the cache's lock themselves, one selection per acquisition: no caller outside this
module takes the lock.
"""
import collections
import logging
import threading
import time
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, TypeAlias, TypeVar

from prometheus_client import CollectorRegistry, Counter

from tacker_hwaffinity.constants import (EXTENDER_FILTER_RESOURCE, EXTENDER_RESOURCE,
                                         EXTENDER_SCORE_RESOURCE, TERMINAL_PHASES)
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects.jsontypes import ReadOnlyJson
from tacker_hwaffinity.objects.naming import DEFAULT_NAMESPACE
from tacker_hwaffinity.scheduling import annotations as term_annotations
from tacker_hwaffinity.scheduling.annotations import SchedulingTerms
from tacker_hwaffinity.scheduling.labelindex import POSITIVE, LabelIndex
from tacker_hwaffinity.scheduling.model import NS_NAME_LABEL, Node
from tacker_hwaffinity.scheduling.nodetable import NodeTable
from tacker_hwaffinity.scheduling.termgroups import EXISTING_KINDS, SelectingTerm, group_key
from tacker_hwaffinity.scheduling.terms import AffinityTerm, RawTerm
from tacker_hwaffinity.webhook.assumed import MAX_PENDING, Assumed

LOG = logging.getLogger(__name__)
PENDING_TTL_S = 30.0
# The extender's verbs, and the extended resources for which kube-scheduler calls each
# (deploy/webhook/scheduler-config.yaml's managedResources): its own mark, and the one
# mark of earlier webhooks (constants.py).
FILTER, SCORE = "filter", "prioritize"
VERBS = (FILTER, SCORE)
MARKS = {FILTER: (EXTENDER_FILTER_RESOURCE, EXTENDER_RESOURCE),
         SCORE: (EXTENDER_SCORE_RESOURCE, EXTENDER_RESOURCE)}
# A pod pending without the filter's mark longer than this is taken as stuck: an extended
# pod whose anti-affinity selects it no longer waits for it (``unmarked_pending``).
UNMARKED_GRACE_S = 60.0
_STUCK = float("-inf")      # the first-seen time of a pod taken as stuck (reported once)
MALFORMED, INTERNAL = "malformed_annotation", "internal"   # pod error reasons
_PARSE_CACHE_MAX = 1024
# What one pod's extended terms may ask of every decision (doc/webhook.md): each term is
# one selection over the index under its lock, each requirement one check per pod
# scanned. Pods carry a few terms of a few requirements; an annotation of 256 KiB could
# carry 1,600 terms, whose filter held the lock for over a minute on 30,000 pods.
MAX_EXTENDED_TERMS = 32
MAX_SELECTOR_REQUIREMENTS = 16
# Distinct extended terms of pending pods (of the kinds asked) that ``selected_by_live``
# matches a pod against at most; past it the answer is yes (the pod is marked for the
# extender, which decides), so that pods left pending by the thousand, each with terms
# of its own, cannot make every pod's admission slow (each term: a few microseconds).
MAX_PENDING_TERMS_CHECKED = 4096
# Time that ``selected_by_live`` (admission's marking, under /mutate's 3 s timeout and
# failurePolicy Fail) spends matching a new pod class against bound pods' distinct
# extended terms at most; past it the answer is yes, as above. Bound pods by the
# thousand, each with terms of its own, cost a new class about 1 s (the matches are kept
# per class, so the extender's filter, then later pods of that class, pay only once):
# without this, they could make every pod creation in the cluster fail.
MARKING_BUDGET_S = 0.5
_CHECK_CLOCK_EVERY = 256        # groups matched between two looks at the clock

Labels: TypeAlias = dict[str, str]
PerNode: TypeAlias = dict[str, int]
"""{node name: count}"""
ResolvedTerms: TypeAlias = dict[str, tuple[AffinityTerm, ...]]
"""{kind: (AffinityTerm, ...)}: one pod's extended terms, resolved for it"""
AnnotationPair: TypeAlias = tuple[Any, Any]
"""(hwaffinity.io/pod-affinity, hwaffinity.io/required-during-execution) as the pod
carries them: any JSON value, None when absent"""
_Result = TypeVar("_Result")


def _meta(obj: object) -> ReadOnlyJson:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return meta if isinstance(meta, dict) else {}


def _labels(meta: ReadOnlyJson) -> Labels:
    raw = meta.get("labels")
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str)}


def _named_labels(obj: object, namespace: bool = False) -> tuple[str, Labels] | None:
    """(name, labels) of a node or namespace object (None without a name); a namespace
    always carries its name label, as the API server sets it."""
    meta = _meta(obj)
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return None
    labels = _labels(meta)
    if namespace:
        labels.setdefault(NS_NAME_LABEL, name)
    return name, labels


def _named_table(objs: Iterable[object], namespace: bool = False) -> dict[str, Labels]:
    """{name: labels} of the named node or namespace objects OBJS."""
    return dict(named for named in (_named_labels(o, namespace) for o in objs)
                if named is not None)


def marked_verbs(spec: ReadOnlyJson) -> frozenset[str]:
    """The extender verbs kube-scheduler calls for a pod of SPEC: those whose resource
    (``MARKS``) a container or init container requests or limits (its ``IsInterested``
    for ``managedResources``)."""
    names: set[str] = set()
    for group in ("containers", "initContainers"):
        containers = spec.get(group)
        for c in containers if isinstance(containers, list) else ():
            res = c.get("resources") if isinstance(c, dict) else None
            if not isinstance(res, dict):
                continue
            for part in ("requests", "limits"):
                amounts = res.get(part)
                if isinstance(amounts, dict):
                    names.update(k for k in amounts if isinstance(k, str))
    return frozenset(v for v in VERBS if not names.isdisjoint(MARKS[v]))


def _bounded(sched_terms: SchedulingTerms | None) -> SchedulingTerms | None:
    """SCHED_TERMS (``annotations.SchedulingTerms``) when within the limits
    (``check_limits``); InputError naming the field otherwise."""
    if sched_terms is not None:
        check_limits([t for ts in sched_terms.pod_terms.values() for t in ts])
    return sched_terms


def check_limits(terms: Sequence[RawTerm]) -> None:
    """InputError naming the field when the extended pod terms TERMS (one pod's, of both
    annotations) are over ``MAX_EXTENDED_TERMS`` or a selector of one of them is over
    ``MAX_SELECTOR_REQUIREMENTS``: what the extender refuses, admission refuses too."""
    if len(terms) > MAX_EXTENDED_TERMS:
        raise InputError("%d extended pod affinity terms, over the extender's limit of %d"
                         % (len(terms), MAX_EXTENDED_TERMS),
                         field=terms[MAX_EXTENDED_TERMS].field)
    for t in terms:
        for part, selector, extra in (
                ("labelSelector", t.selector,
                 len(t.match_label_keys or ()) + len(t.mismatch_label_keys or ())),
                ("namespaceSelector", t.ns_selector, 0)):
            count = len(selector.requirements) + extra
            if count > MAX_SELECTOR_REQUIREMENTS:
                raise InputError("%d requirements, over the extender's limit of %d"
                                 % (count, MAX_SELECTOR_REQUIREMENTS),
                                 field="%s.%s" % (t.field, part))


def _apply_event(table: dict[str, Labels], event_type: str, name: str,
                 labels: Labels) -> bool:
    """A watch event on TABLE ({name: labels}); True if it changed it."""
    if event_type == "DELETED":
        return table.pop(name, None) is not None
    if table.get(name) == labels:
        return False
    table[name] = labels
    return True


class CacheMetrics:
    """The cache's counters, registered in REGISTRY (None: counted, not exported)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.pod_errors = Counter(
            "hwaffinity_webhook_cache_pod_errors", "Pods kept without their extended terms "
            "(malformed_annotation) or not indexed (internal), by reason", ["reason"],
            registry=registry)
        self.unmarked_stuck = Counter(
            "hwaffinity_extender_unmarked_stuck", "Pending pods without the filter's mark "
            "that an extended pod's anti-affinity selects, pending longer than the grace "
            "and no longer waited for", registry=registry)
        self.pending_dropped = Counter(
            "hwaffinity_webhook_pending_dropped", "Pending records dropped unconfirmed: "
            "over the cap, or expired", ["reason"], registry=registry)
        self.marked_unlooked = Counter(
            "hwaffinity_webhook_marked_past_budget", "Pods marked for the extender without "
            "looking at every other pod's terms: too many to match within the marking's "
            "budget (bound) or limit (pending)", ["terms"], registry=registry)


class PodRecord:
    """What the cache keeps of one pod. ``terms``: {kind: (AffinityTerm, ...)} of its
    extended (annotation) terms, resolved, or None when it carries none (or a
    malformed annotation, which the extender refused at filter time: ``error`` says
    what is wrong with it). ``verbs``: the extender verbs kube-scheduler calls for it
    (``marked_verbs``)."""

    __slots__ = ("key", "namespace", "name", "uid", "labels", "node", "live", "ann",
                 "terms", "error", "verbs", "_class_key")

    def __init__(self, namespace: str, name: str, uid: str | None, labels: Labels,
                 node: str, live: bool, ann: AnnotationPair, terms: ResolvedTerms | None,
                 error: str | None = None, verbs: frozenset[str] = frozenset()) -> None:
        self.key = "%s/%s" % (namespace, name)
        self.namespace, self.name, self.uid, self.labels = namespace, name, uid, labels
        self.node, self.live, self.ann, self.terms = node, live, ann, terms
        self.error, self.verbs = error, verbs
        self._class_key: tuple[str, tuple[tuple[str, str], ...]] | None = None

    @property
    def bound(self) -> bool:
        return bool(self.node) and self.live

    @property
    def pending(self) -> bool:
        """Live and not bound: kube-scheduler has yet to place it."""
        return self.live and not self.node

    @property
    def class_key(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        """(namespace, labels): pods alike for every selector (the engine's class_key)."""
        if self._class_key is None:
            self._class_key = (self.namespace, tuple(sorted(self.labels.items())))
        return self._class_key

    def same_placement(self, other: "PodRecord") -> bool:
        """Same index entries and terms as OTHER (a status-only update)?"""
        return (self.node == other.node and self.live == other.live and self.ann == other.ann
                and self.labels == other.labels and self.namespace == other.namespace)


class Group(SelectingTerm):
    """Bound pods' identical extended terms of one kind: ``per_node`` {node: count}
    (node names, since the nodes come and go; the engine counts per domain)."""

    __slots__ = ("per_node", "size")

    def __init__(self, term: AffinityTerm, kind: str) -> None:
        SelectingTerm.__init__(self, term, kind)
        self.per_node: PerNode = {}
        self.size = 0

    def add(self, node: str, n: int) -> None:
        c = self.per_node.get(node, 0) + n
        if c:
            self.per_node[node] = c
        else:
            del self.per_node[node]
        self.size += n


GroupTable: TypeAlias = dict[str, dict[Hashable, Group]]
"""{kind: {group key: Group}}"""
SelectingGroups: TypeAlias = list[tuple[AffinityTerm, PerNode]]
"""(term, {node: count}) of each group of bound pods' terms that selects a pod"""


def _incoming_selects(namespaces: Mapping[str, Labels], term: AffinityTerm,
                      namespace: str, labels: Labels) -> bool:
    """Does the incoming pod's TERM select a pod in NAMESPACE with LABELS, the known
    namespaces being NAMESPACES ({name: labels})? The engine resolves an incoming term's
    namespaceSelector over the known namespaces (``ClusterState.resolve_namespaces``);
    so does this."""
    sel = term.ns_selector
    if not (sel.everything or namespace in term.namespaces
            or (not sel.nothing and namespace in namespaces
                and sel.matches(namespaces[namespace]))):
        return False
    return term.selector.matches(labels)


class PodCacheView:
    """What the extender and the admission webhooks read of a :class:`PodCache`
    (``PodCache.reader()``). Each method takes the cache's lock itself, for one
    selection at most (a decision's terms are read one at a time, and counted outside
    the lock), so that the watch, the admission webhooks and the other callers get it
    between two terms."""

    def __init__(self, cache: "PodCache") -> None:
        self._cache = cache
        self._parsed: dict[tuple[str | None, ...], SchedulingTerms | None | InputError] = {}

    # -- describing a pod (no lock: a pure function of the pod, parses memoised) ---
    def _parse_ann(self, ann: AnnotationPair) -> SchedulingTerms | None:
        key = tuple(a if isinstance(a, str) else repr(a) for a in ann)
        got = self._parsed.get(key)
        if got is None:
            names = (term_annotations.POD_AFFINITY, term_annotations.REQUIRED_DURING_EXECUTION)
            try:
                got = _bounded(term_annotations.scheduling_terms(
                    {n: a for n, a in zip(names, ann) if a is not None}))
            except InputError as e:
                got = e
            if len(self._parsed) >= _PARSE_CACHE_MAX:
                self._parsed.clear()
            self._parsed[key] = got
        if isinstance(got, InputError):
            raise got
        return got

    @staticmethod
    def resolve(sched_terms: SchedulingTerms, namespace: str,
                labels: Labels) -> ResolvedTerms:
        """{kind: (AffinityTerm, ...)} of SCHED_TERMS for a pod in NAMESPACE with LABELS
        (namespace defaulting and matchLabelKeys merge, as for a created pod)."""
        return {kind: tuple(t.resolve(namespace, labels, True) for t in ts)
                for kind, ts in sched_terms.pod_terms.items()}

    def describe_pod(self, obj: ReadOnlyJson, strict: bool = False) -> PodRecord:
        """PodRecord of a Pod object. STRICT: a malformed annotation raises InputError
        (else the pod is kept without extended terms)."""
        meta = _meta(obj)
        ns = meta.get("namespace") or DEFAULT_NAMESPACE
        name = meta.get("name") or ""
        labels = _labels(meta)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = {}
        status = obj.get("status")
        if not isinstance(status, dict):
            status = {}
        node = spec.get("nodeName") or ""
        live = status.get("phase") not in TERMINAL_PHASES
        anns = meta.get("annotations")
        ann: AnnotationPair = (None, None)
        if isinstance(anns, dict):
            ann = (anns.get(term_annotations.POD_AFFINITY),
                   anns.get(term_annotations.REQUIRED_DURING_EXECUTION))
        terms = error = None
        if ann != (None, None):
            try:
                st = self._parse_ann(ann)
            except InputError as e:
                if strict:
                    raise
                st, error = None, str(e)
            if st is not None and any(st.pod_terms.values()):
                terms = self.resolve(st, ns, labels)
        return PodRecord(ns, name, meta.get("uid"), labels, node if isinstance(node, str)
                         else "", live, ann, terms, error, marked_verbs(spec))

    # -- nodes and namespaces ----------------------------------------------------
    def node_table(self) -> NodeTable:
        """The nodes as a ``scheduling.nodetable.NodeTable``: the same object until
        the nodes change."""
        c = self._cache
        with c.lock:
            if c._table is None or c._table_version != c._nodes_version:
                c._table = NodeTable(Node(name, labels)
                                     for name, labels in c._nodes.items())
                c._table_version = c._nodes_version
            return c._table

    def node_labels(self, name: str) -> Labels | None:
        with self._cache.lock:
            return self._cache._nodes.get(name)

    def ns_labels(self, namespace: str) -> Labels:
        """The labels of NAMESPACE ({} if unknown: the engine's ``ns_labels``)."""
        return self._cache._namespaces.get(namespace, {})

    # -- selections (each under the lock, one selection at a time) -----------------
    def selects_pod(self, terms: Iterable[AffinityTerm], rec: PodRecord) -> bool:
        """Does every one of TERMS (an incoming pod's resolved terms) select the pod REC
        (a PodRecord)? Namespace selectors resolve over the known namespaces."""
        c = self._cache
        with c.lock:
            return all(_incoming_selects(c._namespaces, t, rec.namespace, rec.labels)
                       for t in terms)

    def _term_namespaces(self, term: AffinityTerm) -> Collection[str]:
        c, sel = self._cache, term.ns_selector
        if sel.everything:
            return list(c._by_ns)
        names = set(term.namespaces)
        if not sel.nothing:
            names.update(n for n, labels in c._namespaces.items() if sel.matches(labels))
        return names

    def _candidates(self, term: AffinityTerm) -> list[set[PodRecord]]:
        """Pod sets (disjoint) holding every bound pod TERM may select."""
        if term.selector.nothing:
            return []
        out = []
        by_ns = self._cache._by_ns
        for ns in self._term_namespaces(term):
            idx = by_ns.get(ns)
            if idx is None:
                continue
            best = idx.candidates(term.selector)
            if best is None:
                out.append(idx.items)
            else:
                out.extend(best)
        return out

    def select(self, terms: Iterable[AffinityTerm]) -> PerNode:
        """{node: number of bound pods on it that every one of TERMS (the incoming pod's
        resolved terms) selects}."""
        terms = tuple(terms)
        if not terms:
            return {}
        c = self._cache
        with c.lock:
            pools = min((self._candidates(t) for t in terms),
                        key=lambda sets: sum(len(s) for s in sets))
            per_node: PerNode = {}
            one = terms[0].selector if len(terms) == 1 else None
            if one is not None and len(one.requirements) == 1 \
                    and one.requirements[0].op in POSITIVE:
                for pool in pools:       # the index drew exactly the selected pods
                    for p in pool:
                        per_node[p.node] = per_node.get(p.node, 0) + 1
                return per_node
            namespaces = c._namespaces
            for pool in pools:
                for p in pool:
                    if one is not None:  # the pools hold the term's namespaces only
                        if not one.matches(p.labels):
                            continue
                    elif not all(_incoming_selects(namespaces, t, p.namespace, p.labels)
                                 for t in terms):
                        continue
                    per_node[p.node] = per_node.get(p.node, 0) + 1
            return per_node

    def selecting(self, kind: str, pod: PodRecord) -> SelectingGroups:
        """(term, {node: count}) of each group of bound pods' extended terms of KIND
        that selects POD (a PodRecord): copies, to be counted outside the lock."""
        with self._cache.lock:
            return [(g.term, dict(g.per_node)) for g in self.matching_groups(kind, pod)]

    def matching_groups(self, kind: str, pod: PodRecord) -> list[Group]:
        """Groups of bound pods' extended terms of KIND that select POD (a PodRecord)."""
        c = self._cache
        with c.lock:
            groups = c._groups[kind]
            if not groups:
                return []
            ns_labels = self.ns_labels(pod.namespace)
            return [g for g in groups.values() if g.matches(pod, ns_labels)]

    def selected_by(self, kinds: Iterable[str], pod: PodRecord,
                    deadline: float | None = None) -> bool:
        """Does an extended term of one of KINDS, of a bound pod or of a verified pending
        pod other than POD, select POD (a PodRecord)? Past DEADLINE (``time.monotonic``;
        None: none), the bound pods' terms still to match count as selecting it."""
        c = self._cache
        with c.lock:
            for kind in kinds:
                if self._any_group_selects(kind, pod, deadline):
                    return True
            if len(c.assumed):
                ns_labels = self.ns_labels(pod.namespace)
                for key, p in c.assumed.records():
                    if key == pod.key or not p.terms:
                        continue
                    for kind in kinds:
                        for t in p.terms.get(kind, ()):
                            if t.matches(pod.namespace, pod.labels, ns_labels):
                                return True
            return False

    def _any_group_selects(self, kind: str, pod: PodRecord, deadline: float | None) -> bool:
        """Does a group of bound pods' extended terms of KIND select POD; yes past
        DEADLINE (None: no deadline), counted."""
        c = self._cache
        groups = c._groups[kind]
        if not groups:
            return False
        ns_labels = self.ns_labels(pod.namespace)
        for i, g in enumerate(groups.values()):
            if g.matches(pod, ns_labels):
                return True
            if deadline is not None and i % _CHECK_CLOCK_EVERY == _CHECK_CLOCK_EVERY - 1 \
                    and time.monotonic() > deadline:
                c.metrics.marked_unlooked.labels("bound").inc()
                return True
        return False

    # -- pods that kube-scheduler places without the extender ---------------------
    def selected_by_live(self, kinds: Sequence[str], rec: PodRecord) -> bool:
        """Does an extended term of one of KINDS of another live pod select the pod REC
        (a PodRecord): bound, let through by the extender (assumed) or still pending?
        Pending pods' terms are matched once per distinct term and pod class, and not
        at all past ``MAX_PENDING_TERMS_CHECKED`` of them (then: yes); bound pods' terms
        within ``MARKING_BUDGET_S`` (then: yes)."""
        if self.selected_by(kinds, rec, time.monotonic() + MARKING_BUDGET_S):
            return True
        c = self._cache
        with c.lock:
            groups = [(kind, c._pending_groups[kind]) for kind in kinds]
            if sum(len(g) for _kind, g in groups) > MAX_PENDING_TERMS_CHECKED:
                c.metrics.marked_unlooked.labels("pending").inc()
                return True         # too many to look at: the extender decides
            ns_labels = self.ns_labels(rec.namespace)
            own = c._pending_extended.get(rec.key)
            for kind, table in groups:
                mine: Mapping[Hashable, int] = collections.Counter(
                    map(group_key, own.terms.get(kind, ()))) \
                    if own is not None and own.terms is not None else {}
                if any(g.size > mine.get(gk, 0) and g.matches(rec, ns_labels)
                       for gk, g in table.items()):
                    return True
        return False


class PodCache:
    """Thread-safe cluster view; see the module docstring. CLOCK (seconds, monotonic)
    ages pending records; ``lock`` guards the index, taken by this module's methods
    only: readers go through ``reader()``.

    ``FIELDS``: per kind, what the cache reads of the objects its informers hand it
    (an objects.pruning kept-fields table): the informers drop everything else before
    the cache sees it, and keep no copy of their own (the cache is the only one)."""

    FIELDS: ClassVar[dict[str, Mapping[str, Any]]] = {
        "Pod": {"metadata": ("name", "namespace", "uid", "labels", "annotations"),
                "spec": ("nodeName", ("containers", ("resources",)),
                         ("initContainers", ("resources",))), "status": ("phase",)},
        "Node": {"metadata": ("name", "labels"), "spec": (), "status": ()},
        "Namespace": {"metadata": ("name", "labels"), "spec": (), "status": ()},
    }

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 pending_ttl: float = PENDING_TTL_S, registry: CollectorRegistry | None = None,
                 max_pending: int = MAX_PENDING) -> None:
        self.lock = threading.RLock()
        self.metrics = CacheMetrics(registry)
        self.assumed = Assumed(self.lock, clock, pending_ttl,    # see assumed.py
                               self.metrics.pending_dropped, max_pending)
        self._nodes: dict[str, Labels] = {}
        self._nodes_version = 0
        self._table: NodeTable | None = None    # of _nodes, made for _table_version
        self._table_version = -1
        self._namespaces: dict[str, Labels] = {}
        self._pods: dict[str, PodRecord] = {}   # every pod seen (bound or not), by key
        self._by_ns: dict[str, LabelIndex[PodRecord]] = {}     # bound pods, by namespace
        self._groups: GroupTable = {kind: {} for kind in EXISTING_KINDS}
        self._extended: dict[str, PodRecord] = {}   # bound pods with extended terms
        self._pending_extended: dict[str, PodRecord] = {}  # pending pods with extended terms
        self._pending_groups: GroupTable = {kind: {} for kind in EXISTING_KINDS}   # theirs
        # namespace -> {key: (PodRecord, first seen)}: pending, without the filter's mark
        self._unmarked: dict[str, dict[str, tuple[PodRecord, float]]] = {}
        self._unmarked_placed = threading.Condition(self.lock)
        self._clock = clock
        self._reader = PodCacheView(self)

    def reader(self) -> PodCacheView:
        """The cache's read view (one per cache)."""
        return self._reader

    # -- nodes and namespaces ----------------------------------------------------
    def on_node(self, event_type: str, obj: ReadOnlyJson) -> None:
        named = _named_labels(obj)
        if named is None:
            return
        name, labels = named
        with self.lock:
            if _apply_event(self._nodes, event_type, name, labels):
                self._nodes_version += 1

    def sync_nodes(self, objs: Iterable[ReadOnlyJson]) -> None:
        nodes = _named_table(objs)
        with self.lock:
            if nodes != self._nodes:
                self._nodes = nodes
                self._nodes_version += 1

    def on_namespace(self, event_type: str, obj: ReadOnlyJson) -> None:
        named = _named_labels(obj, namespace=True)
        if named is None:
            return
        name, labels = named
        with self.lock:
            if _apply_event(self._namespaces, event_type, name, labels):
                self._forget_matches()

    def sync_namespaces(self, objs: Iterable[ReadOnlyJson]) -> None:
        out = _named_table(objs, namespace=True)
        with self.lock:
            if out != self._namespaces:
                self._namespaces = out
                self._forget_matches()

    def _forget_matches(self) -> None:
        for table in (self._groups, self._pending_groups):
            for groups in table.values():
                for g in groups.values():
                    g.forget_matches()

    # -- pods --------------------------------------------------------------------
    def on_pod(self, event_type: str, obj: ReadOnlyJson) -> None:
        if event_type in ("ADDED", "MODIFIED", "DELETED"):
            self._isolated(lambda: self._on_pod(event_type, obj), event_type, obj)

    def _isolated(self, apply: Callable[[], _Result], event_type: str,
                  obj: object) -> _Result | None:
        """APPLY() (its result), applying the EVENT_TYPE of the pod OBJ; an exception is
        that pod's: logged, counted, and the pod not indexed (None)."""
        try:
            return apply()
        except Exception as e:
            meta = _meta(obj)
            self.metrics.pod_errors.labels(INTERNAL).inc()
            LOG.exception("pod %s/%s (%s) not indexed: %s: %s", meta.get("namespace"),
                          meta.get("name"), event_type, type(e).__name__, e)
            return None

    def _on_pod(self, event_type: str, obj: ReadOnlyJson) -> None:
        rec = self._reader.describe_pod(obj) if event_type != "DELETED" else None
        with self.lock:
            if rec is None:
                meta = _meta(obj)
                key = "%s/%s" % (meta.get("namespace") or DEFAULT_NAMESPACE,
                                 meta.get("name") or "")
                old = self._pods.pop(key, None)
                if old is not None and old.bound:
                    self._unindex(old)
                self._track_pending(key, None)
                self.assumed.confirm(key, meta.get("uid"))
                return
            self._put(rec)

    def _put(self, rec: PodRecord, previous: Mapping[str, PodRecord] | None = None) -> None:
        """Index REC; PREVIOUS: the pods before a relist (None: the cache's own)."""
        old = self._pods.get(rec.key)
        seen = old if previous is None else previous.get(rec.key)
        if rec.error is not None and (seen is None or seen.ann != rec.ann):
            self.metrics.pod_errors.labels(MALFORMED).inc()
            LOG.warning("pod %s kept without its extended terms: %s", rec.key, rec.error)
        if old is not None and old.same_placement(rec):
            rec = old  # status-only update: terms and index entries as they are
        else:
            if old is not None and old.bound:
                self._unindex(old)
            self._pods[rec.key] = rec
            if rec.bound:
                self._index(rec)
        self._track_pending(rec.key, rec)
        if rec.bound or not rec.live:
            self.assumed.confirm(rec.key)
        else:
            self.assumed.verify(rec.key, rec.uid)

    def sync_pods(self, objs: Iterable[object]) -> None:
        """Replace every pod after a (re)list, each pod on its own (``_isolated``).
        Pending records of pods listed bound or terminal are confirmed; the others stay
        (a pod created after the list began). The pods are described (their annotations
        parsed: two thirds of the work) before the lock is taken, and indexed under it."""
        describe = self._reader.describe_pod
        listed = [(obj, rec) for obj, rec in (
            (obj, self._isolated(lambda: describe(obj), "LISTED", obj))
            for obj in objs if isinstance(obj, dict)) if rec is not None]
        with self.lock:
            previous, unmarked = self._pods, self._unmarked
            self._pods, self._by_ns, self._extended = {}, {}, {}
            self._pending_extended, self._unmarked = {}, {}
            self._groups = {kind: {} for kind in EXISTING_KINDS}
            self._pending_groups = {kind: {} for kind in EXISTING_KINDS}
            for obj, rec in listed:
                self._isolated(lambda: self._put(rec, previous), "LISTED", obj)
            for namespace, pods in self._unmarked.items():     # first seen, as before
                before = unmarked.get(namespace, {})
                for key, (rec, _seen) in pods.items():
                    if key in before:
                        pods[key] = (rec, before[key][1])
            self._unmarked_placed.notify_all()

    def _track_pending(self, key: str, rec: PodRecord | None) -> None:
        """Keep the pending-pod tables true for pod KEY, now REC (None: deleted)."""
        old = self._pending_extended.pop(key, None)
        if old is not None:
            self._add_terms(old, -1, self._pending_groups, "")
        if rec is not None and rec.pending and rec.terms is not None:
            self._pending_extended[key] = rec
            self._add_terms(rec, 1, self._pending_groups, "")
        namespace = key.partition("/")[0]
        pods = self._unmarked.get(namespace)
        if rec is not None and rec.pending and FILTER not in rec.verbs:
            if pods is None:
                pods = self._unmarked[namespace] = {}
            seen = pods.get(key)
            pods[key] = (rec, self._clock() if seen is None else seen[1])
        elif pods is not None and pods.pop(key, None) is not None:
            if not pods:
                del self._unmarked[namespace]
            self._unmarked_placed.notify_all()

    def _index(self, rec: PodRecord) -> None:
        idx = self._by_ns.get(rec.namespace)
        if idx is None:
            idx = self._by_ns[rec.namespace] = LabelIndex()
        idx.add(rec, rec.labels)
        if rec.terms is not None:
            self._extended[rec.key] = rec
            self._add_terms(rec, 1)

    def _unindex(self, rec: PodRecord) -> None:
        idx = self._by_ns.get(rec.namespace)
        if idx is not None:
            idx.discard(rec, rec.labels)
            if not idx.items:
                del self._by_ns[rec.namespace]
        if self._extended.pop(rec.key, None) is not None:
            self._add_terms(rec, -1)

    def _add_terms(self, rec: PodRecord, n: int, table: GroupTable | None = None,
                   node: str | None = None) -> None:
        """Count REC's terms N times (1 or -1) in TABLE ({kind: {group key: Group}}; by
        default the bound pods' groups) on NODE (by default REC's node). REC carries
        extended terms."""
        table = self._groups if table is None else table
        node = rec.node if node is None else node
        for kind, terms in (rec.terms or {}).items():
            groups = table[kind]
            for t in terms:
                gk = group_key(t)
                g = groups.get(gk)
                if g is None:
                    g = groups[gk] = Group(t, kind)
                g.add(node, n)
                if g.size <= 0:
                    del groups[gk]

    # -- assume / confirm (assumed.py) ------------------------------------------
    def _record(self, pod: PodRecord | ReadOnlyJson) -> PodRecord:
        return pod if isinstance(pod, PodRecord) else self._reader.describe_pod(pod)

    def assume(self, pod: PodRecord | ReadOnlyJson) -> None:
        """Record POD (a Pod object or PodRecord) as pending: it passed the filter and
        kube-scheduler is about to bind it to a node we do not learn."""
        rec = self._record(pod)
        with self.lock:
            known = self._pods.get(rec.key)
            if known is None or not known.bound:
                self.assumed.add(rec, known is not None and known.live
                                 and known.uid == rec.uid)

    def pending(self) -> int:
        """How many pending records there are (expired ones dropped first)."""
        with self.lock:
            self.assumed.expire()
            return len(self.assumed)

    def wait_for_pending(self, pod: PodRecord | ReadOnlyJson,
                         terms: ResolvedTerms | None = None, timeout: float = 2.0) -> int:
        """Block until no pending pod relevant to POD (a Pod object or PodRecord, whose
        resolved terms {kind: (AffinityTerm, ...)} are TERMS) is left, at most TIMEOUT
        seconds; return how many relevant pending pods remain unresolved. Relevant: a
        verified pending pod that one of POD's terms selects, or whose own terms select
        POD, and that no filter waited for already (``assumed``). Each record is judged
        once per wait, not at each wake (every confirmation wakes every waiter)."""
        rec = self._record(pod)
        flat = tuple(t for ts in (terms or {}).values() for t in ts)
        judged: dict[PodRecord, bool] = {}

        def relevant(p: PodRecord) -> bool:
            got = judged.get(p)
            if got is None:
                got = judged[p] = self._relevant(p, rec, flat)
            return got
        return self.assumed.wait(rec.key, relevant, timeout)

    def _relevant(self, p: PodRecord, rec: PodRecord,
                  flat_terms: tuple[AffinityTerm, ...]) -> bool:
        for t in flat_terms:
            if _incoming_selects(self._namespaces, t, p.namespace, p.labels):
                return True
        if p.terms:
            ns_labels = self._reader.ns_labels(rec.namespace)
            for ts in p.terms.values():
                for t in ts:
                    if t.matches(rec.namespace, rec.labels, ns_labels):
                        return True
        return False

    # -- pods that kube-scheduler places without the extender ---------------------
    def unmarked_pending(self, rec: PodRecord, terms: Sequence[AffinityTerm],
                         timeout: float = 0.0) -> list[str]:
        """The keys of the pending pods without the filter's mark (kube-scheduler places
        them without the extender's filter) that one of TERMS (the pod REC's resolved
        required terms of one kind) selects, after waiting up to TIMEOUT seconds for them
        to be placed. Such a pod, placed after REC, would never learn of REC's
        anti-affinity: REC must come second; one that REC's affinity needs is best seen
        bound. A pod pending for over ``UNMARKED_GRACE_S`` is taken as stuck and not
        waited for (logged and counted once)."""
        if not terms:
            return []
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                now, left = self._clock(), []
                for key, (p, seen) in self._unmarked_in(terms):
                    if key == rec.key or not any(
                            _incoming_selects(self._namespaces, t, p.namespace, p.labels)
                            for t in terms):
                        continue
                    if now - seen <= UNMARKED_GRACE_S:
                        left.append(key)
                    elif seen > _STUCK:
                        self._unmarked[p.namespace][key] = (p, _STUCK)
                        self.metrics.unmarked_stuck.inc()
                        LOG.warning("pod %s: pending for over %.0fs without the extender's "
                                    "mark; extended pods whose anti-affinity selects it no "
                                    "longer wait for it", key, UNMARKED_GRACE_S)
                wait = deadline - time.monotonic()
                if not left or wait <= 0:
                    return left
                self._unmarked_placed.wait(wait)

    def _unmarked_in(self, terms: Sequence[AffinityTerm]
                     ) -> list[tuple[str, tuple[PodRecord, float]]]:
        """(key, (PodRecord, first seen)) of the pending pods without the filter's mark
        in the namespaces that one of TERMS may select (as ``_incoming_selects`` resolves
        them): a term of a CNF looks at its own namespace's pending pods, not a batch
        cluster's thousands."""
        by_ns = self._unmarked
        spaces: Iterable[str]
        if any(t.ns_selector.everything for t in terms):
            spaces = list(by_ns)
        else:
            spaces = set()
            for t in terms:
                spaces.update(n for n in t.namespaces if n in by_ns)
                sel = t.ns_selector
                if not sel.nothing:
                    spaces.update(n for n in by_ns if n in self._namespaces
                                  and sel.matches(self._namespaces[n]))
        return [item for n in spaces for item in by_ns[n].items()]

    def stats(self) -> dict[str, int]:
        """Sizes, for health checks and metrics."""
        with self.lock:
            return {"nodes": len(self._nodes), "namespaces": len(self._namespaces),
                    "pods": len(self._pods),
                    "bound": sum(len(i) for i in self._by_ns.values()),
                    "extended": len(self._extended), "pending": len(self.assumed)}
