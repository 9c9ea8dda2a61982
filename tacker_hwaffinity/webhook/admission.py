"""The admission webhooks' pure core: AdmissionReview in, AdmissionReview out.

``handle(kind, body)`` answers one ``admission.k8s.io/v1`` AdmissionReview (v1beta1
is answered the same way) with the HTTP status and body to send, and the outcome the
metrics count; ``validate`` and ``mutate`` take the review's ``request`` and return its
``response`` and outcome. No I/O.

Validating (Pods and the pod templates of Deployment, ReplicaSet, StatefulSet,
DaemonSet, ReplicationController, Job and CronJob):

* The denial-of-service guard of the affinity design (seed ``001``, implementation
  plan item 4): a *required* pod anti-affinity term over all namespaces may only use a
  topology key of ``allowed_keys`` (default ``kubernetes.io/hostname``). "All
  namespaces" is what its ``namespaceSelector`` selects, however spelt: every namespace
  but those it excludes, namespaces created later included (``webhook.namespaces``).
  Checked in ``spec.affinity`` and in the two ``hwaffinity.io/`` annotations; every
  offending term is named by its path, a malformed ``namespaceSelector`` by its field.
* A malformed ``hwaffinity.io/pod-affinity`` or ``hwaffinity.io/required-during-
  execution`` annotation is refused (403) with the engine's message: JSON nested
  deeper than ``objects.jsondepth.MAX_DEPTH`` and Gt/Lt numbers past int64 included.
* A pod-carrying object whose pod (template) has a non-mapping where a mapping
  belongs (``spec``, ``metadata``, ``affinity``, ...) is refused, naming the field.
  (The API server validates objects before validating webhooks see them, so this
  only happens with hand-made reviews.)
* ``hwaffinity.io/numa`` is the node agent's record of the CPUs it granted: a Pod
  CREATE that carries it is refused, and so is a Pod UPDATE that changes it (adds,
  alters or removes it) by anyone but the agent's ServiceAccount (``agent_user``);
  a pod template that carries it is refused as well (its pods would be).
* With the extender (``marking.Marking``): a Pod that carries the annotations but not
  the extender's resource is refused, and so is an UPDATE that makes a pending,
  unmarked pod one the extender must see.
* UPDATE refuses only problems that ``oldObject`` did not have already: objects
  created before the webhook existed can still be scaled, relabelled and have
  their finalizers removed.
* An unexpected exception is a denial with code 500, never a traceback in the
  answer (it is logged, and counted as the outcome ``error``). A body that
  nests deeper than ``objects.jsondepth.MAX_DEPTH`` is refused (400) before decoding.

Mutating (Pod CREATE only, see ``patches``): the RequiredDuringExecution terms the
scheduler understands are copied into ``spec.affinity``, and a pod the extender must
see gets its resource (``marking``). A malformed annotation or
an unpatchable pod gets no patch, and any failure is "allowed, no patch": the
validating webhook is the one that reports what is wrong (an unexpected exception is
logged and counted as the outcome ``error``).
"""
import base64
import json
import logging
import typing
from collections.abc import Iterable
from typing import Any

from tacker_hwaffinity.constants import DEFAULT_AGENT_SERVICE_ACCOUNT, HOSTNAME, NUMA_ANNOTATION
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.numa import affinity as numa_affinity
from tacker_hwaffinity.objects.jsontypes import JsonObject, ReadOnlyJson
from tacker_hwaffinity.objects import jsondepth
from tacker_hwaffinity.scheduling import annotations
from tacker_hwaffinity.scheduling.selectors import LabelSelector
from tacker_hwaffinity.scheduling.terms import RawTerm, parse_namespace_selector
from tacker_hwaffinity.webhook import answer, namespaces, nodes, patches, podcache
from tacker_hwaffinity.webhook.answer import Answer
from tacker_hwaffinity.webhook.marking import Marking

