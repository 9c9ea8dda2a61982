"""The agent's cgroup adapter on small fake trees (plain files in tmp_path):
layout detection and its refusals, container paths, and the Writer's
idempotence, id maps, dry run, write order and errors. The real-kernel side
is tests/controlplane/test_cgroup_runtime.py."""
import os

import pytest

from tacker_hwaffinity.agent import cgroupfs
from tacker_hwaffinity.agent.cgroupfs import (Layout, LayoutError, MapError, Vanished, Writer,
                                              WriteError, detect)

UID = "1a2b-3c4d"
CID = "f" * 64


def put(path, text=""):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- detect ---------------------------------------------------------------------------

@pytest.mark.parametrize("name,driver", [("kubepods.slice", "systemd"), ("kubepods", "cgroupfs")])
def test_detect_v1(tmp_path, name, driver):
    (tmp_path / "cpuset" / name).mkdir(parents=True)
    (tmp_path / "memory" / name).mkdir(parents=True)     # other controllers do not matter
    layout = detect(str(tmp_path))
    assert layout == Layout(str(tmp_path), 1, driver, str(tmp_path / "cpuset" / name))
    assert layout.describe() == "cgroup v1 cpuset, %s driver, at %s/cpuset/%s" % (
        driver, tmp_path, name)


@pytest.mark.parametrize("name,driver", [("kubepods.slice", "systemd"), ("kubepods", "cgroupfs")])
def test_detect_v2(tmp_path, name, driver):
    put(tmp_path / "cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n")
    (tmp_path / name).mkdir()
    layout = detect(str(tmp_path))
    assert layout == Layout(str(tmp_path), 2, driver, str(tmp_path / name))
    assert layout.describe() == "cgroup v2 cpuset, %s driver, at %s/%s" % (driver, tmp_path, name)


def refusal(root):
    with pytest.raises(LayoutError) as info:
        detect(str(root))
    msg = str(info.value)
    assert "\n" not in msg and msg.count(". ") == 0, "one sentence: %r" % msg
    return msg


def test_refuses_a_tree_without_kubepods(tmp_path):
    assert "no such directory" in refusal(tmp_path / "missing")
    assert "an empty directory" in refusal(tmp_path)
    for name in ("cpu", "cpuset", "memory", "unified"):      # this machine's shape
        (tmp_path / name).mkdir()
    assert "found only cpu, cpuset, memory, unified" in refusal(tmp_path)


def test_refuses_both_drivers(tmp_path):
    (tmp_path / "cpuset" / "kubepods.slice").mkdir(parents=True)
    (tmp_path / "cpuset" / "kubepods").mkdir()
    assert "found both cpuset/kubepods.slice and cpuset/kubepods" in refusal(tmp_path)


def test_refuses_v1_and_v2_at_once(tmp_path):
    (tmp_path / "cpuset" / "kubepods").mkdir(parents=True)
    put(tmp_path / "cgroup.controllers", "cpuset\n")
    (tmp_path / "kubepods.slice").mkdir()
    assert "found both cpuset/kubepods and kubepods.slice (cgroup v2)" in refusal(tmp_path)


def test_refuses_v2_without_cpuset(tmp_path):
    put(tmp_path / "cgroup.controllers", "cpu memory\n")
    (tmp_path / "kubepods.slice").mkdir()
    assert "no cpuset controller (cgroup.controllers: cpu memory)" in refusal(tmp_path)
    put(tmp_path / "cgroup.controllers", "")
    assert "(cgroup.controllers: empty)" in refusal(tmp_path)


def test_check_writable_names_the_file(tmp_path, monkeypatch):
    base = tmp_path / "cpuset" / "kubepods"
    base.mkdir(parents=True)
    layout = detect(str(tmp_path))
    with pytest.raises(LayoutError, match="%s does not exist" % (base / "cpuset.cpus")):
        layout.check_writable()
    put(base / "cpuset.cpus", "0-1\n")
    layout.check_writable()
    # root may write any plain file, so stand in for a read-only cpuset.cpus
    monkeypatch.setattr(cgroupfs.os, "access", lambda path, mode: False)
    with pytest.raises(LayoutError, match="%s is not writable" % (base / "cpuset.cpus")):
        layout.check_writable()


def test_check_writable_v2_hints_at_subtree_control(tmp_path):
    put(tmp_path / "cgroup.controllers", "cpuset\n")
    (tmp_path / "kubepods.slice").mkdir()
    with pytest.raises(LayoutError, match="cgroup.subtree_control"):
        detect(str(tmp_path)).check_writable()


# --- container_dir --------------------------------------------------------------------

SYSTEMD_POD = {
    "Guaranteed": "kubepods.slice/kubepods-pod1a2b_3c4d.slice",
    "Burstable": "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b_3c4d.slice",
    "BestEffort": "kubepods.slice/kubepods-besteffort.slice/"
                  "kubepods-besteffort-pod1a2b_3c4d.slice"}
CGROUPFS_POD = {"Guaranteed": "kubepods/pod1a2b-3c4d",
                "Burstable": "kubepods/burstable/pod1a2b-3c4d",
                "BestEffort": "kubepods/besteffort/pod1a2b-3c4d"}
