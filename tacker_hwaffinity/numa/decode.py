"""Strict decoding of affinity annotation values, as sigs.k8s.io/yaml does it upstream.

Upstream decodes YAML (yaml.v2, YAML 1.1 scalars) into generic values, turns
them into JSON, then decodes the JSON strictly into typed structs. The
observable rules, all reproduced here:

* duplicate mapping keys are errors; unknown fields are errors;
* struct field names match case-insensitively (``Match:`` is ``match``);
* where a string is expected, numbers and booleans become strings
  (``yes`` -> ``"true"``, ``2.50`` -> ``"2.5"``, ``007`` -> ``"7"``) and
  ``null`` is the empty string;
* ``weight`` must be an integer that fits in int32 (``5.0`` is 5; ``"5"``,
  ``1.5`` and ``3000000000`` are errors); ``null`` means omitted.

Errors are :class:`DecodeError` with a path (``c1[0].match.values[1]``) and,
when known, the line and column inside the annotation value (``annotation_place``
turns them into the file's, for a pod read from one).

What one annotation may ask is bounded here, where it is read (doc/agent.md,
"Limits"): its text (``MAX_TEXT``), its values after alias expansion
(``MAX_NODES``), its nesting (``MAX_DEPTH``) and each string (``MAX_STRING``).
A number outside Go's int64/uint64 range is what ``strconv`` calls a range
error: go-yaml then reads the plain scalar as a string, and so does this.
"""
import math
import re

import yaml