API_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
DEFAULT_ALLOWED_KEYS = frozenset({HOSTNAME})
NO_OBJECT_OPERATIONS = ("DELETE", "CONNECT")
_TEMPLATE = ("spec", "template")
# kind: (API groups, path of the pod or pod template in the object)
POD_PATHS = {
    "Pod": (("",), ()),
    "ReplicationController": (("",), _TEMPLATE),
    "Deployment": (("apps", "extensions"), _TEMPLATE),
    "ReplicaSet": (("apps", "extensions"), _TEMPLATE),
    "DaemonSet": (("apps", "extensions"), _TEMPLATE),
    "StatefulSet": (("apps",), _TEMPLATE),
    "Job": (("batch",), _TEMPLATE),
    "CronJob": (("batch",), ("spec", "jobTemplate", "spec", "template")),
}
_ANNOTATIONS = (annotations.POD_AFFINITY, annotations.REQUIRED_DURING_EXECUTION)
LOG = logging.getLogger(__name__)
_WHY = "it would let one tenant's pods keep every other tenant's off whole domains"


def handle(kind: str, body: bytes | str, allowed_keys: Iterable[str] = DEFAULT_ALLOWED_KEYS,
           agent_user: str | None = DEFAULT_AGENT_SERVICE_ACCOUNT,
           marking: Marking | None = None) -> Answer:
    """The ``webhook.answer.Answer`` (HTTP status, response body, outcome) for the
    AdmissionReview BODY (bytes) sent to the ``validate``, ``mutate`` or ``register-node``
    webhook (KIND).
    MARKING: the extender's ``marking.Marking`` (None: no extender, no mark).
    A body that is no AdmissionReview with a request gets 400 and ``{"error": ...}``."""
    if kind not in ("validate", "mutate", "register-node"):
        return _error(404, "unknown webhook %r (expected validate, mutate or register-node)"
                      % (kind,))
    depth = jsondepth.nesting(body) if isinstance(body, bytes) else None
    if depth is not None:
        return _error(400, "the body nests %d levels deep, over the limit of %d"
                      % (depth, jsondepth.MAX_DEPTH))
    try:
        review = json.loads(body)
    except (ValueError, TypeError, RecursionError) as e:
        return _error(400, "the body is not JSON: %s" % (str(e)[:200] or type(e).__name__))
    if (not isinstance(review, dict) or review.get("kind") != "AdmissionReview"
            or review.get("apiVersion") not in API_VERSIONS):
        return _error(400, "expected an AdmissionReview (apiVersion %s, kind AdmissionReview)"
                      % API_VERSIONS[0])
    request = review.get("request")
    if not isinstance(request, dict):
        return _error(400, "the AdmissionReview has no request")
    if not isinstance(request.get("uid"), str) or not request["uid"]:
        return _error(400, "the AdmissionReview's request has no uid")
    if kind == "validate":
        response, outcome = validate(request, allowed_keys, agent_user, marking)
    elif kind == "mutate":
        response, outcome = mutate(request, marking)
    else:
        response, outcome = register_node(request)
    return Answer(200, _json({"apiVersion": review["apiVersion"], "kind": "AdmissionReview",
                              "response": response}), outcome)


class Verdict(typing.NamedTuple):
    """A webhook's AdmissionResponse (a dict) and its outcome (``webhook.answer``)."""

    response: JsonObject
    outcome: str


def validate(request: ReadOnlyJson, allowed_keys: Iterable[str] | str = DEFAULT_ALLOWED_KEYS,
             agent_user: str | None = DEFAULT_AGENT_SERVICE_ACCOUNT,
             marking: Marking | None = None) -> Verdict:
    """The :class:`Verdict` of the validating webhook on REQUEST; ALLOWED_KEYS (an
    iterable of topology keys, or one key) are those allowed over all namespaces;
    AGENT_USER is the user name of the node agent, the only one that may change a
    pod's ``hwaffinity.io/numa``; MARKING (a ``marking.Marking`` or None) refuses what
    would place a pod the extender must see without it."""
    uid = request.get("uid") if isinstance(request, dict) else None
    try:
        if isinstance(allowed_keys, str):
            allowed_keys = (allowed_keys,)
        message = _denial(request, frozenset(allowed_keys), agent_user, marking)
    except Exception as e:  # a webhook answers, it does not crash (logged, counted)
        LOG.exception("validating webhook: internal error on request %s", uid)
        return Verdict(_deny(uid, "internal error in the hwaffinity validating webhook (%s)"
                             % type(e).__name__, 500, "InternalError"), answer.ERROR)
    if message is None:
        allowed: JsonObject = {"uid": uid, "allowed": True}
        warning = _marking_warning(request, marking)
        if warning is not None:
            allowed["warnings"] = [warning]
        return Verdict(allowed, answer.ALLOWED)
    return Verdict(_deny(uid, message), answer.DENIED)


