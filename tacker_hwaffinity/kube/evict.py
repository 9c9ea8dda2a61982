"""Evict a pod through the ``pods/eviction`` subresource, the way ``kubectl drain``
does: the API server deletes the pod only if no PodDisruptionBudget forbids it.

The answers that are decisions, not failures, come back as an
:class:`Eviction` outcome:

- ``evicted``: the server accepted (the pod is being deleted gracefully; with
  ``dry_run`` nothing changed);
- ``blocked`` (429): a PodDisruptionBudget forbids it now; the message is
  the server's, with the budget's own reason ("The disruption budget web
  needs 2 healthy pods and has 2 currently", or "... is still being
  processed by the server" until kube-controller-manager has seen the
  budget), and ``retry_after`` the server's retryAfterSeconds (or its
  ``Retry-After`` header: seconds or an HTTP date) when it sends one (a 1.20
  server does not), at most :data:`MAX_RETRY_AFTER_S`;
- ``gone`` (404, or 409 on the ``uid`` precondition): that pod no longer exists;
- ``refused``: the budgets rule it out, not just now (500 "more than one
  PodDisruptionBudget", or 403 from a budget with negative disruptionsAllowed).

Anything else (unreachable, unauthorized, RBAC's 403, other 5xx) raises
:class:`KubeError`. The Status body is read defensively: a field of the wrong
type (``details: null``, a list, ``retryAfterSeconds: "5"``) is read as absent
or converted, never an exception.

Eviction went GA as ``policy/v1`` in Kubernetes 1.22; 1.20 and 1.21 know only
``policy/v1beta1`` and answer a v1 body with 400 ``no kind "Eviction" is
registered for version "policy/v1"`` (before looking the pod up). v1 is
tried first, and a connection that got that answer sends v1beta1 from then on.
"""
import datetime
import email.utils
import json
import weakref
from typing import Any, NamedTuple

from tacker_hwaffinity.kube.client import Connection
from tacker_hwaffinity.kube.lists import api_error
from tacker_hwaffinity.objects.jsontypes import JsonObject, ReadOnlyJson


class Eviction(NamedTuple):
    """What the server decided (the module's docstring)."""

    outcome: str                # evicted, blocked, gone or refused
    message: str
    retry_after: int | None     # seconds, for blocked when the server says


VERSIONS = ("policy/v1", "policy/v1beta1")
_NOT_SERVED = 'no kind "Eviction" is registered for version "policy/v1"'
_TWO_BUDGETS = "more than one PodDisruptionBudget"
MAX_RETRY_AFTER_S = 60      # a longer retryAfterSeconds or Retry-After is read as this

# connections whose server has no v1 Eviction
_v1beta1_only: weakref.WeakKeyDictionary[Connection, bool] = weakref.WeakKeyDictionary()


def evict(conn: Connection, namespace: str, name: str, uid: str | None = None,
          dry_run: bool = False) -> Eviction:
    """Ask the API server to evict pod NAMESPACE/NAME; an :class:`Eviction`.

    UID, when given, is a precondition: a pod recreated under the same name
    is left alone (``gone``). DRY_RUN asks the server to decide without
    deleting anything.
    """
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError
    what = "pod %s/%s" % (namespace, name)
    options: JsonObject = {}
    if dry_run:
        options["dryRun"] = ["All"]
    if uid:
        options["preconditions"] = {"uid": uid}
    versions = VERSIONS[1:] if _v1beta1_only.get(conn) else VERSIONS
    for version in versions:
        body: JsonObject = {"apiVersion": version, "kind": "Eviction",
                "metadata": {"name": name, "namespace": namespace}}
        if options:
            body["deleteOptions"] = options
        try:
            response = conn.core().create_namespaced_pod_eviction(
                name, namespace, body, _preload_content=False, _request_timeout=conn.timeout())
            response.read()                     # all of it: the connection goes back to the pool
        except ApiException as e:
            status = _status(e)
            if version == VERSIONS[0] and e.status == 400 and \
                    _NOT_SERVED in (status.get("message") or ""):
                _v1beta1_only[conn] = True
                continue
            return _decision(conn, e, status, uid, what)
        except (HTTPError, OSError) as e:
            raise api_error(conn, "create", "pods/eviction of " + what, e) from None
        if dry_run:
            return Eviction("evicted", "dry run: %s would be evicted" % what, None)
        return Eviction("evicted", "%s evicted" % what, None)
    raise AssertionError("not reached")     # pragma: no cover


def _decision(conn: Connection, e: Any, status: ReadOnlyJson, uid: str | None, what: str
              ) -> Eviction:
    """The Eviction a refusal means, or raise KubeError."""
    message = _message(status) or what
    details = _mapping(status.get("details"))
    kind = details.get("kind")
    kind = kind.lower() if isinstance(kind, str) else ""
    if e.status == 429:
        return Eviction("blocked", message, _retry_after(e, details))
    if e.status == 404:
        return Eviction("gone", message, None)
    if e.status == 409 and uid and kind in ("pod", "pods"):
        return Eviction("gone", message, None)      # the uid precondition failed
    if e.status == 403 and kind.startswith("poddisruptionbudget"):
        return Eviction("refused", message, None)   # not RBAC's 403: that one names the pod
    if e.status == 500 and _TWO_BUDGETS in message:
        return Eviction("refused", message, None)
    raise api_error(conn, "create", "pods/eviction of " + what, e) from None


def _status(e: Any) -> ReadOnlyJson:
    try:
        status = json.loads(e.body)
    except Exception:  # noqa: BLE001 - not a Status
        return {}
    return _mapping(status)


def _mapping(value: Any) -> ReadOnlyJson:
    return value if isinstance(value, dict) else {}


def _message(status: ReadOnlyJson) -> str:
    """The Status message followed by its causes' (the budget's own reason)."""
    parts = [status.get("message")]
    causes = _mapping(status.get("details")).get("causes")
    for cause in causes if isinstance(causes, list) else ():
        text = _mapping(cause).get("message")
        if text not in parts:
            parts.append(text)
    return " ".join(p.strip() for p in parts if isinstance(p, str) and p.strip())


def _retry_after(e: Any, details: ReadOnlyJson) -> int | None:
    """Seconds to wait before evicting again (0..MAX_RETRY_AFTER_S), or None: the
    Status's retryAfterSeconds (a number or a string of digits), else the Retry-After
    header (seconds or an HTTP date)."""
    seconds = _seconds(details.get("retryAfterSeconds"))
    if seconds is None:
        headers: Any = getattr(e, "headers", None)
        header = headers.get("Retry-After") if hasattr(headers, "get") else None
        seconds = _seconds(header)
        if seconds is None and isinstance(header, str):
            seconds = _until(header)
    return None if seconds is None else min(seconds, MAX_RETRY_AFTER_S)


def _seconds(value: Any) -> int | None:
    """VALUE (an int, or a string of ASCII digits) as whole seconds >= 0, or None."""
    if isinstance(value, str):
        value = value.strip()
        if not (value.isascii() and value.isdigit()):
            return None
        return MAX_RETRY_AFTER_S + 1 if len(value) > 6 else int(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return int(min(value, MAX_RETRY_AFTER_S + 1)) if value >= 0 else None


def _until(date: str) -> int | None:
    """Seconds from now until the HTTP date DATE (0 when past), or None."""
    try:
        when = email.utils.parsedate_to_datetime(date)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    now = datetime.datetime.now(datetime.timezone.utc)
    return max(0, int((when - now).total_seconds()))
