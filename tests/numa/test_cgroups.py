"""Container cgroup directories (kubelet layout)."""
import pytest

from tacker_hwaffinity.numa.cgroups import container_cgroup_dir
from tacker_hwaffinity.numa.subjects import Pod, pod_from_object


def ctr(qos, runtime, uid="1a2b-3c", cid="abc"):
    pod = Pod("p", uid=uid, qosclass=qos)
    return pod.add_container("c", cid=cid, runtime=runtime)


@pytest.mark.parametrize("qos,runtime,driver,expected", [
    ("Guaranteed", "containerd", "systemd",
     "kubepods.slice/kubepods-pod1a2b_3c.slice/cri-containerd-abc.scope"),
    ("Burstable", "containerd", "systemd",
     "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b_3c.slice/"
     "cri-containerd-abc.scope"),
    ("BestEffort", "cri-o", "systemd",
     "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1a2b_3c.slice/"
     "crio-abc.scope"),
    ("Guaranteed", "containerd", "cgroupfs", "kubepods/pod1a2b-3c/abc"),
    ("Burstable", "cri-o", "cgroupfs", "kubepods/burstable/pod1a2b-3c/crio-abc"),
])
def test_paths(qos, runtime, driver, expected):
    assert container_cgroup_dir(ctr(qos, runtime), driver) == expected


def test_unknown_ids_give_none_and_bad_driver_raises():
    assert container_cgroup_dir(ctr("Guaranteed", "containerd", uid=None)) is None
    assert container_cgroup_dir(ctr("Guaranteed", "containerd", cid=None)) is None
    with pytest.raises(ValueError):
        container_cgroup_dir(ctr("Guaranteed", "containerd"), "bogus")


def test_runtime_from_container_id_prefix():
    pod = pod_from_object({"kind": "Pod", "metadata": {"name": "p", "uid": "u-1"},
                           "spec": {"containers": [{"name": "c"}]},
                           "status": {"qosClass": "BestEffort", "containerStatuses": [
                               {"name": "c", "containerID": "cri-o://f00"}]}})
    c = pod.containers[0]
    assert (c.id, c.runtime) == ("f00", "cri-o")
    assert container_cgroup_dir(c, "cgroupfs") == "kubepods/besteffort/podu-1/crio-f00"