def _marking_warning(request: ReadOnlyJson, marking: Marking | None) -> str | None:
    """MARKING's warning for the Pod CREATE REQUEST, or None."""
    obj = request.get("object")
    if (marking is None or request.get("operation") != "CREATE" or not isinstance(obj, dict)
            or pod_path(request, obj) != ()):
        return None
    return marking.warning(obj)


def mutate(request: ReadOnlyJson, marking: Marking | None = None) -> Verdict:
    """The :class:`Verdict` of the mutating webhook on REQUEST: a JSON Patch copying
    the pod's RequiredDuringExecution terms into ``spec.affinity`` and, with MARKING (a
    ``marking.Marking``), adding the extender's resource to a pod it must see; or none."""
    uid = request.get("uid") if isinstance(request, dict) else None
    try:
        ops = _mutation(request, marking)
    except Exception:  # allowed unpatched, the validating webhook reports (logged, counted)
        LOG.exception("mutating webhook: internal error on request %s; allowed unpatched",
                      uid)
        return Verdict({"uid": uid, "allowed": True}, answer.ERROR)
    return _patched(uid, ops)


def register_node(request: ReadOnlyJson) -> Verdict:
    """The :class:`Verdict` of the node-registration webhook on REQUEST: a Node CREATE
    gets the host-unknown taint (``webhook.nodes``)."""
    uid = request.get("uid") if isinstance(request, dict) else None
    try:
        ops = nodes.registration_patch(request)
    except Exception as e:  # refused: failurePolicy Fail, the kubelet registers again
        LOG.exception("node-registration webhook: internal error on request %s", uid)
        return Verdict(_deny(uid, "internal error in the hwaffinity node-registration "
                             "webhook (%s)" % type(e).__name__, 500, "InternalError"),
                       answer.ERROR)
    return _patched(uid, ops)


def _patched(uid: object, ops: list[patches.Operation]) -> Verdict:
    """Allowed, with the JSON Patch OPS when there are any."""
    if not ops:
        return Verdict({"uid": uid, "allowed": True}, answer.ALLOWED)
    patch = base64.b64encode(_json(ops)).decode("ascii")
    return Verdict({"uid": uid, "allowed": True, "patchType": "JSONPatch", "patch": patch},
                   answer.PATCHED)


def _json(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _error(status: int, message: str) -> Answer:
    return Answer(status, _json({"error": message}), answer.ERROR)


def _deny(uid: object, message: str, code: int = 403, reason: str = "Forbidden") -> JsonObject:
    return {"uid": uid, "allowed": False,
            "status": {"code": code, "reason": reason, "message": message}}


def _kind(request: ReadOnlyJson, obj: object) -> tuple[str | None, str | None]:
    """(kind, API group or None): the request's ``kind``, else the object's."""
    gvk = request.get("kind")
    kind = group = None
    if isinstance(gvk, dict) and isinstance(gvk.get("kind"), str):
        kind, group = gvk["kind"], gvk.get("group")
    elif isinstance(obj, dict) and isinstance(obj.get("kind"), str):
        kind = obj["kind"]
    if group is None and isinstance(obj, dict) and isinstance(obj.get("apiVersion"), str):
        group = obj["apiVersion"].rpartition("/")[0]
    return kind, group


def pod_path(request: ReadOnlyJson, obj: object) -> tuple[str, ...] | None:
    """The path (tuple of keys) of the pod or pod template in OBJ, or None when the
    request's kind carries none. The kind is the request's ``kind`` (falling back on
    the object's ``apiVersion``/``kind``); a known group is checked."""
    kind, group = _kind(request, obj)
    entry = POD_PATHS.get(kind) if kind is not None else None
    if entry is None or (group is not None and group not in entry[0]):
        return None
    return entry[1]


def _name(request: ReadOnlyJson, kind: str | None, obj: object) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    name = meta.get("name") or request.get("name")
    if not name and meta.get("generateName"):
        name = "%s<generated>" % meta["generateName"]
    return "%s %s" % (kind, name or "<unnamed>")


def _rule(allowed: Iterable[str]) -> str:
    keys = ", ".join(sorted(allowed))
    return "across all namespaces %s (%s)" % (
        "only %s may be used" % keys if keys else "no topologyKey may be used", _WHY)


def _denial(request: ReadOnlyJson, allowed: frozenset[str],
            agent_user: str | None = DEFAULT_AGENT_SERVICE_ACCOUNT,
            marking: Marking | None = None) -> str | None:
    """The denial message for REQUEST, or None to allow it."""
    if request.get("operation") in NO_OBJECT_OPERATIONS:
        return None
    obj = request.get("object")
    path = pod_path(request, obj)
    if obj is None or path is None:
        return None
    errors, offences = problems(obj, path, allowed)
    old = request.get("oldObject")
    update = request.get("operation") == "UPDATE" and old is not None
    if update:
        old_errors, old_offences = problems(old, path, allowed)
        errors = [e for e in errors if e not in old_errors]
        offences = [o for o in offences if not any(o.same_term(p) for p in old_offences)]
    errors = _numa_record(request, obj, old if update else None, path, agent_user) + errors
    if marking is not None and path == () and not errors:
        unmarked = marking.problem(request, obj, old if update else None)
        if unmarked is not None:
            errors.append(unmarked)
    if not errors and not offences:
        return None
    message = "%s: %s" % (_name(request, _kind(request, obj)[0], obj),
                          "; ".join(errors + [str(o) for o in offences]))
    return message + ": " + _rule(allowed) if offences else message


def _numa_value(obj: object, path: tuple[str, ...]) -> tuple[bool, Any]:
    """(present, value) of ``hwaffinity.io/numa`` on the pod (template) at PATH in OBJ;
    (False, None) where the object is malformed (``problems`` names that)."""
    node: Any = obj
    for key in path + ("metadata", "annotations"):
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, dict) or NUMA_ANNOTATION not in node:
        return False, None
    return True, node[NUMA_ANNOTATION]


