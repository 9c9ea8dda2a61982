"""Build the scheduler's cluster (nodes, namespaces, bound pods, selectors) and the pods
of workloads from Kubernetes objects; reading them is the intake's job
(``tacker_hwaffinity.intake``). Which objects each reads, skips with a note or refuses is
``objects.kinds``'s rule."""
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import kinds
from tacker_hwaffinity.objects.naming import DEFAULT_NAMESPACE, object_label
from tacker_hwaffinity.scheduling import annotations as term_annotations
from tacker_hwaffinity.scheduling import workloads
from tacker_hwaffinity.scheduling.model import Namespace, Node, Pod, metadata, parse_labels
from tacker_hwaffinity.scheduling.selectors import (
    EQUALS, LabelSelector, Requirement, SelectorError, parse_label_selector)
from tacker_hwaffinity.scheduling.state import ClusterState, ControllerKey

# (object, the name of its source in messages), as the intake reads them
Loaded = tuple[Any, str]
# takes a pod whose term annotations are malformed, and the error (cluster_from_objects)
BadAnnotations = Callable[[Mapping[str, Any], InputError], None]
_T = TypeVar("_T")

CLUSTER_KINDS = ("Node", "Pod", "Namespace", "Service", "ReplicaSet", "StatefulSet",
                 "ReplicationController")
# Kinds read for their selector only: default topology spreading derives a pod's
# selector from the Services that select it and from its controller.
SELECTOR_KINDS = ("Service", "ReplicaSet", "StatefulSet", "ReplicationController")

# What the engine reads of snapshot objects (model.Node.parse, Pod.parse, Namespace.parse,
# object_label, selectors_of): per kind, the keys kept of each listed top-level field. The
# loader drops every other key of those fields while reading (see objects.pruning), so memory
# follows what is used: most of what kubectl prints is metadata.managedFields and Pod
# status. Fields not listed are kept whole. Reading one more field means adding it here.
_SELECTOR_ONLY: dict[str, tuple[str, ...]] = {
    "metadata": ("name", "namespace"), "spec": ("selector",), "status": ()}
SNAPSHOT_FIELDS: dict[str, dict[str, tuple[str, ...]]] = {
    "Node": {"metadata": ("name", "namespace", "labels"),
             "status": ("allocatable", "capacity", "images")},
    "Pod": {"metadata": ("name", "namespace", "labels", "deletionTimestamp"),
            "spec": ("nodeName", "nodeSelector", "tolerations", "affinity", "containers",
                     "initContainers", "overhead"),
            "status": ("phase",)},
    "Namespace": {"metadata": ("name", "namespace", "labels")},
}
SNAPSHOT_FIELDS.update({kind: _SELECTOR_ONLY for kind in SELECTOR_KINDS})

# The rule (objects.kinds) of each reader: the cluster snapshot's, the workload files'
# and, among those, the Services whose selectors default spreading reads.
CLUSTER_OBJECTS = kinds.Kinds(CLUSTER_KINDS)
WORKLOAD_OBJECTS = kinds.Kinds(workloads.WORKLOAD_KINDS)
SERVICES = kinds.Kinds(("Service",))
# Kinds whose pods a snapshot lists as Pods: a snapshot's note counts them.
LISTED_AS_PODS = frozenset(workloads.WORKLOAD_KINDS + ("CronJob",)) - set(CLUSTER_KINDS)
NOT_WORKLOADS = ("is not a workload and is skipped", "are not workloads and are skipped")
HOOKS = ("is a Helm hook, not part of the release, and is not planned",
         "are Helm hooks, not part of the release, and are not planned")
NOT_SNAPSHOT = ("is not read for the cluster snapshot and is skipped",
                "are not read for the cluster snapshot and are skipped")
DAEMON_EXPLAINED = ("%s runs one pod on each node its node selector, required node affinity "
                    "and taints admit, pinned there by its controller: %s is explained "
                    "unpinned, so each node's verdict is that of the pod it would get")


