"""Which pods kube-scheduler sends to the extender, and the admission rules that keep it so.

kube-scheduler calls an extender that declares ``managedResources`` only for pods that
request or limit one of them (its ``IsInterested``); ``ignoredByScheduler: true`` keeps
NodeResourcesFit from looking for the resource on nodes, and the kubelet drops an
extended resource that its node does not advertise before admitting the pod. So the
mutating webhook marks a pod being created with ``constants.EXTENDER_RESOURCE`` exactly
when the extender can change its placement:

* it carries ``hwaffinity.io/pod-affinity`` or ``hwaffinity.io/required-during-execution``;
* an extended term of another live pod selects it, of a kind the extender applies to
  incoming pods: required anti-affinity (the filter's symmetry), preferred terms and,
  with a hard pod affinity weight, required affinity (the score's).

Only the pods of the schedulers that call the extender (``webhook serve
--scheduler-name``) are marked: another scheduler would look for the resource on its
nodes and find none. A pod of another scheduler that carries the annotations is
admitted with a warning (its terms are not applied at scheduling time).

Every other pod never reaches the extender. The validating webhook keeps the mark
true where it matters (``problem``): a pod with the annotations but without the mark is
refused (the mutating webhook did not run on it), and so is an update that makes a
pending, unmarked pod one the extender must see (labels or annotations added that
extended terms select: resources cannot change after creation). The pods that exist
unmarked and pending anyway (created before the webhook, or in the milliseconds before
its cache saw the extended pod that selects them) are the filter's to order
(``PodCache.unmarked_pending``). ``doc/webhook.md``, "Which pods reach the extender".
"""
from tacker_hwaffinity.constants import DEFAULT_SCHEDULER, EXTENDER_RESOURCE
from tacker_hwaffinity.scheduling import annotations
from tacker_hwaffinity.scheduling.plugins import interpod
from tacker_hwaffinity.webhook import patches

_WHY = ("kube-scheduler sends a pod to the hwaffinity extender only if it requests %s"
        % EXTENDER_RESOURCE)


def scheduler_of(pod):
    """The pod's ``spec.schedulerName``, as the API server defaults it."""
    spec = pod.get("spec")
    name = spec.get("schedulerName") if isinstance(spec, dict) else None
    return name if isinstance(name, str) and name else DEFAULT_SCHEDULER


class Marking:
    """The marking decisions over the extender's CACHE (a ``PodCache``), for an extender
    that scores with HARD_POD_AFFINITY_WEIGHT and that the schedulers SCHEDULERS (their
    names) call."""

    def __init__(self, cache, hard_pod_affinity_weight=1, schedulers=(DEFAULT_SCHEDULER,)):
        self.cache = cache
        self.kinds = ("required_anti",) + tuple(
            k for k, _sign in interpod.existing_score_kinds(hard_pod_affinity_weight))
        self.schedulers = frozenset(schedulers)

    def _record(self, pod, namespace):
        """The cache's PodRecord of POD, in NAMESPACE when the pod does not say (an
        AdmissionRequest's object may leave it to the request)."""
        meta = pod.get("metadata")
        if namespace and isinstance(meta, dict) and not meta.get("namespace"):
            pod = dict(pod, metadata=dict(meta, namespace=namespace))
        return self.cache.describe(pod)

    def needs_extender(self, pod, namespace=None):
        """Must kube-scheduler send POD (a Pod object) to the extender? Never for a pod of
        another scheduler."""
        if scheduler_of(pod) not in self.schedulers:
            return False
        return self.cache.needs_extender(self._record(pod, namespace), self.kinds)

    def warning(self, pod):
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

    def patch(self, pod, namespace=None):
        """JSON Patch operations marking POD (being created), or []."""
        if not self.needs_extender(pod, namespace):
            return []
        return patches.mark_patch(pod.get("spec"), EXTENDER_RESOURCE)

    def problem(self, request, pod, old):
        """Why the Pod REQUEST (POD, and OLD for an UPDATE, else None) must be refused to
        keep the marking true, or None."""
        namespace = request.get("namespace")
        if scheduler_of(pod) not in self.schedulers:
            return None
        new = self._record(pod, namespace)
        if new.marked:
            return None
        if old is None:
            if new.ann == (None, None):
                return None
            names = [n for n, a in zip((annotations.POD_AFFINITY,
                                        annotations.REQUIRED_DURING_EXECUTION), new.ann)
                     if a is not None]
            return ("metadata.annotations[%s]: the pod carries extended terms but not the "
                    "resource %s (the mutating webhook mutate.hwaffinity.io did not mark "
                    "it; it needs failurePolicy Fail): %s" % (names[0], EXTENDER_RESOURCE, _WHY))
        if not new.pending or not self.cache.needs_extender(new, self.kinds):
            return None
        if self.needs_extender(old, namespace):
            return None
        return ("metadata: the change makes this pending pod one the hwaffinity extender "
                "must place (its labels are now selected by another pod's extended terms, "
                "or it carries them itself), but it was created without %s and resources "
                "cannot change: %s; change it once it is scheduled, or recreate it"
                % (EXTENDER_RESOURCE, _WHY))
