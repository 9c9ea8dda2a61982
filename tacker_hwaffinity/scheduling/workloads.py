"""Expand workload objects into the pods their controllers would create.

Names and controller labels follow the controllers: Deployment pods
``<name>-<pod-template-hash>-<5 chars>`` with label ``pod-template-hash``;
ReplicaSet and ReplicationController ``<name>-<5 chars>``; StatefulSet
``<name>-<ordinal>`` with ``statefulset.kubernetes.io/pod-name`` and
``apps.kubernetes.io/pod-index``; DaemonSet ``<name>-<5 chars>``, one per node its
controller runs it on, pinned there (``daemonsets``), with ``controller-revision-hash``
and ``pod-template-generation``; Job ``<name>-<5 chars>`` (Indexed:
``<name>-<index>-<5 chars>``) with the ``job-name``/``controller-uid`` labels. Random
parts are derived from the object (a DaemonSet's pod: and its node) so that a plan is
reproducible.

A generated name that is already taken (by an earlier replica, another
workload or a pod of the cluster snapshot) is not an error: as the API server
retries ``generateName``, the replica takes the next of its own deterministic
candidates (attempt 0 is the usual name, then attempts 1, 2, ...). StatefulSet
and bare Pod names are fixed, so their conflicts stay the caller's error.
"""
import hashlib
import json
from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any, NamedTuple, cast

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects.naming import DEFAULT_NAMESPACE
from tacker_hwaffinity.scheduling import daemonsets
from tacker_hwaffinity.scheduling.model import (
    Node, Owner, Pod, PodSpecInfo, metadata, parse_labels)
from tacker_hwaffinity.scheduling.selectors import (
    EQUALS, LabelSelector, Requirement, SelectorError, parse_label_selector)

# The kinds whose pods are planned (objects.kinds skips, with a note, every other kind
# the API server takes).
WORKLOAD_KINDS = ("Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job",
                  "ReplicationController")
# The pods one command plans at most unless told otherwise (``--max-pods``): far above any
# real CNF, far below what exhausts memory (10,000,000 replicas took 10 GB before this).
MAX_PODS = 100_000
_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand alphabet


def _fnv32a(data: bytes) -> int:
    h = 0x811c9dc5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def _safe_encode(text: str) -> str:
    return "".join(_SAFE[ord(c) % len(_SAFE)] for c in text)


def template_hash(template: object) -> str:
    """pod-template-hash style: FNV-32a of the template, safe-encoded."""
    return _safe_encode(str(_fnv32a(json.dumps(template, sort_keys=True).encode())))


def _suffix(*parts: object) -> str:
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return "".join(_SAFE[b % len(_SAFE)] for b in digest[:5])


def _candidate_suffix(attempt: int, *parts: object) -> str:
    """The 5 random characters of a replica's name at ATTEMPT (0: the usual ones)."""
    return _suffix(*parts) if attempt == 0 else _suffix(*(parts + ("retry", attempt)))


def _free_name(namespace: str, name_at: Callable[[int], str], taken: Container[str],
               used: set[str]) -> str:
    """The first name NAME_AT(attempt) whose key is neither in TAKEN nor in USED (then used)."""
    attempt = 0
    while True:
        name = name_at(attempt)
        key = "%s/%s" % (namespace, name)
        if key not in taken and key not in used:
            used.add(key)
            return name
        attempt += 1


def _int_field(spec: Mapping[str, Any], name: str, default: int, field: str) -> int:
    v: object = spec.get(name, default)
    if v is None:
        v = default
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise InputError("expected a non-negative integer", field=field)
    return v


def _workload_kind(obj: Mapping[str, Any]) -> str:
    kind = obj.get("kind")
    if kind not in WORKLOAD_KINDS:
        raise InputError("unknown kind %r: expected one of %s"
                         % (kind, ", ".join(WORKLOAD_KINDS)), field="kind")
    return cast(str, kind)   # one of WORKLOAD_KINDS