class Nowhere(NamedTuple):
    """A DaemonSet that runs on no node: a selector that matches nothing, so a plan with
    it is not complete (``workloads_from_objects``)."""

    source: str
    workload: str
    nodes: int

    @property
    def reason(self) -> str:
        return ("runs on none of the %d nodes: its node selector, required node affinity "
                "and taints admit none" % self.nodes)


def _located(fn: Callable[[], _T], obj: Mapping[str, Any], source: str) -> _T:
    try:
        return fn()
    except InputError as e:
        raise e.located(source=source, obj=object_label(obj))


class Snapshot:
    """Nodes, namespaces and bound pods, plus what was left out and why (``notes``).

    ``pod_keys``: ``namespace/name`` of every pod in the files, bound or not, which
    names generated for new pods avoid.
    """

    def __init__(self, nodes: list[Node], namespaces: list[Namespace], pods: list[Pod],
                 notes: list[str], pod_keys: set[str] | None = None,
                 services: Iterable[tuple[str, dict[str, str]]] = (),
                 controllers: Mapping[ControllerKey, LabelSelector] | None = None) -> None:
        self.nodes, self.namespaces, self.pods, self.notes = nodes, namespaces, pods, notes
        self.pod_keys = pod_keys if pod_keys is not None else {p.key for p in pods}
        self.services = list(services)  # [(namespace, selector map)]
        self.controllers = dict(controllers or {})  # see ClusterState

    def add_selectors(self, obj: Mapping[str, Any]) -> None:
        """Take in a Service, ReplicaSet, StatefulSet or ReplicationController's selector."""
        kind = obj.get("kind")
        meta, name = metadata(obj, str(kind))
        ns = meta.get("namespace") or DEFAULT_NAMESPACE
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = {}
        raw = spec.get("selector")
        if kind in ("Service", "ReplicationController"):
            sel = parse_labels(raw, "spec.selector")
            if kind == "Service":
                if sel:  # a Service without a selector selects no pod
                    self.services.append((ns, sel))
                return
            selector = LabelSelector([Requirement(k, EQUALS, [v]) for k, v in sel.items()])
        else:
            try:
                selector = parse_label_selector(raw, "spec.selector")
            except SelectorError as e:
                raise InputError(e.message, field=e.field)
        version = "v1" if kind == "ReplicationController" else "apps/v1"
        if obj.get("apiVersion") == version:
            self.controllers[(ns, version, kind, name)] = selector

    def state(self) -> ClusterState:
        state = ClusterState(self.nodes, self.namespaces, self.services, self.controllers)
        for pod in self.pods:
            state.bind(pod, state.index[pod.node_name])
        return state


def _without_term_annotations(obj: Mapping[str, Any]) -> dict[str, Any]:
    """OBJ (a Pod) without the annotations that carry scheduling terms (shallow copy)."""
    meta = obj.get("metadata") or {}
    terms = (term_annotations.POD_AFFINITY, term_annotations.REQUIRED_DURING_EXECUTION)
    kept = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in terms}
    return dict(obj, metadata=dict(meta, annotations=kept))


def _parse_pod(obj: Mapping[str, Any], source: str,
               bad_annotations: BadAnnotations | None) -> Pod | None:
    try:
        return _located(lambda: Pod.parse(obj, created=True, source=source), obj, source)
    except InputError as e:
        if bad_annotations is None or not (e.field or "").startswith("metadata.annotations"):
            raise
        pod = _located(lambda: Pod.parse(_without_term_annotations(obj), created=True,
                                         source=source), obj, source)
        bad_annotations(obj, e)
        return pod


