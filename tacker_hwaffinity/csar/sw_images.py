"""The images a package carries for its TOSCA flavours: the VDUs' ``sw_image_data``
checksums made true.

A VDU with a ``tosca.artifacts.nfv.SwImage`` artifact boots from the image file the
package holds: Tacker v1 uploads it to Glance when it instantiates the flavour, then
compares Glance's hash (SHA-512, Glance's default ``hashing_algorithm``) with the VDU's
``sw_image_data.checksum.hash`` and fails the instantiation when they differ. So
``csar build --image FILE`` sets that hash for every VDU whose artifact is FILE, and
says when a VDU names an image the package does not carry.
"""
import hashlib
import os
import posixpath

from tacker_hwaffinity.errors import InputError

SW_IMAGE = "tosca.artifacts.nfv.SwImage"
ALGORITHM = "sha-512"
_CHUNK = 1 << 20


def sha512_of(path):
    """The SHA-512 of the file at PATH, read in chunks (images are large)."""
    digest = hashlib.sha512()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def image_vdus(vnfd, data):
    """[(node name, package path of its image artifact, sw_image_data)] of one parsed
    Definitions file: the VDUs that carry their image."""
    topology = data.get("topology_template") if isinstance(data, dict) else None
    nodes = topology.get("node_templates") if isinstance(topology, dict) else None
    out = []
    for name, node in sorted(nodes.items()) if isinstance(nodes, dict) else ():
        artifacts = node.get("artifacts") if isinstance(node, dict) else None
        for artifact in artifacts.values() if isinstance(artifacts, dict) else ():
            if isinstance(artifact, dict) and artifact.get("type") == SW_IMAGE \
                    and isinstance(artifact.get("file"), str):
                path = posixpath.normpath(posixpath.join(posixpath.dirname(vnfd),
                                                         artifact["file"]))
                props = node.get("properties")
                sw = props.get("sw_image_data") if isinstance(props, dict) else None
                out.append((name, path, sw if isinstance(sw, dict) else {}))
    return out


def set_checksums(files, defs, given, member, notes):
    """Set the ``sw_image_data`` checksum of every VDU whose image artifact is one of
    GIVEN (package paths of the images given, whose files FILES maps) to the image's
    SHA-512, rewriting that hash in its Definitions file's text (comments and layout
    kept); MEMBER(bytes) makes the new file's entry. A VDU whose image is not in the
    package gets a note; a checksum that cannot be set is an InputError."""
    digests = {}
    for vnfd, data in sorted(defs.items()):
        rewrites = {}                  # old hash -> (new hash, [nodes])
        for node, path, sw in image_vdus(vnfd, data):
            field = "topology_template.node_templates.%s.properties.sw_image_data" % node
            if path not in files:
                notes.append("%s: %s boots from %s, which the package does not carry: give "
                             "it with --image to instantiate that flavour" % (vnfd, node, path))
                continue
            if path not in given:
                continue
            checksum = sw.get("checksum")
            if not isinstance(checksum, dict) or not isinstance(checksum.get("hash"), str):
                raise InputError("has no checksum {algorithm, hash} to set", source=vnfd,
                                 field=field)
            if checksum.get("algorithm") != ALGORITHM:
                raise InputError(
                    "is %r: Tacker compares this hash with Glance's, which is %s"
                    % (checksum.get("algorithm"), ALGORITHM), source=vnfd,
                    field=field + ".checksum.algorithm")
            if path not in digests:
                digests[path] = sha512_of(files[path].data)
            old, new = checksum["hash"], digests[path]
            if old == new:
                continue
            if rewrites.get(old, (new,))[0] != new:
                raise InputError("has the same hash as a VDU with another image; set each "
                                 "by hand", source=vnfd, field=field + ".checksum.hash")
            rewrites.setdefault(old, (new, []))[1].append(node)
        if rewrites:
            files[vnfd] = member(_rewrite(vnfd, files[vnfd].content(), rewrites))
            for old, (new, nodes) in sorted(rewrites.items()):
                notes.append("%s: set the sw_image_data checksum of %s to the SHA-512 of "
                             "their image" % (vnfd, ", ".join(nodes)))


def _rewrite(vnfd, content, rewrites):
    """CONTENT with each old hash replaced, when the text holds it exactly as often as
    the VDUs being set do (any other use of it must not change)."""
    text = content.decode("utf-8")
    for old, (new, nodes) in rewrites.items():
        if text.count(old) != len(nodes):
            raise InputError("the hash %s also appears outside the sw_image_data of %s; set "
                             "their checksum by hand to %s" % (old, ", ".join(nodes), new),
                             source=vnfd)
        text = text.replace(old, new)
    return text.encode("utf-8")


def check(root, defs, names, problems, notes, checks):
    """``csar validate``'s look at the images the VDUs boot from (package at ROOT):
    a carried image whose SHA-512 is not its VDU's checksum is a problem (Tacker fails
    the instantiation), one not carried is a note (its flavour cannot be instantiated)."""
    from tacker_hwaffinity.csar.problems import Problem
    present, digests = set(names), {}
    counted = 0
    for vnfd, data in sorted(defs.items()):
        for node, path, sw in image_vdus(vnfd, data):
            field = "properties.sw_image_data.checksum"
            if path not in present:
                notes.append("%s: %s boots from %s, which the package does not carry: Tacker "
                             "cannot instantiate its flavour" % (vnfd, node, path))
                continue
            counted += 1
            checksum = sw.get("checksum") if isinstance(sw.get("checksum"), dict) else {}
            if checksum.get("algorithm") != ALGORITHM:
                problems.append(Problem(vnfd, "is %r: Tacker compares the hash with Glance's, "
                                        "which is %s" % (checksum.get("algorithm"), ALGORITHM),
                                        node, field + ".algorithm"))
                continue
            if path not in digests:
                digests[path] = sha512_of(os.path.join(root, path))
            if checksum.get("hash") != digests[path]:
                problems.append(Problem(
                    vnfd, "is not the SHA-512 of %s (%s...): Tacker fails the instantiation "
                    "(checksum verification failed); csar build --image sets it"
                    % (path, digests[path][:16]), node, field + ".hash"))
    if counted:
        checks.append("images: %d VDU(s) boot from an image the package carries, each "
                      "checksum against the image's SHA-512" % counted)
