"""Node labels by server-side apply: the API-side twin of ``labeling.kubectl.apply_labels``.

The same field manager as the MgmtDriver's ``kubectl apply --server-side`` (and
``--force-conflicts``), so the controller and the LCM hooks own the same label
fields and never fight: whichever writes last writes the same values.
"""
import json
from collections.abc import Mapping

from tacker_hwaffinity.kube.client import Connection
from tacker_hwaffinity.kube.lists import api_error
from tacker_hwaffinity.objects.jsontypes import JsonObject
from tacker_hwaffinity.constants import FIELD_MANAGER


def apply_node_labels(conn: Connection, node: str, labels: Mapping[str, str],
                      uid: str | None = None, field_manager: str = FIELD_MANAGER
                      ) -> JsonObject:
    """Apply LABELS {key: value} to NODE (one request); the node as the server returns it.

    UID (the node's, as last seen) makes the apply a precondition on that very node: an
    apply to a node that is gone would otherwise create a Node object of that name."""
    from kubernetes.client.exceptions import ApiException
    meta: JsonObject = {"name": node, "labels": dict(labels)}
    if uid:
        meta["uid"] = uid
    body = {"apiVersion": "v1", "kind": "Node", "metadata": meta}
    try:
        resp = conn.core().patch_node(
            node, body, field_manager=field_manager, force=True,
            _content_type="application/apply-patch+yaml", _preload_content=False,
            _request_timeout=conn.timeout())
    except ApiException as e:
        raise api_error(conn, "label", "node %s" % node, e) from None
    except Exception as e:  # noqa: BLE001 - connection errors of urllib3
        raise api_error(conn, "label", "node %s" % node, e) from None
    applied: JsonObject = json.loads(resp.data)
    return applied
