"""Load a VNF package or VNFD offline, the way Tacker's v1 path does.

Tacker v1 (``vnflcm/utils._get_flavour_based_vnfd`` and ``_get_param_data``):

1. looks through the package (YAML files at its root and one directory down)
   for the deployment-flavour file whose
   ``substitution_mappings.properties.flavour_id`` is the requested flavour;
2. rewrites that file's imports to absolute paths;
3. drops ``substitution_mappings.requirements``;
4. parses the dict with ``ToscaTemplate(a_file=False, yaml_dict_tpl=...,
   local_defs=...)``, ``local_defs`` mapping the SOL001 URLs to local files;
5. uses the substitution node's properties (and its type's defaults) as the
   parameters of ``TOSCATranslator``.

We do the same with the package's own files: a URL import resolves to a file
of the same name next to the importing file or in the flavour file's
directory, or it is an error. Nothing is fetched. A package *source* directory
that lacks the ETSI SOL001 type files it imports is read from a copy to which
they are added from the installed ``tacker``, as ``hwaffinity csar build`` adds
them to the package.

Accepted inputs: a CSAR (``.zip``/``.csar``), an unpacked package directory,
a flavour file, a top VNFD next to its flavour files, or a plain template. Every
file is read by ``objects.package_yaml``, within its bounds.
"""
import contextlib
import dataclasses
import os
import shutil
import sys
import tempfile
import types
import urllib.error
import zipfile
from collections.abc import Iterator
from typing import Any

from tacker_hwaffinity import etsi_types
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import package_yaml
from tacker_hwaffinity.vnfpackage import meta, zipio

_URL_PREFIXES = ("http://", "https://", "ftp://")
MAX_IMPORT_DEPTH = 32       # files in one chain of imports (ETSI's own are 3 deep)
_YAML_EXT = (".yaml", ".yml")

@dataclasses.dataclass
class Vnfd:
    """A flavour ready for tosca-parser."""

    path: str               # the file the topology comes from (for messages)
    flavour: str            # None for a template without substitution_mappings
    template: dict          # imports absolute, substitution requirements removed
    local_defs: dict        # URL -> local file
    parsed_params: dict


def flavour_of(data: object) -> Any:
    """The ``substitution_mappings.properties.flavour_id`` of a loaded YAML file, or None."""
    if not isinstance(data, dict):
        return None
    topo = data.get("topology_template")
    subst = topo.get("substitution_mappings") if isinstance(topo, dict) else None
    props = subst.get("properties") if isinstance(subst, dict) else None
    return props.get("flavour_id") if isinstance(props, dict) else None


def flavour_candidates(root: str) -> list[str]:
    """YAML files at the root and one directory down, as Tacker scans them."""
    found: list[str] = []
    for item in sorted(os.listdir(root)):
        path = os.path.join(root, item)
        if os.path.isdir(path):
            found.extend(os.path.join(path, f) for f in sorted(os.listdir(path))
                         if f.endswith(_YAML_EXT))
        elif item.endswith(_YAML_EXT):
            found.append(path)
    return found


def _pick_flavour(candidates, flavour, where):
    """(path, data) of the flavour file among (path, data, flavour_id) triples."""
    flavours = [c for c in candidates if c[2] is not None]
    if not flavours:
        raise InputError("no deployment flavour file (substitution_mappings.properties."
                         "flavour_id) found", source=where)
    if flavour is None:
        ids = sorted({c[2] for c in flavours})
        if len(ids) > 1:
            raise InputError("several deployment flavours (%s); choose one with --flavour"
                             % ", ".join(map(str, ids)), source=where, field="--flavour")
        flavour = ids[0]
    for path, data, fid in flavours:
        if fid == flavour:
            return path, data
    raise InputError("no deployment flavour %r; the package has %s"
                     % (flavour, ", ".join(sorted(str(c[2]) for c in flavours))),
                     source=where, field="--flavour")


def _is_url(uri):
    return isinstance(uri, str) and uri.startswith(_URL_PREFIXES)


