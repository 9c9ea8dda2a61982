"""Container images without a registry: OCI image archives built from busybox-static.

``build_images(workdir)`` writes two OCI image-layout tarballs that
``ctr -n k8s.io images import FILE`` loads (no registry, no network):

* ``busybox`` (``localhost/hwaffinity-busybox:1``): ``/bin/busybox`` (the
  host's static busybox) and symlinks for the applets tests use (``sh``,
  ``cat``, ``grep``, ``sleep``, ...), ``Cmd ["/bin/sh"]``;
* ``pause`` (``localhost/hwaffinity-pause:1``): the same layer, whose
  entrypoint sleeps forever and exits at once on SIGTERM or SIGINT (the CRI
  plugin's sandbox container, ``sandbox_image``).

Each archive is one layer (an uncompressed tar, so its digest is its diff
id), an image config for linux/amd64 (or the host's architecture), a
manifest and an ``index.json`` whose manifest carries the full reference in
``io.containerd.image.name`` (what ``ctr images import`` names the image by)
and the tag in ``org.opencontainers.image.ref.name``.

Deterministic: every tar header has fixed owner, mode and time, entries are
sorted, JSON is written with sorted keys, so the same busybox binary gives
the same digests. Archives are cached in WORKDIR under a name carrying a hash
of the recipe and the busybox binary: a second call returns the same files
without writing. Nothing here assumes the host runs the containers: the VM
tests build on the host and copy the tarballs in.
"""
import hashlib
import io
import json
import os
import platform
import shutil
import tarfile

RECIPE = "hwaffinity-images-1"      # bump when the layout below changes
BUSYBOX_CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")
REGISTRY = "localhost"
TAG = "1"

APPLETS = ("[", "awk", "basename", "cat", "chmod", "cp", "cut", "date", "dd", "df", "dirname",
           "echo", "env", "false", "find", "grep", "head", "hostname", "id", "kill", "ln", "ls",
           "mkdir", "mktemp", "mount", "mv", "nproc", "ps", "printf", "pwd", "readlink", "rm",
           "rmdir", "sed", "seq", "sh", "sleep", "sort", "stat", "tail", "taskset", "tee", "test",
           "timeout", "touch", "tr", "true", "uname", "uniq", "wc", "xargs", "yes")

# Sleeps until SIGTERM/SIGINT. As the PID-namespace init, sh ignores signals it
# has no trap for; with the trap, ``wait`` returns at once and sh exits 0.
PAUSE_SCRIPT = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"

IMAGES = {
    "busybox": {"repository": "hwaffinity-busybox",
                "entrypoint": None, "cmd": ["/bin/sh"]},
    "pause": {"repository": "hwaffinity-pause",
              "entrypoint": ["/bin/sh", "-c", PAUSE_SCRIPT], "cmd": None},
}

MT_LAYER = "application/vnd.oci.image.layer.v1.tar"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_INDEX = "application/vnd.oci.image.index.v1+json"
ANN_CONTAINERD_NAME = "io.containerd.image.name"
ANN_REF_NAME = "org.opencontainers.image.ref.name"

_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64",
           "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}


def find_busybox():
    """Path of a static busybox (Debian's busybox-static installs /bin/busybox)."""
    for path in BUSYBOX_CANDIDATES:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError("no busybox binary at %s (install busybox-static: "
                            "tools/install-node-runtime.sh)" % ", ".join(BUSYBOX_CANDIDATES))


def image_ref(name):
    """The full reference of image NAME ('busybox' or 'pause')."""
    return "%s/%s:%s" % (REGISTRY, IMAGES[name]["repository"], TAG)


def build_images(workdir, busybox=None, arch=None):
    """Build (or reuse) the archives in WORKDIR.

    Returns ``{"busybox": {"ref": ..., "path": ..., "digest": ...}, "pause": {...}}``
    where ``digest`` is the manifest digest and ``path`` the OCI tarball.
    """
    busybox = busybox or find_busybox()
    arch = arch or _GOARCH.get(platform.machine(), platform.machine())
    with open(busybox, "rb") as f:
        binary = f.read()
    os.makedirs(workdir, exist_ok=True)
    layer = _layer(binary)
    out = {}
    for name in sorted(IMAGES):
        blobs, index = _image_blobs(name, layer, arch)
        key = hashlib.sha256(("%s\n%s\n" % (RECIPE, hashlib.sha256(binary).hexdigest())).encode()
                             + index).hexdigest()[:16]
        path = os.path.join(workdir, "%s-%s.oci.tar" % (IMAGES[name]["repository"], key))
        if not os.path.exists(path):
            tmp = "%s.tmp.%d" % (path, os.getpid())
            with open(tmp, "wb") as f:
                f.write(_archive(blobs, index))
            os.replace(tmp, path)
        manifest_digest = json.loads(index)["manifests"][0]["digest"]
        out[name] = {"ref": image_ref(name), "path": path, "digest": manifest_digest}
    return out


