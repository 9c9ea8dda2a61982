"""The mutating webhook's JSON Patch (RFC 6902): RequiredDuringExecution terms into
``spec.affinity``, so that kube-scheduler applies them at scheduling time, and the
extender's resource into the first container (``mark_patch``), so that kube-scheduler
sends the pod to the extender.

* Pod (anti-)affinity terms are appended to the group's
  ``requiredDuringSchedulingIgnoredDuringExecution`` as written, unless an equal
  term is there already. "Equal" is deep equality of the omitempty view (null
  values, empty lists and an empty ``matchLabels`` left out), since that is what
  survives the API server's round trip of the object.
* Node selector terms are ORed, so the pod's required node affinity becomes
  (existing) AND (annotation): one term per pair (existing s, annotation r) holding
  the requirements of both. A term without requirements matches no node: such terms
  are dropped (they add nothing to an OR). Nothing changes when every existing term
  already holds all requirements of some annotation term (the AND is the existing
  affinity then), nor when the existing affinity matches no node, nor when the
  annotation's terms are all empty (the scheduler extender applies the annotation
  in either case).
* Missing parents are created with ``add``; a member present as null is replaced by
  ``add`` too (RFC 6902 4.1).

A pod whose affinity has a shape the API server would reject (a list where a mapping
belongs, ...) raises ``Unpatchable``: the API server rejects that pod anyway.
"""
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects.jsontypes import JsonObject, JsonValue, ReadOnlyJson
from tacker_hwaffinity.scheduling import annotations
from tacker_hwaffinity.scheduling.annotations import REQUIRED

POD_GROUPS = ("podAffinity", "podAntiAffinity")
NODE_GROUP = "nodeAffinity"
NODE_TERMS = "nodeSelectorTerms"
_NODE_REQUIREMENTS = ("matchExpressions", "matchFields")

Operation: TypeAlias = JsonObject
"""One JSON Patch operation: {"op", "path", "value"}"""
Token: TypeAlias = str | int
"""One JSON Pointer reference token (an array index is an int)"""


class Unpatchable(Exception):
    """The pod's affinity is not the shape the API server accepts: no patch."""


def escape(token: Token) -> str:
    """One JSON Pointer reference token (RFC 6901): ``~`` as ``~0``, ``/`` as ``~1``."""
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer(*tokens: Token) -> str:
    """The JSON Pointer of TOKENS: ``pointer("a", "b/c")`` is ``/a/b~1c``."""
    return "".join("/" + escape(t) for t in tokens)