LEAF = {("systemd", "containerd"): "cri-containerd-%s.scope" % CID,
        ("systemd", "cri-o"): "crio-%s.scope" % CID,
        ("cgroupfs", "containerd"): CID,
        ("cgroupfs", "cri-o"): "crio-" + CID}


@pytest.mark.parametrize("runtime", ["containerd", "cri-o"])
@pytest.mark.parametrize("driver", ["systemd", "cgroupfs"])
@pytest.mark.parametrize("qos", ["Guaranteed", "Burstable", "BestEffort"])
def test_container_dir(qos, driver, runtime):
    pod = (SYSTEMD_POD if driver == "systemd" else CGROUPFS_POD)[qos]
    expected = "/sys/fs/cgroup/cpuset/%s/%s" % (pod, LEAF[driver, runtime])
    base = "/sys/fs/cgroup/cpuset/" + pod.split("/")[0]
    layout = Layout("/sys/fs/cgroup", 1, driver, base)
    assert layout.container_dir(UID, qos, CID, runtime) == expected
    # the containerStatuses form carries the runtime as its prefix
    assert layout.container_dir(UID, qos, "%s://%s" % (runtime, CID)) == expected
    v2 = Layout("/sys/fs/cgroup", 2, driver, "/sys/fs/cgroup/" + pod.split("/")[0])
    assert v2.container_dir(UID, qos, CID, runtime) == expected.replace("/cpuset/", "/", 1)


@pytest.mark.parametrize("args,match", [
    ((UID, "Guaranteed", CID, "docker"), "unsupported container runtime"),
    ((UID, "guaranteed", CID), "unknown QoS class"),
    (("../x", "Guaranteed", CID), "pod UID"),
    ((UID, "Guaranteed", "a/b"), "container ID"),
    ((UID, "Guaranteed", ""), "container ID"),
])
def test_container_dir_refuses_bad_input(args, match):
    layout = Layout("/sys/fs/cgroup", 1, "systemd", "/sys/fs/cgroup/cpuset/kubepods.slice")
    with pytest.raises(ValueError, match=match):
        layout.container_dir(*args)


# --- Writer ---------------------------------------------------------------------------

def v1_tree(tmp_path, qos="Burstable", cpus="0-3", mems="0-1"):
    """A v1 systemd tree of plain files; returns (layout, container dir)."""
    root = tmp_path / "cg"
    (root / "cpuset" / "kubepods.slice").mkdir(parents=True)
    layout = detect(str(root))
    path = layout.container_dir(UID, qos, CID)
    level = path
    while True:
        put_cpuset(level, cpus, mems)
        if level == layout.base:
            return layout, path
        level = os.path.dirname(level)


def put_cpuset(path, cpus, mems, cpus_file="cpuset.cpus", mems_file="cpuset.mems"):
    os.makedirs(path, exist_ok=True)
    for name, value in ((cpus_file, cpus), (mems_file, mems)):
        with open(os.path.join(path, name), "w") as f:
            f.write(value + "\n")


def content(path, name="cpuset.cpus"):
    with open(os.path.join(path, name)) as f:
        return f.read()


def test_apply_writes_then_is_idempotent(tmp_path):
    layout, path = v1_tree(tmp_path)
    w = Writer(layout)
    assert w.read(path) == ({0, 1, 2, 3}, {0, 1})
    done = w.apply(path, {1, 2}, {0})
    assert done.changed and done.before == ({0, 1, 2, 3}, {0, 1})
    assert done.after == ({1, 2}, {0})
    assert done.writes == ((path + "/cpuset.mems", "0"), (path + "/cpuset.cpus", "1-2"))
    assert content(path) == "1-2\n" and content(path, "cpuset.mems") == "0\n"
    again = w.apply(path, [2, 1], [0])
    assert again == (False, ({1, 2}, {0}), ({1, 2}, {0}), ())
    # only the file that differs is written
    assert w.apply(path, {3}, {0}).writes == ((path + "/cpuset.cpus", "3"),)


def test_apply_grows_the_levels_above_first(tmp_path):
    layout, path = v1_tree(tmp_path)
    pod, qos = os.path.dirname(path), os.path.dirname(os.path.dirname(path))
    put_cpuset(pod, "0", "0")
    put_cpuset(path, "0", "0")
    done = Writer(layout).apply(path, {2}, {1})
    # the QoS level already holds 2 and node 1; the pod grows to old | new, top-down,
    # before the container gets the target; nothing above is shrunk
    assert done.writes == ((pod + "/cpuset.mems", "0-1"), (pod + "/cpuset.cpus", "0,2"),
                           (path + "/cpuset.mems", "1"), (path + "/cpuset.cpus", "2"))
    assert content(qos) == "0-3\n" and content(layout.base) == "0-3\n"
    assert done.after == ({2}, {1})


