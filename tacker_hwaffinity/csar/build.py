"""``csar build``: a package source directory to a deterministic CSAR zip.

1. Every file of SRC_DIR goes in, except hidden names (``.*``),
   ``__pycache__``/``*.pyc`` and images (``Files/images/`` or an image
   extension Tacker knows), which are left out unless given with
   ``images``: those go to ``Files/images/<name>``, and the VDUs whose
   ``tosca.artifacts.nfv.SwImage`` artifact is one of them get its SHA-512 as
   their ``sw_image_data`` checksum (rule in :mod:`sw_images`). An image no
   VDU's artifact names is refused: Tacker would carry it for nothing.
2. The installed driver files go wherever a VNFD's ``mgmt-drivers-hwaffinity``
   artifact points (rule in :mod:`drivers`), byte for byte.
3. The ETSI SOL001 type files a Definitions file imports and the source
   lacks are added next to it, from the installed tacker (or ``etsi_dir``).
4. TOSCA-Metadata/TOSCA.meta keeps the source's first block (or gets one,
   with Entry-Definitions found as the one Definitions file nobody imports)
   and gets one ``Name``/``Content-Type``/``Algorithm: SHA-256``/``Hash``
   block per artifact: every file outside TOSCA-Metadata/ and Definitions/,
   hashes computed afresh. Images get a block without hash (Tacker never
   hashes them).
"""
import dataclasses
import hashlib
import os
import posixpath
import stat
from collections.abc import Iterable

from tacker_hwaffinity import etsi_types
from tacker_hwaffinity.csar import drivers, sw_images
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import package_yaml
from tacker_hwaffinity.vnfpackage import meta, zipio

IMAGES_DIR = "Files/images/"
DEFINITIONS = "Definitions/"
HEADER = [("TOSCA-Meta-File-Version", "1.0"), ("CSAR-Version", "1.1"),
          ("Created-by", "tacker-hwaffinity")]
_YAML = (".yaml", ".yml")


@dataclasses.dataclass
class Member:
    data: object            # bytes, or the path of the file to copy
    executable: bool = False

    def content(self):
        if isinstance(self.data, bytes):
            return self.data
        with open(self.data, "rb") as f:
            return f.read()


@dataclasses.dataclass
class Result:
    path: str
    members: list           # names, sorted
    notes: list


def _skipped(name):
    return name.startswith(".") or name == "__pycache__" or name.endswith(".pyc")


def _is_image(name):
    return name.startswith(IMAGES_DIR) or meta.is_image(name)


def _scan(src, exclude):
    """{package path: Member} of SRC_DIR, and the images left out."""
    files, images = {}, []
    root = os.path.realpath(src)
    for folder, dirs, names in os.walk(src):
        dirs[:] = sorted(d for d in dirs if not _skipped(d))
        for name in sorted(names):
            full = os.path.join(folder, name)
            if _skipped(name) or os.path.realpath(full) in exclude:
                continue
            rel = os.path.relpath(full, src).replace(os.sep, "/")
            real = os.path.realpath(full)
            if os.path.commonpath([root, real]) != root:
                raise InputError("is a link to %s, outside the source directory" % real,
                                 source=full)
            if not os.path.isfile(real):
                continue
            if _is_image(rel):
                images.append(rel)
                continue
            mode = os.stat(real).st_mode
            files[rel] = Member(real, bool(mode & stat.S_IXUSR))
    return files, images


def _load_yaml(member, name):
    """The YAML of MEMBER (package path NAME), read within ``package_yaml``'s bounds."""
    if isinstance(member.data, bytes):
        return package_yaml.loads(member.data, name)
    return package_yaml.read(member.data, source=name)


def _definitions(files):
    """{path: parsed YAML} of the Definitions/ files."""
    return {n: _load_yaml(m, n) for n, m in sorted(files.items())
            if n.startswith(DEFINITIONS) and n.endswith(_YAML)}


def _imports(data):
    """The import paths/URLs of one TOSCA file."""
    out = []
    imports = data.get("imports") if isinstance(data, dict) else None
    for entry in imports if isinstance(imports, list) else []:
        if isinstance(entry, dict) and len(entry) == 1:
            entry = next(iter(entry.values()))
            if isinstance(entry, dict):
                entry = entry.get("file")
        if isinstance(entry, str):
            out.append(entry)
    return out