def _numa_record(request: ReadOnlyJson, obj: object, old: object, path: tuple[str, ...],
                 agent_user: str | None) -> list[str]:
    """[message] when REQUEST writes the node agent's record ``hwaffinity.io/numa`` and
    may not: on a Pod CREATE, on a Pod UPDATE that changes it by anyone but AGENT_USER,
    and on a pod template that did not carry it already (OLD: the UPDATE's oldObject)."""
    field = "%s[%s]" % (_field(".".join(path), "metadata.annotations"), NUMA_ANNOTATION)
    present, value = _numa_value(obj, path)
    was = _numa_value(old, path) if old is not None else (False, None)
    why = ("it records the CPUs the hwaffinity node agent granted, and only the agent (%s) "
           "may write it" % (agent_user or "none configured"))
    if path:
        if present and not was[0]:
            return ["%s: a pod template may not carry this annotation: %s" % (field, why)]
        return []
    if old is None:
        if present:
            return ["%s: a pod may not be created with this annotation: %s" % (field, why)]
        return []
    user = request.get("userInfo")
    user = user.get("username") if isinstance(user, dict) else None
    if (present, value) != was and (not agent_user or user != agent_user):
        return ["%s: changed by %s: %s" % (field, user or "an unnamed user", why)]
    return []


def _field(base: str, rest: str) -> str:
    return "%s.%s" % (base, rest) if base else rest


def _mapping(parent: ReadOnlyJson, key: str, field: str) -> ReadOnlyJson:
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError("expected a mapping", field=field)
    return value


class Offence(typing.NamedTuple):
    """A required anti-affinity term at FIELD over all namespaces with the topology KEY;
    EMPTY: its namespaceSelector has no requirement at all."""

    field: str
    key: object
    empty: bool

    def same_term(self, other: "Offence") -> bool:
        """Is OTHER this offence at the same term, however its selector is spelt?"""
        return (self.field, self.key) == (other.field, other.key)

    def __str__(self) -> str:
        selector = ("namespaceSelector: {}" if self.empty else
                    "its namespaceSelector selects every namespace but those it excludes")
        return ("%s: required anti-affinity over all namespaces (%s) with topologyKey %s "
                "is refused" % (self.field, selector, json.dumps(self.key)))


def _offending(field: str, key: object, ns_selector: LabelSelector,
               allowed: frozenset[str]) -> list[Offence]:
    """[Offence] when the term at FIELD (topology KEY, parsed NS_SELECTOR) is refused."""
    allowed_key = isinstance(key, str) and key in allowed
    if allowed_key or not namespaces.spans_all_namespaces(ns_selector):
        return []
    return [Offence(field, key, ns_selector.everything)]