_NULLS = ("", "~", "null", "Null", "NULL")
_TRUE = ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")
_FALSE = ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")
_INF = (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF")
_NINF = ("-.inf", "-.Inf", "-.INF")
_NAN = (".nan", ".NaN", ".NAN")
_YAML_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_GO_INT = re.compile(r"^[-+]?(0[xX][0-9a-fA-F]+|0[oO]?[0-7]+|0[bB][01]+|[0-9]+)$")
MAX_TEXT = 8192          # characters of one annotation's text
MAX_NODES = 4096         # YAML values after alias expansion ("billion laughs")
MAX_DEPTH = 64           # nesting of mappings and lists
MAX_STRING = 256         # characters of one scalar (a key, an operator, a value, a pattern)
INT32 = (-2 ** 31, 2 ** 31 - 1)
_GO_INT_DIGITS = 66      # a longer integer (sign, 0b prefix, 64 bits) cannot fit uint64


class DecodeError(ValueError):
    """What is wrong (REASON, after the PATH) and where in the text: LINE and COLUMN,
    1-based, None when not known (the message says them after the reason)."""

    def __init__(self, message, path="", mark=None):
        self.reason = ("%s: " % path if path else "") + message
        self.line = self.column = None
        where = ""
        if mark is not None:
            self.line, self.column = mark.line + 1, mark.column + 1
            where = " (line %d, column %d)" % (self.line, self.column)
        super().__init__(self.reason + where)
        self.path = path


class Node:
    """A decoded YAML value with its source position."""

    __slots__ = ("value", "mark")

    def __init__(self, value, mark):
        self.value = value      # None, bool, int, float, str, list[Node], list[(Node, Node)]
        self.mark = mark


class MapItems(list):
    """Mapping items as a list of (key Node, value Node)."""


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_RESOLVER = yaml.SafeLoader("")


def parse(text):
    """Parse TEXT into a Node tree with yaml.v2 scalar rules; raise DecodeError."""
    if len(text) > MAX_TEXT:
        raise DecodeError("the text is %d characters long; at most %d are read"
                          % (len(text), MAX_TEXT))
    try:
        docs = list(yaml.compose_all(text, Loader=_LOADER))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise DecodeError("malformed YAML: %s" % (getattr(e, "problem", None) or e), mark=mark)
    except RecursionError:
        raise DecodeError("malformed YAML: nesting too deep")
    docs = [d for d in docs if d is not None]
    if len(docs) > 1:
        raise DecodeError("more than one YAML document", mark=docs[1].start_mark)
    if not docs:
        return Node(None, None)
    return _convert(docs[0], text, 0, set(), [0])


def _convert(node, text, depth, active, count):
    if depth > MAX_DEPTH or id(node) in active:
        raise DecodeError("nesting too deep or recursive alias", mark=node.start_mark)
    count[0] += 1
    if count[0] > MAX_NODES:
        raise DecodeError("document too large (more than %d values after alias expansion)"
                          % MAX_NODES, mark=node.start_mark)
    mark = node.start_mark
    if isinstance(node, yaml.ScalarNode):
        if len(node.value) > MAX_STRING:
            raise DecodeError("a value of %d characters (at most %d)"
                              % (len(node.value), MAX_STRING), mark=mark)
        return Node(_scalar(node, text), mark)
    active = active | {id(node)}
    if isinstance(node, yaml.SequenceNode):
        return Node([_convert(n, text, depth + 1, active, count) for n in node.value], mark)
    items = MapItems()
    merged = []
    for k, v in node.value:
        if k.tag == "tag:yaml.org,2002:merge" or (
                isinstance(k, yaml.ScalarNode) and not k.style and k.value == "<<"):
            merged.append(v)
            continue
        items.append((_convert(k, text, depth + 1, active, count),
                      _convert(v, text, depth + 1, active, count)))
    for m in merged:     # merge keys never override explicit keys
        sources = m.value if isinstance(m, yaml.SequenceNode) else [m]
        have = {_key_string(k) for k, _ in items}
        for src in sources:
            if not isinstance(src, yaml.MappingNode):
                raise DecodeError("merge key needs a mapping", mark=src.start_mark)
            for k, v in _convert(src, text, depth + 1, active, count).value:
                ks = _key_string(k)
                if ks not in have:
                    items.append((k, v))
                    have.add(ks)
    return Node(items, mark)


def _explicit_tag(node, text):
    """A plain scalar whose tag differs from the one implicit resolution gives."""
    return node.tag != _RESOLVER.resolve(yaml.ScalarNode, node.value, (True, False))


def _scalar(node, text):
    v = node.value
    if node.style:          # quoted or block scalar (plain is None, or '' from libyaml)
        return v
    if _explicit_tag(node, text):
        tag = node.tag.rsplit(":", 1)[-1]
        if tag == "str":
            return v
        if tag in ("int", "float", "bool", "null"):
            r = resolve_plain(v)
            want = {"int": int, "float": (int, float), "bool": bool, "null": type(None)}[tag]
            if isinstance(r, want) and not (tag == "int" and isinstance(r, bool)):
                return float(r) if tag == "float" else r
            raise DecodeError("cannot decode %r as !!%s" % (v, tag), mark=node.start_mark)
        raise DecodeError("unsupported YAML tag %s" % node.tag, mark=node.start_mark)
    return resolve_plain(v)


def resolve_plain(v):
    """Resolve a plain scalar as yaml.v2 does (YAML 1.1 booleans, Go number syntax)."""
    if v in _NULLS:
        return None
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    if v in _INF:
        return math.inf
    if v in _NINF:
        return -math.inf
    if v in _NAN:
        return math.nan
    if v and (v[0].isdigit() or v[0] in "+-."):
        plain = v.replace("_", "")
        if _GO_INT.match(plain):
            n = _go_parse_int(plain)
            if n is not None:
                return n
        if _YAML_FLOAT.match(plain):
            f = float(plain)
            return v if math.isinf(f) else f     # ParseFloat's range error: a string
    return v


def _go_parse_int(s):
    """strconv.ParseInt(s, 0, 64), then ParseUint(s, 0, 64), or None when both fail,
    as for '08' (a syntax error) or 2**64 (a range error): go-yaml then tries the
    text as a float, and failing that keeps it as a string."""
    try:
        return _go_parse_int_strict(s)
    except ValueError:
        return None


def _go_parse_int_strict(s):
    """The integer S names, or ValueError: a syntax error, or a range error when it does
    not fit in int64 or uint64 (counted before converting, so any length is cheap)."""
    if len(s) > _GO_INT_DIGITS:
        raise ValueError("value out of range")
    sign = -1 if s[0] == "-" else 1
    s = s.lstrip("+-")
    low = s.lower()
    if low.startswith("0x"):
        n = int(s[2:], 16)
    elif low.startswith("0b"):
        n = int(s[2:], 2)
    elif low.startswith("0o"):
        n = int(s[2:], 8)
    elif len(s) > 1 and s[0] == "0":
        n = int(s[1:], 8)
    else:
        n = int(s)
    n *= sign
    if -2 ** 63 <= n < 2 ** 64:
        return n
    raise ValueError("value out of range")


def go_float32_string(f):
    """strconv.FormatFloat(f, 'g', -1, 32)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    import numpy as np   # here: the node agent never needs it, and it costs 15 MiB
    with np.errstate(over="ignore"):
        f32 = np.float32(f)
    if np.isinf(f32):
        return "+Inf" if f32 > 0 else "-Inf"
    if f32 == 0:
        return "-0" if math.copysign(1, float(f32)) < 0 else "0"
    sci = np.format_float_scientific(f32, unique=True, trim="-")
    mant, exp = sci.split("e")
    neg = mant.startswith("-")
    digits = mant.lstrip("-").replace(".", "")
    exp = int(exp)
    nd = len(digits)
    eprec = 6
    if eprec > nd and nd >= exp + 1:
        eprec = nd
    if exp < -4 or exp >= eprec:
        m = digits[0] + ("." + digits[1:] if nd > 1 else "")
        out = "%se%s%02d" % (m, "-" if exp < 0 else "+", abs(exp))
    elif exp < 0:
        out = "0." + "0" * (-exp - 1) + digits
    else:
        ip = digits[:exp + 1].ljust(exp + 1, "0")
        fp = digits[exp + 1:]
        out = ip + ("." + fp if fp else "")
    return ("-" if neg else "") + out


def _scalar_text(v):
    """A YAML scalar as Go's decoder turns it into a string, or None for other values."""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return go_float32_string(v)
    return None


def _key_string(node):
    s = _scalar_text(node.value)
    if s is None:
        raise DecodeError("unsupported mapping key %s" % _kind(node.value), mark=node.mark)
    if isinstance(node.value, float):
        s = {"+Inf": ".inf", "-Inf": "-.inf", "NaN": ".nan"}.get(s, s)
    return s


def _kind(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string %r" % (v if len(v) < 40 else v[:37] + "...")
    if isinstance(v, MapItems):
        return "a mapping"
    return "a list"


def as_string(node, path):
    if node.value is None:
        return ""
    s = _scalar_text(node.value)
    if s is None:
        raise DecodeError("expected a string, got %s" % _kind(node.value), path, node.mark)
    return s


def as_int32(node, path):
    v = node.value
    if v is None:
        return 0
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        v = int(v)
    if isinstance(v, int) and not isinstance(v, bool):
        if INT32[0] <= v <= INT32[1]:
            return v
        raise DecodeError("integer %d does not fit in int32" % v, path, node.mark)
    raise DecodeError("expected an integer, got %s" % _kind(v), path, node.mark)


def as_list(node, path):
    if node.value is None:
        return []
    if isinstance(node.value, list) and not isinstance(node.value, MapItems):
        return node.value
    raise DecodeError("expected a list, got %s" % _kind(node.value), path, node.mark)


def as_map(node, path):
    """Return [(key string, key node, value node)], refusing duplicate keys."""
    if node.value is None:
        return []
    if not isinstance(node.value, MapItems):
        raise DecodeError("expected a mapping, got %s" % _kind(node.value), path, node.mark)
    out, seen = [], set()
    for k, v in node.value:
        ks = _key_string(k)
        if ks in seen:
            raise DecodeError("duplicate key %r" % ks, path, k.mark)
        seen.add(ks)
        out.append((ks, k, v))
    return out


def as_struct(node, path, fields):
    """Decode a JSON-struct-like mapping: FIELDS names the known fields (lower case)."""
    if node.value is None:
        return None
    items = as_map(node, path)
    out = {}
    for ks, k, v in items:
        name = ks if ks in fields else ks.lower()
        if name not in fields:
            raise DecodeError("unknown field %r (expected %s)" % (ks, ", ".join(fields)),
                              path, k.mark)
        if name in out:
            raise DecodeError("field %r given twice (field names are case-insensitive)" % ks,
                              path, k.mark)
        out[name] = v
    return out
