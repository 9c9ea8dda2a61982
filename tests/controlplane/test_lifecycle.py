"""The harness cleans up after itself: every process it started is gone
after stop(), also when start-up fails, and secrets never outlive the run."""
import os

import pytest

from . import harness

pytestmark = pytest.mark.controlplane


def _gone(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state == "Z"   # a zombie is already dead
    except FileNotFoundError:
        return True


@pytest.fixture
def binaries(control_plane):
    # control_plane already failed/skipped when the binaries are missing
    return dict(control_plane.bin)


def test_stop_kills_every_process_and_keeps_only_logs(binaries, tmp_path):
    cp = harness.ControlPlane(binaries, run_dir=str(tmp_path / "run"))
    try:
        cp.start(timeout=60)
        cp.add_node("solo", {"CIS-node": "x"})
        pids = [c.pid for c in cp.components]
        assert len(pids) == 4 and not any(_gone(p) for p in pids)
    finally:
        cp.stop(keep_logs=True)
    assert all(_gone(p) for p in pids)
    assert not cp.kubelet.is_alive()
    assert not os.path.exists(cp.secret_dir)
    logs = sorted(os.listdir(cp.log_dir))
    assert logs == ["etcd.log", "kube-apiserver.log", "kube-controller-manager.log",
                    "kube-scheduler.log"]
    assert os.path.getsize(os.path.join(cp.log_dir, "kube-apiserver.log")) > 0


def test_failed_start_cleans_up_and_points_at_logs(binaries, tmp_path):
    broken = dict(binaries)
    # The API server binary in place of etcd: exits at once on etcd's flags.
    broken["etcd"] = binaries["kube-apiserver"]
    cp = harness.ControlPlane(broken, run_dir=str(tmp_path / "run"))
    with pytest.raises(harness.HarnessError) as exc:
        cp.start(timeout=20)
    assert "etcd" in str(exc.value) and cp.log_dir in str(exc.value)
    assert all(_gone(c.pid) for c in cp.components)
    assert not os.path.exists(cp.secret_dir)
    assert os.path.exists(os.path.join(cp.log_dir, "etcd.log"))