def _import_target(importer, uri):
    """Package path an import resolves to (a URL: the same name next to the importer)."""
    here = posixpath.dirname(importer)
    if "://" in uri:
        return posixpath.join(here, uri.rstrip("/").rsplit("/", 1)[-1])
    return posixpath.normpath(posixpath.join(here, uri))


def _add_etsi(files, defs, etsi_dir, notes):
    sources = None
    for importer, data in defs.items():
        for uri in _imports(data):
            target = _import_target(importer, uri)
            name = posixpath.basename(target)
            if name not in etsi_types.FILES or target in files:
                continue
            if sources is None:
                sources = _etsi_sources(etsi_dir)
            files[target] = Member(sources[name])
            notes.append("added %s (imported by %s) from %s"
                         % (target, importer, os.path.dirname(sources[name])))


def _etsi_sources(etsi_dir):
    if etsi_dir is None:
        return etsi_types.paths()
    found = {f: os.path.join(etsi_dir, f) for f in etsi_types.FILES}
    for path in found.values():
        if not os.path.isfile(path):
            raise InputError("no such file", source=path, field="--etsi-definitions")
    return found


def _add_drivers(files, defs, notes):
    wanted = {}
    for vnfd, data in defs.items():
        for node, file in drivers.driver_artifacts(vnfd, data):
            field = "topology_template.node_templates.%s.artifacts.%s.file" % (
                node, drivers.DRIVER_KEY)
            path, version = drivers.package_path(file, source=vnfd, field=field)
            if wanted.get(path, version) != version:
                raise InputError("%s is wanted both as the v1 driver module and as the v2 "
                                 "script" % path, source=vnfd, field=field)
            wanted[path] = version
    for path, version in sorted(wanted.items()):
        installed = drivers.installed_file(drivers.MODULES[version])
        member = Member(installed)
        old = files.get(path)
        if old is not None and old.content() != member.content():
            notes.append("replaced %s (it differed from the installed %s)" % (path, installed))
        elif old is None:
            notes.append("added %s: the installed %s" % (path, installed))
        files[path] = member


def _entry_definitions(defs):
    imported = {_import_target(n, u) for n, d in defs.items() for u in _imports(d)}
    tops = [n for n in defs if n not in imported and posixpath.basename(n)
            not in etsi_types.FILES]
    if len(tops) != 1:
        raise InputError("cannot tell the top-level VNFD (Entry-Definitions) among %s; write "
                         "a TOSCA-Metadata/TOSCA.meta with Entry-Definitions"
                         % (", ".join(tops) or "no Definitions/*.yaml file"), source=meta.PATH)
    return tops[0]


def _header(old, defs, files):
    """The first TOSCA.meta block, from the source's or made anew."""
    block = list(old[0].entries) if old and not old[0].is_artifact else list(HEADER)
    keys = [k for k, _ in block]
    if "ETSI-Entry-Manifest" in keys:
        raise InputError("ETSI-Entry-Manifest is not supported: csar build cannot refresh "
                         "the manifest's hashes; list artifacts in TOSCA.meta instead",
                         source=meta.PATH, field="ETSI-Entry-Manifest")
    if "Entry-Definitions" not in keys:
        block.append(("Entry-Definitions", _entry_definitions(defs)))
    entry = dict(block)["Entry-Definitions"]
    if entry not in files:
        raise InputError("%s is not in the source directory" % entry, source=meta.PATH,
                         field="Entry-Definitions")
    return meta.Block(block, 1)


def _artifact_blocks(files, images, old, notes):
    old_blocks = {b.source: b for b in (old or []) if b.source is not None}
    for src, block in old_blocks.items():
        if src not in files and not _is_image(src):
            raise InputError("%s is not in the source directory" % src, source=meta.PATH,
                             obj=block.where(), field=block.source_key)
        if src not in files:
            notes.append("left out image %s (give it with --image to include it)" % src)
    blocks = []
    for name in sorted(files):
        if name == meta.PATH or name.startswith(DEFINITIONS):
            continue
        prev = old_blocks.get(name)
        ctype = prev.get("Content-Type") if prev else None
        digest = None
        if name not in images:
            digest = hashlib.sha256(files[name].content()).hexdigest()
            if prev and prev.get("Hash") not in (None, digest):
                notes.append("refreshed the stale hash of %s" % name)
        blocks.append(meta.artifact_block(name, digest, ctype))
    return blocks


