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
  budget), and ``retry_after`` the server's retryAfterSeconds when it sends
  one (a 1.20 server does not);
- ``gone`` (404, or 409 on the ``uid`` precondition): that pod no longer exists;
- ``refused``: the budgets rule it out, not just now (500 "more than one
  PodDisruptionBudget", or 403 from a budget with negative disruptionsAllowed).

Anything else (unreachable, unauthorized, RBAC's 403, other 5xx) raises
:class:`KubeError`.

Eviction went GA as ``policy/v1`` in Kubernetes 1.22; 1.20 and 1.21 know only
``policy/v1beta1`` and answer a v1 body with 400 ``no kind "Eviction" is
registered for version "policy/v1"`` (before looking the pod up). v1 is
tried first, and a connection that got that answer sends v1beta1 from then on.
"""
import collections
import json
import weakref

from tacker_hwaffinity.kube.lists import api_error

Eviction = collections.namedtuple("Eviction", "outcome message retry_after")

VERSIONS = ("policy/v1", "policy/v1beta1")
_NOT_SERVED = 'no kind "Eviction" is registered for version "policy/v1"'
_TWO_BUDGETS = "more than one PodDisruptionBudget"

_v1beta1_only = weakref.WeakKeyDictionary()     # connections whose server has no v1 Eviction


def evict(conn, namespace, name, uid=None, dry_run=False):
    """Ask the API server to evict pod NAMESPACE/NAME; an :class:`Eviction`.

    UID, when given, is a precondition: a pod recreated under the same name
    is left alone (``gone``). DRY_RUN asks the server to decide without
    deleting anything.
    """
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError
    what = "pod %s/%s" % (namespace, name)
    options = {}
    if dry_run:
        options["dryRun"] = ["All"]
    if uid:
        options["preconditions"] = {"uid": uid}
    versions = VERSIONS[1:] if _v1beta1_only.get(conn) else VERSIONS
    for version in versions:
        body = {"apiVersion": version, "kind": "Eviction",
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


def _decision(conn, e, status, uid, what):
    """The Eviction a refusal means, or raise KubeError."""
    message = _message(status) or what
    details = status.get("details") or {}
    kind = (details.get("kind") or "").lower()
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


def _status(e):
    try:
        status = json.loads(e.body)
    except Exception:  # noqa: BLE001 - not a Status
        return {}
    return status if isinstance(status, dict) else {}


def _message(status):
    """The Status message followed by its causes' (the budget's own reason)."""
    parts = [status.get("message") or ""]
    for cause in (status.get("details") or {}).get("causes") or []:
        text = cause.get("message")
        if text and text not in parts:
            parts.append(text)
    return " ".join(p.strip() for p in parts if p and p.strip())


def _retry_after(e, details):
    seconds = details.get("retryAfterSeconds")
    if seconds is None:
        header = (getattr(e, "headers", None) or {}).get("Retry-After")
        try:
            seconds = int(header) if header is not None else None
        except ValueError:
            seconds = None
    return seconds if seconds is None or seconds >= 0 else None