def cluster_from_objects(objects: Iterable[Loaded],
                         bad_annotations: BadAnnotations | None = None) -> Snapshot:
    """Snapshot from [(object, source name)]. BAD_ANNOTATIONS(object, InputError), when
    given, takes a pod whose term annotations (``scheduling.annotations``: text any pod
    creator writes, which the API server does not check) are malformed: the pod is kept
    without them instead of the whole snapshot failing."""
    nodes: list[Node] = []
    namespaces: list[Namespace] = []
    pods: list[Pod] = []
    notes: list[str] = []
    seen_nodes: set[str] = set()
    skipped: list[Loaded] = []
    pod_keys: set[str] = set()
    pending, unknown_node = 0, 0
    snap = Snapshot(nodes, namespaces, [], notes, pod_keys)
    for obj, source in objects:
        if not CLUSTER_OBJECTS.reads(obj, source):
            skipped.append((obj, source))
            continue
        kind = obj["kind"]
        if kind in SELECTOR_KINDS:
            _located(lambda: snap.add_selectors(obj), obj, source)
        elif kind == "Node":
            node = _located(lambda: Node.parse(obj), obj, source)
            if node.name in seen_nodes:
                raise InputError("node %r is given twice" % node.name, source=source,
                                 obj=object_label(obj))
            seen_nodes.add(node.name)
            nodes.append(node)
        elif kind == "Namespace":
            namespaces.append(_located(lambda: Namespace.parse(obj), obj, source))
        elif kind == "Pod":
            pod = _parse_pod(obj, source, bad_annotations)
            if pod is not None:
                pods.append(pod)
            meta = obj["metadata"]  # Pod.parse checked it and its name
            pod_keys.add("%s/%s" % (meta.get("namespace") or DEFAULT_NAMESPACE, meta["name"]))
    bound = []
    for pod in pods:
        if not pod.node_name:
            pending += 1
        elif pod.node_name not in seen_nodes:
            unknown_node += 1
        else:
            bound.append(pod)
    if pending:
        notes.append("%d pending pod(s) in the snapshot are not bound and not planned" % pending)
    if unknown_node:
        notes.append("%d pod(s) are bound to nodes missing from the snapshot and are ignored"
                     % unknown_node)
    notes.extend(_skipped_notes(skipped))
    snap.pods = bound
    return snap


def _skipped_notes(skipped: Sequence[Loaded]) -> list[str]:
    """The notes on the SKIPPED objects of a snapshot: the workloads among them counted by
    kind (their pods are listed as Pods), the others named."""
    listed: dict[str, int] = {}
    named: list[tuple[str, str]] = []
    for obj, source in skipped:
        if obj["kind"] in LISTED_AS_PODS and not kinds.is_custom(obj):
            listed[obj["kind"]] = listed.get(obj["kind"], 0) + 1
        else:
            named.append((source, kinds.entry(obj)))
    return ["%d %s object(s) in the cluster files are ignored (their pods are listed as "
            "Pods)" % (n, kind) for kind, n in sorted(listed.items())] \
        + kinds.note(named, *NOT_SNAPSHOT)


def workload_objects(objects: Iterable[Loaded]) -> tuple[list[Loaded], list[str]]:
    """(the objects of OBJECTS whose pods are planned, in order; the notes naming the
    others): objects.kinds's rule for workload files, a Helm hook (a Pod or Job run to
    completion at its point of a release) skipped, and a Node an error (it belongs in the
    cluster snapshot)."""
    planned: list[Loaded] = []
    skipped: list[tuple[str, str]] = []
    hooks: list[tuple[str, str]] = []
    for obj, source in objects:
        if not WORKLOAD_OBJECTS.reads(obj, source):
            if obj["kind"] == "Node" and not kinds.is_custom(obj):
                raise InputError("a Node is part of the cluster, not a workload: give it with "
                                 "--cluster", source=source, obj=object_label(obj),
                                 field="kind")
            skipped.append((source, kinds.entry(obj)))
            continue
        hook = kinds.helm_hook(obj)
        if hook is not None:
            hooks.append((source, kinds.entry(obj, "%s: %s" % (kinds.HELM_HOOK, hook))))
        else:
            planned.append((obj, source))
    return planned, kinds.note(skipped, *NOT_WORKLOADS) + kinds.note(hooks, *HOOKS)


