"""Label selectors (pod affinity terms) and node selectors (node affinity).

Exactly apimachinery's rules: requirement validation at construction,
``In``/``NotIn``/``Exists``/``DoesNotExist`` matching, node-selector ``Gt``/``Lt``
integer semantics. Pod label selectors additionally accept ``Gt``/``Lt``
(the Gt/Lt proposal), with node-selector meaning.
"""
import re
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from tacker_hwaffinity.objects.validation import label_value_error, qualified_name_error

IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT = (
    "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
EQUALS = "="  # matchLabels entries
POD_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT)
NODE_OPERATORS = POD_OPERATORS
EXTENSION_OPERATORS = (GT, LT)  # accepted in pod selectors by hwaffinity only

_INT = re.compile(r"[+-]?0*([0-9]+)|[+-]?0+")   # ASCII digits only, the whole text
_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1
_INT64_DIGITS = len(str(_INT64_MAX))    # more significant digits: out of range, no int()


class SelectorError(ValueError):
    """An invalid selector; ``field`` is the path relative to the selector."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__("%s: %s" % (field, message) if field else message)
        self.field = field
        self.message = message


def parse_int64(text: object) -> int | None:
    """strconv.ParseInt(text, 10, 64), or None. A number with more significant digits
    than int64 has is refused before ``int()``, which raises ValueError past 4,300 digits
    (and is quadratic before)."""
    if not isinstance(text, str):
        return None
    m = _INT.fullmatch(text)
    digits = m and m.group(1) or "0"
    if m is None or len(digits) > _INT64_DIGITS:
        return None
    n = -int(digits) if text[0] == "-" else int(digits)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


class Requirement:
    """One ``key op values`` requirement, validated at construction."""

    __slots__ = ("key", "op", "values", "_set", "_int")

    def __init__(self, key: Any, op: str, values: Any, field: str = "") -> None:
        # KEY and VALUES as the input has them: checked here (a label key, a list of
        # label values)
        err = qualified_name_error(key)
        if err:
            raise SelectorError(field + ".key" if field else "key",
                                "invalid label key %r: %s" % (key, err))
        vfield = field + ".values" if field else "values"
        if values is None:
            values = []
        if not isinstance(values, list):
            raise SelectorError(vfield, "expected a list of strings")
        if op in (IN, NOT_IN):
            if not values:
                raise SelectorError(
                    vfield, "for 'In', 'NotIn' operators, values set can't be empty")
        elif op == EQUALS:
            pass
        elif op in (EXISTS, DOES_NOT_EXIST):
            if values:
                raise SelectorError(
                    vfield, "values set must be empty for exists and does not exist")
        elif op in (GT, LT):
            if len(values) != 1:
                raise SelectorError(
                    vfield, "for 'Gt', 'Lt' operators, exactly one value is required")
            if parse_int64(values[0]) is None:
                raise SelectorError(vfield + "[0]", "for 'Gt', 'Lt' operators, the value must be "
                                    "an integer, got %r" % (values[0],))
        else:
            raise SelectorError(field + ".operator" if field else "operator",
                                "%r is not a valid label selector operator "
                                "(expected one of %s)" % (op, ", ".join(POD_OPERATORS)))
        for i, v in enumerate(values):
            err = label_value_error(v)
            if err:
                raise SelectorError("%s[%d]" % (vfield, i), "invalid label value %r: %s" % (v, err))
        self.key, self.op, self.values = key, op, tuple(values)
        self._set = frozenset(values)
        # the bound of Gt/Lt (validated above); unread by the other operators
        self._int: int = (parse_int64(values[0]) or 0) if op in (GT, LT) else 0

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op == IN or op == EQUALS:
            v = labels.get(self.key)
            return v is not None and v in self._set
        if op == NOT_IN:
            v = labels.get(self.key)
            return v is None or v not in self._set
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        n = parse_int64(labels.get(self.key))
        if n is None:
            return False
        return n > self._int if op == GT else n < self._int

    def signature(self) -> tuple[str, str, tuple[str, ...]]:
        return (self.key, self.op, tuple(sorted(self._set)))

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "operator": "In" if self.op == EQUALS else self.op,
                "values": list(self.values)}


class LabelSelector:
    """A parsed ``metav1.LabelSelector``; ``None`` input means "matches nothing"."""

    __slots__ = ("requirements", "nothing", "sig")

    def __init__(self, requirements: Iterable[Requirement], nothing: bool = False) -> None:
        self.requirements = tuple(sorted(requirements, key=Requirement.signature))
        self.nothing = nothing
        self.sig: Hashable = ("nothing",) if nothing else tuple(
            r.signature() for r in self.requirements)

    @property
    def everything(self) -> bool:
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for r in self.requirements:
            if not r.matches(labels):
                return False
        return True

    def uses_extension(self) -> bool:
        return any(r.op in EXTENSION_OPERATORS for r in self.requirements)


NOTHING = LabelSelector((), nothing=True)


def parse_label_selector(raw: object, field: str) -> LabelSelector:
    """LabelSelectorAsSelector with Gt/Lt allowed; raise SelectorError."""
    if raw is None:
        return NOTHING
    if not isinstance(raw, dict):
        raise SelectorError(field, "expected a label selector (a mapping)")
    unknown = set(raw) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise SelectorError(field, "unknown field(s) %s" % ", ".join(sorted(map(str, unknown))))
    reqs = []
    ml = raw.get("matchLabels") or {}
    if not isinstance(ml, dict):
        raise SelectorError(field + ".matchLabels", "expected a mapping of label key to value")
    for k, v in ml.items():
        reqs.append(Requirement(k, EQUALS, [v], "%s.matchLabels[%s]" % (field, k)))
    me = raw.get("matchExpressions") or []
    if not isinstance(me, list):
        raise SelectorError(field + ".matchExpressions", "expected a list")
    for i, expr in enumerate(me):
        reqs.append(_parse_expression(expr, "%s.matchExpressions[%d]" % (field, i),
                                      POD_OPERATORS))
    return LabelSelector(reqs)


def _parse_expression(expr: object, field: str, operators: tuple[str, ...]) -> Requirement:
    if not isinstance(expr, dict):
        raise SelectorError(field, "expected a mapping with key, operator and values")
    unknown = set(expr) - {"key", "operator", "values"}
    if unknown:
        raise SelectorError(field, "unknown field(s) %s" % ", ".join(sorted(map(str, unknown))))
    op = expr.get("operator")
    if op not in operators:
        raise SelectorError(field + ".operator", "%r is not a valid operator (expected one of %s)"
                            % (op, ", ".join(operators)))
    return Requirement(expr.get("key"), op, expr.get("values"), field)


class FieldRequirement:
    """A node selector ``matchFields`` entry: ``In``/``NotIn`` with one value."""

    __slots__ = ("key", "op", "value")

    def __init__(self, raw: object, field: str) -> None:
        if not isinstance(raw, dict):
            raise SelectorError(field, "expected a mapping with key, operator and values")
        key, op, values = raw.get("key"), raw.get("operator"), raw.get("values")
        if op not in (IN, NOT_IN):
            raise SelectorError(field + ".operator", "%r is not a valid node field selector "
                                "operator (expected In or NotIn)" % (op,))
        if not isinstance(values, list) or len(values) != 1:
            raise SelectorError(field + ".values", "unexpected number of value (%d) for node "
                                "field selector operator %r" % (
                                    len(values) if isinstance(values, list) else 0, op))
        self.key: str | None = key
        self.op: str = op
        self.value: str = values[0]

    def matches(self, fields: Mapping[str | None, str]) -> bool:
        got = fields.get(self.key, "")
        return (got == self.value) if self.op == IN else (got != self.value)


class NodeSelectorTerm:
    """One term; a term that failed to parse keeps its error and never matches."""

    __slots__ = ("expressions", "fields", "error", "index", "sig")

    def __init__(self, raw: object, field: str, index: int) -> None:
        self.index = index
        self.expressions: tuple[Requirement, ...] = ()
        self.fields: tuple[FieldRequirement, ...] = ()
        self.error: SelectorError | None = None
        try:
            if not isinstance(raw, dict):
                raise SelectorError(field, "expected a node selector term (a mapping)")
            exprs = raw.get("matchExpressions") or []
            flds = raw.get("matchFields") or []
            if not isinstance(exprs, list) or not isinstance(flds, list):
                raise SelectorError(field, "matchExpressions and matchFields must be lists")
            self.expressions = tuple(
                _parse_expression(e, "%s.matchExpressions[%d]" % (field, i), NODE_OPERATORS)
                for i, e in enumerate(exprs))
            self.fields = tuple(FieldRequirement(f, "%s.matchFields[%d]" % (field, i))
                                for i, f in enumerate(flds))
        except SelectorError as e:
            self.error = e
        self.sig: Hashable = ("err", index) if self.error else (
            tuple(sorted(r.signature() for r in self.expressions)),
            tuple(sorted((f.key, f.op, f.value) for f in self.fields)))

    @property
    def empty(self) -> bool:
        return self.error is None and not self.expressions and not self.fields

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        if self.error is not None:
            return False
        for r in self.expressions:
            if not r.matches(labels):
                return False
        if self.fields and name:
            fields: dict[str | None, str] = {"metadata.name": name}
            for f in self.fields:
                if not f.matches(fields):
                    return False
        return True


class NodeSelector:
    """``nodeSelectorTerms`` ORed; empty terms dropped; parse errors lazy per term."""

    __slots__ = ("terms", "errors", "sig")

    def __init__(self, raw: object, field: str) -> None:
        raw_terms = raw.get("nodeSelectorTerms") if isinstance(raw, dict) else None
        terms = []
        if isinstance(raw_terms, list):
            for i, t in enumerate(raw_terms):
                term = NodeSelectorTerm(t, "%s.nodeSelectorTerms[%d]" % (field, i), i)
                if not term.empty:
                    terms.append(term)
        self.terms = tuple(terms)
        self.errors = tuple(str(t.error) for t in terms if t.error is not None)
        self.sig: Hashable = tuple(t.sig for t in terms)

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        for t in self.terms:
            if t.matches(labels, name):
                return True
        return False
