"""Nodes, pods and namespaces as the scheduler sees them, parsed from plain objects.

Parsing validates what the API server would and raises ``InputError`` naming
the field. A pod's scheduling-relevant spec (``PodSpecInfo``) is parsed once
per template and shared by every replica.
"""
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeAlias

from tacker_hwaffinity.constants import TERMINAL_PHASES
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects.naming import DEFAULT_NAMESPACE
from tacker_hwaffinity.objects.quantity import milli_value, parse_quantity, value
from tacker_hwaffinity.objects.validation import label_value_error, qualified_name_error
from tacker_hwaffinity.scheduling import annotations as term_annotations
from tacker_hwaffinity.scheduling import selectors, spreading
from tacker_hwaffinity.scheduling.spreading import Constraint
from tacker_hwaffinity.scheduling.terms import AffinityTerm, RawTerm

# kube-scheduler scores pods without requests as if they asked for this
# (GetNonzeroRequests): 100 millicores, 200 MiB.
DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
NS_NAME_LABEL = "kubernetes.io/metadata.name"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

# Pods alike for every selector: (namespace, sorted label items).
ClassKey: TypeAlias = tuple[str, tuple[tuple[str, str], ...]]
# A pod's controlling owner: (apiVersion, kind, name), None where the reference has none.
Owner: TypeAlias = tuple[str | None, str | None, str | None]
# A pod's terms by kind (``required_affinity``, ``required_anti``, ``preferred_affinity``,
# ``preferred_anti``), resolved.
PodTerms: TypeAlias = dict[str, tuple[AffinityTerm, ...]]
# Preferred node-selector terms with their weights.
WeightedNodeTerms: TypeAlias = tuple[tuple[int, selectors.NodeSelectorTerm], ...]


def _mapping(value: object, field: str, what: str = "a mapping") -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError("expected %s" % what, field=field)
    return value


