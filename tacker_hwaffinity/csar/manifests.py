"""Kubernetes manifests against the ``kubernetes`` client's models.

The model of an object is the ``body`` type of the client's create call for
its apiVersion and kind (``AppsV1Api.create_namespaced_deployment`` takes a
``V1Deployment``), found as ``kubernetes.utils.create_from_yaml`` finds the
call, so an apiVersion/kind pair the API does not serve is an error. The
models (pydantic, ``extra='forbid'``, strict types) report unknown fields,
wrong types and missing required fields, each with its path.

A client without pydantic models (36, the one Tacker 16 needs: the ``tacker`` extra pins
it) checks nothing here: ``csar validate`` then says so in a note, and the OpenAPI schema
check (``objects.schema``, every install) finds the same faults.

One relaxation, as the API server decodes them: resource quantities
(``resources.limits``/``requests`` and the other Quantity maps) may be YAML
numbers; every quantity must parse (``500m``, ``1.5``, ``2Gi``).
"""
import inspect
import re
import typing

from tacker_hwaffinity.csar.problems import Problem
from tacker_hwaffinity.objects.naming import object_label
from tacker_hwaffinity.objects.quantity import parse_quantity

# Map fields whose values are resource.Quantity in the Kubernetes API.
QUANTITY_MAPS = frozenset(("limits", "requests", "capacity", "allocatable", "hard", "used",
                           "overhead", "max", "min", "default", "defaultRequest",
                           "maxLimitRequestRatio"))
QUANTITY_FIELDS = frozenset(("sizeLimit",))
_UPPER_LOWER = re.compile("(.)([A-Z][a-z]+)")
_LOWER_UPPER = re.compile("([a-z0-9])([A-Z])")


def _client():
    from kubernetes import client
    return client


def models_available():
    """Whether the installed kubernetes client has the pydantic models (37 and later);
    Tacker 16's Python has 36, whose models check nothing."""
    return hasattr(getattr(_client(), "V1Pod", None), "model_validate")


def model(api_version, kind):
    """The client model class for API_VERSION/KIND, or None when not served."""
    client = _client()
    group, _, version = api_version.partition("/")
    if not version:
        group, version = "core", group
    group = "".join(group.rsplit(".k8s.io", 1))
    api = getattr(client, "%s%sApi" % ("".join(w.capitalize() for w in group.split(".")),
                                       version.capitalize()), None)
    if api is None:
        return None
    snake = _LOWER_UPPER.sub(r"\1_\2", _UPPER_LOWER.sub(r"\1_\2", kind)).lower()
    call = (getattr(api, "create_namespaced_%s" % snake, None)
            or getattr(api, "create_%s" % snake, None))
    if call is None:
        return None
    body = inspect.signature(call).parameters.get("body")
    cls = body.annotation if body is not None else None
    return cls if inspect.isclass(cls) and hasattr(cls, "model_validate") else None


def _path(loc):
    out = ""
    for part in loc:
        out += "[%d]" % part if isinstance(part, int) else ("." if out else "") + str(part)
    return out


def _walk(value, loc):
    """How much of LOC names positions in VALUE (the rest are union member tags)."""
    for n, part in enumerate(loc):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            value = value[part]
        else:
            return n
    return len(loc)


def _is_quantity(loc):
    return (len(loc) >= 2 and loc[-2] in QUANTITY_MAPS) or (loc and loc[-1] in QUANTITY_FIELDS)


def _message(err):
    kind = err.get("type")
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required field is missing"
    return "%s, got %r" % (err.get("msg", "invalid"), err.get("input"))


def _schema_errors(cls, obj):
    """{path tuple: [messages]} of the model's complaints about OBJ."""
    from pydantic import ValidationError
    try:
        cls.model_validate(obj)
    except ValidationError as e:
        found = {}
        for err in e.errors():
            loc = tuple(err.get("loc") or ())
            loc = loc[:_walk(obj, loc)] if err.get("type") != "missing" else loc
            if (err.get("type") == "string_type" and _is_quantity(loc)
                    and isinstance(err.get("input"), (int, float))
                    and not isinstance(err.get("input"), bool)):
                continue                # a number is a valid quantity
            msgs = found.setdefault(loc, [])
            if _message(err) not in msgs:
                msgs.append(_message(err))
        return found
    return {}


def _quantities(value, loc, out):
    if isinstance(value, dict):
        for key, sub in value.items():
            here = loc + (key,)
            if _is_quantity(here) and not isinstance(sub, (dict, list)):
                try:
                    parse_quantity(sub)
                except ValueError as e:
                    out.setdefault(here, []).append(str(e))
            else:
                _quantities(sub, here, out)
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            _quantities(sub, loc + (i,), out)


def _models_in(tp):
    """The model classes a field annotation holds (through Optional, List, Dict)."""
    if inspect.isclass(tp) and hasattr(tp, "model_fields"):
        return [tp]
    out = []
    for arg in typing.get_args(tp):
        out.extend(_models_in(arg))
    return out


def _python_names(cls, value, loc, out):
    """Fields written with the client's Python name (``readiness_probe``): the
    models accept them, the API server does not."""
    if isinstance(value, list):
        for i, sub in enumerate(value):
            _python_names(cls, sub, loc + (i,), out)
        return
    if not isinstance(value, dict):
        return
    fields = cls.model_fields
    by_alias = {(f.serialization_alias or n): f for n, f in fields.items()}
    for key, sub in value.items():
        field = by_alias.get(key)
        if field is None and key in fields:
            field = fields[key]
            out.setdefault(loc + (key,), []).append(
                "unknown field (the API calls it %s)" % (field.serialization_alias or key))
        if field is None:
            continue
        models = _models_in(field.annotation)
        if not models:
            continue
        if isinstance(sub, dict) and _is_map(field.annotation):
            for k, item in sub.items():
                _python_names(models[0], item, loc + (key, k), out)
        else:
            _python_names(models[0], sub, loc + (key,), out)


def _is_map(tp):
    if typing.get_origin(tp) is dict:
        return True
    return any(_is_map(a) for a in typing.get_args(tp))


def check(obj, source):
    """Problems of one Kubernetes object OBJ (a mapping) read from SOURCE."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    for field, value in (("apiVersion", api_version), ("kind", kind)):
        if not isinstance(value, str) or not value:
            return [Problem(source, "missing (every object needs apiVersion and kind)",
                            object_label(obj), field)]
    cls = model(api_version, kind)
    if cls is None:
        return [Problem(source, "kind %s of %s is not in the kubernetes client %s models: not "
                        "a built-in kind of that apiVersion (custom resources cannot be "
                        "checked)" % (kind, api_version, _version()), object_label(obj), "kind")]
    found = _schema_errors(cls, obj)
    _python_names(cls, obj, (), found)
    _quantities(obj, (), found)
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
        found.setdefault(("metadata", "name"), []).append("required field is missing")
    return [Problem(source, "; ".join(msgs), object_label(obj), _path(loc) or None)
            for loc, msgs in sorted(found.items(), key=lambda kv: _path(kv[0]))]


def _version():
    import kubernetes
    return getattr(kubernetes, "__version__", "?")
