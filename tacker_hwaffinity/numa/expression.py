"""Affinity expressions: ``{key, operator, values}`` evaluated against pods and containers.

Two flavours of key handling exist upstream and both are implemented; an
expression carries the flavour of the annotation prefix it came from:

* ``crirm`` (``cri-resource-manager.intel.com/``): no key validation; a
  single dotted component is a label (``io.kubernetes.pod.name`` means
  ``labels/io.kubernetes.pod.name``); a map key ends at the next ``/``; a
  string with path left over resolves to that string.
* ``nri`` (``resource-policy.nri.io/``): keys are validated; after
  ``labels/`` or ``tags/`` the whole rest of the path is the map key; a string
  with path left over is "not found"; no dotted-label rewrite.

Joint keys, operators and the glob rules are the same in both flavours.
"""
import functools
import posixpath

from tacker_hwaffinity.numa import glob

CRIRM = "crirm"
NRI = "nri"

EQUALS, NOT_EQUAL, IN, NOT_IN = "Equals", "NotEqual", "In", "NotIn"
EXISTS, NOT_EXIST, ALWAYS_TRUE = "Exists", "NotExist", "AlwaysTrue"
MATCHES, MATCHES_NOT, MATCHES_ANY, MATCHES_NONE = (
    "Matches", "MatchesNot", "MatchesAny", "MatchesNone")
OPERATORS = (EQUALS, NOT_EQUAL, IN, NOT_IN, EXISTS, NOT_EXIST, ALWAYS_TRUE,
             MATCHES, MATCHES_NOT, MATCHES_ANY, MATCHES_NONE)
# The design document spells NotExist as "NotExists"; upstream code rejects
# that spelling. We accept it as an alias and normalise it to NotExist.
ALIASES = {"NotExists": NOT_EXIST}

_SINGLE_VALUE = (EQUALS, NOT_EQUAL, MATCHES, MATCHES_NOT)
_NO_VALUES = (EXISTS, NOT_EXIST)
_LEAF_KEYS = ("id", "uid", "name", "namespace", "qosclass")
_NOT_FOUND = object()


class ExpressionError(ValueError):
    """An expression that fails validation."""


class Expression:
    """One ``key operator values`` test."""

    __slots__ = ("key", "op", "values", "flavor", "_split")

    def __init__(self, key="", op="", values=None, flavor=CRIRM):
        self.key = key
        self.op = ALIASES.get(op, op)
        self.values = list(values) if values else []
        self.flavor = flavor
        self._split = None

    def __repr__(self):
        return "<%s %s %s>" % (self.key, self.op, ",".join(self.values))

    def __eq__(self, other):
        return (isinstance(other, Expression) and self.key == other.key
                and self.op == other.op and self.values == other.values
                and self.flavor == other.flavor)

    def to_dict(self):
        return {"key": self.key, "operator": self.op, "values": list(self.values)}

    def validate(self):
        """Raise ExpressionError if the expression is invalid (upstream Validate)."""
        if self.flavor == NRI:
            _validate_nri_key(self.key)
        op, n = self.op, len(self.values)
        if op in _SINGLE_VALUE:
            if n != 1:
                raise ExpressionError("invalid expression, '%s' requires a single value" % op)
        elif op in _NO_VALUES or (op == ALWAYS_TRUE and self.flavor == NRI):
            if n:
                raise ExpressionError("invalid expression, '%s' does not take any values" % op)
        elif op not in OPERATORS:
            raise ExpressionError("invalid expression, unknown operator: %s (expected one of %s)"
                                  % (_quote(op), ", ".join(OPERATORS)))

    def evaluate(self, subject):
        """Evaluate a validated expression against SUBJECT (a pod or container)."""
        op = self.op
        if op == ALWAYS_TRUE:
            return True
        value, ok = self.key_value(subject)
        if op == EQUALS:
            return ok and (value == self.values[0] or self.values[0] == "*")
        if op == NOT_EQUAL:
            return not ok or value != self.values[0]
        if op in (IN, NOT_IN):
            hit = ok and any(value == v or v == "*" for v in self.values)
            return hit if op == IN else not hit
        if op in (MATCHES, MATCHES_NOT):
            hit = ok and glob.match(self.values[0], value)
            return hit if op == MATCHES else not hit
        if op in (MATCHES_ANY, MATCHES_NONE):
            hit = ok and any(glob.match(p, value) for p in self.values)
            return hit if op == MATCHES_ANY else not hit
        if op == EXISTS:
            return ok
        if op == NOT_EXIST:
            return not ok
        raise ExpressionError("cannot evaluate unknown operator %s" % _quote(op))

    def key_value(self, subject):
        """Return (value, found) of the (possibly joint) key for SUBJECT."""
        if self._split is None:
            self._split = split_keys(self.key)
        keys, vsep = self._split
        if len(keys) == 1:
            return resolve(subject, keys[0], self.flavor)
        vals, found = [], False
        for k in keys:
            v, ok = resolve(subject, k, self.flavor)
            vals.append(v)
            found = found or ok
        return vsep.join(vals), found