def remove_cache(workdir):
    """Remove WORKDIR's archives (tests that want a cold build)."""
    shutil.rmtree(workdir, ignore_errors=True)


# -- building blocks ---------------------------------------------------------

def _info(name, kind=tarfile.REGTYPE, mode=0o755, size=0, linkname=""):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.linkname = kind, mode, size, linkname
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mtime = 0
    return info


def _tar_bytes(entries):
    """A deterministic tar of ENTRIES: (TarInfo, bytes or None), in the given order."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _layer(binary):
    entries = []
    for d in ("bin", "dev", "etc", "proc", "root", "sys", "tmp", "var"):
        entries.append((_info(d, tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755), None))
    files = {"etc/passwd": (b"root:x:0:0:root:/root:/bin/sh\n"
                            b"nobody:x:65534:65534:nobody:/:/bin/false\n"),
             "etc/group": b"root:x:0:\nnogroup:x:65534:\n",
             "etc/hostname": b"busybox\n"}
    for path, data in sorted(files.items()):
        entries.append((_info(path, mode=0o644, size=len(data)), data))
    entries.append((_info("bin/busybox", size=len(binary)), binary))
    for applet in APPLETS:
        entries.append((_info("bin/" + applet, tarfile.SYMTYPE, 0o777, linkname="busybox"), None))
    return _tar_bytes(entries)


def _json(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _descriptor(media_type, data, annotations=None, arch=None):
    desc = {"mediaType": media_type, "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
            "size": len(data)}
    if annotations:
        desc["annotations"] = annotations
    if arch:
        desc["platform"] = {"architecture": arch, "os": "linux"}
    return desc


def _image_blobs(name, layer, arch):
    spec = IMAGES[name]
    layer_desc = _descriptor(MT_LAYER, layer)
    config = {"architecture": arch, "os": "linux", "created": "1970-01-01T00:00:00Z",
              "config": {"Env": ["PATH=/bin"], "WorkingDir": "/"},
              "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]},
              "history": [{"created": "1970-01-01T00:00:00Z",
                           "created_by": "tests/realnode/images.py %s" % RECIPE}]}
    if spec["entrypoint"]:
        config["config"]["Entrypoint"] = list(spec["entrypoint"])
    if spec["cmd"]:
        config["config"]["Cmd"] = list(spec["cmd"])
    config_bytes = _json(config)
    manifest = {"schemaVersion": 2, "mediaType": MT_MANIFEST,
                "config": _descriptor(MT_CONFIG, config_bytes), "layers": [layer_desc]}
    manifest_bytes = _json(manifest)
    index = {"schemaVersion": 2, "mediaType": MT_INDEX,
             "manifests": [_descriptor(MT_MANIFEST, manifest_bytes, arch=arch,
                                       annotations={ANN_CONTAINERD_NAME: image_ref(name),
                                                    ANN_REF_NAME: TAG})]}
    blobs = {}
    for data in (layer, config_bytes, manifest_bytes):
        blobs[hashlib.sha256(data).hexdigest()] = data
    return blobs, _json(index)


def _archive(blobs, index):
    layout = _json({"imageLayoutVersion": "1.0.0"})
    entries = [(_info("blobs", tarfile.DIRTYPE), None),
               (_info("blobs/sha256", tarfile.DIRTYPE), None)]
    for hexdigest in sorted(blobs):
        data = blobs[hexdigest]
        entries.append((_info("blobs/sha256/" + hexdigest, mode=0o644, size=len(data)), data))
    entries.append((_info("index.json", mode=0o644, size=len(index)), index))
    entries.append((_info("oci-layout", mode=0o644, size=len(layout)), layout))
    return _tar_bytes(entries)
