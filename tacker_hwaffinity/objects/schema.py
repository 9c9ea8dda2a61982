"""Kubernetes objects against the OpenAPI schema of one Kubernetes release.

The schemas are the data of the ``kubernetes-validate`` package (the ``schema`` extra):
for each Kubernetes minor, ``_definitions.json`` holds every API type of that release's
OpenAPI document, in a ``-strict`` variant where each object type has
``additionalProperties: false``. A type that declares ``x-kubernetes-group-version-kind``
is what an object of that apiVersion and kind is checked against.

Two checks (doc/cli.md, "Schema check"):

* the full one (``Release.findings``, jsonschema's Draft 2020-12 validator), for the
  manifests a user writes: an unknown field is kubectl's warning (``--strict``: an
  error), anything else the API server would refuse is an error;
* the snapshot one (``SnapshotFields``), cheap enough for 30,000 objects: unknown keys
  at the levels the loader's pruner visits anyway (``objects.pruning``), against
  property-name sets taken from the same schema.

Only the data files are read (never ``import kubernetes_validate``: its import costs
about 0.1 s), and jsonschema is imported only by the full check (about 0.2 s).
"""
import datetime
import functools
import importlib.util
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Union

from tacker_hwaffinity.objects.pruning import KeptFields, Levels, Path

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects.naming import object_label
from tacker_hwaffinity.objects.yamlio import type_name

PACKAGE = "kubernetes_validate"
EXTRA = "schema"
FLOOR = 30                      # the oldest minor we support: 1.30
_STRICT_DIR = re.compile(r"^v1\.(\d+)\.0-local-strict$")
_VERSION = re.compile(r"^v?1\.(\d+)(?:\.\d+)?$")
_BASE_URI = "https://kubernetes.io/api/_definitions.json"
# (category, dotted path, message): see Release.findings
Finding = tuple[str, str, str]
# takes each batch of new warnings as it is found
Report = Callable[[list[str]], None]
MAX_FINDINGS = 100              # per object: a list of 100,000 bad items says enough by then


class Unavailable(Exception):
    """The schema extra (its data, or jsonschema for the full check) is not installed."""


def _schema_root() -> str:
    """The package's schema directory; found without importing the package."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):    # an import system that refuses it: not installed
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise Unavailable(PACKAGE)
    return os.path.join(list(spec.submodule_search_locations)[0], "kubernetes-json-schema")


@functools.lru_cache(maxsize=None)
def supported_minors() -> tuple[int, ...]:
    """The Kubernetes 1.N minors (N) the installed package has schemas for, from 1.30."""
    try:
        names = os.listdir(_schema_root())
    except OSError:
        raise Unavailable(PACKAGE)
    found = sorted(int(m.group(1)) for m in map(_STRICT_DIR.match, names) if m)
    minors = tuple(n for n in found if n >= FLOOR)
    if not minors:
        raise Unavailable(PACKAGE)
    return minors


def parse_version(text: str | None, minors: Sequence[int] | None = None) -> int | None:
    """The minor N of TEXT (``1.N``, ``v1.N`` or ``1.N.P``; None: the newest of MINORS).
    MINORS None (no schemas installed): only the form and the floor are checked."""
    if text is None:
        return minors[-1] if minors else None
    m = _VERSION.match(text)
    n = int(m.group(1)) if m else None
    if n is None or n < FLOOR or (minors and n not in minors):
        newest = "1.%d" % minors[-1] if minors else "the newest the schema extra has"
        raise InputError("%r is not a supported Kubernetes version (1.%d to %s; written "
                         "1.N, v1.N or 1.N.P)" % (text, FLOOR, newest),
                         field="--kubernetes-version")
    return n


def dotted(path: Iterable[object]) -> str:
    """kubectl's form of a field path: ``spec.containers[0].name``."""
    out = ""
    for part in path:
        if part.__class__ is int:
            out += "[%d]" % part
        else:
            out += ("." if out else "") + str(part)
    return out


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


