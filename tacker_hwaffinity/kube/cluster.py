"""The cluster snapshot `hwaffinity plan` needs, read from a live API server:
nodes, pods and namespaces, as ``kubectl get nodes,pods,namespaces -A -o json``
would print them, at one resourceVersion where the server allows it.

Resource versions are etcd revisions shared by every kind stored together,
so the pods and namespaces are listed at exactly the nodes' version
(``resourceVersionMatch=Exact``); a server that cannot serve that version
(too old, compacted, or an API without the field) gets the latest one and
the plan notes it. Every pod is read, terminated ones too, exactly as in a
snapshot file: the planner ignores them, but their names are taken.
"""
from tacker_hwaffinity.kube.client import KubeError
from tacker_hwaffinity.kube.lists import PAGE_SIZE, list_json

# (kind, CoreV1Api method, what), in kubectl's print order
LISTS = (
    ("Node", "list_node", "nodes"),
    ("Pod", "list_pod_for_all_namespaces", "pods in all namespaces"),
    ("Namespace", "list_namespace", "namespaces"),
)


def read_cluster(conn, prune=None, page_size=PAGE_SIZE):
    """([(object, source)], notes) for the planner. PRUNE(object) drops, in
    place, what the planner never reads, page by page, so memory follows what
    is used."""
    api = conn.core()
    source = "cluster %s" % conn.where
    objects, notes, version = [], [], None
    for kind, method, what in LISTS:
        call = getattr(api, method)
        if version is None:
            items, version = list_json(conn, call, kind, what, page_size, prune)
        else:
            try:
                items, _ = list_json(conn, call, kind, what, page_size, prune,
                                     resource_version=version,
                                     resource_version_match="Exact")
            except KubeError as e:
                if e.status not in (400, 410):   # version gone, or field unknown
                    raise
                notes.append("%s were read at the latest resourceVersion, not at the "
                             "nodes' %s (%s)" % (what, version, str(e).split(": ", 1)[-1]))
                items, _ = list_json(conn, call, kind, what, page_size, prune)
        objects.extend((item, source) for item in items)
    return objects, notes