def _list(value: object, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError("expected a list", field=field)
    return value


def parse_labels(raw: object, field: str) -> dict[str, str]:
    labels = _mapping(raw, field, "a mapping of label key to string value")
    for k, v in labels.items():
        err = qualified_name_error(k)
        if err:
            raise InputError("invalid label key %r: %s" % (k, err), field=field)
        err = label_value_error(v)
        if err:
            raise InputError("invalid value for label %r: %s" % (k, err),
                             field="%s[%s]" % (field, k))
    return dict(labels)


def metadata(obj: Mapping[str, Any], kind: str) -> tuple[dict[str, Any], str]:
    meta = _mapping(obj.get("metadata"), "metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError("%s has no name" % kind, field="metadata.name")
    return meta, name


class Namespace:
    __slots__ = ("name", "labels")

    def __init__(self, name: str, labels: Mapping[str, str]) -> None:
        self.name, self.labels = name, labels

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> "Namespace":
        meta, name = metadata(obj, "Namespace")
        labels = parse_labels(meta.get("labels"), "metadata.labels")
        labels.setdefault(NS_NAME_LABEL, name)  # the API server adds it to every namespace
        return cls(name, labels)


class Taint:
    __slots__ = ("key", "value", "effect")

    def __init__(self, key: str, value: str, effect: str) -> None:
        self.key, self.value, self.effect = key, value, effect


class Toleration:
    __slots__ = ("key", "operator", "value", "effect")

    def __init__(self, raw: object, field: str) -> None:
        raw = _mapping(raw, field)
        self.key: str = raw.get("key") or ""
        self.operator: str = raw.get("operator") or "Equal"
        self.value: str = raw.get("value") or ""
        self.effect: str = raw.get("effect") or ""
        if self.operator not in ("Equal", "Exists"):
            raise InputError("operator must be Equal or Exists, got %r" % self.operator,
                             field=field + ".operator")
        if self.effect and self.effect not in TAINT_EFFECTS:
            raise InputError("effect must be one of %s" % ", ".join(TAINT_EFFECTS),
                             field=field + ".effect")
        if self.operator == "Exists" and self.value:
            raise InputError("value must be empty when operator is Exists", field=field + ".value")

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


def tolerates(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


class Node:
    __slots__ = ("name", "labels", "taints", "unschedulable", "allocatable", "images")

    def __init__(self, name: str, labels: Mapping[str, str], taints: Iterable[Taint] = (),
                 unschedulable: bool = False, allocatable: dict[str, int] | None = None,
                 images: dict[str, int] | None = None) -> None:
        self.name, self.labels, self.taints = name, labels, tuple(taints)
        self.unschedulable = unschedulable
        # resource -> int (milli-cpu, else the value: bytes, counts); see resources.py
        # for what a resource missing here means
        self.allocatable = allocatable or {}
        self.images = images or {}  # image name -> size in bytes (status.images)

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> "Node":
        meta, name = metadata(obj, "Node")
        labels = parse_labels(meta.get("labels"), "metadata.labels")
        spec = _mapping(obj.get("spec"), "spec")
        taints = []
        for i, t in enumerate(_list(spec.get("taints"), "spec.taints")):
            f = "spec.taints[%d]" % i
            t = _mapping(t, f)
            if not isinstance(t.get("key"), str) or not t.get("key"):
                raise InputError("taint needs a key", field=f + ".key")
            if t.get("effect") not in TAINT_EFFECTS:
                raise InputError("effect must be one of %s" % ", ".join(TAINT_EFFECTS),
                                 field=f + ".effect")
            taints.append(Taint(t["key"], t.get("value") or "", t["effect"]))
        unschedulable = spec.get("unschedulable", False)
        if not isinstance(unschedulable, bool):
            raise InputError("expected true or false", field="spec.unschedulable")
        status = _mapping(obj.get("status"), "status")
        alloc_raw = status.get("allocatable")
        field = "status.allocatable"
        if alloc_raw is None:
            alloc_raw, field = status.get("capacity"), "status.capacity"
        alloc: dict[str, int] = {}
        for res, q in _mapping(alloc_raw, field).items():
            alloc[res] = _amount(res, q, "%s.%s" % (field, res))
        return cls(name, labels, taints, unschedulable, alloc,
                   _images(status.get("images"), "status.images"))


def _amount(resource: str, q: object, field: str) -> int:
    """A resource quantity as kube-scheduler counts it: milli-CPU, else the value."""
    try:
        qty = parse_quantity(q)
    except ValueError as e:
        raise InputError(str(e), field=field)
    return milli_value(qty) if resource == "cpu" else value(qty)


def _images(raw: object, field: str) -> dict[str, int]:
    """status.images -> {name: sizeBytes}, every name of every image."""
    out: dict[str, int] = {}
    for i, img in enumerate(_list(raw, field)):
        f = "%s[%d]" % (field, i)
        img = _mapping(img, f)
        size = img.get("sizeBytes", 0)
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise InputError("expected a non-negative integer", field=f + ".sizeBytes")
        for j, n in enumerate(_list(img.get("names"), f + ".names")):
            if not isinstance(n, str):
                raise InputError("expected a string", field="%s.names[%d]" % (f, j))
            out[n] = size
    return out


def _container_requests(c: Mapping[str, Any], field: str) -> dict[str, int]:
    res = _mapping(c.get("resources"), field + ".resources")
    requests = dict(_mapping(res.get("requests"), field + ".resources.requests"))
    limits = _mapping(res.get("limits"), field + ".resources.limits")
    for k, v in limits.items():  # API defaulting: a limit without a request sets the request
        requests.setdefault(k, v)
    return {k: _amount(k, q, "%s.resources.requests.%s" % (field, k))
            for k, q in requests.items()}


def _sum_requests(k: str, containers: Sequence[Mapping[str, int]],
                  inits: Sequence[tuple[bool, Mapping[str, int]]], overhead: Mapping[str, int],
                  missing: int | None) -> int:
    """Resource K of the pod; MISSING (if not None) stands for a container not asking."""
    def get(r: Mapping[str, int]) -> int:
        return r.get(k, 0) if missing is None else r.get(k, missing)
    plain = sum(get(r) for r in containers)
    sidecars = init_max = 0
    for always, r in inits:
        if always:  # sidecar: runs alongside the app
            sidecars += get(r)
            init_max = max(init_max, sidecars)
        else:
            init_max = max(init_max, sidecars + get(r))
    return max(plain + sidecars, init_max) + overhead.get(k, 0)


def _pod_requests(spec: Mapping[str, Any],
                  prefix: str) -> tuple[dict[str, int], dict[str, int]]:
    """Every resource's request and the cpu/memory non-zero variants, as kube-scheduler
    sums them (resourcehelper.PodRequests): containers plus sidecars, or the largest
    init container step if more, plus overhead."""
    containers = [_container_requests(_mapping(c, "%scontainers[%d]" % (prefix, i)),
                                      "%scontainers[%d]" % (prefix, i))
                  for i, c in enumerate(_list(spec.get("containers"), prefix + "containers"))]
    inits: list[tuple[bool, dict[str, int]]] = []
    for i, c in enumerate(_list(spec.get("initContainers"), prefix + "initContainers")):
        f = "%sinitContainers[%d]" % (prefix, i)
        c = _mapping(c, f)
        inits.append((c.get("restartPolicy") == "Always", _container_requests(c, f)))
    overhead = {k: _amount(k, v, "%soverhead.%s" % (prefix, k))
                for k, v in _mapping(spec.get("overhead"), prefix + "overhead").items()}
    names = {"cpu", "memory"}
    for r in containers + [r for _, r in inits] + [overhead]:
        names.update(r)
    total = {k: _sum_requests(k, containers, inits, overhead, None) for k in sorted(names)}
    nonzero = {k: _sum_requests(k, containers, inits, overhead, d)
               for k, d in (("cpu", DEFAULT_MILLI_CPU), ("memory", DEFAULT_MEMORY))}
    return total, nonzero


_AFFINITY_LISTS = (
    ("podAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "required_affinity"),
    ("podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "required_anti"),
    ("podAffinity", "preferredDuringSchedulingIgnoredDuringExecution", "preferred_affinity"),
    ("podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution", "preferred_anti"),
)


class PodSpecInfo:
    """What kube-scheduler reads from a pod spec, parsed once per template.

    ANNOTATIONS (the pod's or template's): the terms of ``hwaffinity.io/pod-affinity``
    and ``hwaffinity.io/required-during-execution`` are added to the spec's own
    (``scheduling.annotations``), as the scheduler extender and webhook apply them.
    """

    def __init__(self, spec: object, prefix: str = "spec.", annotations: object = None,
                 annotations_prefix: str = "metadata.annotations") -> None:
        spec = _mapping(spec, prefix.rstrip("."))
        self.node_name: str = spec.get("nodeName") or ""
        sel = _mapping(spec.get("nodeSelector"), prefix + "nodeSelector")
        for k, v in sel.items():
            if not isinstance(v, str):
                raise InputError("expected a string value",
                                 field="%snodeSelector[%s]" % (prefix, k))
        self.node_selector: dict[str, str] = sel
        self.tolerations = tuple(Toleration(t, "%stolerations[%d]" % (prefix, i))
                                 for i, t in enumerate(_list(spec.get("tolerations"),
                                                             prefix + "tolerations")))
        self.requests, self.nonzero_requests = _pod_requests(spec, prefix)
        aff = _mapping(spec.get("affinity"), prefix + "affinity")
        unknown = set(aff) - {"nodeAffinity", "podAffinity", "podAntiAffinity"}
        if unknown:
            raise InputError("unknown field(s) %s" % ", ".join(sorted(map(str, unknown))),
                             field=prefix + "affinity")
        self._parse_node_affinity(aff.get("nodeAffinity"), prefix + "affinity.nodeAffinity")
        self.raw_terms: dict[str, tuple[RawTerm, ...]] = {}
        for group, lst, attr in _AFFINITY_LISTS:
            gfield = "%saffinity.%s" % (prefix, group)
            g = _mapping(aff.get(group), gfield)
            unknown = set(g) - {"requiredDuringSchedulingIgnoredDuringExecution",
                                "preferredDuringSchedulingIgnoredDuringExecution"}
            if unknown:
                raise InputError("unknown field(s) %s" % ", ".join(sorted(map(str, unknown))),
                                 field=gfield)
            items = _list(g.get(lst), "%s.%s" % (gfield, lst))
            weighted = lst.startswith("preferred")
            self.raw_terms[attr] = tuple(
                RawTerm.parse(item, "%s.%s[%d]" % (gfield, lst, i), weighted)
                for i, item in enumerate(items))
        extra = term_annotations.scheduling_terms(annotations, annotations_prefix)
        self.annotation_node = extra.node if extra is not None else None
        if extra is not None:
            for attr, terms in extra.pod_terms.items():
                self.raw_terms[attr] += terms
        self.spread = spreading.parse_constraints(spec.get("topologySpreadConstraints"),
                                                  prefix + "topologySpreadConstraints")
        self.images = tuple(_images_of(spec, prefix))
        self.unmodelled = _unmodelled(spec)
        self.has_pod_affinity = any(self.raw_terms.values())
        self.uses_extension = any(t.uses_extension()
                                  for ts in self.raw_terms.values() for t in ts)
        # (spread or terms, the pod's values of the keys it merges, created) -> resolved
        self._resolved: dict[Hashable, Any] = {}

    def _parse_node_affinity(self, raw: object, field: str) -> None:
        na = _mapping(raw, field)
        unknown = set(na) - {"requiredDuringSchedulingIgnoredDuringExecution",
                             "preferredDuringSchedulingIgnoredDuringExecution"}
        if unknown:
            raise InputError("unknown field(s) %s" % ", ".join(sorted(map(str, unknown))),
                             field=field)
        req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
        rfield = field + ".requiredDuringSchedulingIgnoredDuringExecution"
        self.required_node: selectors.NodeSelector | None = None
        if req is not None:
            self.required_node = selectors.NodeSelector(_mapping(req, rfield), rfield)
        self.required_node_raw: Any = req   # as written: NodeAffinity's PreFilter reads it
        self.preferred_node = parse_preferred_node_terms(
            na.get("preferredDuringSchedulingIgnoredDuringExecution"),
            field + ".preferredDuringSchedulingIgnoredDuringExecution")

    def resolved_spread(self, labels: Mapping[str, str], created: bool) -> tuple[Constraint, ...]:
        """The pod's own topology spread constraints, matchLabelKeys merged."""
        if not self.spread:
            return ()
        keys = tuple(labels.get(k) for c in self.spread for k in c.match_label_keys)
        ck = ("spread", keys, created)
        got: tuple[Constraint, ...] | None = self._resolved.get(ck)
        if got is None:
            got = self._resolved[ck] = tuple(c.resolve(labels, created) for c in self.spread)
        return got

    def resolved_terms(self, namespace: str, labels: Mapping[str, str],
                       created: bool) -> PodTerms:
        """The pod's four term lists with namespace defaulting and matchLabelKeys merged."""
        keys = tuple(labels.get(k) for k in self._label_keys())
        ck = (namespace, keys, created)
        got: PodTerms | None = self._resolved.get(ck)
        if got is None:
            got = {attr: tuple(t.resolve(namespace, labels, created) for t in ts)
                   for attr, ts in self.raw_terms.items()}
            self._resolved[ck] = got
        return got

    def _label_keys(self) -> list[str]:
        keys: list[str] = []
        for ts in self.raw_terms.values():
            for t in ts:
                keys.extend(t.match_label_keys)
                keys.extend(t.mismatch_label_keys)
        return keys


def _images_of(spec: Mapping[str, Any], prefix: str) -> Iterator[str]:
    """Container images, init containers first (ImageLocality's order)."""
    for lst in ("initContainers", "containers"):
        for i, c in enumerate(_list(spec.get(lst), prefix + lst)):
            image = _mapping(c, "%s%s[%d]" % (prefix, lst, i)).get("image")
            yield image if isinstance(image, str) else ""


# Volume sources that kube-scheduler's volume plugins act on (VolumeBinding, VolumeZone,
# VolumeRestrictions, NodeVolumeLimits); configMap, secret, emptyDir, hostPath,
# downwardAPI and projected volumes do not take part in scheduling.
SCHEDULED_VOLUMES = ("persistentVolumeClaim", "ephemeral", "csi", "gcePersistentDisk",
                     "awsElasticBlockStore", "azureDisk", "cinder", "rbd", "iscsi")


def _unmodelled(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """What of this spec takes part in kube-scheduler's decision but is not modelled."""
    out = []
    used = sorted({k for v in _list(spec.get("volumes"), "volumes") if isinstance(v, dict)
                   for k in v if k in SCHEDULED_VOLUMES})
    if used:
        out.append("volumes (%s: VolumeBinding, VolumeRestrictions, VolumeZone, "
                   "NodeVolumeLimits)" % ", ".join(used))
    if spec.get("resourceClaims"):
        out.append("resourceClaims (DynamicResources)")
    if any(isinstance(p, dict) and p.get("hostPort")
           for lst in ("initContainers", "containers")
           for c in _list(spec.get(lst), lst) if isinstance(c, dict)
           for p in _list(c.get("ports"), "ports")):
        out.append("hostPort (NodePorts)")
    if spec.get("schedulingGates"):
        out.append("schedulingGates (the pod is not scheduled until they are removed)")
    return tuple(out)


def parse_preferred_node_terms(raw: object, field: str) -> WeightedNodeTerms:
    """Preferred node-selector terms: weight-0 and empty terms dropped, errors raised."""
    out: list[tuple[int, selectors.NodeSelectorTerm]] = []
    for i, item in enumerate(_list(raw, field)):
        f = "%s[%d]" % (field, i)
        item = _mapping(item, f)
        w = item.get("weight", 0)
        if not isinstance(w, int) or isinstance(w, bool) or not 0 <= w <= 100:
            raise InputError("weight must be an integer in 1..100", field=f + ".weight")
        if w == 0:
            continue
        term = selectors.NodeSelectorTerm(_mapping(item.get("preference"), f + ".preference"),
                                          f + ".preference", i)
        if term.error is not None:
            raise InputError(term.error.message, field=term.error.field)
        if not term.empty:
            out.append((w, term))
    return tuple(out)


class Pod:
    """A pod: bound (``node_name`` set) or waiting to be scheduled."""

    __slots__ = ("namespace", "name", "labels", "spec", "node_name", "terminating",
                 "terms", "spread", "class_key", "source", "owner", "owner_selector",
                 "workload")

    def __init__(self, namespace: str, name: str, labels: Mapping[str, str], spec: PodSpecInfo,
                 node_name: str = "", terminating: bool = False, created: bool = True,
                 source: str | None = None, owner: Owner | None = None,
                 owner_selector: selectors.LabelSelector | None = None,
                 workload: str | None = None) -> None:
        self.namespace, self.name, self.labels, self.spec = namespace, name, labels, spec
        self.node_name = node_name
        self.terminating = terminating
        self.source = source
        self.workload = workload  # 'Kind namespace/name' of the manifest object it came from
        # the controlling owner (apiVersion, kind, name), and its selector when the pod was made
        # here from a workload (else it is looked up in the cluster: see ClusterState)
        self.owner, self.owner_selector = owner, owner_selector
        self.terms = spec.resolved_terms(namespace, labels, created)
        self.spread = spec.resolved_spread(labels, created)
        self.class_key: ClassKey = (namespace, tuple(sorted(labels.items())))

    @property
    def key(self) -> str:
        return "%s/%s" % (self.namespace, self.name)

    @classmethod
    def parse(cls, obj: Mapping[str, Any], created: bool = True,
              source: str | None = None) -> "Pod | None":
        """Parse a Pod object; None for terminal (Succeeded/Failed) pods."""
        meta, name = metadata(obj, "Pod")
        phase = _mapping(obj.get("status"), "status").get("phase")
        if phase in TERMINAL_PHASES:
            return None
        ns = meta.get("namespace") or DEFAULT_NAMESPACE
        labels = parse_labels(meta.get("labels"), "metadata.labels")
        spec = PodSpecInfo(obj.get("spec"), annotations=meta.get("annotations"))
        return cls(ns, name, labels, spec, node_name=spec.node_name,
                   terminating=bool(meta.get("deletionTimestamp")), created=created,
                   source=source, owner=controller_of(meta))


def controller_of(meta: Mapping[str, Any]) -> Owner | None:
    """(apiVersion, kind, name) of the ownerReference with controller: true, or None."""
    refs = meta.get("ownerReferences")
    if not isinstance(refs, list):
        return None
    for ref in refs:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return (ref.get("apiVersion"), ref.get("kind"), ref.get("name"))
    return None
