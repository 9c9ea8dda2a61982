"""The namespace a manifest's object lands in, as ``kubectl apply -f`` decides it.

An object that names no namespace lands in the target namespace: the one ``-n/--namespace``
gives, else the namespace of the kubeconfig's context (kubectl's rule, for a command that
reads a live cluster), else ``default``. Given ``-n``, an object naming another namespace
is refused with kubectl's own message. Cluster-scoped kinds name none and get none.
An object in a namespace the cluster does not have is refused, as the API server refuses
it. Pure: objects in, objects and a note (or an InputError) out.
"""
import dataclasses
import difflib
import re
from collections.abc import Collection, Sequence
from typing import Any

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects.naming import (
    CLUSTER_SCOPED_KINDS, DEFAULT_NAMESPACE, object_label)

# a namespace's name: an RFC 1123 label, as the API server validates it
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_MAX_NAME = 63
FLAG = "--namespace"

# (object, the name of its source in messages)
Loaded = tuple[Any, str]
# the namespaces every API server makes itself: a snapshot that lists others but not
# these (a hand-made one) still has them
SYSTEM_NAMESPACES = frozenset((DEFAULT_NAMESPACE, "kube-system", "kube-public",
                               "kube-node-lease"))


@dataclasses.dataclass(frozen=True)
class Target:
    """Where objects without a namespace land: NAME, and what chose it (ORIGIN: the
    flag, the kubeconfig's context, or the default)."""
    name: str = DEFAULT_NAMESPACE
    origin: str = "the default"

    @property
    def explicit(self) -> bool:
        """Given by -n/--namespace: an object naming another namespace is refused."""
        return self.origin == FLAG


def target(flag: str | None, context_namespace: str | None = None) -> Target:
    """The Target of -n/--namespace FLAG, else of the kubeconfig context's namespace,
    else ``default``; InputError for a FLAG that cannot name a namespace."""
    if flag is not None:
        if len(flag) > _MAX_NAME or not _LABEL.fullmatch(flag):
            raise InputError("expected a namespace name (lower-case letters, digits and "
                             "'-', at most %d, starting and ending with a letter or digit), "
                             "got %r" % (_MAX_NAME, flag), field=FLAG)
        return Target(flag, FLAG)
    if context_namespace:
        return Target(context_namespace, "the kubeconfig context's namespace")
    return Target()


def _namespace_of(obj: dict[str, Any]) -> object:
    meta = obj.get("metadata")
    return meta.get("namespace") if isinstance(meta, dict) else None


def _with_namespace(obj: dict[str, Any], name: str) -> dict[str, Any]:
    """OBJ (copied, as its metadata) with metadata.namespace NAME."""
    meta = obj.get("metadata")
    return dict(obj, metadata=dict(meta if isinstance(meta, dict) else {}, namespace=name))


def place(objects: Sequence[Loaded], where: Target) -> tuple[list[Loaded], list[str]]:
    """(OBJECTS, each namespaced object that names no namespace given WHERE's, and a note
    saying how many did and where they land). Given -n, an object naming another
    namespace is an InputError, as kubectl refuses it."""
    out: list[Loaded] = []
    placed = 0
    for obj, source in objects:
        if not isinstance(obj, dict) or obj.get("kind") in CLUSTER_SCOPED_KINDS:
            out.append((obj, source))
            continue
        named = _namespace_of(obj)
        if not named:
            out.append((_with_namespace(obj, where.name), source))
            placed += 1
            continue
        if where.explicit and named != where.name:
            raise InputError(
                "the namespace from the provided object %s does not match the namespace "
                "\"%s\". You must pass '--namespace=%s' to perform this operation."
                % ('"%s"' % named if isinstance(named, str) else repr(named), where.name,
                   named), source=source, obj=object_label(obj), field="metadata.namespace")
        out.append((obj, source))
    notes = ['%d object(s) name no namespace: planned in namespace "%s" (%s%s)'
             % (placed, where.name, where.origin,
                "" if where.explicit else "; -n/--namespace sets another")] if placed else []
    return out, notes


def check_exist(objects: Sequence[Loaded], existing: Collection[str]) -> None:
    """InputError naming the first namespaced object of OBJECTS whose namespace is neither
    one of EXISTING (the cluster's) nor made by a Namespace among OBJECTS: the API server
    refuses to create an object in a namespace that does not exist. (``plan`` and
    ``explain`` take it as a warning: a snapshot taken before the namespace is created,
    as an operator plans first, is still worth a plan.)"""
    made = {obj["metadata"].get("name") for obj, _ in objects
            if isinstance(obj, dict) and obj.get("kind") == "Namespace"
            and isinstance(obj.get("metadata"), dict)}
    for obj, source in objects:
        if not isinstance(obj, dict) or obj.get("kind") in CLUSTER_SCOPED_KINDS:
            continue
        named = _namespace_of(obj)
        if isinstance(named, str) and named not in existing and named not in made \
                and named not in SYSTEM_NAMESPACES:
            close = difflib.get_close_matches(named, sorted(existing), n=1)
            raise InputError(
                'namespace "%s" is not in the cluster%s and no Namespace of the manifests '
                "creates it: the API server would refuse to create the object there"
                % (named, ' (did you mean "%s"?)' % close[0] if close else ""),
                source=source, obj=object_label(obj), field="metadata.namespace")