class Release:
    """The schemas of Kubernetes 1.MINOR, loaded once per process (``release``)."""

    def __init__(self, minor: int) -> None:
        self.minor = minor
        self.name = "Kubernetes 1.%d" % minor
        path = os.path.join(_schema_root(), "v1.%d.0-local-strict" % minor, "_definitions.json")
        try:
            with open(path, encoding="utf-8") as f:
                self.document: dict[str, Any] = json.load(f)
        except (OSError, ValueError) as e:
            raise Unavailable("%s: %s" % (path, e))
        self.defs: dict[str, Any] = self.document["$defs"]
        self.types: dict[tuple[str, str], str] = {}     # (apiVersion, kind) -> definition
        self.groups: set[str] = set()                   # API groups the release serves
        for name, definition in self.defs.items():
            for gvk in definition.get("x-kubernetes-group-version-kind") or ():
                group, version = gvk.get("group") or "", gvk.get("version")
                self.groups.add(group)
                self.types[("%s/%s" % (group, version) if group else version,
                            gvk.get("kind"))] = name
        self._validators: dict[str, Any] = {}

    def type_of(self, api_version: object, kind: object) -> str | None:
        """The definition name for API_VERSION/KIND; None when the release does not serve
        it. Raises ``LookupError`` when it does not but should (a built-in API group: no
        dot, or one the release serves), so the caller can warn; custom resources and
        configuration files (``kubescheduler.config.k8s.io``) give None."""
        if api_version.__class__ is not str or kind.__class__ is not str:
            return None
        name = self.types.get((api_version, kind))
        if name is None:
            group = _group(api_version)
            if "." not in group or group in self.groups:
                raise LookupError('no matches for kind "%s" in version "%s" in %s'
                                  % (kind, api_version, self.name))
        return name

    def properties(self, schema: Mapping[str, Any]) -> frozenset[str] | None:
        """The property names of the object type SCHEMA (a ``$ref``, an array of them, or a
        definition); None when it is a map or open (no check of its keys)."""
        if "items" in schema:
            schema = schema["items"]
        ref = schema.get("$ref")
        if ref is not None:
            schema = self.defs.get(ref.rpartition("/")[2], {})
        if schema.get("additionalProperties") is not False:
            return None
        return frozenset(schema.get("properties") or ())

    def validator(self, name: str) -> Any:
        """A Draft 2020-12 validator for the definition NAME (cached)."""
        found = self._validators.get(name)
        if found is None:
            try:
                import jsonschema
                import referencing
            except ImportError as e:
                raise Unavailable(getattr(e, "name", None) or str(e))
            registry = referencing.Registry().with_resource(
                _BASE_URI, referencing.Resource.from_contents(self.document))
            found = self._validators[name] = _validator_class(jsonschema)(
                {"$ref": "%s#/$defs/%s" % (_BASE_URI, name)}, registry=registry)
        return found

    def findings(self, obj: Mapping[str, Any]) -> list[Finding]:
        """[(category, path, message)] for the object OBJ: category ``unknown`` (a field
        the schema lacks), ``unserved`` (an apiVersion/kind the release does not serve)
        or ``error`` (what the API server refuses). Kinds without a schema: []."""
        try:
            name = self.type_of(obj.get("apiVersion"), obj.get("kind"))
        except LookupError as e:
            return [("unserved", "", str(e))]
        if name is None:
            return []
        out = []
        try:
            for error in self.validator(name).iter_errors(obj):
                out.extend(_explain(error))
                if len(out) >= MAX_FINDINGS:
                    break
        except RecursionError:
            return [("error", "", "nested too deeply to check against the schema")]
        return sorted(out[:MAX_FINDINGS], key=lambda f: f[1])


@functools.lru_cache(maxsize=None)
def release(minor: int) -> Release:
    return Release(minor)


@functools.lru_cache(maxsize=None)
def _validator_class(jsonschema: Any) -> Any:
    """Draft 2020-12 with YAML's dates as strings: the API server reads YAML as JSON,
    where an unquoted ``2024-01-01`` is text."""
    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine(
        "string", lambda _, value: isinstance(value, (str, datetime.date)))
    return jsonschema.validators.extend(base, type_checker=checker)


