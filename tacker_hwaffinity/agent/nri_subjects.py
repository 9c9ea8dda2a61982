"""Pods and containers as the NUMA engine sees them, built from what NRI gives: no API call.

The runtime hands the plugin the pod sandbox (name, namespace, uid, labels and
the pod's annotations as the kubelet passed them at RunPodSandbox) and the
container (its CRI name, ID and the Linux resources the kubelet computed). The
kubelet's resources carry the requests back, exactly:

* QoS class: the pod's cgroup parent, named by the kubelet under both drivers
  (``/kubepods/besteffort/pod<uid>``, ``kubepods-burstable-pod<uid>.slice``; the pod
  level with neither word, ``/kubepods/pod<uid>``: Guaranteed);
* CPU request: ``cpu.shares`` = milli * 1024 / 1000 (integer division, at least 2),
  so the request is the smallest milli-CPU giving those shares (a BestEffort
  container's 2 shares mean none);
* CPU limit: ``cpu.quota`` * 1000 / ``cpu.period``;
* memory: ``memory.limit``; a request is not passed to the runtime, so it is the
  limit for a Guaranteed pod (where they are equal) and 0 otherwise.

The ``hwaffinity.io/numa`` annotation a sandbox carries was written by the pod's
creator, not by the agent (the agent records after the sandbox exists), so it is
dropped here: in NRI mode the agent's own checkpoint is the record.
"""
from tacker_hwaffinity.constants import NUMA_ANNOTATION
from tacker_hwaffinity.numa.subjects import Container, Pod
from tacker_hwaffinity.objects import qos as qosmod


def qos_class(sandbox):
    parent = ((sandbox.get("linux") or {}).get("cgroup_parent") or "").lower()
    if "besteffort" in parent:
        return qosmod.BEST_EFFORT
    if "burstable" in parent:
        return qosmod.BURSTABLE
    last = parent.rstrip("/").rsplit("/", 1)[-1]
    if last.startswith("pod") or "-pod" in last:       # the pod level right under kubepods
        return qosmod.GUARANTEED
    return qosmod.BURSTABLE if parent else qosmod.BEST_EFFORT


def pod(sandbox, record=None):
    """A numa.subjects.Pod of the NRI PodSandbox SANDBOX, its annotation record RECORD
    (the agent's checkpoint for that pod, or None)."""
    annotations = dict(sandbox.get("annotations") or {})
    annotations.pop(NUMA_ANNOTATION, None)      # the creator's text: never a record here
    if record is not None:
        annotations[NUMA_ANNOTATION] = record
    return Pod(sandbox.get("name") or sandbox.get("id", "?"),
                  sandbox.get("namespace") or "default",
                  sandbox.get("uid") or sandbox.get("id"), qos_class(sandbox),
                  labels=sandbox.get("labels"), annotations=annotations,
                  source="nri sandbox %s" % sandbox.get("id", "?"))


def shares_to_milli(shares):
    """The CPU request (milli-CPU) the kubelet turned into SHARES."""
    if shares <= 2:
        return 0
    return -(-shares * 1000 // 1024)


def container(pod_subject, msg, runtime="containerd", resources=None):
    """A numa.subjects.Container of the NRI Container MSG in POD_SUBJECT (not added to
    it). RESOURCES: LinuxResources to read instead of the container's (an update)."""
    res = resources if resources is not None else \
        ((msg.get("linux") or {}).get("resources") or {})
    cpu, memory = res.get("cpu") or {}, res.get("memory") or {}
    shares = (cpu.get("shares") or {}).get("value", 0)
    quota = (cpu.get("quota") or {}).get("value", 0)
    period = (cpu.get("period") or {}).get("value", 0)
    limit = quota * 1000 // period if quota > 0 and period > 0 else 0
    mem_limit = max(0, (memory.get("limit") or {}).get("value", 0))
    request = shares_to_milli(shares)
    if pod_subject.qosclass == qosmod.BEST_EFFORT:
        request = limit = 0
    guaranteed = pod_subject.qosclass == qosmod.GUARANTEED
    return Container(pod_subject, msg.get("name") or msg.get("id", "?"), cid=msg.get("id"),
                     cpu_request=limit if guaranteed and limit else request,
                     cpu_limit=limit, mem_request=mem_limit if guaranteed else 0,
                     mem_limit=mem_limit, runtime=runtime)
