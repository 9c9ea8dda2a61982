"""Pod (anti-)affinity terms: parsed once (``RawTerm``), resolved per pod (``AffinityTerm``).

Resolution does what happens before kube-scheduler sees a term: the owning
pod's namespace when neither ``namespaces`` nor ``namespaceSelector`` is
given, and the API server's ``matchLabelKeys``/``mismatchLabelKeys`` merge.
"""
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, cast

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects.validation import qualified_name_error
from tacker_hwaffinity.scheduling import selectors

_TERM_FIELDS = {"labelSelector", "namespaces", "topologyKey", "namespaceSelector",
                "matchLabelKeys", "mismatchLabelKeys"}
# The namespace labels to match a resolved term with (its namespaceSelector selects
# nothing or everything, see ``ClusterState.resolve_namespaces``): they are not read.
NO_LABELS: Mapping[str, str] = {}


def _selector(raw: object, field: str) -> selectors.LabelSelector:
    try:
        return selectors.parse_label_selector(raw, field)
    except selectors.SelectorError as e:
        raise InputError(e.message, field=e.field)


def parse_namespace_selector(raw: object, field: str) -> selectors.LabelSelector:
    """RAW, a term's ``namespaceSelector`` at FIELD, parsed: InputError naming the field
    where it is malformed, Gt/Lt included (not supported there)."""
    selector = _selector(raw, field)
    if selector.uses_extension():
        raise InputError("Gt/Lt are not supported in namespaceSelector", field=field)
    return selector