def _expected(types: str | Sequence[str]) -> str:
    names = [t for t in ([types] if isinstance(types, str) else types) if t != "null"]
    return " or ".join(names)


def _explain(error: Any) -> list[Finding]:
    """[(category, dotted path, message)] for one jsonschema error."""
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
        return []       # null is "not set" for the API server (oneOf of two nullables)
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


def _types(schema: Mapping[str, Any]) -> list[str]:
    types = schema.get("type") or ()
    return [types] if isinstance(types, str) else list(types)


def _shown(value: object) -> str:
    text = repr(value) if isinstance(value, (str, int, float, bool)) else ""
    if len(text) > 40:
        text = text[:37] + "..."
    return ("%s %s" % (type_name(value), text)).strip()


class SnapshotFields:
    """The snapshot check of one loader's kept-fields table KEPT (see ``pruning``):
    the property names of every level the pruner visits, per apiVersion and kind, and
    what it found. ``pruning.pruner`` calls ``names`` and ``unknown`` of ``bind(SOURCE)``."""

    def __init__(self, release_: Release, kept: KeptFields) -> None:
        self.release, self.kept = release_, kept
        # (apiVersion, kind) -> {level: property names}, None, or why it is not served
        self.levels_by_type: dict[tuple[Any, Any], Levels | str | None] = {}
        # (source, object label, dotted path)
        self.unknown_fields: list[tuple[str, str, str]] = []
        self.unserved: dict[tuple[str, str], int] = {}  # (source, message) -> objects

    def bind(self, source: str) -> "_Bound":
        return _Bound(self, source)

    def levels(self, api_version: object, kind: str) -> Levels | str | None:
        """{"" | field | (field, key): property names} for API_VERSION/KIND, None when
        it has no schema, or the text of why a built-in kind is not served."""
        key = (api_version, kind)
        try:
            return self.levels_by_type[key]
        except KeyError:
            pass
        except TypeError:       # an unhashable apiVersion: the readers report it
            return None
        found: Levels | str | None
        try:
            name = self.release.type_of(api_version, kind)
        except LookupError as e:
            found = str(e)
        else:
            found = None if name is None else self._names(name, self.kept.get(kind) or {})
        self.levels_by_type[key] = found
        return found

    def _names(self, name: str,
               fields: Mapping[str, Sequence[Union[str, tuple[str, Sequence[str]]]]]) -> Levels:
        schema = self.release.defs[name]
        props = schema.get("properties") or {}
        out: dict[Union[str, tuple[str, str]], frozenset[str] | None] = {
            "": self.release.properties(schema)}
        for field, keys in fields.items():
            sub = props.get(field)
            names = self.release.properties(sub) if sub is not None else None
            out[field] = names
            sub_schema = self.release.defs.get((sub or {}).get("$ref", "").rpartition("/")[2])
            for key in keys:
                if isinstance(key, tuple) and sub_schema is not None:
                    inner = (sub_schema.get("properties") or {}).get(key[0])
                    out[(field, key[0])] = (self.release.properties(inner)
                                            if inner is not None else None)
        return {level: names for level, names in out.items() if names is not None}


class _Bound:
    """SnapshotFields for the objects of one file (what the pruner is given)."""

    def __init__(self, fields: SnapshotFields, source: str) -> None:
        self.fields, self.source = fields, source

    def names(self, obj: dict[str, Any]) -> Levels | None:
        """{level: property names} for OBJ (a mapping of a kept kind with metadata), or None."""
        try:
            found = self.fields.levels_by_type[(obj.get("apiVersion"), obj["kind"])]
        except (KeyError, TypeError):       # not seen yet (or unhashable: left to levels)
            found = self.fields.levels(obj.get("apiVersion"), obj["kind"])
        if isinstance(found, str):
            key = (self.source, found)
            self.fields.unserved[key] = self.fields.unserved.get(key, 0) + 1
            return None
        return found

    def unknown(self, obj: dict[str, Any], path: Path, keys: list[str]) -> None:
        """KEYS of OBJ at PATH (a tuple: field, key, index) are not in the schema."""
        label = object_label(obj)
        for key in keys:
            self.fields.unknown_fields.append((self.source, label, dotted(path + (key,))))


