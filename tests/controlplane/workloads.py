"""Manifest builders and scheduling-outcome waits shared by the tests."""
import collections

from tests import builders

from . import harness

IMAGE = "registry.invalid/pause:3.2"   # never pulled: there is no kubelet


def _term(topology_key, match_labels):
    return {"labelSelector": {"matchLabels": dict(match_labels)}, "topologyKey": topology_key}


def affinity(kind, mode, topology_key, match_labels, weight=100):
    """kind: 'affinity' | 'anti'; mode: 'required' | 'preferred'."""
    key = "podAffinity" if kind == "affinity" else "podAntiAffinity"
    if mode == "required":
        rules = {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term(topology_key, match_labels)]}
    else:
        rules = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": weight, "podAffinityTerm": _term(topology_key, match_labels)}]}
    return {key: rules}


def spread(topology_key, match_labels, max_skew=1, when="DoNotSchedule"):
    """One topologySpreadConstraints item (the fields Kubernetes 1.20 knows)."""
    return {"maxSkew": max_skew, "topologyKey": topology_key, "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": dict(match_labels)}}


def pod_spec(aff=None, node_selector=None, cpu="100m", memory="64Mi", spread=None):
    spec = {"terminationGracePeriodSeconds": 1,
            "automountServiceAccountToken": False,
            "containers": [{"name": "app", "image": IMAGE,
                            "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if spread:
        spec["topologySpreadConstraints"] = list(spread)
    if aff:
        spec["affinity"] = aff
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    return spec


def pod(name, namespace, labels, **kw):
    return builders.pod(name, labels, ns=namespace, **pod_spec(**kw))


def deployment(name, namespace, replicas, labels, **kw):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
            "spec": {"replicas": replicas,
                     "selector": {"matchLabels": dict(labels)},
                     "template": {"metadata": {"labels": dict(labels)},
                                  "spec": pod_spec(**kw)}}}


def create(cp, obj):
    ns = obj["metadata"]["namespace"]
    if obj["kind"] == "Pod":
        return cp.admin.create("/api/v1/namespaces/%s/pods" % ns, obj)
    if obj["kind"] == "Deployment":
        return cp.admin.create("/apis/apps/v1/namespaces/%s/deployments" % ns, obj)
    raise ValueError(obj["kind"])


def outcome(cp, namespace, name):
    """'bound:<node>', 'unschedulable' or None (not decided yet)."""
    p = cp.admin.get("/api/v1/namespaces/%s/pods/%s" % (namespace, name))
    node = p["spec"].get("nodeName")
    if node:
        return "bound:" + node
    for c in p.get("status", {}).get("conditions", []):
        if c["type"] == "PodScheduled" and c["status"] == "False" and \
                c.get("reason") == "Unschedulable":
            return "unschedulable"
    return None


def wait_decided(cp, namespace, name, timeout=30):
    return harness.wait_until(lambda: outcome(cp, namespace, name), timeout,
                              what="scheduling decision for %s/%s" % (namespace, name))


def create_and_wait(cp, obj, timeout=30):
    """Create a Pod and wait until the scheduler binds it or marks it
    Unschedulable (so pods are scheduled in creation order)."""
    create(cp, obj)
    return wait_decided(cp, obj["metadata"]["namespace"], obj["metadata"]["name"], timeout)


def settle(cp, namespace, selector, count, timeout=40, stable_for=2.0):
    """Wait until ``count`` pods match and each is bound or Unschedulable, and
    the picture stays the same for ``stable_for`` seconds. Returns the pods."""
    import time
    state = {"sig": None, "since": 0.0}

    def done():
        pods = [p for p in cp.pods(namespace, selector)
                if not p["metadata"].get("deletionTimestamp")]
        if len(pods) != count:
            return None
        sig = []
        for p in pods:
            o = outcome(cp, namespace, p["metadata"]["name"])
            if o is None:
                return None
            sig.append((p["metadata"]["name"], o))
        sig = tuple(sorted(sig))
        now = time.monotonic()
        if sig != state["sig"]:
            state.update(sig=sig, since=now)
            return None
        return pods if now - state["since"] >= stable_for else None
    return harness.wait_until(done, timeout, interval=0.3,
                              what="%d pods (%s) in %s to settle" % (count, selector, namespace))


def domains_of(pods, node_domain):
    """({domain: count}, [pending pod names]) of a list of pod objects."""
    counts = collections.Counter()
    pending = []
    for p in pods:
        node = p["spec"].get("nodeName")
        if node:
            counts[node_domain[node]] += 1
        else:
            pending.append(p["metadata"]["name"])
    return dict(counts), sorted(pending)


def workload_of(pod_name):
    """The workload a controller's pod belongs to (its name up to the first dash)."""
    return pod_name.split("-", 1)[0]


def plan_by_workload(result, namespace):
    """({workload: {domain: pods}}, {workload: [nodes]}, [pending pods]) of NAMESPACE's
    pods in a ``hwaffinity plan -o json`` RESULT."""
    counts = collections.defaultdict(collections.Counter)
    nodes, pending = collections.defaultdict(list), []
    for p in result["placements"]:
        ns, _, name = p["pod"].partition("/")
        if ns != namespace:
            continue
        if p["node"] is None:
            pending.append(name)
        else:
            counts[workload_of(name)][p["domain"]] += 1
            nodes[workload_of(name)].append(p["node"])
    return {k: dict(v) for k, v in counts.items()}, nodes, pending