def _import_uri(entry):
    """(uri, setter) of one import entry; setter replaces the uri in place."""
    if isinstance(entry, str):
        return entry, None
    if isinstance(entry, dict) and len(entry) == 1:
        (name, value), = entry.items()
        if isinstance(value, str):
            return value, lambda new: entry.__setitem__(name, new)
        if isinstance(value, dict) and isinstance(value.get("file"), str):
            return value["file"], lambda new: value.__setitem__("file", new)
    return None, None


def _local_for_url(url, *dirs):
    base = url.rstrip("/").rsplit("/", 1)[-1]
    for d in dirs:
        candidate = os.path.join(d, base)
        if os.path.isfile(candidate):
            return candidate
    return None


def _inside(root, path):
    """Is PATH (symbolic links resolved) in the directory ROOT?"""
    real = os.path.realpath(path)
    return os.path.commonpath([root, real]) == root


def _shown(root, path):
    return os.path.relpath(os.path.realpath(path), root).replace(os.sep, "/")


class _ImportWalk:
    """The walk through the imports of one file and of the files it imports, in the
    package ROOT (a real path); FLAVOUR_DIR is where URL imports are also looked for;
    ORIGINAL, when ROOT is a copy of a package source, is that source (a real path).
    LOCAL_DEFS maps every URL import to its package file; DONE holds the files read."""

    def __init__(self, root, flavour_dir, original=None):
        self.root = root
        self.original = original
        self.flavour_dir = flavour_dir
        self.local_defs = {}
        self.done = set()

    def _url_target(self, file_path, here, uri):
        """The package file of URL import URI of FILE_PATH (in directory HERE)."""
        local = _local_for_url(uri, here, self.flavour_dir)
        if local is None:
            raise InputError("import %s cannot be resolved offline; put %s next "
                             "to this file" % (uri, uri.rsplit("/", 1)[-1]),
                             source=file_path, field="imports")
        if not _inside(self.root, local):
            raise InputError("import %s resolves to %s, outside the package"
                             % (uri, local), source=file_path, field="imports")
        self.local_defs[uri] = local
        return local

    def _path_target(self, file_path, here, uri):
        """The package file of path import URI of FILE_PATH (in directory HERE)."""
        if "://" in uri:
            raise InputError("import %s is a URL; nothing is fetched: import a file of the "
                             "package by path" % uri, source=file_path, field="imports")
        target = os.path.normpath(os.path.join(here, uri))
        if self.original is not None and os.path.isabs(uri) and _inside(self.original, target):
            # an absolute import of a file of the source: its copy in ROOT
            target = os.path.join(self.root, _shown(self.original, target))
        if not _inside(self.root, target):
            raise InputError("import %s is outside the package (%s); only its own files "
                             "are read" % (uri, self.root), source=file_path, field="imports")
        if not os.path.isfile(target):
            raise InputError("import %s not found (looked for %s)" % (uri, target),
                             source=file_path, field="imports")
        return target

    def target_of(self, file_path, here, index, entry):
        """(file, setter) of import ENTRY, number INDEX of FILE_PATH (in directory HERE);
        setter is None for a URL import, which is never rewritten."""
        uri, setter = _import_uri(entry)
        if uri is None:
            raise InputError("import #%d is neither a path nor a {name: path} entry"
                             % (index + 1), source=file_path, field="imports")
        if _repository_of(entry) is not None:
            raise InputError("import %s names repository %r: it would be fetched; put the "
                             "file in the package and import it by path"
                             % (uri, _repository_of(entry)), source=file_path,
                             field="imports")
        if _is_url(uri):
            return self._url_target(file_path, here, uri), None
        return self._path_target(file_path, here, uri), setter

    def _check_chain(self, file_path, real, chain):
        """InputError if importing REAL from FILE_PATH, at the end of CHAIN (the real
        paths of the importing files), closes a cycle or nests too deep."""
        if real in chain:
            cycle = chain[chain.index(real):] + [real]
            raise InputError("import cycle: %s" % " -> ".join(_shown(self.root, f)
                                                              for f in cycle),
                             source=file_path, field="imports")
        if len(chain) >= MAX_IMPORT_DEPTH:
            raise InputError("imports nest deeper than %d files" % MAX_IMPORT_DEPTH,
                             source=file_path, field="imports")

    def walk(self, file_path, imports, rewrite, chain):
        """Check the IMPORTS list of FILE_PATH and, once each, the files they import;
        REWRITE makes its path imports absolute in place."""
        if imports is None:
            return
        if not isinstance(imports, list):
            raise InputError("imports must be a list", source=file_path, field="imports")
        here = os.path.dirname(os.path.abspath(file_path))
        for index, entry in enumerate(imports):
            target, setter = self.target_of(file_path, here, index, entry)
            if rewrite and not _is_url(_import_uri(entry)[0]):
                if setter is None:
                    imports[index] = target
                else:
                    setter(target)
            real = os.path.realpath(target)
            self._check_chain(file_path, real, chain)
            if real not in self.done:
                sub = package_yaml.read(target)
                if isinstance(sub, dict):
                    self.walk(target, sub.get("imports"), False, chain + [real])
                self.done.add(real)


