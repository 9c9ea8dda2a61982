"""Pods and containers as expression subjects, built from Kubernetes Pod objects.

The keys a subject exposes follow upstream (see doc/numa.md):

* pod: ``name``, ``namespace``, ``qosclass``, ``labels`` (the Kubernetes pod
  labels plus kubelet's ``io.kubernetes.pod.{name,namespace,uid}``), ``uid``
  (``metadata.uid``) and ``id`` (the runtime sandbox ID, unknown from the API
  objects, so never found);
* container: ``name``, ``namespace`` and ``qosclass`` (the pod's), ``labels``
  (the four CRI labels kubelet sets on every container), ``tags`` (always
  empty here), ``id`` (``status.containerStatuses[].containerID`` without the
  ``<runtime>://`` prefix) and ``pod``.
"""
from collections.abc import Iterable, Mapping
from typing import Any

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.numa.annotation_place import SourceText
from tacker_hwaffinity.objects import qos as qosmod
from tacker_hwaffinity.objects.quantity import milli_value, value as quantity_value
from tacker_hwaffinity.objects.yamlio import type_name

CONTAINER_NAME_LABEL = "io.kubernetes.container.name"
POD_NAME_LABEL = "io.kubernetes.pod.name"
POD_NAMESPACE_LABEL = "io.kubernetes.pod.namespace"
POD_UID_LABEL = "io.kubernetes.pod.uid"


class Pod:
    """A pod subject."""

    def __init__(self, name: str, namespace: str = "default", uid: str | None = None,
                 qosclass: str = qosmod.BEST_EFFORT, labels: Mapping[str, str] | None = None,
                 annotations: Mapping[str, str] | None = None, source: str | None = None):
        self.name = name
        self.namespace = namespace
        self.uid = uid
        self.qosclass = qosclass
        self.annotations = dict(annotations or {})
        self.source = source
        # the text of the file SOURCE when the pod was read from one: errors of its
        # annotations then give the file's line (``load_pods``)
        self.source_text: SourceText | None = None
        self.labels = dict(labels or {})
        self.labels[POD_NAME_LABEL] = name
        self.labels[POD_NAMESPACE_LABEL] = namespace
        if uid is not None:
            self.labels[POD_UID_LABEL] = uid
        self.containers: list[Container] = []

    @property
    def ref(self) -> str:
        return "%s/%s" % (self.namespace, self.name)

    def eval_key(self, key: str) -> Any:
        if key == "name":
            return self.name
        if key == "namespace":
            return self.namespace
        if key == "qosclass":
            return self.qosclass
        if key == "labels":
            return self.labels
        if key == "uid":
            return self.uid
        return None

    def add_container(self, name: str, **kw: Any) -> "Container":
        c = Container(self, name, **kw)
        self.containers.append(c)
        return c

    def __repr__(self) -> str:
        return "Pod(%s)" % self.ref


class Container:
    """A container subject with the resources placement needs."""

    def __init__(self, pod: Pod, name: str, cid: str | None = None,
                 tags: Mapping[str, str] | None = None, cpu_request: int = 0,
                 cpu_limit: int = 0, mem_request: int = 0, mem_limit: int = 0,
                 runtime: str | None = None):
        self.pod = pod
        self.name = name
        self.id = cid
        self.runtime = runtime              # "containerd", "cri-o", ... from containerID
        self.tags = dict(tags or {})
        self.cpu_request = cpu_request      # milli-CPU
        self.cpu_limit = cpu_limit          # milli-CPU, 0 if none
        self.mem_request = mem_request      # bytes
        self.mem_limit = mem_limit
        self.labels = {CONTAINER_NAME_LABEL: name, POD_NAME_LABEL: pod.name,
                       POD_NAMESPACE_LABEL: pod.namespace}
        if pod.uid is not None:
            self.labels[POD_UID_LABEL] = pod.uid

    @property
    def ref(self) -> str:
        return "%s/%s" % (self.pod.ref, self.name)

    @property
    def namespace(self) -> str:
        return self.pod.namespace

    def eval_key(self, key: str) -> Any:
        if key == "pod":
            return self.pod
        if key == "name":
            return self.name
        if key == "namespace":
            return self.pod.namespace
        if key == "qosclass":
            return self.pod.qosclass
        if key == "labels":
            return self.labels
        if key == "tags":
            return self.tags
        if key == "id":
            return self.id
        return None

    def __repr__(self) -> str:
        return "Container(%s)" % self.ref


def _str_map(value, source, obj, field):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError("expected a mapping of strings, got a %s" % type_name(value),
                         source=source, obj=obj, field=field)
    for k, v in value.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise InputError("expected a string value, got a %s" % type_name(v),
                             source=source, obj=obj, field="%s.%s" % (field, k))
    return dict(value)