def count_pods(objects: Iterable[Loaded], max_pods: float,
               nodes: Sequence[Node] | None = None) -> int:
    """How many pods the workloads of OBJECTS create, from their specs (a DaemonSet's: one
    per node of NODES it runs on, none when NODES is None); InputError naming the file,
    object and field once a workload, or all of them so far, go over MAX_PODS. What
    ``workload_objects`` refuses is an error too."""
    total = 0
    for obj, source in workload_objects(objects)[0]:
        count, field = _located(lambda: workloads.pod_count(obj, nodes), obj, source)
        total += count
        if total > max_pods:
            what = ("%d pods" % count if count == total else
                    "%d pods, which bring the pods to plan to %d" % (count, total))
            raise InputError("%s, over the limit of %d a command plans (--max-pods raises it)"
                             % (what, max_pods), source=source, obj=object_label(obj),
                             field=field)
    return total


def first_workload_pod(objects: Sequence[Loaded], nodes: Sequence[Node] | None = None
                       ) -> tuple[Pod | None, int, list[str]]:
    """(the first pod the workloads of OBJECTS create, or None; how many they create in
    all, a DaemonSet's one per node of NODES it runs on; notes on the objects not planned),
    making that one pod only. A DaemonSet's is its pod before its controller pins it to a
    node (a note says so): each node's verdict is then that of the pod the node would get."""
    total = count_pods(objects, float("inf"), nodes)
    planned, notes = workload_objects(objects)
    for obj, source in planned:
        if obj["kind"] == "DaemonSet":
            pod = _located(lambda: workloads.daemon_pod(obj, source), obj, source)
            return pod, total, notes + [DAEMON_EXPLAINED % (pod.workload, pod.key)]
        made = _located(lambda: workloads.expand(obj, source, count=1), obj, source)
        if made:
            return made[0], total, notes
    return None, total, notes


def workloads_from_objects(objects: Sequence[Loaded], snapshot: Snapshot | None = None,
                           avoid: Collection[str] = (), max_pods: float = workloads.MAX_PODS
                           ) -> tuple[list[Pod], list[str], list[Nowhere]]:
    """Pods to schedule, in file order (a DaemonSet's: one per node of SNAPSHOT it runs
    on), notes on the objects not planned (``workload_objects``) and the DaemonSets that
    run on no node of SNAPSHOT.

    Services among the workloads join SNAPSHOT's selectors: default topology
    spreading reads them. A fixed pod name (StatefulSet, Pod) given twice or
    already bound in SNAPSHOT
    is an error, as the API server would refuse to create it; generated names
    avoid every pod name seen so far, and the names in AVOID (pods a caller
    created in earlier calls), instead (see ``workloads``). More than MAX_PODS
    pods in all is an error before any is made, and so is a Node.
    """
    nodes = snapshot.nodes if snapshot is not None else []
    count_pods(objects, max_pods, nodes)
    planned, notes = workload_objects(objects)
    pods: list[Pod] = []
    nowhere: list[Nowhere] = []
    seen = {p.key for p in snapshot.pods} if snapshot is not None else set()
    taken = seen | snapshot.pod_keys if snapshot is not None else set()
    taken |= set(avoid)
    if snapshot is not None:
        for obj, source in objects:
            if SERVICES.reads(obj, source):
                # created with the workloads: its selector counts for default spreading
                _located(lambda: snapshot.add_selectors(obj), obj, source)
    for obj, source in planned:
        made = _located(lambda: workloads.expand(obj, source, taken, nodes=nodes), obj, source)
        if not made and obj["kind"] == "DaemonSet":
            nowhere.append(Nowhere(source, object_label(obj), len(nodes)))
        for pod in made:
            if pod.key in seen:
                raise InputError("pod %s already exists (given twice, or already in the "
                                 "cluster snapshot)" % pod.key, source=source,
                                 obj=object_label(obj), field="metadata.name")
            seen.add(pod.key)
            taken.add(pod.key)
            pods.append(pod)
    return pods, notes, nowhere
