"""Where a container's cpuset lives: its cgroup directory, relative to the
cgroup v2 root (/sys/fs/cgroup) or, for v1, to the cpuset controller
(/sys/fs/cgroup/cpuset).

Kubelet's layout (reference section 6): Guaranteed pods sit directly under
``kubepods``; Burstable and BestEffort pods under a QoS level. The runtime
comes from the ``containerID`` prefix (``containerd://`` or ``cri-o://``).

=========  ==========  ==================================================================
driver     runtime     container directory
=========  ==========  ==================================================================
systemd    containerd  ``kubepods.slice/[kubepods-<qos>.slice/]kubepods[-<qos>]-pod<uid_>.slice/cri-containerd-<id>.scope``
systemd    CRI-O       same, leaf ``crio-<id>.scope``
cgroupfs   containerd  ``kubepods/[<qos>/]pod<uid>/<id>``
cgroupfs   CRI-O       ``kubepods/[<qos>/]pod<uid>/crio-<id>``
=========  ==========  ==================================================================

``<uid_>`` is the pod UID with ``-`` replaced by ``_``. The placement is
applied by writing ``cpuset.cpus`` and ``cpuset.mems`` there (or, better,
through CRI ``UpdateContainerResources``); this module only computes paths.
"""
DRIVERS = ("systemd", "cgroupfs")
_QOS_DIR = {"Guaranteed": "", "Burstable": "burstable", "BestEffort": "besteffort"}


def container_cgroup_dir(container, driver="systemd"):
    """The container's cgroup directory relative to the cgroup root, or None
    when the pod UID or the container ID is unknown."""
    pod = container.pod
    if not pod.uid or not container.id:
        return None
    return cgroup_path(pod.uid, pod.qosclass, container.id,
                       getattr(container, "runtime", None), driver)


def cgroup_path(pod_uid: str, qosclass: str, container_id: str, runtime: str | None = None,
                driver: str = "systemd") -> str:
    """The same path from plain values (the node agent has no subjects): a bare
    container ID; RUNTIME "cri-o" or anything else (containerd naming)."""
    qos = _QOS_DIR.get(qosclass, "")
    runtime = runtime or "containerd"
    cid = container_id
    if driver == "systemd":
        uid = pod_uid.replace("-", "_")
        parts = ["kubepods.slice"]
        if qos:
            parts.append("kubepods-%s.slice" % qos)
            parts.append("kubepods-%s-pod%s.slice" % (qos, uid))
        else:
            parts.append("kubepods-pod%s.slice" % uid)
        parts.append(("crio-%s.scope" if runtime == "cri-o" else "cri-containerd-%s.scope") % cid)
    elif driver == "cgroupfs":
        parts = ["kubepods"] + ([qos] if qos else []) + ["pod" + pod_uid]
        parts.append("crio-" + cid if runtime == "cri-o" else cid)
    else:
        raise ValueError("unknown cgroup driver %r (expected %s)" % (driver, ", ".join(DRIVERS)))
    return "/".join(parts)
