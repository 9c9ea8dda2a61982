"""Which pods kube-scheduler sends to the extender, to which verb, and the admission rules
that keep it so.

kube-scheduler calls an extender that declares ``managedResources`` only for pods that
request or limit one of them (its ``IsInterested``); ``ignoredByScheduler: true`` keeps
NodeResourcesFit from looking for the resource on nodes, and the kubelet drops an
extended resource that its node does not advertise before admitting the pod. The shipped
configuration has one extender entry per verb, each with its own resource
(``podcache.MARKS``), so the mutating webhook marks a pod being created for each verb
whose answer the extender can change:

* ``/filter`` (``constants.EXTENDER_FILTER_RESOURCE``): the pod carries required
  extended terms (affinity or anti-affinity), or an extended required anti-affinity term
  of another live pod selects it (the filter's symmetry);
* ``/prioritize`` (``constants.EXTENDER_SCORE_RESOURCE``): the pod carries preferred
  extended terms, or another live pod's preferred extended terms (and, with a hard pod
  affinity weight, its required affinity) select it (the score's symmetry).

A pod with preferred terms alone costs one call, not two. The extender does for such a
pod at ``/prioritize`` what the filter does for the others: it waits for the relevant
pods it let through just before, and takes the pod as placed (``Extender.priorities``).

Only the pods of the schedulers that call the extender (``webhook serve
--scheduler-name``) are marked: another scheduler would look for the resource on its
nodes and find none. A pod of another scheduler that carries the annotations is
admitted with a warning (its terms are not applied at scheduling time).

Every other pod never reaches the extender. The validating webhook keeps the marks
true where it matters (``problem``): a pod with extended terms of its own but without
their verb's mark is refused (the mutating webhook did not run on it), and so is an
update that makes a pending pod need a verb it is not marked for (labels or annotations
added that extended terms select: resources cannot change after creation). The pods
that are pending without the filter's mark anyway (created before the webhook, or in the
milliseconds before its cache saw the extended pod that selects them) are the filter's
to order (``PodCache.unmarked_pending``). ``doc/webhook.md``, "Which pods reach the
extender".

What the marking reads of the extender's cache is the Protocol ``MarkingReads``
(served by ``podcache.PodCacheView``).
"""
from collections.abc import Iterable, Sequence
from typing import Protocol

from tacker_hwaffinity.constants import DEFAULT_SCHEDULER
from tacker_hwaffinity.objects.jsontypes import JsonList, ReadOnlyJson
from tacker_hwaffinity.scheduling import annotations
from tacker_hwaffinity.scheduling.plugins import interpod
from tacker_hwaffinity.webhook import patches
from tacker_hwaffinity.webhook.podcache import FILTER, MARKS, SCORE, VERBS, PodRecord

# Per verb, the kinds of a pod's own extended terms that it applies.
OWN_KINDS = {FILTER: ("required_affinity", "required_anti"),
             SCORE: ("preferred_affinity", "preferred_anti")}


class MarkingReads(Protocol):
    """What the marking reads of the extender's pod cache (``podcache.PodCacheView``)."""

    def describe_pod(self, obj: ReadOnlyJson, strict: bool = ...) -> PodRecord: ...

    def selected_by_live(self, kinds: Sequence[str], rec: PodRecord) -> bool: ...


class MarkingCache(Protocol):
    """The extender's pod cache, as the marking holds it: its read view."""

    def reader(self) -> MarkingReads: ...


def resource_of(verb: str) -> str:
    """The extended resource that sends a pod to VERB (the webhook's mark)."""
    return MARKS[verb][0]


def _why(verb: str) -> str:
    return ("kube-scheduler calls the hwaffinity extender's /%s only for pods that "
            "request %s" % (verb, resource_of(verb)))


def scheduler_of(pod: ReadOnlyJson) -> str:
    """The pod's ``spec.schedulerName``, as the API server defaults it."""
    spec = pod.get("spec")
    name = spec.get("schedulerName") if isinstance(spec, dict) else None
    return name if isinstance(name, str) and name else DEFAULT_SCHEDULER


def own_verbs(rec: PodRecord) -> frozenset[str]:
    """The verbs whose answer the pod REC's (a PodRecord) own extended terms change; a
    malformed annotation is the filter's to refuse."""
    if rec.terms is None:
        return frozenset((FILTER,)) if rec.error is not None else frozenset()
    return frozenset(v for v in VERBS if any(rec.terms.get(k) for k in OWN_KINDS[v]))


