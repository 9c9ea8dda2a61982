"""Which objects a reader reads, which it skips with a note, and which are errors: the one
rule for workload files, cluster snapshots and the audit's snapshots (``Kinds.reads``).

An object is read when its kind is one the reader reads, in an apiVersion Kubernetes
serves it in (or with no apiVersion, as hand-written test files have it). Any other object
the API server would take is skipped, and the reader's note names it (``note``): a kind
Kubernetes defines (a ConfigMap, a PodDisruptionBudget, ...), or a kind of an API group
Kubernetes does not serve (a custom resource: a Multus NetworkAttachmentDefinition, a
Prometheus ServiceMonitor). What the API server would refuse is an error, so that a typo
is never skipped: a kind that a built-in API group (the core group, ``apps``, ``batch``:
a group without a dot, or one Kubernetes serves) does not define, with the kind probably
meant; a built-in kind in a version its group does not serve, with the versions that do.

What Kubernetes serves is read from the schema data of the newest release
``objects.schema`` has; should that data be unreadable, from ``FALLBACK``, the common
built-in kinds.

Helm hooks (``helm_hook``): a Pod or Job annotated ``helm.sh/hook`` runs to completion
at that point of a release (a test, a pre-install migration) and is not part of what
keeps running; the workload reader skips it with a note.
"""
import difflib
import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, TypeAlias

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import schema
from tacker_hwaffinity.objects.naming import object_label

# The built-in kinds known without the schema data: apiVersion -> kinds.
FALLBACK: dict[str, tuple[str, ...]] = {
    "v1": ("Binding", "ConfigMap", "Endpoints", "Event", "LimitRange", "Namespace", "Node",
           "PersistentVolume", "PersistentVolumeClaim", "Pod", "PodTemplate",
           "ReplicationController", "ResourceQuota", "Secret", "Service", "ServiceAccount"),
    "apps/v1": ("ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet", "StatefulSet"),
    "batch/v1": ("CronJob", "Job"),
    "policy/v1": ("PodDisruptionBudget",),
    "autoscaling/v1": ("HorizontalPodAutoscaler",),
    "autoscaling/v2": ("HorizontalPodAutoscaler",),
    "networking.k8s.io/v1": ("Ingress", "IngressClass", "NetworkPolicy"),
    "rbac.authorization.k8s.io/v1": ("ClusterRole", "ClusterRoleBinding", "Role",
                                     "RoleBinding"),
    "storage.k8s.io/v1": ("CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"),
    "scheduling.k8s.io/v1": ("PriorityClass",),
    "coordination.k8s.io/v1": ("Lease",),
    "discovery.k8s.io/v1": ("EndpointSlice",),
    "events.k8s.io/v1": ("Event",),
    "node.k8s.io/v1": ("RuntimeClass",),
    "apiextensions.k8s.io/v1": ("CustomResourceDefinition",),
    "apiregistration.k8s.io/v1": ("APIService",),
    "admissionregistration.k8s.io/v1": ("MutatingWebhookConfiguration",
                                        "ValidatingWebhookConfiguration"),
    "certificates.k8s.io/v1": ("CertificateSigningRequest",),
}
HELM_HOOK = "helm.sh/hook"
# The kinds helm waits on to complete when they are hooks (a Job's completion, a Pod's
# Succeeded phase); a hook of another kind keeps running like the release's objects.
RUN_TO_COMPLETION = ("Pod", "Job")
MAX_NAMED = 10          # objects a note names; the rest are counted
# A verdict on one (apiVersion, kind): read (True), skipped (False), or refused: the
# message and the field it is about.
Verdict: TypeAlias = bool | tuple[str, str]


class BuiltIn(NamedTuple):
    """What one Kubernetes release serves: its name in messages, its (apiVersion, kind)
    pairs, its API groups, and the apiVersions that serve each kind."""

    release: str
    served: frozenset[tuple[str, str]]
    groups: frozenset[str]
    versions: dict[str, tuple[str, ...]]


def _built_in(release: str, pairs: Iterable[tuple[str, str]]) -> BuiltIn:
    served = frozenset((v, k) for v, k in pairs if isinstance(k, str) and isinstance(v, str))
    versions: dict[str, list[str]] = {}
    for api_version, kind in sorted(served):
        versions.setdefault(kind, []).append(api_version)
    return BuiltIn(release, served, frozenset(group_of(v) for v, _ in served),
                   {kind: tuple(vs) for kind, vs in versions.items()})


@functools.lru_cache(maxsize=1)
def built_in() -> BuiltIn:
    """What the newest Kubernetes release of the schema data serves (``FALLBACK`` when
    that data cannot be read)."""
    try:
        newest = schema.release(schema.supported_minors()[-1])
    except schema.Unavailable:
        return _built_in("the common Kubernetes kinds (the schema data cannot be read)",
                         ((v, k) for v, names in FALLBACK.items() for k in names))
    return _built_in(newest.name, newest.types)


def group_of(api_version: str) -> str:
    """The API group of API_VERSION: ``apps`` of ``apps/v1``, ``""`` (core) of ``v1``."""
    return api_version.rpartition("/")[0]