def _resolve_imports(path, data, flavour_dir, root, original=None):
    """Absolute imports for the flavour file; local_defs for every URL import.

    Every file imported, directly or not, is a file of the package ROOT: a URL
    resolves to a package file of the same name, an import from a repository
    (which tosca-parser would fetch) or of a file outside ROOT is an InputError,
    and so is an import cycle (tosca-parser would recurse until RecursionError)."""
    imports = _ImportWalk(os.path.realpath(root), flavour_dir, original)
    imports.walk(path, data.get("imports"), True, [os.path.realpath(path)])
    return imports.local_defs


def check_imports(root: str) -> int:
    """Check the imports of every TOSCA file of the extracted package ROOT (any
    depth) as the loader does, before tosca-parser or Tacker reads them: an
    InputError for a fetch, a file outside ROOT, a cycle or a YAML file over the
    loader's bounds (``package_yaml.OverBound``). Returns the file count."""
    count = 0
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(folder, name)
            if not name.endswith(_YAML_EXT):
                continue
            try:
                data = package_yaml.read(path)
            except package_yaml.OverBound:
                raise       # tosca-parser and Tacker would read it without our bounds
            except InputError:
                continue    # not one YAML document (a manifest?); imported, it is refused
            if isinstance(data, dict) and "tosca_definitions_version" in data:
                _resolve_imports(path, data, os.path.dirname(path), root)
                count += 1
    return count


@contextlib.contextmanager
def offline() -> Iterator[None]:
    """tosca-parser's and Tacker's URL openers refuse for the duration: whatever
    a template names, parsing it fetches nothing (the loader already refuses
    what would be fetched; this is the second wall)."""
    def refuse(url, *args, **kwargs):
        raise urllib.error.URLError("not fetched: hwaffinity reads packages offline (%s)"
                                    % getattr(url, "full_url", url))

    opener = types.SimpleNamespace(urlopen=refuse)
    patched = []
    for module, attribute, value in (
            ("toscaparser.utils.yamlparser", "urllib",
             types.SimpleNamespace(request=opener, error=urllib.error)),
            ("toscaparser.utils.urlutils", "urllib2", opener),
            ("tacker.common.csar_utils", "urllib2", opener)):
        loaded = sys.modules.get(module)
        if loaded is not None and hasattr(loaded, attribute):
            patched.append((loaded, attribute, getattr(loaded, attribute)))
            setattr(loaded, attribute, value)
    try:
        yield
    finally:
        for loaded, attribute, value in patched:
            setattr(loaded, attribute, value)


def _repository_of(entry):
    """The repository an import entry names ({name: {file: ..., repository: ...}}), or None."""
    if isinstance(entry, dict) and len(entry) == 1:
        value = next(iter(entry.values()))
        if isinstance(value, dict):
            return value.get("repository")
    return None