def test_apply_maps_recorded_ids_to_real_ones(tmp_path):
    layout, path = v1_tree(tmp_path)
    w = Writer(layout, cpu_map={16: 0, 17: 1, 40: 3}, mem_map={2: 0, 3: 1})
    assert w.apply(path, {16, 17, 40}, {3}).after == ({0, 1, 3}, {1})
    assert content(path) == "0-1,3\n"
    with pytest.raises(MapError, match="CPU 18 not in cpu_map") as info:
        w.apply(path, {17, 18}, {3})
    assert isinstance(info.value, ValueError)
    with pytest.raises(MapError, match="memory node 0 not in mem_map"):
        w.apply(path, {16}, {0})
    assert content(path) == "0-1,3\n"


def test_apply_refuses_an_empty_set(tmp_path):
    layout, path = v1_tree(tmp_path)
    with pytest.raises(ValueError, match="empty CPU set"):
        Writer(layout).apply(path, set(), {0})


def test_dry_run_returns_the_writes_and_writes_nothing(tmp_path):
    layout, path = v1_tree(tmp_path)
    put_cpuset(os.path.dirname(path), "0", "0")
    done = Writer(layout, cpu_map={7: 1}, dry_run=True).apply(path, {7}, {0})
    assert done.changed and done.after == ({1}, {0})
    assert done.writes == ((os.path.dirname(path) + "/cpuset.cpus", "0-1"),
                           (path + "/cpuset.mems", "0"), (path + "/cpuset.cpus", "1"))
    assert content(path) == "0-3\n" and content(os.path.dirname(path)) == "0\n"


def test_vanished_directory(tmp_path):
    layout, path = v1_tree(tmp_path)
    gone = os.path.join(os.path.dirname(path), "cri-containerd-%s.scope" % ("0" * 64))
    w = Writer(layout)
    for call in (lambda: w.read(gone), lambda: w.apply(gone, {0}, {0})):
        with pytest.raises(Vanished) as info:
            call()
        assert info.value.path == gone and gone in str(info.value)
    # the whole pod gone: still the container that vanished
    with pytest.raises(Vanished) as info:
        Writer(layout).apply(gone.replace("pod1a2b", "pod9a9b"), {0}, {0})
    assert "pod9a9b" in info.value.path


def test_missing_file_in_a_live_directory_is_a_write_error(tmp_path):
    layout, path = v1_tree(tmp_path)
    os.unlink(os.path.join(path, "cpuset.mems"))
    with pytest.raises(WriteError, match="cannot read .*cpuset.mems: ENOENT") as info:
        Writer(layout).apply(path, {0}, {0})
    assert info.value.errno_name == "ENOENT" and info.value.value is None


def test_read_back_mismatch(tmp_path):
    layout, path = v1_tree(tmp_path)
    cpus = os.path.join(path, "cpuset.cpus")
    os.unlink(cpus)
    os.symlink("/dev/null", cpus)          # takes any write, always reads back ""
    with pytest.raises(WriteError) as info:
        Writer(layout).apply(path, {1}, {0})
    err = info.value
    assert (err.path, err.value, err.errno_name, err.readback) == (cpus, "1", None, "")
    assert str(err) == "wrote '1' to %s but it reads back ''" % cpus


def test_unparsable_content(tmp_path):
    layout, path = v1_tree(tmp_path)
    put_cpuset(path, "zero", "0")
    with pytest.raises(WriteError, match="reads 'zero', which is not a kernel list"):
        Writer(layout).read(path)


def v2_tree(tmp_path, cpus="0-3", mems="0-1"):
    root = tmp_path / "cg2"
    put(root / "cgroup.controllers", "cpuset cpu memory\n")
    (root / "kubepods").mkdir()
    layout = detect(str(root))
    path = layout.container_dir(UID, "Guaranteed", CID)
    for level in (os.path.dirname(path), path):
        put_cpuset(level, "", "")
        put_cpuset(level, cpus, mems, "cpuset.cpus.effective", "cpuset.mems.effective")
    return layout, path


def test_v2_reads_effective_and_writes_requested(tmp_path):
    layout, path = v2_tree(tmp_path)
    w = Writer(layout)
    assert w.read(path) == ({0, 1, 2, 3}, {0, 1})
    # no level is grown on v2 (the kernel does not check writes against the parent);
    # a plain file's effective set never follows, as a parent that lacks the CPU would do
    with pytest.raises(WriteError) as info:
        w.apply(path, {1}, {0, 1})
    assert info.value.readback == "0-3" and content(path) == "1\n"
    assert content(os.path.dirname(path)) == "\n"
    put_cpuset(path, "1", "0-1", "cpuset.cpus.effective", "cpuset.mems.effective")
    assert not w.apply(path, {1}, {0, 1}).changed


def test_write_errno_is_named(tmp_path):
    layout, path = v2_tree(tmp_path)
    cpus = os.path.join(path, "cpuset.cpus")
    os.unlink(cpus)
    os.mkdir(cpus)                          # open(O_WRONLY) on a directory: EISDIR
    with pytest.raises(WriteError) as info:
        Writer(layout).apply(path, {2}, {0, 1})
    err = info.value
    assert (err.path, err.value, err.errno_name) == (cpus, "2", "EISDIR")
    assert str(err) == "cannot write '2' to %s: EISDIR (Is a directory)" % cpus
