"""What a container asks for: CPU shape and memory, from QoS and resources (upstream rules).

``cpuAllocationPreferences`` of the crirm topology-aware policy, with the
defaults (``PreferIsolatedCPUs`` true, no shared-CPU preference):

==================================  ==========================================
BestEffort                          0 CPU, shared
Burstable                           its request, shared
reserved namespace (kube-system)    its request, reserved class
Guaranteed, request < 1 CPU         shared fraction
Guaranteed, 1 <= request < 2        1 exclusive (isolated preferred) + fraction
Guaranteed, request >= 2, whole     exclusive CPUs
Guaranteed, request >= 2, fraction  all shared
==================================  ==========================================

The per-pod/per-container preference annotations change these as upstream
does (``prefer-isolated-cpus``, ``prefer-shared-cpus`` and
``prefer-reserved-cpus``, each ``<key>.<prefix>/container.<name>``, then
``<key>.<prefix>/pod``, then ``<key>.<prefix>``, with prefix
``cri-resource-manager.intel.com`` or ``resource-policy.nri.io``; values as
Go's ``strconv.ParseBool``). A value that is not a boolean is an error
(upstream logs it and uses the default).
"""
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects.qos import BEST_EFFORT, BURSTABLE, GUARANTEED

NORMAL, RESERVED = "normal", "reserved"


class Request:
    __slots__ = ("full", "fraction", "isolate", "cpu_type", "memory")

    def __init__(self, full=0, fraction=0, isolate=False, cpu_type=NORMAL, memory=0):
        self.full = full
        self.fraction = fraction
        self.isolate = isolate
        self.cpu_type = cpu_type
        self.memory = memory

    def to_dict(self):
        return {"exclusive": self.full, "sharedMilli": self.fraction, "isolate": self.isolate,
                "class": self.cpu_type, "memory": self.memory}


def memory_to_allocate(container):
    qos = container.pod.qosclass
    if qos == BURSTABLE:
        return container.mem_limit or container.mem_request
    if qos == GUARANTEED:
        return container.mem_request
    return 0


PREFIXES = ("cri-resource-manager.intel.com", "resource-policy.nri.io")
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def preference(container, key, default):
    """(value, explicit) of a boolean preference annotation for CONTAINER."""
    ann = container.pod.annotations
    for prefix in PREFIXES:
        base = "%s.%s" % (key, prefix)
        for k in (base + "/container." + container.name, base + "/pod", base):
            if k in ann:
                v = ann[k]
                if v in _TRUE:
                    return True, True
                if v in _FALSE:
                    return False, True
                raise InputError("expected true or false, got %r" % v, source=container.pod.source,
                                 obj="Pod " + container.pod.ref,
                                 field="metadata.annotations[%s]" % k)
    return default, False


def request_for(container, prefer_isolated=True, reserved_namespaces=("kube-system",),
                prefer_shared=False):
    """The placement request of CONTAINER (upstream cpuAllocationPreferences)."""
    milli = container.cpu_request
    mem = memory_to_allocate(container)
    qos = container.pod.qosclass
    want_reserved, explicit_reserved = preference(container, "prefer-reserved-cpus", False)
    if want_reserved or (container.namespace in reserved_namespaces and not explicit_reserved):
        return Request(0, milli, False, RESERVED, mem)
    if qos == BURSTABLE:
        return Request(0, milli, False, NORMAL, mem)
    if qos == BEST_EFFORT:
        return Request(0, 0, False, NORMAL, mem)
    cores, fraction = divmod(milli, 1000)
    isolated, explicit_iso = preference(container, "prefer-isolated-cpus", prefer_isolated)
    shared, explicit_shared = preference(container, "prefer-shared-cpus", prefer_shared)
    if cores == 0:
        return Request(0, fraction, False, NORMAL, mem)
    if cores < 2:
        if (fraction > 0 and shared) or (fraction == 0 and shared and explicit_shared):
            return Request(0, milli, False, NORMAL, mem)
        return Request(cores, fraction, isolated, NORMAL, mem)
    if fraction > 0:
        if not shared and explicit_shared:
            return Request(cores, fraction, isolated and explicit_iso, NORMAL, mem)
        return Request(0, milli, False, NORMAL, mem)
    if shared and explicit_shared:
        return Request(0, milli, False, NORMAL, mem)
    return Request(cores, 0, isolated and explicit_iso, NORMAL, mem)
