"""Plain Kubernetes objects for the tests: pods, nodes, namespaces, containers and the
affinity terms inside them, as dicts in the wire form the API server sends.

The one place that knows these objects' shape, as kube-scheduler's tests build theirs with
``st.MakePod()`` and ``st.MakeNode()`` (pkg/scheduler/testing/wrappers.go): new tests build
their objects here. A test whose objects carry defaults of their own (the audit's nodes
with allocatable and a hostname label, the controller's pods with their rule) keeps a
small wrapper that calls these with those defaults.

A field is set only when its keyword is given, except the labels, always there (empty
when none are given). ``pod()`` takes any keyword it does not name as a pod spec field
under its API name: ``containers=``, ``nodeSelector=``, ``tolerations=``,
``topologySpreadConstraints=``, ``schedulerName=``, ``terminationGracePeriodSeconds=``.
"""
DELETION_TIMESTAMP = "2026-01-01T00:00:00Z"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def node(name, labels=None, taints=None, unschedulable=None, alloc=None, ip=None, uid=None,
         provider_id=None):
    """Node NAME with LABELS; TAINTS, UNSCHEDULABLE and PROVIDER_ID (spec.providerID):
    its spec; ALLOC: its status.allocatable; IP: its InternalIP (status.addresses, after
    its Hostname, as the kubelet reports them)."""
    obj = {"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": name, "labels": dict(labels or {})}, "spec": {}}
    if uid is not None:
        obj["metadata"]["uid"] = uid
    if taints:
        obj["spec"]["taints"] = taints
    if unschedulable is not None:
        obj["spec"]["unschedulable"] = unschedulable
    if provider_id is not None:
        obj["spec"]["providerID"] = provider_id
    status = {}
    if alloc:
        status["allocatable"] = alloc
    if ip is not None:
        status["addresses"] = [{"type": "Hostname", "address": name},
                               {"type": "InternalIP", "address": ip}]
    if status:
        obj["status"] = status
    return obj


def pod(name, labels=None, ns="default", on=None, affinity=None, phase=None, deleting=False,
        cpu=None, memory=None, annotations=None, owner=None, uid=None, created=None,
        finalizers=None, qos=None, **spec):
    """Pod NAME in namespace NS (None: no namespace, as created on a namespace's path) with
    LABELS, ANNOTATIONS, UID, creationTimestamp CREATED and FINALIZERS; OWNER: (kind, name)
    of its controller; DELETING: it has a deletionTimestamp. ON: the node it is bound to;
    AFFINITY: its spec.affinity; CPU, MEMORY: the requests of its one container (without
    them it has the containers given as ``containers=``, or none); every other keyword is
    a spec field. PHASE and QOS: its status.phase and status.qosClass."""
    meta = {"name": name, "namespace": ns, "labels": dict(labels or {})}
    if ns is None:
        del meta["namespace"]
    meta.update((key, value) for key, value in (
        ("uid", uid), ("creationTimestamp", created),
        ("annotations", None if annotations is None else dict(annotations)),
        ("finalizers", None if finalizers is None else list(finalizers)),
        ("ownerReferences", None if owner is None else [owner_ref(*owner)]),
        ("deletionTimestamp", DELETION_TIMESTAMP if deleting else None)) if value is not None)
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": dict(spec)}
    if on:
        obj["spec"]["nodeName"] = on
    if affinity:
        obj["spec"]["affinity"] = affinity
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    if requests:
        obj["spec"]["containers"] = [container(requests=requests)]
    status = {k: v for k, v in (("phase", phase), ("qosClass", qos)) if v}
    if status:
        obj["status"] = status
    return obj


def owner_ref(kind, name):
    """The ownerReferences entry that makes KIND NAME (an apps/v1 workload) the controller."""
    return {"apiVersion": "apps/v1", "kind": kind, "name": name, "controller": True, "uid": "u"}


def marked(p, resources=None):
    """Pod P with the scheduler extender's RESOURCES (default: the marks of both verbs)
    in its first container, as the mutating webhook marks it (a container is added when
    it has none)."""
    from tacker_hwaffinity.constants import EXTENDER_FILTER_RESOURCE, EXTENDER_SCORE_RESOURCE
    if resources is None:
        resources = (EXTENDER_FILTER_RESOURCE, EXTENDER_SCORE_RESOURCE)
    containers = p["spec"].setdefault("containers", [container()])
    res = containers[0].setdefault("resources", {})
    for part in ("requests", "limits"):
        for name in resources:
            res.setdefault(part, {})[name] = "1"
    return p


def container(name="c", image="x", requests=None, limits=None, **extra):
    """Container NAME running IMAGE with resource REQUESTS and LIMITS; EXTRA: its other
    fields (``resources=`` replaces both)."""
    c = {"name": name, "image": image}
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    if resources:
        c["resources"] = resources
    c.update(extra)
    return c


def namespace(name, labels=None):
    """Namespace NAME with LABELS."""
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": dict(labels or {})}}


def term(key, labels=None, exprs=None, namespaces=None, ns_selector="unset", **extra):
    """A pod (anti-)affinity term over topology KEY selecting pods by match LABELS and
    match EXPRS (neither: no labelSelector), in NAMESPACES and namespaceSelector
    NS_SELECTOR (None is kept: a null selector); EXTRA: its other fields."""
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
    """A preferred term: term T with WEIGHT."""
    return {"weight": weight, "podAffinityTerm": t}


def affinity(req_aff=None, req_anti=None, pref_aff=None, pref_anti=None, node=None):
    """A pod's spec.affinity: the required and preferred podAffinity and podAntiAffinity
    terms given, and nodeAffinity NODE."""
    out = {}
    for group, lst, val in (("podAffinity", REQUIRED, req_aff),
                            ("podAntiAffinity", REQUIRED, req_anti),
                            ("podAffinity", PREFERRED, pref_aff),
                            ("podAntiAffinity", PREFERRED, pref_anti)):
        if val is not None:
            out.setdefault(group, {})[lst] = val
    if node is not None:
        out["nodeAffinity"] = node
    return out
