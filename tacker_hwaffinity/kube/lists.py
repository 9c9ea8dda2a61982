"""Paged lists as plain JSON, the way kubectl reads them.

Items come back as the API server's JSON (dicts, exactly what
``kubectl get -o json`` prints, with ``kind``/``apiVersion`` filled in),
never as client model objects: decoding tens of thousands of pods into
models costs more than the transfer. A page whose continue token expired
(410 Gone) restarts the list from the beginning, as client-go's pager does.
"""
import json
from collections.abc import Callable
from typing import Any

from tacker_hwaffinity.kube.client import Connection, KubeError
from tacker_hwaffinity.objects.jsontypes import JsonObject, JsonValue, Pruner

PAGE_SIZE = 500          # kubectl's default --chunk-size
RELISTS = 3              # restarts after an expired continue token


def api_error(conn: Connection, verb: str, what: str, e: BaseException) -> KubeError:
    """KubeError for an exception raised by a call of the client."""
    status = getattr(e, "status", None)
    if status == 401:
        return KubeError("API server %s: unauthorized: the credentials were refused while "
                         "trying to %s %s" % (conn.where, verb, what), status)
    if status == 403:
        return KubeError("API server %s: forbidden to %s %s: the identity needs %s on them "
                         "(deploy/ has each component's ClusterRole)" % (conn.where, verb,
                                                                         what, verb), status)
    if status is not None:
        reason = _status_message(e) or getattr(e, "reason", "") or "error"
        return KubeError("API server %s: cannot %s %s: HTTP %s: %s"
                         % (conn.where, verb, what, status, reason), status)
    return KubeError("API server %s: unreachable while trying to %s %s (%s)"
                     % (conn.where, verb, what, _reason(e)))


def _status_message(e: Any) -> JsonValue:
    """The message of the Status in the body of E (the client's untyped ApiException)."""
    try:
        message: JsonValue = json.loads(e.body).get("message")
        return message
    except Exception:  # noqa: BLE001 - the body is not a Status
        return None


def _reason(e: BaseException) -> str:
    inner = getattr(e, "reason", None)   # urllib3's MaxRetryError wraps the cause
    text = str(inner if inner is not None else e).strip() or type(e).__name__
    return text.splitlines()[0]


def list_json(conn: Connection, call: Callable[..., Any], kind: str, what: str,
              page_size: int = PAGE_SIZE, each: Pruner | None = None, **params: Any
              ) -> tuple[list[JsonObject], str | None]:
    """(items, resourceVersion) of every page of CALL (a ``CoreV1Api`` list
    method). EACH(item), when given, runs on every item as its page arrives
    (to prune it in place). PARAMS go to each request (``field_selector``,
    ``resource_version``, ``resource_version_match`` ...)."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError
    for _ in range(RELISTS + 1):
        items: list[JsonObject] = []
        token: str | None = None
        version: str | None = None
        try:
            while True:
                kwargs = dict(params, limit=page_size, _preload_content=False,
                              _request_timeout=conn.timeout())
                if token:
                    kwargs["_continue"] = token
                    # the token pins the version; both may not be given
                    kwargs.pop("resource_version", None)
                    kwargs.pop("resource_version_match", None)
                response = call(**kwargs)
                page = json.loads(response.data)
                # the list's apiVersion (apps/v1 for ReplicaSets): its items carry none
                group_version = page.get("apiVersion") or "v1"
                for item in page.get("items") or []:
                    item.setdefault("apiVersion", group_version)
                    item.setdefault("kind", kind)
                    if each is not None:
                        each(item)
                    items.append(item)
                meta = page.get("metadata") or {}
                version = version or meta.get("resourceVersion")
                token = meta.get("continue")
                if not token:
                    return items, version
        except ApiException as e:
            if e.status == 410 and token:
                continue          # the continue token expired: list again
            raise api_error(conn, "list", what, e)
        except (HTTPError, OSError) as e:
            raise api_error(conn, "list", what, e)
        except ValueError as e:
            raise KubeError("API server %s: the list of %s is not JSON (%s)"
                            % (conn.where, what, e))
    raise KubeError("API server %s: the list of %s kept expiring while paging (%d tries)"
                    % (conn.where, what, RELISTS + 1))
