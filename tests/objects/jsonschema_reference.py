"""The schema check as it was when it needed the schema extra: kubernetes-validate's
published ``_definitions.json`` (strict), checked by jsonschema's Draft 2020-12 validator
with YAML's dates as strings, each error explained as objects/schema.py explained it.

The oracle of tests/objects/test_schema_data.py: the shipped schemas (compacted by
tools/kubernetes_schemas.py) and objects/openapi.py must find what this finds.
"""
import datetime
import functools
import json

import jsonschema
import referencing
import referencing.jsonschema

from tacker_hwaffinity.objects.openapi import dotted
from tacker_hwaffinity.objects.yamlio import type_name

_BASE_URI = "https://kubernetes.io/api/_definitions.json"


@functools.lru_cache(maxsize=None)
def _validator_class():
    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine(
        "string", lambda _, value: isinstance(value, (str, datetime.date)))
    return jsonschema.validators.extend(base, type_checker=checker)


class Reference:
    """Findings of objects against DEFS, one release's published ``$defs``."""

    def __init__(self, defs):
        self.registry = referencing.Registry().with_resource(
            _BASE_URI, referencing.jsonschema.DRAFT202012.create_resource({"$defs": defs}))
        self.validators = {}

    def findings(self, name, obj, limit):
        """[(category, dotted path, message)] of OBJ against definition NAME: every one
        (a set's worth: jsonschema reports each missing required field once per missing
        field) while fewer than LIMIT."""
        validator = self.validators.get(name)
        if validator is None:
            validator = self.validators[name] = _validator_class()(
                {"$ref": "%s#/$defs/%s" % (_BASE_URI, name)}, registry=self.registry)
        out = []
        for error in validator.iter_errors(obj):
            out.extend(f for f in _explain(error) if f not in out)
            if len(out) >= limit:
                break
        return sorted(out, key=lambda f: f[1])


def _explain(error):
    path = list(error.absolute_path)
    value, rule = error.instance, error.validator
    if rule == "additionalProperties" and error.validator_value is False:
        known = error.schema.get("properties") or {}
        return [("unknown", dotted(path + [key]), "unknown field")
                for key in value if key not in known]
    if rule == "required":
        return [("error", dotted(path + [key]), "required field is missing")
                for key in error.validator_value if key not in value]
    if value is None:
        return []
    if rule == "type":
        message = "expected %s, got %s" % (_expected(error.validator_value), _shown(value))
    elif rule == "oneOf":
        message = "expected %s, got %s" % (
            _expected([t for s in error.validator_value for t in _types(s)]), _shown(value))
    elif rule == "enum":
        message = "expected one of %s, got %s" % (
            ", ".join(json.dumps(v) for v in error.validator_value), _shown(value))
    else:
        message = error.message
    return [("error", dotted(path), message)]


def _expected(types):
    return " or ".join(t for t in ([types] if isinstance(types, str) else types)
                       if t != "null")


def _types(schema):
    types = schema.get("type") or ()
    return [types] if isinstance(types, str) else list(types)


def _shown(value):
    text = repr(value) if isinstance(value, (str, int, float, bool)) else ""
    if len(text) > 40:
        text = text[:37] + "..."
    return ("%s %s" % (type_name(value), text)).strip()
