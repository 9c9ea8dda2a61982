"""Kubernetes objects against the OpenAPI schema of one Kubernetes release.

The schemas ship with the package (every install has them): ``kubernetes-schemas.json.gz``
beside this module holds, for each Kubernetes minor from 1.30, every API type of that
release's OpenAPI document in the ``-strict`` variant of the ``kubernetes-validate``
package (each object type has ``additionalProperties: false``), compacted by
``tools/kubernetes_schemas.py`` (annotations dropped, a type the same in several minors
stored once). A type that declares ``x-kubernetes-group-version-kind`` is what an object
of that apiVersion and kind is checked against.

Two checks (doc/cli.md, "Schema check"):

* the full one (``Release.findings``, ``objects.openapi``), for the manifests a user
  writes: an unknown field is kubectl's warning (``--strict``: an error), anything else
  the API server would refuse is an error;
* the snapshot one (``SnapshotFields``), cheap enough for 30,000 objects: unknown keys
  at the levels the loader's pruner visits anyway (``objects.pruning``), against
  property-name sets taken from the same schema.

A missing or damaged data file is a broken installation: ``Check.from_flags`` says so in
one InputError, and no command runs without its check.
"""
import functools
import json
import os
import re
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Union

from tacker_hwaffinity.objects.pruning import KeptFields, Levels, Path

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import openapi
from tacker_hwaffinity.objects.naming import object_label
from tacker_hwaffinity.objects.openapi import dotted

# written by tools/kubernetes_schemas.py; tests/objects/test_schema_data.py keeps it equal
# to what the tool makes from the kubernetes-validate the tests install
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kubernetes-schemas.json.gz")
FLOOR = 30                      # the oldest minor we support: 1.30
_VERSION = re.compile(r"^v?1\.(\d+)(?:\.\d+)?$")
Finding = openapi.Finding        # see Release.findings
# takes each batch of new warnings as it is found
Report = Callable[[list[str]], None]
MAX_FINDINGS = 100              # per object: a list of 100,000 bad items says enough by then


class Unavailable(Exception):
    """The schema data of this installation is missing or damaged (a broken install)."""


@functools.lru_cache(maxsize=None)
def _data() -> dict[str, Any]:
    """DATA as tools/kubernetes_schemas.py writes it: ``minors`` (N of each 1.N),
    ``names`` (every definition's), ``variants`` (each name's distinct definitions) and
    ``releases`` (per minor, each name's variant index, or null where it is absent)."""
    try:
        with open(DATA, "rb") as f:
            data: dict[str, Any] = json.loads(zlib.decompress(f.read(), 16 + zlib.MAX_WBITS))
        if not data["minors"]:
            raise ValueError("no Kubernetes release in it")
    except OSError as e:
        raise Unavailable("%s: %s" % (DATA, e.strerror or e))
    except (ValueError, zlib.error, KeyError, TypeError) as e:
        raise Unavailable("%s: %s" % (DATA, e))
    return data


def supported_minors() -> tuple[int, ...]:
    """The Kubernetes 1.N minors (N) the installed schemas cover, from 1.30."""
    return tuple(_data()["minors"])


def parse_version(text: str | None, minors: Sequence[int]) -> int:
    """The minor N of TEXT (``1.N``, ``v1.N`` or ``1.N.P``; None: the newest of MINORS)."""
    if text is None:
        return minors[-1]
    m = _VERSION.match(text)
    n = int(m.group(1)) if m else None
    if n is None or n not in minors:
        raise InputError("%r is not a supported Kubernetes version (1.%d to 1.%d; written "
                         "1.N, v1.N or 1.N.P)" % (text, minors[0], minors[-1]),
                         field="--kubernetes-version")
    return n


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


class Release:
    """The schemas of Kubernetes 1.MINOR, loaded once per process (``release``)."""

    def __init__(self, minor: int) -> None:
        self.minor = minor
        self.name = "Kubernetes 1.%d" % minor
        data = _data()
        row = data["releases"][data["minors"].index(minor)]
        # definition name -> its schema in this release
        self.defs: dict[str, Any] = {name: forms[k] for name, forms, k in
                                     zip(data["names"], data["variants"], row) if k is not None}
        self.types: dict[tuple[str, str], str] = {}     # (apiVersion, kind) -> definition
        self.groups: set[str] = set()                   # API groups the release serves
        for name, definition in self.defs.items():
            for gvk in definition.get("x-kubernetes-group-version-kind") or ():
                group, version = gvk.get("group") or "", gvk.get("version")
                self.groups.add(group)
                self.types[("%s/%s" % (group, version) if group else version,
                            gvk.get("kind"))] = name

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
            schema = self.defs.get(ref, {})
        if schema.get("additionalProperties") is not False:
            return None
        return frozenset(schema.get("properties") or ())

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
        try:
            return openapi.findings(self.defs, name, obj, MAX_FINDINGS)
        except RecursionError:
            return [("error", "", "nested too deeply to check against the schema")]


@functools.lru_cache(maxsize=None)
def release(minor: int) -> Release:
    return Release(minor)


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
            sub_schema = self.release.defs.get((sub or {}).get("$ref", ""))
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
    """The schema check of one command: the release, whether unknown fields are errors,
    and the warnings so far (strings, in order; ``report`` gets each batch as it is
    found)."""

    def __init__(self, release_: Release, strict: bool = False,
                 report: Report | None = None) -> None:
        self.release, self.strict = release_, strict
        self.warnings: list[str] = []
        self._report = report

    @classmethod
    def from_flags(cls, version: str | None, strict: bool,
                   report: Report | None = None) -> "Check":
        """The check for ``--kubernetes-version VERSION`` (None: the newest) and
        ``--strict``; a bad version is an InputError naming the supported range, and so
        is a broken installation, whose schemas cannot be read."""
        try:
            minors = supported_minors()
            return cls(release(parse_version(version, minors)), strict, report)
        except Unavailable as e:
            raise InputError("the Kubernetes schemas of this installation cannot be read "
                             "(%s): reinstall tacker-hwaffinity" % e)

    def _add(self, warnings: list[str]) -> None:
        warnings = [w for w in warnings if w not in self.warnings]
        self.warnings.extend(warnings)
        if warnings and self._report is not None:
            self._report(warnings)

    def review(self, objects: Iterable[tuple[Mapping[str, Any], str]]) -> list[InputError]:
        """Errors ([InputError]) of [(object, source)] OBJECTS, fully checked; unknown
        fields and unserved kinds are warnings (and, strict, unknown fields errors too)."""
        warnings, errors, unknown = [], [], []
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
        self._add(warnings)
        return errors + (unknown if self.strict else [])

    def objects(self, objects: Iterable[tuple[Mapping[str, Any], str]]) -> None:
        """Check OBJECTS fully (``review``); raise the first error, counting the others."""
        errors = self.review(objects)
        if errors:
            raise _first(errors)

    def snapshot(self, kept: KeptFields) -> SnapshotFields:
        """The SnapshotFields a loader with the kept-fields table KEPT hands its pruner."""
        return SnapshotFields(self.release, kept)

    def snapshot_done(self, fields: SnapshotFields | None) -> None:
        """Report what FIELDS (from ``snapshot``; None: no check ran) found; strict: raise
        for unknown fields."""
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