def _pod_parts(obj: object, path: tuple[str, ...], base: str
               ) -> tuple[ReadOnlyJson, ReadOnlyJson]:
    """(metadata, spec) of the pod (template) at PATH in OBJ, BASE its field; InputError
    naming the field that is not a mapping."""
    if not isinstance(obj, dict):
        raise InputError("expected a mapping", field="object")
    pod: ReadOnlyJson = obj
    for i, key in enumerate(path):
        pod = _mapping(pod, key, ".".join(path[:i + 1]))
    meta = _mapping(pod, "metadata", _field(base, "metadata"))
    spec = _mapping(pod, "spec", _field(base, "spec"))
    return meta, spec


def _spec_offences(spec: ReadOnlyJson, base: str, allowed: frozenset[str],
                   offences: list[Offence]) -> None:
    """Add to OFFENCES the required anti-affinity terms of pod SPEC (at BASE) over all
    namespaces whose topology key is not in ALLOWED; InputError for a malformed term
    (after adding the offences of the terms before it)."""
    field = _field(base, "spec.affinity.podAntiAffinity." + annotations.REQUIRED)
    affinity = _mapping(spec, "affinity", _field(base, "spec.affinity"))
    anti = _mapping(affinity, "podAntiAffinity", _field(base, "spec.affinity.podAntiAffinity"))
    terms = anti.get(annotations.REQUIRED) or []
    if not isinstance(terms, list):
        raise InputError("expected a list of terms", field=field)
    for i, t in enumerate(terms):
        at = "%s[%d]" % (field, i)
        if not isinstance(t, dict):
            raise InputError("expected a mapping", field=at)
        ns_selector = parse_namespace_selector(t.get("namespaceSelector"),
                                               at + ".namespaceSelector")
        offences += _offending(at, t.get("topologyKey"), ns_selector, allowed)


def _annotation_offences(notes: ReadOnlyJson, prefix: str, allowed: frozenset[str],
                         errors: list[str], offences: list[Offence]) -> None:
    """Add to ERRORS the malformed scheduling annotations in NOTES (at PREFIX), and to
    OFFENCES their required anti-affinity terms over all namespaces whose topology key
    is not in ALLOWED, and to ERRORS their pod terms over the extender's limits."""
    terms: list[RawTerm] = []
    for name in _ANNOTATIONS:
        if name not in notes:
            continue
        try:
            found = annotations.scheduling_terms({name: notes[name]}, prefix)
        except InputError as e:
            errors.append(str(e))
            continue
        if found is None:       # null: no annotation (the API server never sends one)
            continue
        terms += [t for ts in found.pod_terms.values() for t in ts]
        for t in found.pod_terms["required_anti"]:
            offences += _offending(t.field, t.topology_key, t.ns_selector, allowed)
    try:
        podcache.check_limits(terms)
    except InputError as e:
        errors.append(str(e))


def problems(obj: object, path: tuple[str, ...], allowed: frozenset[str]
             ) -> tuple[list[str], list[Offence]]:
    """(errors, offences) of the pod (template) at PATH in OBJ: messages naming the
    field of malformed input, and the :class:`Offence` of each required anti-affinity
    term over all namespaces whose topology key is not in ALLOWED."""
    errors: list[str] = []
    offences: list[Offence] = []
    base = ".".join(path)
    try:
        meta, spec = _pod_parts(obj, path, base)
    except InputError as e:
        return [str(e)], []
    try:
        _spec_offences(spec, base, allowed, offences)
    except InputError as e:
        errors.append(str(e))
    prefix = _field(base, "metadata.annotations")
    try:
        notes = _mapping(meta, "annotations", prefix)
    except InputError as e:
        return errors + [str(e)], offences
    _annotation_offences(notes, prefix, allowed, errors, offences)
    try:    # the node agent's reader: what it would refuse, refused here alike
        numa_affinity.annotation_affinities(notes, "", prefix)
    except InputError as e:
        errors.append(str(e))
    return errors, offences


def _mutation(request: ReadOnlyJson, marking: Marking | None) -> list[patches.Operation]:
    """The JSON Patch operations for a Pod CREATE REQUEST; [] for no change."""
    if request.get("operation") != "CREATE" or request.get("subResource"):
        return []
    obj = request.get("object")
    if not isinstance(obj, dict) or pod_path(request, obj) != ():
        return []
    ops = patches.pod_patch(obj)
    if marking is not None:
        try:
            ops += marking.patch(obj, request.get("namespace"))
        except patches.Unpatchable:     # the API server refuses such a pod anyway
            pass
    return ops
