"""Raw Kubernetes objects for the audit tests."""


def node(name, host=None, key="CIS-node"):
    labels = {"kubernetes.io/hostname": name}
    if host is not None:
        labels[key] = host
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def pod(name, node_name, labels=None, owner=None, ns="default", phase="Running",
        affinity=None, spread=None, annotations=None):
    meta = {"name": name, "namespace": ns, "labels": dict(labels or {})}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner[0],
                                    "name": owner[1], "controller": True, "uid": "u"}]
    if annotations:
        meta["annotations"] = annotations
    spec = {"containers": [{"name": "c", "image": "i"}]}
    if node_name:
        spec["nodeName"] = node_name
    if affinity:
        spec["affinity"] = affinity
    if spread:
        spec["topologySpreadConstraints"] = spread
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": {"phase": phase}}


def anti(app, key="CIS-node", preferred=False):
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    if preferred:
        return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": term}]}}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def owner(kind, name, ns="default", replicas=None, up=None, status=None):
    meta = {"name": name, "namespace": ns}
    if up is not None:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": up[0], "name": up[1],
                                    "controller": True, "uid": "u"}]
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
