"""Affinity annotations: decoding, shorthand expansion, sign and clamp, effective affinity.

Upstream rules (CRI Resource Manager ``cache/affinity.go`` and nri-plugins):

* two pod annotations per prefix, ``<prefix>/affinity`` (sign +1) and
  ``<prefix>/anti-affinity`` (sign -1), each a YAML mapping from container
  name to a list of affinities; the affinity annotation is processed first;
* the shorthand ``c1: [c2, c3]`` is tried first and is made symmetric: each
  container in it gets one affinity of unit weight towards all its partners;
* otherwise the full form ``{scope, match, weight}``: an omitted scope is the
  pod scope (same pod *name*, as upstream), a zero or omitted weight is the
  default (+1 / -1), a given anti-affinity weight is negated, then the weight
  is clamped to [-1000, 1000];
* any decoding or validation error fails the whole pod's affinities.

What one pod may ask is capped where its annotations are read, by the node agent
and by the admission webhook alike (one message): besides the text bounds of
``decode``, at most ``MAX_AFFINITIES`` affinities, ``MAX_VALUES`` values and
``MAX_CHARS`` characters of keys and values in all of a pod's annotations
together (after alias expansion and the shorthand's symmetric expansion), at
most ``MAX_EXPRESSION_VALUES`` values in one expression. So placing one
container evaluates at most that much against each container on the node: a
glob's cost grows with its length, a joint key's with its parts (doc/agent.md,
"Limits").
"""
import time
from collections.abc import Mapping
from typing import Any

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.numa import decode
from tacker_hwaffinity.numa.annotation_place import Place
from tacker_hwaffinity.numa.expression import CRIRM, NRI, Expression, ExpressionError
from tacker_hwaffinity.numa.subjects import Pod
from tacker_hwaffinity.numa.subjects import CONTAINER_NAME_LABEL, POD_NAME_LABEL

PREFIXES = (("cri-resource-manager.intel.com/", CRIRM), ("resource-policy.nri.io/", NRI))
KINDS = (("affinity", 1), ("anti-affinity", -1))
WEIGHT_CUTOFF = 1000
DEFAULT_WEIGHT = 1
MAX_AFFINITIES = 64          # affinities of one pod, all its annotations together
MAX_VALUES = 256             # expression values of one pod (scopes and matches)
MAX_CHARS = 4096             # characters of the keys and values of one pod's expressions
MAX_EXPRESSION_VALUES = 64   # values of one expression
_AFFINITY_FIELDS = ("scope", "match", "weight")
_EXPR_FIELDS = ("key", "operator", "values")


class OverBudget(InputError):
    """A container's affinities took longer to evaluate than the time they were given."""


class AnnotationError(InputError):
    """The annotation KEY (FIELD) does not decode: ERROR (a ``decode.DecodeError``), whose
    position is inside the annotation's text."""

    def __init__(self, error: decode.DecodeError, key: str, field: str) -> None:
        super().__init__(str(error), field=field)
        self.key, self.error = key, error

    def in_file(self, place: Place) -> InputError:
        """This error with the position in the file PLACE says the annotation is at."""
        return InputError(self.error.reason + place.where(self.error.line, self.error.column),
                          self.source, self.obj, self.field)


class Affinity:
    """One expanded affinity of a container."""

    __slots__ = ("scope", "match", "weight", "source")

    def __init__(self, scope, match, weight, source=""):
        self.scope = scope
        self.match = match
        self.weight = weight
        self.source = source      # the annotation key it came from, or "implicit:<name>"

    def to_dict(self):
        """The documented JSON shape: {scope, match, weight}."""
        return {"scope": self.scope.to_dict(), "match": self.match.to_dict(),
                "weight": self.weight}

    def __repr__(self):
        return "<%saffinity %r %r => %d>" % ("anti-" if self.weight < 0 else "",
                                             self.scope, self.match, self.weight)


class Tally:
    """What a pod's annotations have asked so far, against the caps."""

    __slots__ = ("affinities", "values", "chars")

    def __init__(self):
        self.affinities = 0
        self.values = 0
        self.chars = 0

    def add(self, expressions, path="", mark=None):
        """Count one affinity of EXPRESSIONS (those the annotation wrote); DecodeError at
        PATH when over a cap."""
        self.affinities += 1
        if self.affinities > MAX_AFFINITIES:
            raise decode.DecodeError("more than %d affinities in the pod's annotations"
                                     % MAX_AFFINITIES, path, mark)
        for expr in expressions:
            self.values += len(expr.values)
            self.chars += len(expr.key) + sum(len(v) for v in expr.values)
        if self.values > MAX_VALUES:
            raise decode.DecodeError("more than %d expression values in the pod's annotations"
                                     % MAX_VALUES, path, mark)
        if self.chars > MAX_CHARS:
            raise decode.DecodeError("more than %d characters of expression keys and values "
                                     "in the pod's annotations" % MAX_CHARS, path, mark)


