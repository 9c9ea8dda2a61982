"""Raw Kubernetes objects for the audit tests: the audit's defaults over tests.builders,
and the workloads and PodDisruptionBudgets that own and guard its pods."""
from tests import builders

ALLOCATABLE = {"cpu": "8", "memory": "16Gi", "pods": "110"}


def node(name, host=None, key="CIS-node"):
    """Node NAME with its hostname label, host HOST under KEY, and allocatable."""
    labels = {"kubernetes.io/hostname": name}
    if host is not None:
        labels[key] = host
    return builders.node(name, labels, alloc=ALLOCATABLE)


def pod(name, node_name, labels=None, owner=None, ns="default", phase="Running",
        affinity=None, spread=None, annotations=None):
    """A pod in PHASE with one container, bound to NODE_NAME; OWNER: (kind, name) of its
    controller; SPREAD: its topologySpreadConstraints."""
    spec = {"topologySpreadConstraints": spread} if spread else {}
    return builders.pod(name, labels, ns=ns, on=node_name, affinity=affinity, phase=phase,
                        annotations=annotations or None, owner=owner,
                        containers=[builders.container()], **spec)


def anti(app, key="CIS-node", preferred=False):
    t = builders.term(key, {"app": app})
    if preferred:
        return builders.affinity(pref_anti=[builders.weighted(100, t)])
    return builders.affinity(req_anti=[t])


def owner(kind, name, ns="default", replicas=None, up=None, status=None):
    meta = {"name": name, "namespace": ns}
    if up is not None:
        meta["ownerReferences"] = [builders.owner_ref(*up)]
    spec = {} if replicas is None else {"replicas": replicas}
    o = {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec}
    if status is not None:
        o["status"] = status
    return o


def pdb(name, selector, ns="default", min_available=None, max_unavailable=None):
    spec = {"selector": selector}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}