def _spec(obj: Mapping[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        raise InputError("expected a mapping", field="spec")
    return spec


def _job_parallelism(spec: Mapping[str, Any]) -> int:
    """The pods a Job runs at once: spec.parallelism, at most spec.completions."""
    parallelism = _int_field(spec, "parallelism", 1, "spec.parallelism")
    if spec.get("completions") is not None:
        parallelism = min(parallelism, _int_field(spec, "completions", 1, "spec.completions"))
    return parallelism


def pod_count(obj: Mapping[str, Any], nodes: Sequence[Node] | None = None
              ) -> tuple[int, str | None]:
    """(how many pods workload OBJ creates, the field that says so) from its spec alone,
    without making them; the field is None for a Pod (it is one) and a DaemonSet (one
    per node of NODES it runs on; none when the nodes are not known yet)."""
    kind = _workload_kind(obj)
    if kind == "Pod":
        return 1, None
    if kind == "DaemonSet":
        return (len(daemonsets.nodes_to_run(_template(obj).info, nodes)) if nodes else 0), None
    if kind == "Job":
        return _job_parallelism(_spec(obj)), "spec.parallelism"
    return _int_field(_spec(obj), "replicas", 1, "spec.replicas"), "spec.replicas"


class Template(NamedTuple):
    """A controller's spec and what its pods are made of: the pod template, its labels,
    its pod spec as the controller makes its pods (``pod_spec``: a DaemonSet's with the
    daemon tolerations) and that spec read once, and the controller's selector (None: it
    has none)."""

    spec: dict[str, Any]
    template: dict[str, Any]
    labels: dict[str, str]
    pod_spec: Any
    info: PodSpecInfo
    selector: LabelSelector | None


def _selector(obj: Mapping[str, Any], spec: Mapping[str, Any],
              labels: Mapping[str, str]) -> LabelSelector | None:
    """The controller's selector of its pods (LABELS: its template's), or None: a
    ReplicationController's is a label map that defaults to LABELS."""
    if obj.get("kind") == "ReplicationController":
        match = parse_labels(spec.get("selector"), "spec.selector") or labels
        if not match:
            raise InputError("a ReplicationController needs a selector or template labels",
                             field="spec.selector")
        sel = LabelSelector([Requirement(k, EQUALS, [v]) for k, v in match.items()])
    elif "selector" in spec:
        try:
            sel = parse_label_selector(spec.get("selector"), "spec.selector")
        except SelectorError as e:
            raise InputError(e.message, field=e.field)
        if sel.uses_extension():
            raise InputError("Gt/Lt are not allowed in a controller selector",
                             field="spec.selector")
    else:
        return None
    if not sel.matches(labels):
        raise InputError("selector does not match template labels", field="spec.selector")
    return sel


def _template(obj: Mapping[str, Any]) -> Template:
    spec = _spec(obj)
    tpl = spec.get("template")
    if not isinstance(tpl, dict):
        raise InputError("the controller has no pod template", field="spec.template")
    tmeta = tpl.get("metadata") or {}
    if not isinstance(tmeta, dict):
        raise InputError("expected a mapping", field="spec.template.metadata")
    labels = parse_labels(tmeta.get("labels"), "spec.template.metadata.labels")
    sel = _selector(obj, spec, labels)
    pod_spec = tpl.get("spec")
    if obj.get("kind") == "DaemonSet":
        pod_spec = daemonsets.with_daemon_tolerations(pod_spec)
    return Template(spec, tpl, labels, pod_spec, _pod_spec_info(tpl, pod_spec), sel)


def _pod_spec_info(tpl: Mapping[str, Any], pod_spec: object) -> PodSpecInfo:
    """POD_SPEC, the pod spec of template TPL, read (errors named as the template's)."""
    return PodSpecInfo(pod_spec, "spec.template.spec.",
                       (tpl.get("metadata") or {}).get("annotations"),
                       "spec.template.metadata.annotations")


def daemon_pod(obj: Mapping[str, Any], source: str | None = None) -> Pod:
    """The pod of DaemonSet OBJ as its controller makes it before pinning it to a node
    (``daemonsets``): what each node's verdict is about when one pod is explained."""
    meta, name = metadata(obj, "DaemonSet")
    ns = meta.get("namespace") or DEFAULT_NAMESPACE
    template = _template(obj)
    labels = dict(template.labels, **_daemon_labels(meta, template.template))
    return Pod(ns, name + "-" + _suffix(ns, name), labels, template.info, created=False,
               source=source, owner=("apps/v1", "DaemonSet", name),
               workload="DaemonSet %s/%s" % (ns, name))


def _daemon_labels(meta: Mapping[str, Any], tpl: object) -> dict[str, str]:
    """The labels the DaemonSet controller adds to its pods (CreatePodTemplate)."""
    return {daemonsets.GENERATION_LABEL: daemonsets.generation(meta),
            daemonsets.REVISION_LABEL: template_hash(tpl)}


def expand(obj: Mapping[str, Any], source: str | None = None,
           taken: Container[str] = frozenset(), count: int | None = None,
           nodes: Sequence[Node] = ()) -> list[Pod]:
    """The pods OBJ creates, in creation order (a Pod yields itself; a DaemonSet one per
    node of NODES it runs on, in their order); with COUNT, only the first COUNT of them
    (named as in the whole list).

    TAKEN: keys (``namespace/name``) of pods that exist already; generated names
    avoid them. Fixed names (StatefulSet, Pod) are returned as they are.
    """
    kind = _workload_kind(obj)
    meta, name = metadata(obj, kind)
    ns = meta.get("namespace") or DEFAULT_NAMESPACE
    if kind == "Pod":
        pod = Pod.parse(obj, created=False, source=source)
        if pod is None:
            return []
        pod.workload = "Pod %s/%s" % (ns, name)
        return [pod]
    spec, tpl, labels, pod_spec, info, selector = _template(obj)
    on = daemonsets.nodes_to_run(info, nodes) if kind == "DaemonSet" else []
    replicas = len(on) if kind == "DaemonSet" else pod_count(obj)[0]
    if count is not None:
        replicas = min(replicas, count)

    used: set[str] = set()
    owner: Owner | None = None
    owner_selector: LabelSelector | None = None

    def make(pod_name: str, extra: Mapping[str, str], spec_info: PodSpecInfo = info) -> Pod:
        return Pod(ns, pod_name, dict(labels, **extra), spec_info, created=False,
                   source=source, owner=owner, owner_selector=owner_selector,
                   workload="%s %s/%s" % (kind, ns, name))

    def generated(prefix: str, *parts: object) -> str:
        """PREFIX and 5 characters derived from PARTS: the first such name not taken."""
        return _free_name(ns, lambda attempt: prefix + _candidate_suffix(attempt, *parts),
                          taken, used)

    if kind in ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"):
        owner_selector = selector
    if kind == "Deployment":
        h = template_hash(tpl)
        prefix = "%s-%s-" % (name, h)
        # its ReplicaSet <name>-<hash> selects the Deployment's pods of this template
        owner = ("apps/v1", "ReplicaSet", name + "-" + h)
        if selector is not None:
            owner_selector = LabelSelector(selector.requirements + (
                Requirement("pod-template-hash", EQUALS, [h]),))
        return [make(generated(prefix, ns, name, h, i), {"pod-template-hash": h})
                for i in range(replicas)]
    if kind in ("ReplicaSet", "ReplicationController"):
        owner = ("apps/v1" if kind == "ReplicaSet" else "v1", kind, name)
        return [make(generated(name + "-", ns, name, i), {}) for i in range(replicas)]
    if kind == "DaemonSet":
        owner = ("apps/v1", "DaemonSet", name)
        extra = _daemon_labels(meta, tpl)
        return [make(generated(name + "-", ns, name, node.name), extra,
                     _pod_spec_info(tpl, daemonsets.pinned(pod_spec, node.name)))
                for node in on[:replicas]]
    if kind == "StatefulSet":
        owner = ("apps/v1", "StatefulSet", name)
        ordinals = spec.get("ordinals") or {}
        start = _int_field(ordinals if isinstance(ordinals, dict) else {}, "start", 0,
                           "spec.ordinals.start")
        rev = "%s-%s" % (name, template_hash(tpl))
        return [make("%s-%d" % (name, i),
                     {"statefulset.kubernetes.io/pod-name": "%s-%d" % (name, i),
                      "apps.kubernetes.io/pod-index": str(i),
                      "controller-revision-hash": rev})
                for i in range(start, start + replicas)]
    if kind == "Job":
        uid = meta.get("uid") or _uid(ns, name)
        job_labels = {"batch.kubernetes.io/controller-uid": uid, "controller-uid": uid,
                      "batch.kubernetes.io/job-name": name, "job-name": name}
        indexed = spec.get("completionMode") == "Indexed"
        owner = ("batch/v1", "Job", name)
        pods = []
        for i in range(replicas):
            if indexed:
                extra = dict(job_labels, **{"batch.kubernetes.io/job-completion-index": str(i)})
                pods.append(make(generated("%s-%d-" % (name, i), uid, i), extra))
            else:
                pods.append(make(generated(name + "-", uid, i), job_labels))
        return pods
    raise AssertionError(kind)


def _uid(ns: str, name: str) -> str:
    d = hashlib.sha256(("job/%s/%s" % (ns, name)).encode()).hexdigest()
    return "%s-%s-%s-%s-%s" % (d[:8], d[8:12], d[12:16], d[16:20], d[20:32])
