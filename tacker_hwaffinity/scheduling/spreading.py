"""Pod topology spread constraints: parsed and validated once per template, resolved per pod.

Validation is the API server's (``ValidateTopologySpreadConstraints``) and the
``PodTopologySpreadArgs`` checks of kube-scheduler's configuration. Resolution
is what happens before kube-scheduler reads a constraint: ``matchLabelKeys``
merged into the selector as ``key In (value)`` for each key the pod has a
label for (the API server's merge, as for affinity terms), and the defaults
``minDomains: 1``, ``nodeAffinityPolicy: Honor``, ``nodeTaintsPolicy: Ignore``.
"""
from collections.abc import Mapping
from typing import Any

from tacker_hwaffinity.constants import HOSTNAME
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling import selectors
from tacker_hwaffinity.scheduling.terms import (
    merge_label_keys, parse_label_keys, parse_topology_key)

DO_NOT_SCHEDULE, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"
HONOR, IGNORE = "Honor", "Ignore"
ZONE = "topology.kubernetes.io/zone"
_FIELDS = {"maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector", "minDomains",
           "nodeAffinityPolicy", "nodeTaintsPolicy", "matchLabelKeys"}


def _positive_int(raw: Mapping[str, Any], name: str, field: str) -> int:
    v: object = raw.get(name)
    if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
        raise InputError("must be greater than zero, got %r" % (v,), field="%s.%s" % (field, name))
    return v


def _choice(raw: Mapping[str, Any], name: str, allowed: tuple[str, ...], field: str,
            default: str | None = None) -> str:
    v: str = raw.get(name, default)    # one of ALLOWED once the check below passes
    if v not in allowed:
        raise InputError("unsupported value %r: expected %s" % (v, " or ".join(allowed)),
                         field="%s.%s" % (field, name))
    return v


class Constraint:
    """A resolved constraint, as kube-scheduler's internal topologySpreadConstraint."""

    __slots__ = ("max_skew", "topology_key", "selector", "min_domains", "affinity_policy",
                 "taints_policy", "action")

    def __init__(self, max_skew: int, topology_key: str, selector: selectors.LabelSelector,
                 min_domains: int, affinity_policy: str, taints_policy: str,
                 action: str) -> None:
        self.max_skew, self.topology_key, self.selector = max_skew, topology_key, selector
        self.min_domains = min_domains
        self.affinity_policy, self.taints_policy = affinity_policy, taints_policy
        self.action = action

    def with_selector(self, selector: selectors.LabelSelector) -> "Constraint":
        return Constraint(self.max_skew, self.topology_key, selector, self.min_domains,
                          self.affinity_policy, self.taints_policy, self.action)


class RawConstraint:
    """One ``topologySpreadConstraints`` item as written."""

    __slots__ = ("max_skew", "topology_key", "action", "selector", "min_domains",
                 "affinity_policy", "taints_policy", "match_label_keys", "field")
    max_skew: int
    topology_key: str
    action: str
    selector: selectors.LabelSelector
    min_domains: int
    affinity_policy: str
    taints_policy: str
    match_label_keys: tuple[str, ...]
    field: str

    @classmethod
    def parse(cls, raw: object, field: str, default: bool = False) -> "RawConstraint":
        """DEFAULT: an item of PodTopologySpreadArgs.defaultConstraints (no selector)."""
        self = cls()
        if not isinstance(raw, dict):
            raise InputError("expected a mapping", field=field)
        unknown = set(raw) - _FIELDS
        if unknown:
            raise InputError("unknown field(s) %s" % ", ".join(sorted(map(str, unknown))),
                             field=field)
        self.field = field
        self.max_skew = _positive_int(raw, "maxSkew", field)
        self.topology_key = parse_topology_key(raw, field)
        self.action = _choice(raw, "whenUnsatisfiable", (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY), field)
        self.min_domains = 1
        if raw.get("minDomains") is not None:
            self.min_domains = _positive_int(raw, "minDomains", field)
            if self.action != DO_NOT_SCHEDULE:
                raise InputError("can only use minDomains if whenUnsatisfiable=DoNotSchedule",
                                 field=field + ".minDomains")
        self.affinity_policy = _choice(raw, "nodeAffinityPolicy", (HONOR, IGNORE), field, HONOR)
        self.taints_policy = _choice(raw, "nodeTaintsPolicy", (HONOR, IGNORE), field, IGNORE)
        sel_raw = raw.get("labelSelector")
        if default and sel_raw is not None:
            raise InputError("constraint must not define a selector, as they deduced for "
                             "each pod", field=field + ".labelSelector")
        try:
            self.selector = selectors.parse_label_selector(sel_raw, field + ".labelSelector")
        except selectors.SelectorError as e:
            raise InputError(e.message, field=e.field)
        if self.selector.uses_extension():
            raise InputError("Gt/Lt are not supported in a topology spread constraint's "
                             "labelSelector", field=field + ".labelSelector")
        self.match_label_keys = parse_label_keys(raw.get("matchLabelKeys"),
                                                 field + ".matchLabelKeys")
        if self.match_label_keys and sel_raw is None and not default:
            raise InputError("must not be specified when labelSelector is not set",
                             field=field + ".matchLabelKeys")
        return self

    def resolve(self, labels: Mapping[str, str], created: bool) -> Constraint:
        """The constraint of a pod with LABELS (CREATED: read back from a cluster, where
        the API server has merged matchLabelKeys already)."""
        selector = self.selector
        if self.match_label_keys and not selector.nothing:   # (defaults get theirs later)
            selector = merge_label_keys(selector, labels,
                                        ((selectors.IN, self.match_label_keys),), created,
                                        self.field + ".matchLabelKeys")
        return Constraint(self.max_skew, self.topology_key, selector, self.min_domains,
                          self.affinity_policy, self.taints_policy, self.action)


def parse_constraints(raw: object, field: str,
                      default: bool = False) -> tuple[RawConstraint, ...]:
    """A list of constraints, with the duplicate {topologyKey, whenUnsatisfiable} check."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InputError("expected a list", field=field)
    out: list[RawConstraint] = []
    seen: set[tuple[str, str]] = set()
    for i, item in enumerate(raw):
        c = RawConstraint.parse(item, "%s[%d]" % (field, i), default)
        pair = (c.topology_key, c.action)
        if pair in seen:
            raise InputError("duplicate value {%s, %s}" % pair, field="%s[%d]" % (field, i))
        seen.add(pair)
        out.append(c)
    return tuple(out)


# kube-scheduler's system default constraints (PodTopologySpreadArgs defaultingType System)
SYSTEM_DEFAULTS = (
    RawConstraint.parse({"maxSkew": 3, "topologyKey": HOSTNAME,
                         "whenUnsatisfiable": SCHEDULE_ANYWAY}, "systemDefaults[0]", True),
    RawConstraint.parse({"maxSkew": 5, "topologyKey": ZONE,
                         "whenUnsatisfiable": SCHEDULE_ANYWAY}, "systemDefaults[1]", True),
)