def _output_folder(target):
    """Create the folder TARGET goes in; InputError when TARGET is a directory or the
    folder cannot be made."""
    if os.path.isdir(target):
        raise InputError("is a directory: give the package file to write (PKG.zip)",
                         source=target, field="--output-file")
    try:
        os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    except OSError as e:
        raise InputError("cannot create its directory %s: %s"
                         % (os.path.dirname(target), e.strerror or e),
                         source=target, field="--output-file")


def _write(target, members):
    """zipio.write, its OSErrors as InputErrors naming the file read or written."""
    try:
        zipio.write(target, members)
    except OSError as e:
        folder = os.path.dirname(os.path.abspath(target))
        written = e.filename is None or os.path.dirname(os.path.abspath(e.filename)) == folder
        raise InputError("cannot %s: %s" % ("write" if written else "read", e.strerror or e),
                         source=target if written else e.filename,
                         field="--output-file" if written else None)


def _booted_images(defs):
    """{package path of an image: ['NODE of VNFD', ...]}: the images the node templates of
    DEFS boot from (a ``tosca.artifacts.nfv.SwImage`` artifact, ``sw_images.image_vdus``)."""
    booted = {}
    for vnfd, data in sorted(defs.items()):
        for node, path, _ in sw_images.image_vdus(vnfd, data):
            booted.setdefault(path, []).append("%s of %s" % (node, vnfd))
    return booted


def _glance_images(defs):
    """['NODE of VNFD (sw_image_data name NAME)'] of the node templates of DEFS with
    ``sw_image_data`` and no image artifact: Tacker boots them from the Glance image of
    that name, and uploads nothing for them."""
    out = []
    for vnfd, data in sorted(defs.items()):
        topology = data.get("topology_template") if isinstance(data, dict) else None
        nodes = topology.get("node_templates") if isinstance(topology, dict) else None
        carried = {node for node, _, _ in sw_images.image_vdus(vnfd, data)}
        for node, body in sorted(nodes.items()) if isinstance(nodes, dict) else ():
            props = body.get("properties") if isinstance(body, dict) else None
            sw = props.get("sw_image_data") if isinstance(props, dict) else None
            if isinstance(sw, dict) and node not in carried:
                out.append("%s of %s (sw_image_data name %s)" % (node, vnfd, sw.get("name")))
    return out


def _boots_nothing(image, name, booted, defs):
    """The InputError for IMAGE, given with --image, which goes in as NAME and which no
    node template boots from (BOOTED: ``_booted_images``): Tacker would carry it for
    nothing. It names the images the VDUs do boot from or, when none carries one, the
    VDUs that boot from a Glance image by name."""
    found = ["%s (%s)" % (path, ", ".join(nodes)) for path, nodes in sorted(booted.items())]
    message = ("no VDU boots from it as %s: no tosca.artifacts.nfv.SwImage artifact's file "
               "is that path. " % name)
    if found:
        message += "The VDUs boot from %s: give the image under that name" % "; ".join(found)
    else:
        glance = _glance_images(defs)
        message += "No VDU has an image artifact%s" % (
            "; from Glance, by name: %s" % "; ".join(glance) if glance else "")
    return InputError(message, source=image, field="--image")


def build(src: str, target: str, images: Iterable[str] = (),
          etsi_dir: str | None = None) -> Result:
    """Write the package of SRC to TARGET (its folder created); return a :class:`Result`."""
    if not os.path.isdir(src):
        raise InputError("not a directory", source=src)
    _output_folder(target)
    files, left_out = _scan(src, {os.path.realpath(target)})
    notes = ["left out image %s (give it with --image to include it)" % n for n in left_out]
    old = None
    if meta.PATH in files:
        old = meta.read(files.pop(meta.PATH).data)
    defs = _definitions(files)
    _add_etsi(files, defs, etsi_dir, notes)
    _add_drivers(files, defs, notes)
    given = set()
    booted = _booted_images(defs)
    for image in images:
        if not os.path.isfile(image):
            raise InputError("no such file", source=image, field="--image")
        name = IMAGES_DIR + os.path.basename(image)
        if name not in booted:
            raise _boots_nothing(image, name, booted, defs)
        files[name] = Member(os.path.realpath(image))
        given.add(name)
    sw_images.set_checksums(files, defs, given, Member, notes)
    header = _header(old, defs, files)
    blocks = [header] + _artifact_blocks(files, given, old, notes)
    files[meta.PATH] = Member(meta.render(blocks).encode("utf-8"))
    _write(target, [(n, m.data, m.executable, n in given) for n, m in files.items()])
    return Result(target, sorted(files), sorted(set(notes), key=notes.index))
