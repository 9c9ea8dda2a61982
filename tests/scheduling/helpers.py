"""Build plain Kubernetes objects and run the engine on them, as the CLI does."""
from tacker_hwaffinity.cli.explain import explain
from tacker_hwaffinity.scheduling import planner
from tacker_hwaffinity.scheduling.profile import Profile
from tacker_hwaffinity.scheduling.snapshot import cluster_from_objects, workloads_from_objects

SRC = "test.yaml"


def node(name, labels=None, taints=None, unschedulable=None, alloc=None):
    obj = {"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": name, "labels": dict(labels or {})}, "spec": {}}
    if taints:
        obj["spec"]["taints"] = taints
    if unschedulable is not None:
        obj["spec"]["unschedulable"] = unschedulable
    if alloc:
        obj["status"] = {"allocatable": alloc}
    return obj


def pod(name, labels=None, ns="default", on=None, affinity=None, phase=None, deleting=False,
        cpu=None, memory=None, **spec):
    obj = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": ns, "labels": dict(labels or {})},
           "spec": dict(spec)}
    if on:
        obj["spec"]["nodeName"] = on
    if affinity:
        obj["spec"]["affinity"] = affinity
    if phase:
        obj["status"] = {"phase": phase}
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    req = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    if req:
        obj["spec"]["containers"] = [{"name": "c", "image": "x",
                                      "resources": {"requests": req}}]
    return obj


def namespace(name, labels=None):
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": dict(labels or {})}}


def term(key, labels=None, exprs=None, namespaces=None, ns_selector="unset", **extra):
    t = {"topologyKey": key}
    if labels is not None or exprs is not None:
        sel = {}
        if labels is not None:
            sel["matchLabels"] = labels
        if exprs is not None:
            sel["matchExpressions"] = exprs
        t["labelSelector"] = sel
    if namespaces is not None:
        t["namespaces"] = namespaces
    if ns_selector != "unset":
        t["namespaceSelector"] = ns_selector
    t.update(extra)
    return t


def weighted(weight, t):
    return {"weight": weight, "podAffinityTerm": t}


def affinity(req_aff=None, req_anti=None, pref_aff=None, pref_anti=None, node=None):
    out = {}
    R, P = ("requiredDuringSchedulingIgnoredDuringExecution",
            "preferredDuringSchedulingIgnoredDuringExecution")
    for group, lst, val in (("podAffinity", R, req_aff), ("podAntiAffinity", R, req_anti),
                            ("podAffinity", P, pref_aff), ("podAntiAffinity", P, pref_anti)):
        if val is not None:
            out.setdefault(group, {})[lst] = val
    if node is not None:
        out["nodeAffinity"] = node
    return out


def config(plugins=None, plugin_config=None):
    prof = {}
    if plugins is not None:
        prof["plugins"] = plugins
    if plugin_config is not None:
        prof["pluginConfig"] = plugin_config
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [prof]}


SCORE_ONLY = {"filter": {"disabled": [{"name": "*"}]}}


def run(nodes, incoming, pods=(), namespaces=(), cfg=None):
    """explain() result as {node name: node entry}, plus the whole result under None."""
    snap = cluster_from_objects([(o, SRC) for o in list(nodes) + list(pods) + list(namespaces)])
    prof = Profile(cfg, SRC) if cfg is not None else Profile()
    pods_in, _ = workloads_from_objects([(incoming, SRC)])
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
    snap = cluster_from_objects([(o, SRC) for o in list(nodes) + list(pods) + list(namespaces)])
    prof = Profile(cfg, SRC) if cfg is not None else Profile()
    wl, _ = workloads_from_objects([(w, SRC) for w in workloads], snap)
    return planner.plan(snap.state(), prof.framework(), wl, key)
