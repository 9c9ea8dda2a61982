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
"""
from tacker_hwaffinity.k8s.qos import BEST_EFFORT, BURSTABLE, GUARANTEED

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


def request_for(container, prefer_isolated=True, reserved_namespaces=("kube-system",)):
    """The placement request of CONTAINER."""
    milli = container.cpu_request
    mem = memory_to_allocate(container)
    qos = container.pod.qosclass
    if container.namespace in reserved_namespaces:
        return Request(0, milli, False, RESERVED, mem)
    if qos == BURSTABLE:
        return Request(0, milli, False, NORMAL, mem)
    if qos == BEST_EFFORT:
        return Request(0, 0, False, NORMAL, mem)
    cores, fraction = divmod(milli, 1000)
    if cores == 0:
        return Request(0, fraction, False, NORMAL, mem)
    if cores < 2:
        return Request(cores, fraction, prefer_isolated, NORMAL, mem)
    if fraction > 0:
        return Request(0, milli, False, NORMAL, mem)
    return Request(cores, 0, False, NORMAL, mem)
