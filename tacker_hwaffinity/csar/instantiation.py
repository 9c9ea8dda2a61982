"""What an instantiate request makes of a CNF's manifests, as Tacker v2's Kubernetes
driver makes it (``kubernetes_utils.get_k8s_reses_from_json_files``).

The files deployed are ``additionalParams['lcm-kubernetes-def-files']``, in that order;
each must be one of the package's (else ``CnfDefinitionNotFound``). Given
``additionalParams['namespace']`` (or ``--namespace``), every namespaced object is put in
that namespace, whatever it names; without one, an object naming none lands in
``default``, and objects of two namespaces are refused (``NamespaceNotUniform``).
"""
import dataclasses
import json
import os
from collections.abc import Sequence
from typing import Any

from tacker_hwaffinity.csar.problems import Problem
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects.naming import CLUSTER_SCOPED_KINDS, DEFAULT_NAMESPACE
from tacker_hwaffinity.objects.yamlio import read_text

FILES = "lcm-kubernetes-def-files"
# an instantiate request is a few KiB; more is not one
MAX_REQUEST_BYTES = 1 << 20

# (object, the package file it comes from)
Loaded = tuple[Any, str]


@dataclasses.dataclass(frozen=True)
class Deployment:
    """The manifests an instantiation deploys (FILES, in order; None: every manifest of the
    package, in file-name order) and the namespace it puts them in (None: Tacker's
    default), with what said so (ORIGIN)."""
    files: tuple[str, ...] | None = None
    namespace: str | None = None
    origin: str = "Tacker's default"


def from_request(path: str) -> Deployment:
    """The Deployment of the InstantiateVnfRequest (JSON) in the file PATH."""
    try:    # bounded before it is read
        size = os.path.getsize(path)
    except OSError:
        size = 0            # read_text names what is wrong with the path
    if size > MAX_REQUEST_BYTES:
        raise InputError("over %d bytes: not an instantiate request" % MAX_REQUEST_BYTES,
                         source=path)
    text = read_text(path)
    if len(text) > MAX_REQUEST_BYTES:
        raise InputError("over %d bytes: not an instantiate request" % MAX_REQUEST_BYTES,
                         source=path)
    try:
        request = json.loads(text)
    except ValueError as e:
        raise InputError("not JSON: %s" % e, source=path)
    params = request.get("additionalParams") if isinstance(request, dict) else None
    if not isinstance(params, dict):
        raise InputError("expected an InstantiateVnfRequest with additionalParams",
                         source=path, field="additionalParams")
    files = params.get(FILES)
    if not isinstance(files, list) or not files or \
            not all(isinstance(f, str) and f for f in files):
        raise InputError("expected a list of the manifests to deploy", source=path,
                         field="additionalParams.%s" % FILES)
    namespace = params.get("namespace")
    if namespace is not None and (not isinstance(namespace, str) or not namespace):
        raise InputError("expected a namespace name", source=path,
                         field="additionalParams.namespace")
    return Deployment(tuple(files), namespace,
                      "%s additionalParams.namespace" % path if namespace else "Tacker's default")


def deployed(objects: Sequence[Loaded], manifest_files: Sequence[str], deployment: Deployment
             ) -> tuple[list[Loaded], list[Problem], list[str]]:
    """(the objects of OBJECTS the DEPLOYMENT deploys, in its order and namespace; the
    problems Tacker would refuse the instantiation for; notes). MANIFEST_FILES: the
    package's manifests."""
    problems: list[Problem] = []
    chosen = list(objects)
    if deployment.files is not None:
        missing = [f for f in deployment.files if f not in manifest_files]
        problems.extend(Problem(f, "not a Kubernetes manifest of the package: Tacker refuses "
                                "the instantiation (CnfDefinitionNotFound)", None, FILES)
                        for f in missing)
        order = {f: i for i, f in enumerate(deployment.files)}
        chosen = sorted((o for o in objects if o[1] in order), key=lambda o: order[o[1]])
        left = sorted({s for _, s in objects} - set(order))
        notes = (["not deployed by the instantiate request (not in %s): %s"
                  % (FILES, ", ".join(left))] if left else [])
    else:
        notes = []
    namespaced = [(o, s) for o, s in chosen
                  if isinstance(o, dict) and o.get("kind") not in CLUSTER_SCOPED_KINDS]
    if deployment.namespace is not None:
        target = deployment.namespace
    else:
        named = {_namespace(o) or DEFAULT_NAMESPACE for o, _ in namespaced}
        if len(named) > 1:
            problems.append(Problem(namespaced[0][1], "objects of %d namespaces (%s): Tacker "
                                    "refuses the instantiation without a namespace "
                                    "(NamespaceNotUniform)" % (len(named),
                                                               ", ".join(sorted(named))),
                                    None, "metadata.namespace"))
        target = named.pop() if len(named) == 1 else DEFAULT_NAMESPACE
    moved = {id(o) for o, _ in namespaced}
    out = [(_in(o, deployment.namespace or _namespace(o) or DEFAULT_NAMESPACE), s)
           if id(o) in moved else (o, s) for o, s in chosen]
    if namespaced:
        notes.append('planned in namespace "%s" (%s)' % (target, deployment.origin))
    return out, problems, notes


def _namespace(obj: dict[str, Any]) -> str | None:
    meta = obj.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    return ns if isinstance(ns, str) and ns else None


def _in(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    meta = obj.get("metadata")
    return dict(obj, metadata=dict(meta if isinstance(meta, dict) else {}, namespace=namespace))
