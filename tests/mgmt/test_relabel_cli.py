"""``hwaffinity relabel`` end to end: OpenStack credentials from OS_*
variables (Keystone, Heat and Nova replayed from captured answers), the real
control plane through a kubeconfig, --dry-run, then the real change."""
import json

import pytest

from mgmt import openstack_replay as replay
from tacker_hwaffinity.cli.main import main
from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL

pytestmark = pytest.mark.controlplane


@pytest.fixture
def migrated(control_plane, monkeypatch):
    """Three workers whose nodes carry stale host labels (after live migration)."""
    resources, servers, stack_id = replay.scaled(3, hosts=["c-a", "c-b", "c-c"])
    names = []
    for i in range(3):
        name = "relabel-%d" % i
        control_plane.add_node(name, {DEFAULT_HOST_LABEL: "stale"},
                               address=replay.worker_address(i), wait=False)
        names.append(name)
    with replay.ReplayCloud(resources, servers, stack_id) as cloud:
        access = cloud.access()
        monkeypatch.delenv("OS_CLOUD", raising=False)
        for var, key in (("OS_AUTH_URL", "auth_url"), ("OS_USERNAME", "username"),
                         ("OS_PASSWORD", "password"), ("OS_PROJECT_NAME", "project_name")):
            monkeypatch.setenv(var, access[key])
        yield stack_id, names
    for name in names:
        control_plane.delete_node(name)


def _labels(cp, names):
    return [cp.admin.get("/api/v1/nodes/" + n)["metadata"]["labels"][DEFAULT_HOST_LABEL]
            for n in names]


def test_dry_run_shows_the_changes_and_applies_nothing(migrated, control_plane, capsys):
    stack_id, names = migrated
    rc = main(["relabel", "--stack", stack_id, "--worker-aspect", "worker_instance",
               "--kubeconfig", control_plane.kubeconfig, "--dry-run", "-o", "json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["dryRun"] is True
    assert out["changes"] == {n: {DEFAULT_HOST_LABEL: h}
                              for n, h in zip(names, ["c-a", "c-b", "c-c"])}
    assert _labels(control_plane, names) == ["stale"] * 3


def test_relabel_fixes_stale_labels_and_is_idempotent(migrated, control_plane, capsys):
    stack_id, names = migrated
    argv = ["relabel", "--stack", stack_id, "--worker-aspect", "worker_instance",
            "--kubeconfig", control_plane.kubeconfig]
    assert main(argv) == 0
    assert _labels(control_plane, names) == ["c-a", "c-b", "c-c"]
    assert "3 worker(s), 3 node(s) changed" in capsys.readouterr().out
    assert main(argv) == 0
    assert "3 worker(s), 0 node(s) changed" in capsys.readouterr().out


def test_missing_workers_parameter_is_bad_input(migrated, control_plane, capsys):
    stack_id, _ = migrated
    rc = main(["relabel", "--stack", stack_id, "--kubeconfig", control_plane.kubeconfig])
    assert rc == 2
    assert "name the workers: k8s_cluster_installation_param.worker_node.aspect_id" \
        in capsys.readouterr().err


def test_a_worker_without_a_node_is_listed_and_exits_1(migrated, control_plane, capsys):
    """The others are still labelled; the one that could not be handled is named."""
    stack_id, names = migrated
    control_plane.delete_node(names[2])
    rc = main(["relabel", "--stack", stack_id, "--worker-aspect", "worker_instance",
               "--kubeconfig", control_plane.kubeconfig])
    err = capsys.readouterr().err
    assert rc == 1 and err.startswith("hwaffinity relabel: error: 1 problem(s): "), err
    assert _labels(control_plane, names[:2]) == ["c-a", "c-b"]
