"""Pod QoS class computed from container resources, as Kubernetes does it.

Follows kubelet's ``GetPodQOS`` (pkg/apis/core/v1/helper/qos): only ``cpu``
and ``memory`` count; a pod is BestEffort when no container requests or
limits either; Guaranteed when every container (init containers included)
sets both limits and the summed requests equal the summed limits; otherwise
Burstable. A limit without a request defaults the request to the limit, as
the API server does on admission.
"""
from fractions import Fraction

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects.jsontypes import ReadOnlyJson
from tacker_hwaffinity.objects.quantity import parse_quantity

GUARANTEED, BURSTABLE, BEST_EFFORT = "Guaranteed", "Burstable", "BestEffort"
QOS_CLASSES = (GUARANTEED, BURSTABLE, BEST_EFFORT)
_COMPUTE = ("cpu", "memory")


def container_resources(container: ReadOnlyJson, field: str = "spec.containers[0]"
                        ) -> tuple[dict[str, Fraction], dict[str, Fraction]]:
    """Return (requests, limits) of cpu/memory as Fractions, with API defaulting."""
    res = container.get("resources") or {}
    if not isinstance(res, dict):
        raise InputError("expected a mapping", field=field + ".resources")
    out = []
    for part in ("requests", "limits"):
        raw = res.get(part) or {}
        if not isinstance(raw, dict):
            raise InputError("expected a mapping", field="%s.resources.%s" % (field, part))
        parsed: dict[str, Fraction] = {}
        for name, q in raw.items():
            try:
                parsed[name] = parse_quantity(q)
            except ValueError as e:
                raise InputError(str(e), field="%s.resources.%s.%s" % (field, part, name))
        out.append(parsed)
    requests, limits = out
    for name, q in limits.items():
        requests.setdefault(name, q)
    return requests, limits


def pod_qos_class(pod: ReadOnlyJson, source: str | None = None) -> str:
    """The QoS class Kubernetes would give POD (a pod object mapping)."""
    spec = pod.get("spec") or {}
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    for group in ("containers", "initContainers"):
        for i, c in enumerate(spec.get(group) or []):
            if not isinstance(c, dict):
                continue
            req, lim = container_resources(c, "spec.%s[%d]" % (group, i))
            for name in _COMPUTE:
                if req.get(name, 0) > 0:
                    requests[name] = requests.get(name, Fraction(0)) + req[name]
            found = set()
            for name in _COMPUTE:
                if lim.get(name, 0) > 0:
                    found.add(name)
                    limits[name] = limits.get(name, Fraction(0)) + lim[name]
            if found != set(_COMPUTE):
                guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    if guaranteed:
        for name, q in requests.items():
            if limits.get(name) != q:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return GUARANTEED
    return BURSTABLE
