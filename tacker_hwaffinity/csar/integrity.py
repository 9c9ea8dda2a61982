"""The package's bytes: archive member names, TOSCA.meta, artifact hashes.

Each TOSCA.meta hash block gets our own diagnosis (which field is wrong and
why) and Tacker's own verdict on that block (``tacker_checks``).
"""
import hashlib

from tacker_hwaffinity.csar import tacker_checks
from tacker_hwaffinity.csar.problems import Problem
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.vnfpackage import meta, zipio

ALGORITHMS = {"sha-224": hashlib.sha224, "sha-256": hashlib.sha256,
              "sha-384": hashlib.sha384, "sha-512": hashlib.sha512}
UNHASHED_DIRS = ("TOSCA-Metadata/", "Definitions/")
META_BYTES = 1 << 20        # TOSCA.meta is read whole: a few blocks per artifact


def archive(z, problems):
    """Names of the package's safe file members; unsafe or repeated names are problems."""
    names, seen = [], set()
    for info in z.infolist():
        reason = zipio.unsafe_reason(info.filename)
        if reason:
            problems.append(Problem(info.filename, "archive member name %s: it escapes the "
                                    "package when extracted" % reason))
        elif info.filename in seen:
            problems.append(Problem(info.filename, "archive member given twice"))
        elif not info.is_dir():
            names.append(info.filename)
        seen.add(info.filename)
    return names


def tosca_meta(z, names, problems):
    """TOSCA.meta's blocks, or None when it is missing or unreadable."""
    if meta.PATH not in names:
        problems.append(Problem(meta.PATH, "missing: Tacker finds the VNFD and the artifact "
                                "hashes through it"))
        return None
    try:
        blocks = meta.parse(zipio.read_member(z, meta.PATH, META_BYTES).decode("utf-8"))
    except UnicodeDecodeError as e:
        problems.append(Problem(meta.PATH, "not UTF-8 text (%s)" % e.reason))
        return None
    except InputError as e:
        problems.append(Problem(meta.PATH, e.message, e.obj, e.field))
        return None
    head = blocks[0]
    entry = None if head.is_artifact else head.get("Entry-Definitions")
    if not entry:
        problems.append(Problem(meta.PATH, "missing in the first block", "line 1",
                                "Entry-Definitions"))
    elif entry not in names:
        problems.append(Problem(meta.PATH, "%s is not in the package" % entry, "line 1",
                                "Entry-Definitions"))
    return blocks


def _diagnose(block, names, z):
    """(field, message) of what is wrong with one hash block, or None."""
    src, src_key = block.source, block.source_key
    for key, value in ((src_key, src), ("Algorithm", block.get("Algorithm")),
                       ("Hash", block.get("Hash"))):
        if not value:
            return key, ("missing (a block with Algorithm or Hash needs Name, Algorithm, "
                         "Hash)")
    reason = zipio.unsafe_reason(src)
    if reason:
        return src_key, "%s %s: it resolves outside the package" % (src, reason)
    algorithm = block.get("Algorithm").lower()
    if algorithm not in ALGORITHMS:
        return "Algorithm", "%s is not one of %s" % (block.get("Algorithm"),
                                                     ", ".join(sorted(ALGORITHMS)))
    if meta.is_image(src):
        return None             # Tacker never hashes images
    if src not in names:
        return src_key, "%s is missing from the package" % src
    try:
        digest = zipio.digest(z, src, ALGORITHMS[algorithm])
    except InputError as e:
        return src_key, "%s %s" % (src, e.message)
    if block.get("Hash") != digest:
        return "Hash", "stale: %s of %s is %s" % (algorithm, src, digest)
    return None


def artifacts(blocks, names, z, zip_path, root, problems, notes):
    """Check every hash block, and that every artifact has one. Returns the count."""
    hashed, count = {}, 0
    for block in blocks[1:] if blocks else ():
        src = block.source
        if src and "://" in src:
            notes.append("%s: %s is a URL; not fetched, its hash is not checked"
                         % (meta.PATH, src))
            continue
        if not block.is_artifact:
            continue
        count += 1
        if src in hashed:
            problems.append(Problem(meta.PATH, "%s already has a block at line %d"
                                    % (src, hashed[src]), block.where(), block.source_key))
            continue
        hashed[src] = block.line
        ours = _diagnose(block, names, z)
        theirs = tacker_checks.artifact_block(meta.render([block]).encode("utf-8"),
                                              zip_path, root)
        if ours or theirs:
            field, text = ours or (None, "Tacker refuses this block")
            if theirs:
                text += "; Tacker: %s" % theirs
            problems.append(Problem(meta.PATH, text, block.where(), field))
    for name in names:
        if (not name.startswith(UNHASHED_DIRS) and not meta.is_image(name)
                and name not in hashed and blocks is not None):
            problems.append(Problem(name, "has no hash block in %s: a changed file would go "
                                    "unnoticed (csar build writes one)" % meta.PATH))
    return count
