"""The two pod annotations that carry terms the API server would reject.

``hwaffinity.io/pod-affinity`` holds pod affinity the scheduler cannot express
(``Gt``/``Lt`` in ``labelSelector.matchExpressions``, the seed ``004``), in the
Kubernetes schema of ``spec.affinity``'s two pod groups::

    {"podAffinity": {
         "requiredDuringSchedulingIgnoredDuringExecution": [<PodAffinityTerm>],
         "preferredDuringSchedulingIgnoredDuringExecution": [<WeightedPodAffinityTerm>]},
     "podAntiAffinity": {...the same two lists...}}

``hwaffinity.io/required-during-execution`` holds the seeds' RequiredDuringExecution
terms (``001``, ``002``); see ``controller.rules``::

    {"podAffinity": [<PodAffinityTerm>], "podAntiAffinity": [<PodAffinityTerm>],
     "nodeAffinity": [<NodeSelectorTerm>]}

Both mean what the same terms in ``spec.affinity`` mean, and both are honoured at
scheduling time: ``plan``/``explain`` add them to the pod's required (and preferred)
terms, the scheduler extender evaluates them in a live cluster, and the mutating
webhook copies the RequiredDuringExecution terms without Gt/Lt into
``spec.affinity``. Parsing raises ``InputError`` naming the annotation and the field,
and only that: JSON nested deeper than ``objects.jsondepth.MAX_DEPTH`` and Gt/Lt numbers
past int64 are input errors too (fuzzed: tests/scheduling/test_sched_fuzz.py).
"""
import json
from collections.abc import Sequence
from typing import Any

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import jsondepth
from tacker_hwaffinity.scheduling import selectors
from tacker_hwaffinity.scheduling.terms import RawTerm

POD_AFFINITY = "hwaffinity.io/pod-affinity"
REQUIRED_DURING_EXECUTION = "hwaffinity.io/required-during-execution"
PREFIX = "hwaffinity.io/"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
# (group, list, PodSpecInfo attribute), as in spec.affinity
POD_AFFINITY_LISTS = (
    ("podAffinity", REQUIRED, "required_affinity"),
    ("podAntiAffinity", REQUIRED, "required_anti"),
    ("podAffinity", PREFERRED, "preferred_affinity"),
    ("podAntiAffinity", PREFERRED, "preferred_anti"),
)
_RDE_FIELDS = ("podAffinity", "podAntiAffinity", "nodeAffinity")


def _json_object(text: object, name: str, expected: Sequence[str]) -> dict[str, Any]:
    if not isinstance(text, str):
        raise InputError("expected a string holding JSON", field=name)
    depth = jsondepth.nesting(text.encode("utf-8", "surrogatepass"))
    if depth is not None:
        raise InputError("JSON nested %d levels deep, over the limit of %d"
                         % (depth, jsondepth.MAX_DEPTH), field=name)
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise InputError("not JSON: %s" % (str(e)[:200] or type(e).__name__), field=name)
    if not isinstance(raw, dict):
        raise InputError("expected a JSON object with %s" % ", ".join(expected), field=name)
    unknown = sorted(map(str, set(raw) - set(expected)))
    if unknown:
        raise InputError("unknown field(s) %s (expected %s)"
                         % (", ".join(unknown), ", ".join(expected)), field=name)
    return raw


def _list(raw: object, field: str) -> list[Any]:
    value = raw.get(field.rsplit(".", 1)[-1]) if isinstance(raw, dict) else None
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError("expected a list of terms", field=field)
    return value


