"""The in-cluster image (deploy/Dockerfile) as tools/build-image.sh builds it, for the tests.

The script names its output by a key over the recipe and the package's sources, so the
tests ask it (``--print-archive``: it computes the key and builds nothing) where the
archive of the CURRENT sources is; an archive built from other sources is never used.
"""
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tools", "build-image.sh")
BUILD_HINT = "the image is not built for these sources: run bash tools/build-image.sh"


def archive_path():
    """Where tools/build-image.sh puts (or put) the OCI archive of the current sources."""
    return subprocess.run(["bash", SCRIPT, "--print-archive"], capture_output=True, text=True,
                          check=True, timeout=60).stdout.strip()


def image_info():
    """The archive's ``image.json`` (``reference``, ``digest``, ``size_bytes``, ``size_mib``,
    ``layers``) with ``archive`` added, or None when it has not been built."""
    archive = archive_path()
    meta = os.path.join(os.path.dirname(archive), "image.json")
    if not (os.path.isfile(archive) and os.path.isfile(meta)):
        return None
    with open(meta) as f:
        info = json.load(f)
    info["archive"] = archive
    return info


def image_archive():
    """(archive path, image reference) of the current sources' image, or None."""
    info = image_info()
    return None if info is None else (info["archive"], info["reference"])