def pod_scope(pod_name, flavor):
    """The implicit scope: containers of pods with the same name (upstream)."""
    if flavor == NRI:
        return Expression("pod/name", "Equals", [pod_name], NRI)
    return Expression(POD_NAME_LABEL, "Equals", [pod_name], CRIRM)


def clamp(weight):
    return max(-WEIGHT_CUTOFF, min(WEIGHT_CUTOFF, weight))


def parse_simple(root, pod_name, sign, flavor, source="", tally=None):
    """Try the shorthand on ROOT (``decode.parse``'s tree); return {container:
    [Affinity]} or None if it does not apply. Over a cap (TALLY: what the pod's other
    annotations asked) is a DecodeError."""
    try:
        entries = []
        for name, _, value in decode.as_map(root, ""):
            partners = [decode.as_string(v, "") for v in decode.as_list(value, "")]
            entries.append((name, partners))
    except decode.DecodeError:
        return None
    symmetric = {}
    for name, partners in entries:
        for other in partners:
            symmetric.setdefault(name, {})[other] = None
            symmetric.setdefault(other, {})[name] = None
    key = "name" if flavor == NRI else CONTAINER_NAME_LABEL
    tally = tally or Tally()
    out = {}
    for name, others in symmetric.items():
        others = list(others)
        path = "container %r" % name
        if len(others) > MAX_EXPRESSION_VALUES:
            raise decode.DecodeError("%d partners (at most %d)"
                                     % (len(others), MAX_EXPRESSION_VALUES), path)
        op = "Equals" if len(others) == 1 else "In"
        scope, match = pod_scope(pod_name, flavor), Expression(key, op, others, flavor)
        tally.add((match,), path)       # the implicit scope: one comparison
        out[name] = [Affinity(scope, match, sign * DEFAULT_WEIGHT, source)]
    return out


def _expression(node, path, flavor):
    fields = decode.as_struct(node, path, _EXPR_FIELDS)
    if fields is None:
        return None
    key = decode.as_string(fields["key"], path + ".key") if "key" in fields else ""
    op = decode.as_string(fields["operator"], path + ".operator") if "operator" in fields else ""
    values = []
    if "values" in fields:
        items = decode.as_list(fields["values"], path + ".values")
        if len(items) > MAX_EXPRESSION_VALUES:
            raise decode.DecodeError("%d values (at most %d)" % (
                len(items), MAX_EXPRESSION_VALUES), path + ".values", fields["values"].mark)
        for i, v in enumerate(items):
            values.append(decode.as_string(v, "%s.values[%d]" % (path, i)))
    return Expression(key, op, values, flavor)


def parse_full(root, pod_name, sign, flavor, source="", tally=None):
    """Decode the full form of ROOT strictly; raise decode.DecodeError naming the
    position. TALLY: what the pod's other annotations asked (the caps are the pod's)."""
    tally = tally or Tally()
    out = {}
    for name, _, value in decode.as_map(root, ""):
        lst = out.setdefault(name, [])
        cpath = "container %r" % name
        for i, item in enumerate(decode.as_list(value, cpath)):
            path = "%s, affinity #%d" % (cpath, i + 1)
            if item.value is None:
                raise decode.DecodeError("an affinity cannot be null", path, item.mark)
            fields = decode.as_struct(item, path, _AFFINITY_FIELDS)
            scope = _expression(fields["scope"], path + ", scope", flavor) \
                if "scope" in fields else None
            if "match" not in fields or fields["match"].value is None:
                raise decode.DecodeError("invalid affinity match: expression: nil expression "
                                         "(match is required)", path, item.mark)
            match = _expression(fields["match"], path + ", match", flavor)
            weight = decode.as_int32(fields["weight"], path + ", weight") \
                if "weight" in fields else 0
            written = (match,) if scope is None else (scope, match)
            if scope is None:       # the implicit scope: one comparison, not counted
                scope = pod_scope(pod_name, flavor)
            weight = sign * DEFAULT_WEIGHT if weight == 0 else weight * sign
            for what, expr in (("scope", scope), ("match", match)):
                try:
                    expr.validate()
                except ExpressionError as e:
                    raise decode.DecodeError("invalid affinity %s: %s" % (what, e), path,
                                             fields[what].mark if what in fields else item.mark)
            tally.add(written, path, item.mark)
            lst.append(Affinity(scope, match, clamp(weight), source))
    return out