class Check:
    """The schema check of one command: the release (None when the extra is missing),
    whether unknown fields are errors, and the warnings so far (strings, in order;
    ``report`` gets each batch as it is found)."""

    def __init__(self, release_: Release | None, strict: bool = False,
                 report: Report | None = None, hint: str = "") -> None:
        self.release, self.strict = release_, strict
        self.warnings: list[str] = []
        self._report = report
        self._hint = hint

    @classmethod
    def from_flags(cls, version: str | None, strict: bool, report: Report | None = None,
                   hint: str = "") -> "Check":
        """The check for ``--kubernetes-version VERSION`` (None: the newest) and
        ``--strict``; a bad version is an InputError naming the supported range."""
        try:
            minors = supported_minors()
        except Unavailable:
            parse_version(version)
            return cls(None, strict, report, hint)
        try:
            return cls(release(parse_version(version, minors)), strict, report, hint)
        except Unavailable:
            return cls(None, strict, report, hint)

    def _add(self, warnings: list[str]) -> None:
        warnings = [w for w in warnings if w not in self.warnings]
        self.warnings.extend(warnings)
        if warnings and self._report is not None:
            self._report(warnings)

    def _skipped(self) -> None:
        self._add(["schema check skipped: install the %s extra (%s)" % (EXTRA, self._hint)])

    def review(self, objects: Iterable[tuple[Mapping[str, Any], str]]) -> list[InputError]:
        """Errors ([InputError]) of [(object, source)] OBJECTS, fully checked; unknown
        fields and unserved kinds are warnings (and, strict, unknown fields errors too)."""
        if self.release is None:
            self._skipped()
            return []
        warnings, errors, unknown = [], [], []
        try:
            for obj, source in objects:
                label = object_label(obj)
                for category, path, message in self.release.findings(obj):
                    if category == "unknown":
                        warnings.append('%s: %s: unknown field "%s"' % (source, label, path))
                        unknown.append(InputError("unknown field (--strict)", source=source,
                                                  obj=label, field=path))
                    elif category == "unserved":
                        warnings.append("%s: %s: %s (not checked)" % (source, label, message))
                    else:
                        errors.append(InputError(message, source=source, obj=label,
                                                 field=path or None))
        except Unavailable:
            self.release = None
            self._skipped()
            return []
        self._add(warnings)
        return errors + (unknown if self.strict else [])

    def objects(self, objects: Iterable[tuple[Mapping[str, Any], str]]) -> None:
        """Check OBJECTS fully (``review``); raise the first error, counting the others."""
        errors = self.review(objects)
        if errors:
            raise _first(errors)

    def snapshot(self, kept: KeptFields) -> SnapshotFields | None:
        """The SnapshotFields a loader with the kept-fields table KEPT hands its pruner,
        or None when the check does not run (the warning is given then)."""
        if self.release is None:
            self._skipped()
            return None
        return SnapshotFields(self.release, kept)

    def snapshot_done(self, fields: SnapshotFields | None) -> None:
        """Report what FIELDS (from ``snapshot``) found; strict: raise for unknown fields."""
        if fields is None:
            return
        warnings = ['%s: %s: unknown field "%s"' % f for f in fields.unknown_fields]
        warnings.extend("%s: %d object(s) not checked: %s" % (source, n, message)
                        for (source, message), n in fields.unserved.items())
        self._add(warnings)
        if self.strict and fields.unknown_fields:
            raise _first([InputError("unknown field (--strict)", source=source, obj=label,
                                     field=path)
                          for source, label, path in fields.unknown_fields])


def _first(errors: Sequence[InputError]) -> InputError:
    first = errors[0]
    if len(errors) == 1:
        return first
    return InputError("%s (and %d more)" % (first.message, len(errors) - 1),
                      source=first.source, obj=first.obj, field=first.field)
