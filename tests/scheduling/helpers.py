"""Run the engine on plain Kubernetes objects (built with tests.builders), as the CLI does."""
from tacker_hwaffinity.cli.explain import explain
from tacker_hwaffinity.scheduling import planner
from tacker_hwaffinity.scheduling.profile import Profile
from tacker_hwaffinity.scheduling.snapshot import cluster_from_objects, workloads_from_objects

SRC = "test.yaml"


def config(plugins=None, plugin_config=None):
    prof = {}
    if plugins is not None:
        prof["plugins"] = plugins
    if plugin_config is not None:
        prof["pluginConfig"] = plugin_config
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [prof]}


SCORE_ONLY = {"filter": {"disabled": [{"name": "*"}]}}


def snapshot(*objects):
    """The engine's cluster snapshot of the nodes, pods and namespaces OBJECTS."""
    return cluster_from_objects([(o, SRC) for o in objects])


def run(nodes, incoming, pods=(), namespaces=(), cfg=None):
    """explain() result as {node name: node entry}, plus the whole result under None."""
    snap = snapshot(*nodes, *pods, *namespaces)
    prof = Profile(cfg, SRC) if cfg is not None else Profile()
    pods_in, _, _ = workloads_from_objects([(incoming, SRC)])
    result = explain(snap, prof, pods_in[0])
    out = {n["name"]: n for n in result["nodes"]}
    out[None] = result
    return out


def feasible(result):
    return sorted(name for name, n in result.items() if name is not None and n["feasible"])


def scores(result, plugin):
    return {name: n["scores"].get(plugin) for name, n in result.items()
            if name is not None and n["feasible"]}


def plan(nodes, workloads, pods=(), namespaces=(), cfg=None, key="CIS-node"):
    snap = snapshot(*nodes, *pods, *namespaces)
    prof = Profile(cfg, SRC) if cfg is not None else Profile()
    wl, _, _ = workloads_from_objects([(w, SRC) for w in workloads], snap)
    return planner.plan(snap.state(), prof.framework(), wl, key)
