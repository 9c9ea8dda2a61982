"""The cluster snapshot `hwaffinity plan` needs, read from a live API server:
nodes, pods and namespaces, as ``kubectl get nodes,pods,namespaces -A -o json``
would print them, at one resourceVersion where the server allows it; and the
selectors of Services, ReplicaSets, StatefulSets and ReplicationControllers,
which kube-scheduler's default topology spreading reads.

Resource versions are etcd revisions shared by every kind stored together,
so the pods and namespaces are listed at exactly the nodes' version
(``resourceVersionMatch=Exact``); a server that cannot serve that version
(too old, compacted, or an API without the field) gets the latest one and
the plan notes it. Every pod is read, terminated ones too, exactly as in a
snapshot file: the planner ignores them, but their names are taken.
"""
from collections.abc import Callable, Sequence
from typing import Any

from tacker_hwaffinity.kube.client import Connection, KubeError
from tacker_hwaffinity.kube.lists import PAGE_SIZE, list_json
from tacker_hwaffinity.objects.jsontypes import JsonObject, Pruner

# One list to read: (kind, API group, the client's method, what messages call them).
ListEntry = tuple[str, str, str, str]
# What one list read gives: (its items, a note for the user or None).
ListRead = tuple[list[JsonObject], str | None]

# (kind, API group, method, what), in kubectl's print order
LISTS: tuple[ListEntry, ...] = (
    ("Node", "core", "list_node", "nodes"),
    ("Pod", "core", "list_pod_for_all_namespaces", "pods in all namespaces"),
    ("Namespace", "core", "list_namespace", "namespaces"),
    ("Service", "core", "list_service_for_all_namespaces", "services in all namespaces"),
    ("ReplicationController", "core", "list_replication_controller_for_all_namespaces",
     "replicationcontrollers in all namespaces"),
    ("ReplicaSet", "apps", "list_replica_set_for_all_namespaces",
     "replicasets in all namespaces"),
    ("StatefulSet", "apps", "list_stateful_set_for_all_namespaces",
     "statefulsets in all namespaces"),
)
# `hwaffinity audit` reads these too: the workloads that own pods (desired counts) and
# the PodDisruptionBudgets. Optional: a server without the API (policy/v1 is 1.21+) gets
# a note, not an error.
AUDIT_LISTS: tuple[ListEntry, ...] = LISTS + (
    ("Deployment", "apps", "list_deployment_for_all_namespaces",
     "deployments in all namespaces"),
    ("DaemonSet", "apps", "list_daemon_set_for_all_namespaces", "daemonsets in all namespaces"),
    ("Job", "batch", "list_job_for_all_namespaces", "jobs in all namespaces"),
    ("PodDisruptionBudget", "policy", "list_pod_disruption_budget_for_all_namespaces",
     "poddisruptionbudgets in all namespaces"),
)
OPTIONAL_GROUPS = ("batch", "policy")


READERS = 4      # lists in flight at once after the nodes (urllib3's pool holds 10)


def read_cluster(conn: Connection, prune: Pruner | None = None, page_size: int = PAGE_SIZE,
                 lists: Sequence[ListEntry] = LISTS, readers: int = READERS
                 ) -> tuple[list[tuple[JsonObject, str]], list[str]]:
    """([(object, source)], notes) for the planner. PRUNE(object) drops, in
    place, what the planner never reads, page by page, so memory follows what
    is used. LISTS: what to list (``AUDIT_LISTS`` for the audit).

    The first list (the nodes) fixes the resourceVersion; the others are then
    read READERS at a time, so a command waits for about one round trip per
    READERS lists, not one per list. Objects and notes keep LISTS' order."""
    apis = {"core": conn.core(), "apps": conn.apps()}
    for group in {g for _k, g, _m, _w in lists} - set(apis):
        apis[group] = getattr(conn, group)()
    source = "cluster %s" % conn.where
    kind, group, method, what = lists[0]
    items, version = list_json(conn, getattr(apis[group], method), kind, what, page_size, prune)
    results: list[ListRead] = [(items, None)]
    rest = [_reader(conn, apis, entry, version, page_size, prune) for entry in lists[1:]]
    if readers > 1 and len(rest) > 1:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=readers) as pool:
            futures = [pool.submit(read) for read in rest]
            results += [f.result() for f in futures]    # the first failure, in order
    else:
        results += [read() for read in rest]
    objects: list[tuple[JsonObject, str]] = []
    notes: list[str] = []
    for items, note in results:
        objects.extend((item, source) for item in items)
        if note:
            notes.append(note)
    return objects, notes


def _reader(conn: Connection, apis: dict[str, Any], entry: ListEntry, version: str | None,
            page_size: int, prune: Pruner | None) -> Callable[[], ListRead]:
    """A function reading one list: (items, note or None)."""
    kind, group, method, what = entry
    call = getattr(apis[group], method)

    def read() -> ListRead:
        if group in OPTIONAL_GROUPS:
            try:
                return list_json(conn, call, kind, what, page_size, prune)[0], None
            except KubeError as e:
                if e.status != 404:
                    raise
                return [], "%s were not read: the server does not serve them" % what
        try:
            return list_json(conn, call, kind, what, page_size, prune,
                             resource_version=version,
                             resource_version_match="Exact")[0], None
        except KubeError as e:
            if e.status not in (400, 410):   # version gone, or field unknown
                raise
            note = ("%s were read at the latest resourceVersion, not at the nodes' %s (%s)"
                    % (what, version, str(e).split(": ", 1)[-1]))
            return list_json(conn, call, kind, what, page_size, prune)[0], note
    return read
