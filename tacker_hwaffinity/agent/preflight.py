"""What the agent checks before it touches anything; each refusal is one sentence."""
import json
import os

CPU_MANAGER_STATE = "cpu_manager_state"


class Refused(Exception):
    """The agent must not run on this node; the message says why and what to change."""


def check_cpu_manager(kubelet_root):
    """Refuse where the kubelet's CPU manager policy is static: it rewrites every
    container's cpuset (every 10 s on 1.20/1.21, on change later) and would fight us."""
    path = os.path.join(kubelet_root, CPU_MANAGER_STATE)
    try:
        with open(path) as f:
            state = json.load(f)
    except FileNotFoundError:
        return "no %s (kubelet CPU manager policy none)" % path
    except (OSError, ValueError) as e:
        raise Refused("cannot read the kubelet's CPU manager state %s: %s" % (path, e))
    policy = state.get("policyName") if isinstance(state, dict) else None
    if policy == "static":
        raise Refused("the kubelet's CPU manager policy is static (%s): it writes container "
                      "cpusets itself and would undo the agent's; set cpuManagerPolicy: none "
                      "(the default) on this node, or do not run the agent here" % path)
    return "kubelet CPU manager policy %s (%s)" % (policy or "none", path)


def kubelet_reserved_cpus(kubelet_root):
    """The kubelet's ``reservedSystemCPUs`` from KUBELET_ROOT/config.yaml (kubeadm's
    place for the kubelet configuration), or None when there is no such file or setting."""
    import yaml
    path = os.path.join(kubelet_root, "config.yaml")
    try:
        with open(path) as f:
            config = yaml.safe_load(f)
    except FileNotFoundError:
        return None
    except (OSError, yaml.YAMLError) as e:
        raise Refused("cannot read the kubelet configuration %s: %s" % (path, e))
    value = config.get("reservedSystemCPUs") if isinstance(config, dict) else None
    return str(value) if value not in (None, "") else None


def read_cpu_map(path):
    """A CPU/memory-node id map file: {"cpus": {"0-13": 0, ...}, "mems": {"0-7": 0}}.

    For running a recorded (larger) topology on a smaller machine: placement uses the
    recorded ids, the kernel gets the mapped ones. Returns ({id: id}, {id: id})."""
    from tacker_hwaffinity.numa.cpuset import parse_list
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