def _container_ids(status, source, obj):
    ids = {}
    statuses = (status or {}).get("containerStatuses") or []
    if not isinstance(statuses, list):
        raise InputError("expected a list", source=source, obj=obj,
                         field="status.containerStatuses")
    for i, st in enumerate(statuses):
        if not isinstance(st, dict):
            raise InputError("expected a mapping", source=source, obj=obj,
                             field="status.containerStatuses[%d]" % i)
        cid = st.get("containerID")
        if cid is None:
            continue
        if not isinstance(cid, str):
            raise InputError("expected a string", source=source, obj=obj,
                             field="status.containerStatuses[%d].containerID" % i)
        runtime, sep, bare = cid.partition("://")
        ids[st.get("name")] = (bare, runtime) if sep else (cid, None)
    return ids


def pod_from_object(obj: Mapping[str, Any], source: str | None = None) -> Pod:
    """Build a Pod (with its containers) from a Kubernetes Pod mapping."""
    kind = obj.get("kind", "Pod")
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise InputError("a pod needs a metadata.name string", source=source,
                         obj=kind, field="metadata.name")
    ns = meta.get("namespace", "default")
    where = "Pod %s/%s" % (ns, meta["name"])
    if kind != "Pod":
        raise InputError("expected kind Pod, got %r" % (kind,), source=source,
                         obj=where, field="kind")
    if not isinstance(ns, str) or not ns:
        raise InputError("expected a non-empty string", source=source, obj=where,
                         field="metadata.namespace")
    uid = meta.get("uid")
    if uid is not None and not isinstance(uid, str):
        raise InputError("expected a string", source=source, obj=where, field="metadata.uid")
    status = obj.get("status") or {}
    if not isinstance(status, dict):
        raise InputError("expected a mapping", source=source, obj=where, field="status")
    spec = obj.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("containers"), list):
        raise InputError("expected a list of containers", source=source, obj=where,
                         field="spec.containers")
    if not isinstance(spec.get("initContainers") or [], list):
        raise InputError("expected a list of containers", source=source, obj=where,
                         field="spec.initContainers")
    try:
        qosclass = status.get("qosClass") or qosmod.pod_qos_class(obj)
    except InputError as e:
        raise e.located(source, where)
    if qosclass not in qosmod.QOS_CLASSES:
        raise InputError("expected one of %s, got %r" % (", ".join(qosmod.QOS_CLASSES), qosclass),
                         source=source, obj=where, field="status.qosClass")
    pod = Pod(meta["name"], ns, uid, qosclass,
              labels=_str_map(meta.get("labels"), source, where, "metadata.labels"),
              annotations=_str_map(meta.get("annotations"), source, where,
                                   "metadata.annotations"),
              source=source)
    ids = _container_ids(status, source, where)
    seen = set()
    for i, c in enumerate(spec["containers"]):
        field = "spec.containers[%d]" % i
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or not c["name"]:
            raise InputError("a container needs a name string", source=source, obj=where,
                             field=field + ".name")
        if c["name"] in seen:
            raise InputError("duplicate container name %r" % c["name"], source=source,
                             obj=where, field=field + ".name")
        seen.add(c["name"])
        try:
            req, lim = qosmod.container_resources(c, field)
        except InputError as e:
            raise e.located(source, where)
        cid, runtime = ids.get(c["name"], (None, None))
        pod.add_container(
            c["name"], cid=cid, runtime=runtime,
            cpu_request=milli_value(req["cpu"]) if "cpu" in req else 0,
            cpu_limit=milli_value(lim["cpu"]) if "cpu" in lim else 0,
            mem_request=quantity_value(req["memory"]) if "memory" in req else 0,
            mem_limit=quantity_value(lim["memory"]) if "memory" in lim else 0)
    return pod


def load_pods(objects: Iterable[tuple[Mapping[str, Any], str]],
              texts: Mapping[str, str] | None = None) -> list[Pod]:
    """Pods from ``yamlio.load_objects`` output; duplicate pods are errors. TEXTS: {source:
    the text of that file}, for the file's lines in the errors of their annotations."""
    pods: list[Pod] = []
    seen: dict[str, str] = {}
    shared = {source: SourceText(text) for source, text in (texts or {}).items()}
    for obj, source in objects:
        pod = pod_from_object(obj, source)
        pod.source_text = shared.get(source)
        if pod.ref in seen:
            raise InputError("pod %s is given twice (also in %s)" % (pod.ref, seen[pod.ref]),
                             source=source, obj="Pod " + pod.ref, field="metadata.name")
        seen[pod.ref] = source
        pods.append(pod)
    return pods