def parse_annotation(text, pod_name, sign, flavor, source="", tally=None):
    """Shorthand first, then the full form (upstream order); TALLY as in parse_full."""
    tally = tally or Tally()
    root = decode.parse(text)
    simple = parse_simple(root, pod_name, sign, flavor, source, tally)
    if simple is not None:
        return simple
    return parse_full(root, pod_name, sign, flavor, source, tally)


def pod_affinities(pod: Pod) -> dict[str, list[Affinity]]:
    """All annotated affinities of POD: {container name: [Affinity]}.

    Raise InputError (file, pod, annotation, container and position) on any
    decoding or validation error, or a cap exceeded, which fails the whole pod as
    upstream does for an error. The position is the file's when the pod has the text
    of its file (``source_text``), else the annotation's.
    """
    try:
        return annotation_affinities(pod.annotations, pod.name)
    except AnnotationError as e:
        place = (pod.source_text.place(pod.namespace, pod.name, e.key)
                 if pod.source_text is not None else None)
        raise (e if place is None else e.in_file(place)).located(pod.source, "Pod " + pod.ref)
    except InputError as e:
        raise e.located(pod.source, "Pod " + pod.ref)


def annotation_affinities(annotations: Mapping[str, Any], pod_name: str,
                          field_prefix: str = "metadata.annotations"
                          ) -> dict[str, list[Affinity]]:
    """The affinities the ANNOTATIONS (a pod's, a mapping) of pod POD_NAME ask:
    {container name: [Affinity]}; InputError naming FIELD_PREFIX[key] otherwise. Both
    prefixes are read; when both carry the same annotation with identical text it is
    used once (the ``resource-policy.nri.io/`` copy). What the node agent and the
    admission webhook both call, so that they refuse alike."""
    result: dict[str, list[Affinity]] = {}
    tally = Tally()
    for kind, sign in KINDS:
        texts = [(prefix + kind, flavor, annotations.get(prefix + kind))
                 for prefix, flavor in PREFIXES]
        texts = [t for t in texts if t[2] is not None]
        if len(texts) == 2 and texts[0][2] == texts[1][2]:
            texts = texts[1:]
        for key, flavor, text in texts:
            field = "%s[%s]" % (field_prefix, key)
            if not isinstance(text, str):
                raise InputError("expected a string", field=field)
            try:
                parsed = parse_annotation(text, pod_name, sign, flavor, key, tally)
            except decode.DecodeError as e:
                raise AnnotationError(e, key, field)
            for name, affs in parsed.items():
                result.setdefault(name, []).extend(affs)
    return result


def implicit_affinities(container, has_explicit, colocate_pods=False,
                        colocate_namespaces=False):
    """Policy-injected affinities (off by default, as upstream)."""
    out = []
    if has_explicit:
        return out
    if colocate_pods:
        out.append(Affinity(pod_scope(container.pod.name, CRIRM),
                            Expression("", "AlwaysTrue", [], CRIRM), 10, "implicit:colocate-pods"))
    if colocate_namespaces:
        out.append(Affinity(Expression("", "AlwaysTrue", [], CRIRM),
                            Expression("namespace", "Equals", [container.namespace], CRIRM),
                            10, "implicit:colocate-namespaces"))
    return out


def evaluate(affinities, container, containers, deadline=None):
    """Effective affinity A(container, C2) for every C2 in CONTAINERS: {C2: weight}.

    Weights of all in-scope matching affinities add up; the container itself
    is dropped. Zero sums are kept out of the result. DEADLINE: the
    ``time.monotonic()`` past which OverBudget is raised instead (None: none).
    """
    result = {}
    start = time.monotonic()
    for a in affinities:
        for c2 in containers:
            if deadline is not None and time.monotonic() > deadline:
                raise OverBudget(
                    "its %d affinities took more than %.0f ms to evaluate against the %d "
                    "containers on the node: not pinned (the limits: doc/agent.md)"
                    % (len(affinities), max(0, deadline - start) * 1000, len(containers)),
                    source=getattr(container.pod, "source", None),
                    obj="Pod " + container.pod.ref)
            if a.scope.evaluate(c2) and a.match.evaluate(c2):
                result[c2] = result.get(c2, 0) + a.weight
    result.pop(container, None)
    return {c: w for c, w in result.items() if w != 0}
