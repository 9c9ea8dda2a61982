"""What the agent checks before it touches anything; each refusal is one sentence."""
import json
import os

import yaml

from tacker_hwaffinity.numa.cpuset import parse_list

CPU_MANAGER_STATE = "cpu_manager_state"
KUBELET_CONFIG = "config.yaml"          # kubeadm's place for the kubelet configuration


class Refused(Exception):
    """The agent must not run on this node; the message says why and what to change."""


def _read_text(path, what):
    """The file's text, or None where it is missing or empty (the DaemonSet's FileOrCreate
    mount leaves an empty file where the kubelet keeps none)."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise Refused("cannot read %s %s: %s" % (what, path, e))
    return text if text.strip() else None


def read_kubelet_config(path):
    """The kubelet configuration (a KubeletConfiguration, YAML or JSON) at PATH as a dict,
    or None where the file is missing or empty."""
    text = _read_text(path, "the kubelet configuration")
    if text is None:
        return None
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise Refused("cannot read the kubelet configuration %s: %s"
                      % (path, str(e).splitlines()[0]))
    if not isinstance(config, dict):
        raise Refused("the kubelet configuration %s is not a KubeletConfiguration mapping "
                      "(found %s)" % (path, type(config).__name__))
    return config


def cpu_manager_policy(state_file, config_file):
    """(verified, note): the kubelet's CPU manager policy from its checkpoint STATE_FILE
    (the policy in force) and its configuration CONFIG_FILE (the policy configured); either
    may be missing. Refused where either says static: the kubelet then rewrites every
    container's cpuset (every 10 s on 1.20/1.21, on change later) and would fight us.
    VERIFIED is False when neither file could tell (the policy is then taken as none)."""
    text = _read_text(state_file, "the kubelet's CPU manager state")
    state_policy = None
    if text is not None:
        try:
            state = json.loads(text)
        except ValueError as e:
            raise Refused("cannot read the kubelet's CPU manager state %s: %s"
                          % (state_file, e))
        state_policy = (state.get("policyName") if isinstance(state, dict) else None) \
            or "none"
    config = read_kubelet_config(config_file)
    config_policy = None if config is None else (config.get("cpuManagerPolicy") or "none")
    for policy, where in ((state_policy, state_file), (config_policy, config_file)):
        if policy == "static":
            raise Refused("the kubelet's CPU manager policy is static (%s): it writes "
                          "container cpusets itself and would undo the agent's; set "
                          "cpuManagerPolicy: none (the default) on this node, or do not run "
                          "the agent here" % where)
    if state_policy is not None:
        return True, "kubelet CPU manager policy %s (%s)" % (state_policy, state_file)
    missing = "no CPU manager state at %s (the kubelet writes it under its --root-dir; " \
              "give --cpu-manager-state where that is elsewhere)" % state_file
    if config_policy is not None:
        return True, "%s; kubelet CPU manager policy %s (configured in %s)" % (
            missing, config_policy, config_file)
    return False, ("%s and no kubelet configuration at %s (give --kubelet-config): the CPU "
                   "manager policy is not verified, taken as none" % (missing, config_file))


def check_cpu_manager(kubelet_root, state_file=None, config_file=None):
    """The start-line note on the CPU manager policy; Refused where it is static.
    The files default to KUBELET_ROOT/cpu_manager_state and KUBELET_ROOT/config.yaml."""
    return cpu_manager_policy(state_file or os.path.join(kubelet_root, CPU_MANAGER_STATE),
                              config_file or os.path.join(kubelet_root, KUBELET_CONFIG))[1]


def kubelet_reserved_cpus(kubelet_root, config_file=None):
    """The kubelet's ``reservedSystemCPUs`` from CONFIG_FILE (default
    KUBELET_ROOT/config.yaml), or None when there is no such file or setting."""
    config = read_kubelet_config(config_file or os.path.join(kubelet_root, KUBELET_CONFIG))
    value = None if config is None else config.get("reservedSystemCPUs")
    return str(value) if value not in (None, "") else None


def read_cpu_map(path):
    """A CPU/memory-node id map file: {"cpus": {"0-13": 0, ...}, "mems": {"0-7": 0}}.

    For running a recorded (larger) topology on a smaller machine: placement uses the
    recorded ids, the kernel gets the mapped ones. Returns ({id: id}, {id: id})."""
    with open(path) as f:
        raw = json.load(f)
    out = []
    for kind in ("cpus", "mems"):
        table = {}
        for ids, target in (raw.get(kind) or {}).items():
            for i in parse_list(ids):
                table[i] = int(target)
        out.append(table or None)
    return tuple(out)