class Marking:
    """The marking decisions over the extender's CACHE (a ``PodCache``), read through
    its read view, for an extender that scores with HARD_POD_AFFINITY_WEIGHT and that the
    schedulers SCHEDULERS (their names) call."""

    def __init__(self, cache: MarkingCache, hard_pod_affinity_weight: int = 1,
                 schedulers: Iterable[str] = (DEFAULT_SCHEDULER,)) -> None:
        self.reads = cache.reader()
        # per verb, the kinds of other pods' terms it applies to the pods they select
        self.kinds = {FILTER: ("required_anti",),
                      SCORE: tuple(k for k, _sign in
                                   interpod.existing_score_kinds(hard_pod_affinity_weight))}
        self.schedulers = frozenset(schedulers)

    def _record(self, pod: ReadOnlyJson, namespace: str | None) -> PodRecord:
        """The cache's PodRecord of POD, in NAMESPACE when the pod does not say (an
        AdmissionRequest's object may leave it to the request)."""
        meta = pod.get("metadata")
        if namespace and isinstance(meta, dict) and not meta.get("namespace"):
            pod = dict(pod, metadata=dict(meta, namespace=namespace))
        return self.reads.describe_pod(pod)

    def _needed(self, rec: PodRecord) -> frozenset[str]:
        own = own_verbs(rec)
        return frozenset(v for v in VERBS
                         if v in own or self.reads.selected_by_live(self.kinds[v], rec))

    def needed_verbs(self, pod: ReadOnlyJson, namespace: str | None = None
                     ) -> frozenset[str]:
        """The verbs kube-scheduler must call for POD (a Pod object); none for a pod of
        another scheduler."""
        if scheduler_of(pod) not in self.schedulers:
            return frozenset()
        return self._needed(self._record(pod, namespace))

    def warning(self, pod: ReadOnlyJson) -> str | None:
        """A warning for a POD that carries extended terms but whose scheduler does not
        call the extender, or None."""
        name = scheduler_of(pod)
        if name in self.schedulers:
            return None
        meta = pod.get("metadata")
        notes = meta.get("annotations") if isinstance(meta, dict) else None
        found = [n for n in (annotations.POD_AFFINITY, annotations.REQUIRED_DURING_EXECUTION)
                 if isinstance(notes, dict) and n in notes]
        if not found:
            return None
        return ("metadata.annotations[%s]: spec.schedulerName %s does not call the "
                "hwaffinity extender (the webhook marks the pods of %s): these terms are not "
                "applied at scheduling time" % (found[0], name, ", ".join(sorted(self.schedulers))))

    def patch(self, pod: ReadOnlyJson, namespace: str | None = None) -> JsonList:
        """JSON Patch operations marking POD (being created) for the verbs it needs, or
        []."""
        verbs = self.needed_verbs(pod, namespace)
        if not verbs:
            return []
        return patches.mark_patch(pod.get("spec"), [resource_of(v) for v in VERBS
                                                    if v in verbs])

    def problem(self, request: ReadOnlyJson, pod: ReadOnlyJson,
                old: ReadOnlyJson | None) -> str | None:
        """Why the Pod REQUEST (POD, and OLD for an UPDATE, else None) must be refused to
        keep the marking true, or None."""
        namespace = request.get("namespace")
        if scheduler_of(pod) not in self.schedulers:
            return None
        new = self._record(pod, namespace)
        if old is None:
            missing = own_verbs(new) - new.verbs
            if not missing:
                return None
            verb = min(missing, key=VERBS.index)
            names = [n for n, a in zip((annotations.POD_AFFINITY,
                                        annotations.REQUIRED_DURING_EXECUTION), new.ann)
                     if a is not None]
            return ("metadata.annotations[%s]: the pod carries extended terms but not the "
                    "resource %s (the mutating webhook mutate.hwaffinity.io did not mark "
                    "it; it needs failurePolicy Fail): %s"
                    % (names[0], resource_of(verb), _why(verb)))
        if not new.pending or new.verbs.issuperset(VERBS):
            return None
        missing = self._needed(new) - new.verbs
        if missing:             # needed before this change already: not this change's doing
            missing -= self.needed_verbs(old, namespace)
        if not missing:
            return None
        verb = min(missing, key=VERBS.index)
        return ("metadata: the change makes this pending pod one the hwaffinity extender's "
                "/%s must place (its labels are now selected by another pod's extended terms, "
                "or it carries them itself), but it was created without %s and resources "
                "cannot change: %s; change it once it is scheduled, or recreate it"
                % (verb, resource_of(verb), _why(verb)))