def _mapping(value):
    """VALUE when it is a mapping, else an empty one: a part of the template of another
    shape holds no parameter (tosca-parser says what is wrong with it)."""
    return value if isinstance(value, dict) else {}


def _param_data(data):
    """Tacker's ``_get_param_data`` without additional params, plus input defaults."""
    params = {}
    topo = _mapping(data.get("topology_template"))
    node_type = _mapping(topo.get("substitution_mappings")).get("node_type")
    for node in _mapping(topo.get("node_templates")).values():
        properties = _mapping(node).get("properties")
        if isinstance(properties, dict) and node_type and node.get("type") == node_type:
            params.update(properties)
    imports = data.get("imports")
    for imp in imports if isinstance(imports, list) else []:
        uri, _ = _import_uri(imp)
        if not uri or _is_url(uri) or not os.path.isfile(uri):
            continue
        types = _mapping(_mapping(package_yaml.read(uri)).get("node_types"))
        properties = _mapping(_mapping(types.get(node_type)).get("properties")) \
            if isinstance(node_type, str) else {}
        for key, prop in properties.items():
            if not params.get(key) and isinstance(prop, dict):
                params[key] = prop.get("default")
    for name, spec in _mapping(topo.get("inputs")).items():
        if name not in params and isinstance(spec, dict) and "default" in spec:
            params[name] = spec["default"]
    return params


def _prepare(path, data, flavour, root, original=None):
    if not isinstance(data, dict) or not isinstance(data.get("topology_template"), dict):
        raise InputError("not a TOSCA service template (no topology_template)", source=path)
    policies = data["topology_template"].get("policies")
    if policies is not None and not isinstance(policies, list):
        # The Tacker spec's own example writes a map; tosca-parser then fails
        # with an AttributeError.
        raise InputError("policies must be a list of one-entry maps (- name: {type: ...}), "
                         "not a %s" % type(policies).__name__, source=path,
                         field="topology_template.policies")
    flavour_dir = os.path.dirname(os.path.abspath(path))
    local_defs = _resolve_imports(path, data, flavour_dir, root, original)
    subst = data["topology_template"].get("substitution_mappings")
    if isinstance(subst, dict):
        subst.pop("requirements", None)
    return Vnfd(path=path, flavour=flavour, template=data, local_defs=local_defs,
                parsed_params=_param_data(data))


def _from_directory(root, flavour, where, original=None):
    """The flavour of the package ROOT (a copy of the source ORIGINAL, if given)."""
    candidates = []
    for f in flavour_candidates(root):
        data = package_yaml.read(f)
        candidates.append((f, data, flavour_of(data)))
    path, data = _pick_flavour(candidates, flavour, where)
    return _prepare(path, data, flavour_of(data), root,
                    None if original is None else os.path.realpath(original))


def package_root(path):
    """The package a VNFD file belongs to: its directory, or that directory's parent
    when the parent is a package (holds TOSCA-Metadata/ or Definitions/)."""
    here = os.path.dirname(os.path.abspath(path))
    parent = os.path.dirname(here)
    if any(os.path.isdir(os.path.join(parent, d)) for d in ("TOSCA-Metadata", "Definitions")):
        return parent
    return here


def _from_file(path, flavour):
    data = package_yaml.read(path)
    own = flavour_of(data)
    if own is not None:
        if flavour is not None and flavour != own:
            raise InputError("this file is deployment flavour %r, not %r" % (own, flavour),
                             source=path, field="--flavour")
        return _prepare(path, data, own, package_root(path))
    if not isinstance(data, dict) or "tosca_definitions_version" not in data:
        raise InputError("not a TOSCA service template (no tosca_definitions_version)",
                         source=path)
    topo = data.get("topology_template")
    if isinstance(topo, dict) and topo.get("node_templates") and flavour is None:
        return _prepare(path, data, None, package_root(path))       # a plain template
    # A top VNFD: its flavours are among the files it imports (no other file is read).
    root = package_root(path)
    candidates = [(f, d, flavour_of(d)) for f, d in _imported_files(path, data, root)]
    if not any(c[2] is not None for c in candidates):
        raise InputError("imports no deployment flavour file (substitution_mappings."
                         "properties.flavour_id): give the flavour file, or the package "
                         "directory", source=path, field="imports")
    found, found_data = _pick_flavour(candidates, flavour, path)
    return _prepare(found, found_data, flavour_of(found_data), root)


