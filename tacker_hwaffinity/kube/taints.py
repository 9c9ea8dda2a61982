"""A taint added to or lifted from a Node by a JSON patch that first tests the node is as
last read.

``spec.taints`` has no merge key (a strategic merge patch replaces the whole list), so
a read-modify-write could drop a taint another component added meanwhile. ``lift`` names
the element it removes by index and tests, in the same atomic request, that the element
at that index is the taint as last read and that the node is the same object (its uid);
``add`` tests the node's uid and resourceVersion (nothing of it changed since the read).
Anything else makes the server refuse the patch (HTTP 422), and the caller judges the
node again from a fresher read.
"""
from collections.abc import Mapping, Sequence
from typing import Any

from tacker_hwaffinity.kube.client import Connection
from tacker_hwaffinity.kube.lists import api_error

CONFLICT = 422      # a "test" operation of the patch failed: the node changed


def add(conn: Connection, node: str, uid: str, resource_version: str,
        taints: Sequence[Any] | None, taint: Mapping[str, str]) -> bool:
    """Add TAINT to NODE (uid UID, resourceVersion RESOURCE_VERSION) whose spec.taints
    read TAINTS (None: none). False when the node changed since (nothing done)."""
    value: Any = dict(taint)
    path = "/spec/taints/-"
    if taints is None:
        path, value = "/spec/taints", [value]
    return _patch(conn, node, [
        {"op": "test", "path": "/metadata/uid", "value": uid},
        {"op": "test", "path": "/metadata/resourceVersion", "value": resource_version},
        {"op": "add", "path": path, "value": value}])


def lift(conn: Connection, node: str, uid: str, taints: Sequence[Any], key: str) -> bool:
    """Remove the taint KEY from NODE (uid UID) whose spec.taints read TAINTS. False when
    TAINTS has no such taint or the node changed since (nothing done); KubeError on any
    other failure."""
    index = next((i for i, t in enumerate(taints)
                  if isinstance(t, dict) and t.get("key") == key), None)
    if index is None:
        return False
    return _patch(conn, node, [
        {"op": "test", "path": "/metadata/uid", "value": uid},
        {"op": "test", "path": "/spec/taints/%d" % index, "value": taints[index]},
        {"op": "remove", "path": "/spec/taints/%d" % index}])


def _patch(conn: Connection, node: str, patch: list[dict[str, Any]]) -> bool:
    """Apply the JSON PATCH to NODE: False when one of its tests failed."""
    from kubernetes.client.exceptions import ApiException
    try:
        conn.core().patch_node(node, patch, _content_type="application/json-patch+json",
                               _preload_content=False, _request_timeout=conn.timeout())
    except ApiException as e:
        if e.status == CONFLICT:
            return False
        raise api_error(conn, "patch", "node %s" % node, e) from None
    except Exception as e:  # noqa: BLE001 - connection errors of urllib3
        raise api_error(conn, "patch", "node %s" % node, e) from None
    return True