def _string_list(raw: object, field: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise InputError("expected a list of strings", field=field)
    return tuple(raw)


def parse_topology_key(raw: Mapping[str, Any], field: str) -> str:
    """RAW's ``topologyKey``: non-empty and a qualified name."""
    tk = raw.get("topologyKey")
    err = "must be non-empty" if tk in (None, "") else qualified_name_error(tk)
    if err:
        raise InputError("invalid topologyKey %r: %s" % (tk, err), field=field + ".topologyKey")
    return cast(str, tk)    # qualified_name_error refuses anything but a string


def parse_label_keys(raw: object, field: str) -> tuple[str, ...]:
    """A ``matchLabelKeys``/``mismatchLabelKeys`` list: label keys."""
    keys = _string_list(raw, field)
    for i, k in enumerate(keys):
        err = qualified_name_error(k)
        if err:
            raise InputError("invalid label key %r: %s" % (k, err), field="%s[%d]" % (field, i))
    return keys


def merge_label_keys(selector: selectors.LabelSelector, labels: Mapping[str, str],
                     merges: Iterable[tuple[str, Sequence[str]]], created: bool,
                     field: str) -> selectors.LabelSelector:
    """The API server's merge of label keys into SELECTOR for a pod with LABELS: MERGES
    is ((operator, keys), ...), ``In`` for matchLabelKeys and ``NotIn`` for
    mismatchLabelKeys; each key the pod has a label for adds ``key op (value)``.
    CREATED: the pod was read back from a cluster, merged already (nothing is added
    twice); otherwise a matchLabelKeys key that the selector uses already is the API
    server's error, named at FIELD (where matchLabelKeys sit)."""
    existing = {r.key for r in selector.requirements}
    have = {r.signature() for r in selector.requirements}
    reqs = list(selector.requirements)
    for op, keys in merges:
        for k in keys:
            if not created and op == selectors.IN and k in existing:
                raise InputError("key %r is in both matchLabelKeys and labelSelector" % k,
                                 field=field)
            if k not in labels:
                continue
            r = selectors.Requirement(k, op, [labels[k]])
            if r.signature() not in have:
                reqs.append(r)
                have.add(r.signature())
    return selectors.LabelSelector(reqs)


class AffinityTerm:
    """A resolved term: who it selects (namespaces x labels) and its topology key."""

    __slots__ = ("selector", "namespaces", "ns_selector", "topology_key", "weight", "sig",
                 "field")

    def __init__(self, selector: selectors.LabelSelector, namespaces: Iterable[str],
                 ns_selector: selectors.LabelSelector, topology_key: str, weight: int | None,
                 field: str) -> None:
        self.selector, self.namespaces = selector, frozenset(namespaces)
        self.ns_selector, self.topology_key = ns_selector, topology_key
        self.weight, self.field = weight, field
        self.sig: Hashable = (selector.sig, tuple(sorted(self.namespaces)), ns_selector.sig,
                              topology_key)

    def matches(self, namespace: str, labels: Mapping[str, str],
                ns_labels: Mapping[str, str]) -> bool:
        """Does a pod in NAMESPACE with LABELS match (NS_LABELS: its namespace's labels)?"""
        if namespace not in self.namespaces and not self.ns_selector.matches(ns_labels):
            return False
        return self.selector.matches(labels)

    def with_namespaces(self, names: Iterable[str],
                        ns_selector: selectors.LabelSelector) -> "AffinityTerm":
        return AffinityTerm(self.selector, names, ns_selector, self.topology_key,
                            self.weight, self.field)


class RawTerm:
    """A ``PodAffinityTerm`` (or weighted term) as written in the spec."""

    __slots__ = ("selector", "namespaces", "ns_selector", "ns_selector_raw", "topology_key",
                 "weight", "match_label_keys", "mismatch_label_keys", "field")
    selector: selectors.LabelSelector
    namespaces: tuple[str, ...]
    ns_selector: selectors.LabelSelector
    ns_selector_raw: Any    # as written: None tells "not given" from an empty selector
    topology_key: str
    weight: int | None
    match_label_keys: tuple[str, ...]
    mismatch_label_keys: tuple[str, ...]
    field: str

    @classmethod
    def parse(cls, raw: object, field: str, weighted: bool) -> "RawTerm":
        self = cls()
        if not isinstance(raw, dict):
            raise InputError("expected a mapping", field=field)
        self.weight = None
        if weighted:
            unknown = set(raw) - {"weight", "podAffinityTerm"}
            if unknown:
                raise InputError("unknown field(s) %s" % ", ".join(sorted(map(str, unknown))),
                                 field=field)
            w = raw.get("weight")
            if not isinstance(w, int) or isinstance(w, bool) or not 1 <= w <= 100:
                raise InputError("weight must be an integer in 1..100, got %r" % (w,),
                                 field=field + ".weight")
            self.weight = w
            field = field + ".podAffinityTerm"
            raw = raw.get("podAffinityTerm")
            if not isinstance(raw, dict):
                raise InputError("expected a pod affinity term (a mapping)", field=field)
        unknown = set(raw) - _TERM_FIELDS
        if unknown:
            raise InputError("unknown field(s) %s" % ", ".join(sorted(map(str, unknown))),
                             field=field)
        self.field = field
        self.topology_key = parse_topology_key(raw, field)
        self.selector = _selector(raw.get("labelSelector"), field + ".labelSelector")
        self.namespaces = _string_list(raw.get("namespaces"), field + ".namespaces")
        self.ns_selector_raw = raw.get("namespaceSelector")
        self.ns_selector = parse_namespace_selector(self.ns_selector_raw,
                                                    field + ".namespaceSelector")
        self.match_label_keys = parse_label_keys(raw.get("matchLabelKeys"),
                                                 field + ".matchLabelKeys")
        self.mismatch_label_keys = parse_label_keys(raw.get("mismatchLabelKeys"),
                                                    field + ".mismatchLabelKeys")
        both = set(self.match_label_keys) & set(self.mismatch_label_keys)
        if both:
            raise InputError("%s listed in both matchLabelKeys and mismatchLabelKeys"
                             % ", ".join(sorted(both)), field=field + ".mismatchLabelKeys")
        return self

    def uses_extension(self) -> bool:
        return self.selector.uses_extension()

    def resolve(self, namespace: str, labels: Mapping[str, str], created: bool) -> AffinityTerm:
        """The term of a pod in NAMESPACE with LABELS.

        CREATED: the pod came from a live cluster, where the API server has
        already merged matchLabelKeys into the selector (merging again adds
        nothing). Otherwise the merge is done here, with the API server's
        validation.
        """
        names: tuple[str, ...]
        if not self.namespaces and self.ns_selector_raw is None:
            names = (namespace,)
        else:
            names = self.namespaces
        selector = self.selector
        if not selector.nothing and (self.match_label_keys or self.mismatch_label_keys):
            selector = merge_label_keys(
                selector, labels, ((selectors.IN, self.match_label_keys),
                                   (selectors.NOT_IN, self.mismatch_label_keys)),
                created, self.field + ".matchLabelKeys")
        return AffinityTerm(selector, names, self.ns_selector, self.topology_key,
                            self.weight, self.field)
