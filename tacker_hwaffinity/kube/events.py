"""Writes a component makes about objects it acts on: core/v1 Events (what
``kubectl describe`` shows) and annotations on a Pod.

Both return the server's JSON and raise :class:`KubeError` on failure; whether
a failed Event matters is the caller's decision (usually it does not).
"""
import datetime
import json
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any

from tacker_hwaffinity.kube.client import Connection, KubeError
from tacker_hwaffinity.kube.lists import api_error
from tacker_hwaffinity.objects.jsontypes import JsonObject, ReadOnlyJson

MESSAGE_LIMIT = 1024        # bytes; the API server's limit on an Event's message
NAME_LIMIT = 128            # reportingInstance, action and reason are limited to this


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _truncate(text: str, limit: int) -> str:
    """TEXT cut to LIMIT bytes of UTF-8, never inside a character."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore")


def record_event(conn: Connection, involved: ReadOnlyJson, event_type: str, reason: str,
                 message: str, component: str, action: str | None = None) -> JsonObject:
    """Create a core/v1 Event about INVOLVED (an object dict) and return it.

    EVENT_TYPE is "Normal" or "Warning"; COMPONENT fills ``source.component``
    and ``reportingComponent``; ACTION (default: REASON) is required by the
    server once ``eventTime`` is set. The name is ``<object name>.<hex
    nanoseconds>``, as client-go's recorder names them. A cluster-scoped
    object's Events go to kube-system (required for Events with eventTime).
    """
    meta = involved.get("metadata") or {}
    # an Event with eventTime about a cluster-scoped object (a Node) must live in
    # kube-system: the API server's event validation refuses any other namespace
    namespace = meta.get("namespace") or "kube-system"
    now = _now()
    if now.microsecond == 0:
        # The client may re-serialise eventTime with isoformat(), which drops a
        # zero fraction, and MicroTime must have one.
        now = now.replace(microsecond=1)
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    ref = {"apiVersion": involved.get("apiVersion"), "kind": involved.get("kind"),
           "namespace": meta.get("namespace"), "name": meta.get("name"),
           "uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}
    body = {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "%s.%x" % (meta.get("name"), time.time_ns()),
                     "namespace": namespace},
        "involvedObject": {k: v for k, v in ref.items() if v},
        "type": event_type,
        "reason": _truncate(reason, NAME_LIMIT),
        "message": _truncate(message, MESSAGE_LIMIT),
        "action": _truncate(action or reason, NAME_LIMIT),
        "source": {"component": component, "host": socket.gethostname()},
        "reportingComponent": component,
        "reportingInstance": _truncate("%s-%s" % (component, socket.gethostname()), NAME_LIMIT),
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
        "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
    }
    what = "events in namespace %s" % namespace
    return _call(conn, "create", what, conn.core().create_namespaced_event, namespace, body)


def patch_annotations(conn: Connection, namespace: str, name: str,
                      annotations: Mapping[str, str | None]) -> JsonObject:
    """One JSON merge patch of the Pod's ``metadata.annotations`` (a value of
    None removes that key); the patched Pod."""
    body = {"metadata": {"annotations": dict(annotations)}}
    return _call(conn, "patch", "pod %s/%s" % (namespace, name),
                 conn.core().patch_namespaced_pod, name, namespace, body,
                 _content_type="application/merge-patch+json")


def _call(conn: Connection, verb: str, what: str, method: Callable[..., Any], *args: Any,
          **kwargs: Any) -> JsonObject:
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError
    try:
        response = method(*args, _preload_content=False, _request_timeout=conn.timeout(),
                          **kwargs)
        answer: JsonObject = json.loads(response.data)
        return answer
    except (ApiException, HTTPError, OSError) as e:
        raise api_error(conn, verb, what, e)
    except ValueError as e:
        raise KubeError("API server %s: the answer to %s %s is not JSON (%s)"
                        % (conn.where, verb, what, e))