def parse_pod_affinity(text: object, name: str = POD_AFFINITY) -> dict[str, tuple[RawTerm, ...]]:
    """{PodSpecInfo attribute: (RawTerm, ...)} from ``hwaffinity.io/pod-affinity``."""
    raw = _json_object(text, name, ("podAffinity", "podAntiAffinity"))
    out: dict[str, tuple[RawTerm, ...]] = {}
    for group, lst, attr in POD_AFFINITY_LISTS:
        gfield = "%s.%s" % (name, group)
        g = raw.get(group)
        if g is None:
            g = {}
        if not isinstance(g, dict):
            raise InputError("expected a mapping with %s and/or %s" % (REQUIRED, PREFERRED),
                             field=gfield)
        unknown = sorted(map(str, set(g) - {REQUIRED, PREFERRED}))
        if unknown:
            raise InputError("unknown field(s) %s" % ", ".join(unknown), field=gfield)
        field = "%s.%s" % (gfield, lst)
        out[attr] = tuple(RawTerm.parse(t, "%s[%d]" % (field, i), lst == PREFERRED)
                          for i, t in enumerate(_list(g, field)))
    return out


class Rules:
    """A pod's parsed RequiredDuringExecution terms."""

    __slots__ = ("affinity", "anti", "node", "node_raw")

    def __init__(self, affinity: tuple[RawTerm, ...] = (), anti: tuple[RawTerm, ...] = (),
                 node: selectors.NodeSelector | None = None,
                 node_raw: list[Any] | None = None) -> None:
        self.affinity, self.anti, self.node, self.node_raw = affinity, anti, node, node_raw

    @property
    def keys(self) -> set[str]:
        """Topology keys the pod terms read."""
        return {t.topology_key for t in self.affinity + self.anti}

    @classmethod
    def parse(cls, text: object, name: str = REQUIRED_DURING_EXECUTION) -> "Rules":
        """Rules from the annotation's value; InputError naming the field."""
        raw = _json_object(text, name, _RDE_FIELDS)
        lists = {f: _list(raw, "%s.%s" % (name, f)) for f in _RDE_FIELDS}
        terms = {f: tuple(RawTerm.parse(t, "%s.%s[%d]" % (name, f, i), False)
                          for i, t in enumerate(lists[f]))
                 for f in ("podAffinity", "podAntiAffinity")}
        node = None
        if lists["nodeAffinity"]:
            field = "%s.nodeAffinity" % name
            node = selectors.NodeSelector({"nodeSelectorTerms": lists["nodeAffinity"]}, field)
            if node.errors:
                raise InputError(node.errors[0], field=field)
        return cls(terms["podAffinity"], terms["podAntiAffinity"], node, lists["nodeAffinity"])


class SchedulingTerms:
    """What the two annotations add to a pod's scheduling: pod terms per
    PodSpecInfo attribute, and a node selector ANDed with the pod's own."""

    __slots__ = ("pod_terms", "node")

    def __init__(self, pod_terms: dict[str, tuple[RawTerm, ...]],
                 node: selectors.NodeSelector | None) -> None:
        self.pod_terms, self.node = pod_terms, node

    def __bool__(self) -> bool:
        return self.node is not None or any(self.pod_terms.values())


def scheduling_terms(annotations: object,
                     prefix: str = "metadata.annotations") -> SchedulingTerms | None:
    """SchedulingTerms from a pod's (or template's) annotations, or None when it
    carries neither annotation. InputError for a malformed one."""
    if not isinstance(annotations, dict):
        return None
    pa, rde = annotations.get(POD_AFFINITY), annotations.get(REQUIRED_DURING_EXECUTION)
    if pa is None and rde is None:
        return None
    terms: dict[str, tuple[RawTerm, ...]] = {attr: () for _g, _l, attr in POD_AFFINITY_LISTS}
    node = None
    if pa is not None:
        terms = parse_pod_affinity(pa, "%s[%s]" % (prefix, POD_AFFINITY))
    if rde is not None:
        rules = Rules.parse(rde, "%s[%s]" % (prefix, REQUIRED_DURING_EXECUTION))
        terms["required_affinity"] += rules.affinity
        terms["required_anti"] += rules.anti
        node = rules.node
    return SchedulingTerms(terms, node)


def malformed(annotations: object) -> str | None:
    """The engine's message for the first malformed ``hwaffinity.io/`` term
    annotation, or None."""
    try:
        scheduling_terms(annotations)
    except InputError as e:
        return str(e)
    return None