def is_custom(obj: Mapping[str, Any]) -> bool:
    """Is OBJ of an API group Kubernetes does not serve (a custom resource's)?"""
    api_version = obj.get("apiVersion")
    if not isinstance(api_version, str):
        return False
    group = group_of(api_version)
    return "." in group and group not in built_in().groups


class Kinds:
    """The rule for one reader: the kinds it reads (READ), and its verdict on each
    (apiVersion, kind) met, worked out once."""

    def __init__(self, read: Iterable[str]) -> None:
        self.read = frozenset(read)
        self._verdicts: dict[tuple[str | None, str], Verdict] = {}

    def reads(self, obj: object, source: str) -> bool:
        """True when OBJ (read from SOURCE) is to be read, False when it is to be skipped
        with a note; InputError naming SOURCE, the object and the field when the API
        server would refuse it, or it is no object."""
        if not isinstance(obj, dict):
            raise InputError("expected a Kubernetes object (a mapping)", source=source)
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if not isinstance(kind, str) or not kind:
            raise InputError("object has no kind", source=source, obj=object_label(obj),
                             field="kind")
        if api_version is not None and (not isinstance(api_version, str) or not api_version):
            raise InputError("expected a group/version such as apps/v1", source=source,
                             obj=object_label(obj), field="apiVersion")
        key = (api_version, kind)
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = self._verdicts[key] = self._judge(api_version, kind)
        if isinstance(verdict, tuple):
            raise InputError(verdict[0], source=source, obj=object_label(obj),
                             field=verdict[1])
        return verdict

    def _judge(self, api_version: str | None, kind: str) -> Verdict:
        table = built_in()
        if api_version is None:
            if kind in self.read or kind in table.versions:
                return kind in self.read
            return ("unknown kind %r and no apiVersion: not a kind of %s%s"
                    % (kind, table.release, _meant(kind, None, table)), "kind")
        if (api_version, kind) in table.served:
            return kind in self.read
        group = group_of(api_version)
        if "." in group and group not in table.groups:
            return False            # a custom resource
        if kind in table.versions:
            return ('no matches for kind "%s" in version "%s": %s serves it in %s'
                    % (kind, api_version, table.release, ", ".join(table.versions[kind])),
                    "apiVersion")
        return ("unknown kind %r in %s: not a kind of %s%s"
                % (kind, api_version, table.release, _meant(kind, group, table)), "kind")


def _meant(kind: str, group: str | None, table: BuiltIn) -> str:
    """' (did you mean X?)' with the built-in kind KIND was probably meant to be, one of
    GROUP (None: no apiVersion given) first; one of another group is named with its
    apiVersion. '' when none is close."""
    def of_group(candidate: str) -> bool:
        return group is not None and any(group_of(v) == group
                                         for v in table.versions[candidate])
    everyone = sorted(table.versions)
    for candidates in ([k for k in everyone if of_group(k)], everyone):
        by_lower = {k.lower(): k for k in candidates}
        close = ([by_lower[kind.lower()]] if kind.lower() in by_lower else
                 difflib.get_close_matches(kind, candidates, n=1, cutoff=0.8))
        if close:
            meant = close[0]
            if not of_group(meant):
                meant = "%s (%s)" % (meant, table.versions[meant][-1])
            return " (did you mean %s?)" % meant
    return ""


def helm_hook(obj: Mapping[str, Any]) -> str | None:
    """The ``helm.sh/hook`` annotation of OBJ, a Pod or Job (RUN_TO_COMPLETION), or None."""
    if obj.get("kind") not in RUN_TO_COMPLETION:
        return None
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    hook = annotations.get(HELM_HOOK) if isinstance(annotations, dict) else None
    return hook if isinstance(hook, str) and hook.strip() else None


def entry(obj: Mapping[str, Any], detail: str | None = None) -> str:
    """'Kind/name (DETAIL)': how a note names OBJ; DETAIL defaults to its apiVersion."""
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if detail is None:
        api_version = obj.get("apiVersion")
        detail = api_version if isinstance(api_version, str) else "no apiVersion"
    return "%s/%s (%s)" % (obj.get("kind"), name if isinstance(name, str) else "<unnamed>",
                           detail)


def note(entries: Sequence[tuple[str, str]], one: str, many: str) -> list[str]:
    """[] for no ENTRIES ([(source, ``entry``)]), else the one note naming them, file by
    file, at most MAX_NAMED: 'chart.yaml: 1 object ONE: X' or 'N objects MANY: a.yaml:
    X, Y; b.yaml: Z, and 3 more'."""
    if not entries:
        return []
    by_source: dict[str, list[str]] = {}
    for source, text in entries[:MAX_NAMED]:
        by_source.setdefault(source, []).append(text)
    what = "%d object%s %s" % (len(entries), "" if len(entries) == 1 else "s",
                               one if len(entries) == 1 else many)
    more = len(entries) - MAX_NAMED
    tail = ", and %d more" % more if more > 0 else ""
    if len(by_source) == 1 and more <= 0:
        ((source, texts),) = by_source.items()
        return ["%s: %s: %s" % (source, what, ", ".join(texts))]
    return ["%s: %s%s" % (what, "; ".join("%s: %s" % (source, ", ".join(texts))
                                          for source, texts in by_source.items()), tail)]