def _omitempty(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            v = _omitempty(v)
            if v is None or (isinstance(v, list) and not v) or (k == "matchLabels" and v == {}):
                continue
            out[k] = v
        return out
    if isinstance(value, list):
        return [_omitempty(v) for v in value]
    return value


def canon(value: JsonValue) -> str:
    """A string equal for two values that are deep-equal as the API server stores them."""
    return json.dumps(_omitempty(value), sort_keys=True, separators=(",", ":"))


def missing_terms(existing: Iterable[Any], wanted: Iterable[Any]) -> list[Any]:
    """The terms of WANTED that EXISTING lacks, in order, each once."""
    seen = {canon(t) for t in existing}
    out = []
    for t in wanted:
        c = canon(t)
        if c not in seen:
            seen.add(c)
            out.append(t)
    return out


def _requirements(term: object, name: str) -> list[Any]:
    if not isinstance(term, dict):
        raise Unpatchable("a node selector term is not a mapping")
    value = term.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise Unpatchable("%s is not a list" % name)
    return value


def _nonempty(terms: Iterable[Any]) -> list[Any]:
    return [t for t in terms if any(_requirements(t, n) for n in _NODE_REQUIREMENTS)]


def _contains(s: object, r: object) -> bool:
    """Does term S hold every requirement of term R (so S's nodes are R's nodes)?"""
    for name in _NODE_REQUIREMENTS:
        have = {canon(x) for x in _requirements(s, name)}
        if any(canon(x) not in have for x in _requirements(r, name)):
            return False
    return True


def _merge(s: object, r: object) -> JsonObject:
    term = {}
    for name in _NODE_REQUIREMENTS:
        items = missing_terms((), _requirements(s, name) + _requirements(r, name))
        if items:
            term[name] = items
    return term


def and_node_terms(existing: Sequence[Any], wanted: Iterable[Any]) -> list[Any] | None:
    """``nodeSelectorTerms`` meaning (EXISTING) AND (WANTED), or None for no change."""
    terms = _nonempty(wanted)
    if not terms:
        return None
    if not existing:
        return terms
    current = _nonempty(existing)
    if not current or all(any(_contains(s, r) for r in terms) for s in current):
        return None
    return missing_terms((), [_merge(s, r) for s in current for r in terms])


def _get(spec: ReadOnlyJson, tokens: Sequence[str]) -> Any:
    """The value at TOKENS under SPEC; None when a step is absent or null."""
    cur: Any = spec
    for tok in tokens:
        if cur is None:
            return None
        if not isinstance(cur, dict):
            raise Unpatchable("%s is not a mapping" % pointer(*tokens))
        cur = cur.get(tok)
    return cur


def _parent(ops: list[Operation], spec: ReadOnlyJson, tokens: tuple[str, ...],
            created: set[tuple[str, ...]]) -> ReadOnlyJson:
    """The mapping at TOKENS under SPEC; each missing step is added (and noted in
    CREATED) as an empty mapping."""
    cur = spec
    for i, tok in enumerate(tokens):
        path = tokens[:i + 1]
        nxt = None if path in created else cur.get(tok)
        if nxt is None:
            if path not in created:
                ops.append({"op": "add", "path": pointer("spec", *path), "value": {}})
                created.add(path)
            nxt = {}
        elif not isinstance(nxt, dict):
            raise Unpatchable("%s is not a mapping" % pointer("spec", *path))
        cur = nxt
    return cur


def rde_patch(spec: object, pod_terms: Mapping[str, Sequence[Any]],
              node_terms: Sequence[Any]) -> list[Operation]:
    """JSON Patch operations that add POD_TERMS ({group: [raw term]}, group in
    POD_GROUPS) and NODE_TERMS (raw node selector terms) to the pod SPEC's required
    affinity; [] when it holds them already."""
    if not isinstance(spec, dict):
        raise Unpatchable("the pod has no spec")
    ops: list[Operation] = []
    created: set[tuple[str, ...]] = set()
    for group in POD_GROUPS:
        existing = _get(spec, ("affinity", group, REQUIRED))
        if existing is not None and not isinstance(existing, list):
            raise Unpatchable("%s.%s is not a list" % (group, REQUIRED))
        new = missing_terms(existing or (), pod_terms.get(group, ()))
        if not new:
            continue
        _parent(ops, spec, ("affinity", group), created)
        path: tuple[Token, ...] = ("spec", "affinity", group, REQUIRED)
        if existing is None:
            ops.append({"op": "add", "path": pointer(*path), "value": new})
        else:
            ops.extend({"op": "add", "path": pointer(*path, "-"), "value": t} for t in new)
    tokens = ("affinity", NODE_GROUP, REQUIRED)
    existing = _get(spec, (*tokens, NODE_TERMS))
    if existing is not None and not isinstance(existing, list):
        raise Unpatchable("%s is not a list" % NODE_TERMS)
    terms = and_node_terms(existing or [], node_terms)
    if terms is not None:
        parent = _parent(ops, spec, tokens, created)
        op = "replace" if NODE_TERMS in parent else "add"
        ops.append({"op": op, "path": pointer("spec", *tokens, NODE_TERMS), "value": terms})
    return ops


def pod_patch(pod: ReadOnlyJson) -> list[Operation]:
    """JSON Patch operations copying the Pod POD's ``hwaffinity.io/required-during-
    execution`` terms without Gt/Lt (and all its node terms) into its ``spec.affinity``;
    [] when there is nothing to copy, the annotation is malformed or the pod is not
    patchable."""
    meta = pod.get("metadata")
    notes = meta.get("annotations") if isinstance(meta, dict) else None
    text = notes.get(annotations.REQUIRED_DURING_EXECUTION) if isinstance(notes, dict) else None
    if text is None:
        return []
    try:
        rules = annotations.Rules.parse(text)
    except (InputError, RecursionError):
        return []
    raw = json.loads(text)
    pod_terms: dict[str, list[Any]] = {}
    for group, parsed in (("podAffinity", rules.affinity), ("podAntiAffinity", rules.anti)):
        pod_terms[group] = [term for term, p in zip(raw.get(group) or [], parsed)
                            if not p.uses_extension()]
    try:
        return rde_patch(pod.get("spec"), pod_terms, rules.node_raw or [])
    except Unpatchable:
        return []


def mark_patch(spec: object, resources: Iterable[str]) -> list[Operation]:
    """JSON Patch operations that make the first container of the pod SPEC request and
    limit 1 of each extended resource of RESOURCES (names; ``"1"`` in both, as the API
    server requires of an extended resource) that no container or init container names
    already; [] when every one is named."""
    if not isinstance(spec, dict):
        raise Unpatchable("the pod has no spec")
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers \
            or not all(isinstance(c, dict) for c in containers):
        raise Unpatchable("spec.containers is not a list of containers")
    inits = spec.get("initContainers")
    named: set[str] = set()
    for c in containers + (inits if isinstance(inits, list) else []):
        res = c.get("resources") if isinstance(c, dict) else None
        if isinstance(res, dict):
            for part in ("requests", "limits"):
                if isinstance(res.get(part), dict):
                    named.update(res[part])
    added = {r: "1" for r in resources if r not in named}
    if not added:
        return []
    base: tuple[Token, ...] = ("spec", "containers", 0, "resources")
    res = containers[0].get("resources")
    if res is None:
        return [{"op": "add", "path": pointer(*base),
                 "value": {"limits": dict(added), "requests": dict(added)}}]
    if not isinstance(res, dict):
        raise Unpatchable("%s is not a mapping" % pointer(*base))
    ops: list[Operation] = []
    for part in ("limits", "requests"):
        amounts = res.get(part)
        if amounts is None:
            ops.append({"op": "add", "path": pointer(*base, part), "value": dict(added)})
        elif isinstance(amounts, dict):
            ops.extend({"op": "add", "path": pointer(*base, part, r), "value": "1"}
                       for r in added)
        else:
            raise Unpatchable("%s is not a mapping" % pointer(*base, part))
    return ops
