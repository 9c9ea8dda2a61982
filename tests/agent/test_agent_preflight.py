"""The agent's start where the kubelet keeps its files somewhere else, or not at all.

deploy/agent/daemonset.yaml mounts two kubelet files (the configuration, for
reservedSystemCPUs and cpuManagerPolicy; the CPU manager checkpoint, for the policy in
force) with hostPath FileOrCreate: on a node whose kubelet keeps them elsewhere the agent
finds an empty file. It must start there, say on its start line what it could not verify
and why, and still refuse a static CPU manager policy from whichever file says so.
"""
import json
import os
import subprocess
import sys

import pytest

from numa.conftest import expand_dump
from tacker_hwaffinity.agent import preflight

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return str(path)


def test_the_checkpoint_decides_where_it_exists(tmp_path):
    state = _write(tmp_path / "cpu_manager_state", json.dumps({"policyName": "none"}))
    verified, note = preflight.cpu_manager_policy(state, str(tmp_path / "no-config.yaml"))
    assert verified and note == "kubelet CPU manager policy none (%s)" % state


@pytest.mark.parametrize("state_text", [None, "", "\n"], ids=["missing", "empty", "blank"])
def test_a_missing_or_empty_checkpoint_falls_back_to_the_configuration(tmp_path, state_text):
    state = str(tmp_path / "cpu_manager_state")
    if state_text is not None:
        _write(state, state_text)          # what the FileOrCreate mount leaves
    config = _write(tmp_path / "kubelet.yaml", "kind: KubeletConfiguration\n")
    verified, note = preflight.cpu_manager_policy(state, config)
    assert verified
    assert note.startswith("no CPU manager state at %s" % state)
    assert "give --cpu-manager-state" in note
    assert note.endswith("kubelet CPU manager policy none (configured in %s)" % config)


def test_neither_file_is_a_start_with_a_warning_not_a_refusal(tmp_path):
    state, config = str(tmp_path / "a" / "cpu_manager_state"), _write(tmp_path / "c.yaml", "")
    verified, note = preflight.cpu_manager_policy(state, config)
    assert not verified
    assert "no kubelet configuration at %s (give --kubelet-config)" % config in note
    assert note.endswith("the CPU manager policy is not verified, taken as none")


@pytest.mark.parametrize("state_policy,config_policy,culprit", [
    ("static", None, "cpu_manager_state"),
    (None, "static", "kubelet.yaml"),
    ("none", "static", "kubelet.yaml"),     # configured static, kubelet not restarted yet
])
def test_static_is_refused_from_either_file(tmp_path, state_policy, config_policy, culprit):
    state = str(tmp_path / "cpu_manager_state")
    config = str(tmp_path / "kubelet.yaml")
    if state_policy:
        _write(state, json.dumps({"policyName": state_policy}))
    if config_policy:
        _write(config, "cpuManagerPolicy: %s\n" % config_policy)
    with pytest.raises(preflight.Refused) as e:
        preflight.cpu_manager_policy(state, config)
    assert "CPU manager policy is static (%s)" % os.path.join(str(tmp_path), culprit) \
        in str(e.value)


def test_unreadable_files_are_one_line_refusals(tmp_path):
    state = _write(tmp_path / "cpu_manager_state", "{not json")
    with pytest.raises(preflight.Refused) as e:
        preflight.cpu_manager_policy(state, str(tmp_path / "none.yaml"))
    assert str(e.value).startswith("cannot read the kubelet's CPU manager state %s" % state)
    config = _write(tmp_path / "kubelet.yaml", "- a list\n")
    with pytest.raises(preflight.Refused) as e:
        preflight.kubelet_reserved_cpus(str(tmp_path), config)
    assert "is not a KubeletConfiguration mapping (found list)" in str(e.value)
    os.makedirs(tmp_path / "dir-state")    # what a runtime makes of a missing hostPath
    with pytest.raises(preflight.Refused) as e:
        preflight.cpu_manager_policy(str(tmp_path / "dir-state"), str(tmp_path / "n.yaml"))
    assert "cannot read the kubelet's CPU manager state" in str(e.value)
    assert len(str(e.value).splitlines()) == 1


def _agent(tmp_path, *flags):
    sysfs = expand_dump("sysfs-2socket.txt", str(tmp_path / "sys"))
    cgroup = tmp_path / "cgroup"
    os.makedirs(cgroup / "kubepods.slice", exist_ok=True)
    _write(cgroup / "cgroup.controllers", "cpuset cpu memory\n")
    argv = [sys.executable, "-m", "tacker_hwaffinity.cli.main", "agent", "--node", "n1",
            "--dry-run", "--sysfs-root", sysfs, "--cgroup-root", str(cgroup),
            "--kubelet-root", str(tmp_path / "var-lib-kubelet"),
            "--kubeconfig", str(tmp_path / "no-kubeconfig")] + list(flags)
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_the_agent_starts_with_its_kubelet_files_elsewhere(tmp_path):
    """--kubelet-config and --cpu-manager-state point where this node's kubelet keeps
    them; the agent gets past every node check (it stops at the missing kubeconfig, the
    next step) and its start lines say where the policy and reserved CPUs came from."""
    config = _write(tmp_path / "etc" / "kubelet-config.yaml",
                    "kind: KubeletConfiguration\nreservedSystemCPUs: 0-1\n")
    state = _write(tmp_path / "k0s" / "cpu_manager_state", json.dumps({"policyName": "none"}))
    p = _agent(tmp_path, "--kubelet-config", config, "--cpu-manager-state", state)
    lines = p.stderr.splitlines()
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert lines[-1].startswith("hwaffinity agent: error: refusing to run: kubeconfig ")
    assert any(line.endswith("INFO hwaffinity.agent: kubelet CPU manager policy none (%s)"
                             % state) for line in lines), p.stderr
    assert any("reserved CPUs 0-1;" in line for line in lines), p.stderr


def test_the_agent_starts_where_the_checkpoint_is_missing(tmp_path):
    """The FileOrCreate mount's empty checkpoint and no configuration: a WARNING start
    line, not a refusal; a static policy in the configuration is still refused."""
    state = _write(tmp_path / "mnt" / "cpu_manager_state", "")
    config = str(tmp_path / "mnt" / "config.yaml")
    p = _agent(tmp_path, "--cpu-manager-state", state, "--kubelet-config", config)
    lines = p.stderr.splitlines()
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert lines[-1].startswith("hwaffinity agent: error: refusing to run: kubeconfig ")
    warning = [line for line in lines if " WARNING hwaffinity.agent: " in line]
    assert len(warning) == 1 and "no CPU manager state at %s" % state in warning[0]
    assert "not verified, taken as none" in warning[0]
    _write(config, "cpuManagerPolicy: static\n")
    p = _agent(tmp_path, "--cpu-manager-state", state, "--kubelet-config", config)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.splitlines()[-1] == (
        "hwaffinity agent: error: refusing to run: the kubelet's CPU manager policy is "
        "static (%s): it writes container cpusets itself and would undo the agent's; set "
        "cpuManagerPolicy: none (the default) on this node, or do not run the agent here"
        % config)
