"""Arguments of the NodeResources plugins (kubescheduler.config.k8s.io/v1), validated as
kube-scheduler validates them, into constructor arguments."""
from collections.abc import Mapping, Set
from typing import Any, TypedDict

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling.plugins import noderesources

STRATEGIES = (noderesources.LEAST, noderesources.MOST, noderesources.RATIO)


class FitArgs(TypedDict, total=False):
    """NodeResourcesFit's keyword arguments, from its args (and the extenders')."""

    ignored: tuple[str, ...]
    ignored_groups: tuple[str, ...]
    strategy: str
    resources: tuple[tuple[str, int], ...]
    shape: tuple[tuple[int, int], ...]


def check_fields(raw: object, allowed: Set[str], field: str) -> dict[str, Any]:
    """RAW must be a mapping with keys among ALLOWED (the error names FIELD); returns it."""
    if not isinstance(raw, dict):
        raise InputError("expected a mapping", field=field)
    unknown = sorted(map(str, set(raw) - allowed))
    if unknown:
        raise InputError("unknown field %s (expected one of %s)"
                         % (", ".join(unknown), ", ".join(sorted(allowed))),
                         field="%s.%s" % (field, unknown[0]) if field else unknown[0])
    return raw


def _fields(raw: object, allowed: Set[str], field: str) -> dict[str, Any]:
    """check_fields, with None read as an empty mapping; returns the mapping."""
    if raw is None:
        return {}
    return check_fields(raw, allowed, field)


def _int(raw: Mapping[str, Any], name: str, lo: int, hi: int, field: str) -> int:
    v: object = raw.get(name)
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise InputError("must be an integer in the range %d-%d, got %r" % (lo, hi, v),
                         field="%s.%s" % (field, name))
    return v


def _strings(raw: object, field: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(x, str) and x for x in raw):
        raise InputError("expected a list of names", field=field)
    return tuple(raw)


def resource_specs(raw: Any, field: str,
                   default: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    """[{name, weight}] -> ((name, weight), ...); weight 0 or missing means 1."""
    if not raw:
        return default
    if not isinstance(raw, list):
        raise InputError("expected a list of {name, weight}", field=field)
    out: list[tuple[str, int]] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        f = "%s[%d]" % (field, i)
        item = _fields(item, {"name", "weight"}, f)
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise InputError("resource needs a name", field=f + ".name")
        if name in seen:
            raise InputError("duplicate resource %r" % name, field=f + ".name")
        seen.add(name)
        weight = item.get("weight") or 1
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            raise InputError("resource weight of %s not in valid range [1, 100]" % name,
                             field=f + ".weight")
        out.append((name, weight))
    return tuple(out)


def _shape(raw: object, field: str) -> tuple[tuple[int, int], ...]:
    if not isinstance(raw, list) or not raw:
        raise InputError("at least one point must be specified", field=field)
    points: list[tuple[int, int]] = []
    for i, p in enumerate(raw):
        f = "%s[%d]" % (field, i)
        p = _fields(p, {"utilization", "score"}, f)
        u = _int(p, "utilization", 0, 100, f)
        s = _int(p, "score", 0, 10, f)
        if points and u <= points[-1][0]:
            raise InputError("utilization values must be sorted in increasing order",
                             field=f + ".utilization")
        points.append((u, s))
    return tuple(points)


def fit_args(raw: object, field: str) -> FitArgs:
    """NodeResourcesFitArgs -> keyword arguments of NodeResourcesFit."""
    raw = _fields(raw, {"apiVersion", "kind", "ignoredResources", "ignoredResourceGroups",
                        "scoringStrategy"}, field)
    out: FitArgs = {"ignored": _strings(raw.get("ignoredResources"), field + ".ignoredResources"),
           "ignored_groups": _strings(raw.get("ignoredResourceGroups"),
                                      field + ".ignoredResourceGroups")}
    for i, g in enumerate(out["ignored_groups"]):
        if "/" in g:
            raise InputError("resource group name can't contain '/'",
                             field="%s.ignoredResourceGroups[%d]" % (field, i))
    sf = field + ".scoringStrategy"
    strategy = _fields(raw.get("scoringStrategy"),
                       {"type", "resources", "requestedToCapacityRatio"}, sf)
    kind = strategy.get("type") or noderesources.LEAST
    if kind not in STRATEGIES:
        raise InputError("unsupported value %r: expected one of %s" % (kind, ", ".join(STRATEGIES)),
                         field=sf + ".type")
    out["strategy"] = kind
    out["resources"] = resource_specs(strategy.get("resources"), sf + ".resources",
                                      noderesources.DEFAULT_RESOURCES)
    if kind == noderesources.RATIO:
        ratio = _fields(strategy.get("requestedToCapacityRatio"), {"shape"},
                        sf + ".requestedToCapacityRatio")
        out["shape"] = _shape(ratio.get("shape"), sf + ".requestedToCapacityRatio.shape")
    return out