def _quote(s):
    return '"%s"' % s


def _valid_separator(b):
    return not (48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122 or b in (47, 46))


def split_keys(key):
    """Split a joint key into (subkeys, value separator); byte-exact like upstream."""
    raw = key.encode("utf-8", "surrogateescape")
    if len(raw) < 4 or raw[0:1] != b":":
        return [key], ""
    raw = raw[1:]
    ksep, vsep = raw[0:1], raw[1:2]
    if _valid_separator(ksep[0]) and _valid_separator(vsep[0]):
        raw = raw[2:]
    else:
        ksep = vsep = b":"
    parts = [p.decode("utf-8", "surrogateescape") for p in raw.split(ksep)]
    return parts, vsep.decode("utf-8", "surrogateescape")


def clean_path(p):
    """POSIX path.Clean as Go does it ('' -> '.', '//a' -> '/a')."""
    r = posixpath.normpath(p)
    if r.startswith("//"):
        r = "/" + r.lstrip("/")
    return r


def resolve(subject, spec, flavor=CRIRM):
    """Resolve one key path against SUBJECT: (string value, found)."""
    if flavor == NRI:
        obj = _resolve_nri(subject, _clean_cached(spec))
    else:
        obj = _resolve_crirm(subject, _crirm_ref(spec))
    if isinstance(obj, str):
        return obj, True
    return "", False


@functools.lru_cache(maxsize=4096)
def _clean_cached(spec):
    return clean_path(spec)


@functools.lru_cache(maxsize=4096)
def _crirm_ref(spec):
    spec = clean_path(spec)
    ref = spec.split("/")
    if len(ref) == 1 and "." in spec:
        ref = ["labels", spec]
    return tuple(ref)


def _resolve_crirm(subject, ref):
    obj = subject
    for key in ref:
        if isinstance(obj, str):
            continue
        if isinstance(obj, dict):
            obj = obj.get(key, _NOT_FOUND)
            if obj is _NOT_FOUND:
                return None
        elif hasattr(obj, "eval_key"):
            obj = obj.eval_key(key)
        else:
            return None
    return obj


def _resolve_nri(subject, key):
    obj = subject
    while True:
        if hasattr(obj, "eval_key"):
            pref, _, key = key.partition("/")
            obj = obj.eval_key(pref)
        elif isinstance(obj, dict):
            obj = obj.get(key, _NOT_FOUND)
            if obj is _NOT_FOUND:
                return None
            key = ""
        else:
            return None
        if key == "":
            return obj


def _validate_nri_key(key):
    keys, _ = split_keys(key)
    for k in keys:
        k = k.lstrip("/")
        while True:
            pref, sep, rest = k.partition("/")
            if pref in _LEAF_KEYS:
                if rest:
                    raise ExpressionError("invalid expression, trailing key %s after %s"
                                          % (_quote(rest), _quote(pref)))
            elif pref == "pod":
                if not rest:
                    raise ExpressionError("invalid expression, missing trailing pod key after "
                                          + _quote(pref))
            elif pref in ("labels", "tags"):
                if not rest:
                    raise ExpressionError("invalid expression, missing trailing map key after "
                                          + _quote(pref))
                break
            else:
                raise ExpressionError("invalid expression, unknown key " + _quote(pref))
            if not rest:
                break
            k = rest