def _imported_files(path, data, root):
    """[(file, its YAML)] of what the file PATH (read as DATA) imports by path, each a file
    of the package ROOT (InputError otherwise, as for the flavour's imports)."""
    here = os.path.dirname(os.path.abspath(path))
    walk = _ImportWalk(os.path.realpath(root), here)
    imports = data.get("imports")
    found = []
    for index, entry in enumerate(imports if isinstance(imports, list) else ()):
        target, _ = walk.target_of(path, here, index, entry)
        if not _is_url(_import_uri(entry)[0]):      # a URL import is types, not a flavour
            found.append((target, package_yaml.read(target)))
    return found


def _extract(csar, into):
    """Extract what translate reads (every member but images) within the zip limits."""
    with zipio.open_zip(csar) as z:
        for member in z.namelist():
            if zipio.unsafe_reason(member):
                raise InputError("archive member %r escapes the package" % member,
                                 source=csar)
        zipio.extract_safe(z, into, skip=meta.is_image)


def _lacking_etsi(root):
    """(path relative to ROOT, file name) of the ETSI SOL001 type files that the package
    source's YAML files import (relatively) but that are not there: a package source
    directory (``csar/k8s-cluster``), to which ``hwaffinity csar build`` adds them."""
    out = set()
    root = os.path.abspath(root)        # an import may be absolute: compare absolute paths
    for f in flavour_candidates(root):
        try:
            data = package_yaml.read(f)
        except InputError:
            continue
        imports = data.get("imports") if isinstance(data, dict) else None
        here = os.path.dirname(f)
        for entry in imports if isinstance(imports, list) else ():
            uri, _ = _import_uri(entry)
            if not uri or _is_url(uri):     # a URL needs the package's own copy (Tacker)
                continue
            name = uri.rsplit("/", 1)[-1]
            target = os.path.normpath(os.path.join(here, uri))
            inside = os.path.commonpath([root, target]) == os.path.normpath(root)
            if name in etsi_types.FILES and inside and not os.path.isfile(target):
                out.add((os.path.relpath(target, root), name))
    return sorted(out)


@contextlib.contextmanager
def open_vnfd(path: str, flavour: str | None = None) -> Iterator[Vnfd]:
    """Yield a :class:`Vnfd` for ``path``; temporary files live until exit."""
    if not os.path.exists(path):
        raise InputError("no such file or directory", source=path)
    if os.path.isdir(path):
        lacking = _lacking_etsi(path)
        if not lacking:
            yield _from_directory(path, flavour, path)
            return
        with tempfile.TemporaryDirectory(prefix="hwaffinity-src-") as tmp:
            copy = os.path.join(tmp, "package")
            shutil.copytree(path, copy)
            sources = etsi_types.paths()
            for relative, name in lacking:
                os.makedirs(os.path.dirname(os.path.join(copy, relative)), exist_ok=True)
                shutil.copyfile(sources[name], os.path.join(copy, relative))
            try:
                vnfd = _from_directory(copy, flavour, path, original=path)
            except InputError as e:     # name the user's files, not the copy's
                shown = os.path.normpath(path)
                raise InputError(e.message.replace(copy, shown), source=(
                    e.source or "").replace(copy, shown) or None, obj=e.obj, field=e.field)
            vnfd.path = os.path.join(path, os.path.relpath(vnfd.path, copy))
            yield vnfd
    elif zipfile.is_zipfile(path):
        with tempfile.TemporaryDirectory(prefix="hwaffinity-csar-") as tmp:
            _extract(path, tmp)
            vnfd = _from_directory(tmp, flavour, path)
            vnfd.path = os.path.join(path, os.path.relpath(vnfd.path, tmp))
            yield vnfd
    else:
        yield _from_file(path, flavour)
