#!/usr/bin/env bash
# Build (once) the in-cluster image from the shipped recipe, deploy/Dockerfile, with
# Debian's buildah and no container registry, so that the tests can run it
# (tests/realnode/test_image.py) exactly as users build it with
# `docker build -f deploy/Dockerfile -t <registry>/tacker-hwaffinity:<tag> .`.
#
# Two steps, each cached OUTSIDE the checkout:
#
# 1. the base (BASE_IMAGE): Debian bookworm made with debootstrap (minbase, python3,
#    python3-venv, ca-certificates) from the Debian mirror, apt lists, docs and man
#    pages removed, committed with buildah as localhost/hwaffinity-base:<base key>.
#    The base key is the first 12 hex digits of the SHA-256 of the base's recipe (the
#    function build_base below and its package list): a source change does not redo it.
# 2. the image: `buildah bud -f deploy/Dockerfile --build-arg BASE_IMAGE=<the base>`
#    with the repository root as context (.dockerignore keeps it to what pip installs).
#    Its RUN steps install from PyPI over the host's network. Intermediate layers are
#    cached (--layers): a source change reuses the dependency layer.
#
# buildah keeps its own storage under the cache (--root/--runroot; overlay, or vfs
# where an overlay mount does not work), never /var/lib/containers.
#
#   ${HWAFFINITY_CACHE:-$HOME/.cache/tacker-hwaffinity}/image-<key>/
#       tacker-hwaffinity.tar   OCI image layout archive (gzip layers), whose
#                               index names the image localhost/tacker-hwaffinity:<key>
#                               (annotation io.containerd.image.name)
#       image.json              reference, manifest digest, size (unpacked and
#                               compressed, bytes and MiB); written last
#
# <key>: the first 12 hex digits of the SHA-256 over the names and contents of the
# recipe (this file, deploy/Dockerfile, .dockerignore) and the package's sources
# (setup.py, pyproject.toml, README.md, every file under tacker_hwaffinity/ but bytecode).
# No git needed: a fresh clone or an unpacked tarball gives the same key.
#
# Load it into containerd (no registry):
#
#   ctr -n k8s.io images import "$(bash tools/build-image.sh --print-archive)"
#
# How long (2 busy cores): about 2-3 minutes cold (debootstrap 1 minute, then pip from
# PyPI), about 30 s after a source change (the dependency layer is reused), well under
# a second when cached. Safe to run concurrently (flock) and again at any time.
#
#   bash tools/build-image.sh                   # build unless cached
#   bash tools/build-image.sh --print-archive   # print the archive's path only
#   bash tools/build-image.sh --print-ref       # print the image reference only
#
# Environment:
#   HWAFFINITY_CACHE          cache root (default: $HOME/.cache/tacker-hwaffinity)
#   HWAFFINITY_DEBIAN_MIRROR  Debian mirror (default: the one the machine's apt uses,
#                             tools/apt-mirror.sh)
#   HWAFFINITY_IMAGE_STORE_MAX_MIB  when buildah's storage grows past this after a
#                             build, every image but the base is removed (default 4096)
#
# Must run as root when building (apt-get, debootstrap, buildah).
set -euo pipefail

started="${SECONDS}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/.." && pwd)"
CACHE_ROOT="${HWAFFINITY_CACHE:-${HOME}/.cache/tacker-hwaffinity}"
STORE_MAX_MIB="${HWAFFINITY_IMAGE_STORE_MAX_MIB:-4096}"
SUITE="bookworm"
BASE_PACKAGES=(python3 python3-venv ca-certificates)
HOST_PACKAGES=(buildah debootstrap)
IMAGE_NAME="localhost/tacker-hwaffinity"
BASE_NAME="localhost/hwaffinity-base"
ARCHIVE_NAME="tacker-hwaffinity.tar"
# Downloaded .debs, shared by base recipes (remove it to reclaim the space).
DEB_CACHE="${CACHE_ROOT}/debootstrap-debs-${SUITE}"

log() { printf '[build-image] %s\n' "$*"; }
die() { printf '[build-image] ERROR: %s\n' "$*" >&2; exit 1; }
elapsed() { printf '%dm%02ds' $(( (SECONDS - started) / 60 )) $(( (SECONDS - started) % 60 )); }

# The base's recipe: debootstrap into ROOTFS, then slim it down. Its text (with the
# package list and suite) is the base key: edit it and the base is made again.
build_base() {
    local rootfs="$1" logfile="$2" include
    include="$(IFS=,; printf '%s' "${BASE_PACKAGES[*]}")"
    mkdir -p "${DEB_CACHE}"
    debootstrap --variant=minbase --include="${include}" --cache-dir="${DEB_CACHE}" \
        "${SUITE}" "${rootfs}" "${MIRROR}" > "${logfile}" 2>&1
    chroot "${rootfs}" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        apt-get -o DPkg::Lock::Timeout=600 clean
    # the host's name and resolver are no business of the image (runtimes mount their own)
    rm -f "${rootfs}/etc/hostname" "${rootfs}/etc/resolv.conf"
    rm -rf "${rootfs}"/var/lib/apt/lists/* "${rootfs}"/var/cache/apt/*.bin \
        "${rootfs}"/usr/share/doc/* "${rootfs}"/usr/share/man/* "${rootfs}"/usr/share/info/* \
        "${rootfs}"/usr/share/locale/* "${rootfs}"/var/log/*.log "${rootfs}"/var/log/apt/* \
        "${rootfs}"/var/cache/debconf/*-old "${rootfs}"/debootstrap
}

BASE_KEY="$( { declare -f build_base; printf '%s\n' "${SUITE}" "${BASE_PACKAGES[@]}"; } \
    | sha256sum | cut -c1-12)"
BASE_REF="${BASE_NAME}:${BASE_KEY}"

# What the image is made of, relative to the repository root, one a line.
inputs() {
    printf '%s\n' tools/build-image.sh deploy/Dockerfile deploy/runtime_root.py .dockerignore \
        setup.py pyproject.toml README.md
    find tacker_hwaffinity -type f ! -path '*/__pycache__/*' ! -name '*.pyc' | LC_ALL=C sort
}
KEY="$(cd "${root}" && inputs | xargs -d '\n' sha256sum | sha256sum | cut -c1-12)"
REF="${IMAGE_NAME}:${KEY}"
OUT="${CACHE_ROOT}/image-${KEY}"
ARCHIVE="${OUT}/${ARCHIVE_NAME}"

case "${1:-}" in
    --print-archive) printf '%s\n' "${ARCHIVE}"; exit 0 ;;
    --print-ref) printf '%s\n' "${REF}"; exit 0 ;;
    "") ;;
    *) die "usage: build-image.sh [--print-archive|--print-ref]" ;;
esac
[ "$#" -le 1 ] || die "usage: build-image.sh [--print-archive|--print-ref]"

complete() { [ -s "${ARCHIVE}" ] && [ -s "${OUT}/image.json" ]; }

if complete; then
    log "cached: ${ARCHIVE} (${REF}, $(elapsed))"
    exit 0
fi

[ "$(id -u)" -eq 0 ] || die "building the image needs root (apt-get, debootstrap, buildah)"
mkdir -p "${CACHE_ROOT}"

# buildah 1.28 (containers/image) keeps its blob-info cache in /var/lib/containers/cache
# whatever --root says: the build runs in a private mount namespace in which the cache's
# directory is mounted there (the host's /var/lib/containers stays an empty directory).
NS_DIR="${CACHE_ROOT}/buildah-var-lib-containers"
if [ "${HWAFFINITY_IMAGE_NS:-}" != "$$" ]; then
    mkdir -p /var/lib/containers "${NS_DIR}"
    # the script again, as `bash -c`'s PID (exec keeps it), which it finds in the variable
    # shellcheck disable=SC2016  # $$ and $@ of that `bash -c`
    exec unshare --mount --propagation private -- \
        bash -c 'export HWAFFINITY_IMAGE_NS=$$; exec bash "$0" "$@"' "${BASH_SOURCE[0]}" "$@"
fi
mount --bind "${NS_DIR}" /var/lib/containers
lock="${CACHE_ROOT}/image-build.lock"
exec 9>"${lock}"
log "waiting for the build lock ${lock}"
flock -w 1800 9 || die "another build held ${lock} for 30 minutes"
if complete; then
    log "built by another run meanwhile: ${ARCHIVE} ($(elapsed))"
    exit 0
fi

bash "${here}/apt-install.sh" "${HOST_PACKAGES[@]}"

# --- buildah with a private storage under the cache -------------------------------------
overlay_works() {
    local probe rc=1
    probe="$(mktemp -d "${CACHE_ROOT}/ovl-probe.XXXXXX")"
    mkdir "${probe}/l" "${probe}/u" "${probe}/w" "${probe}/m"
    if mount -t overlay overlay -o "lowerdir=${probe}/l,upperdir=${probe}/u,workdir=${probe}/w" \
            "${probe}/m" 2>/dev/null; then
        umount "${probe}/m"
        rc=0
    fi
    rm -rf "${probe}"
    return "${rc}"
}
if overlay_works; then DRIVER=overlay; else DRIVER=vfs; fi
STORE="${CACHE_ROOT}/buildah-${DRIVER}"
mkdir -p "${STORE}/root" "${STORE}/run" "${STORE}/tmp"
# buildah's big temporary files (layer tars) go there too, not to /var/tmp
export TMPDIR="${STORE}/tmp"
B=(buildah --root "${STORE}/root" --runroot "${STORE}/run" --storage-driver "${DRIVER}")

work="$(mktemp -d "${CACHE_ROOT}/image-${KEY}.tmp.XXXXXX")"
containers=()
cleanup() {
    local c d
    for c in "${containers[@]}"; do "${B[@]}" rm "${c}" > /dev/null 2>&1 || true; done
    for d in proc sys dev/pts dev; do
        if mountpoint -q "${work}/rootfs/${d}" 2>/dev/null; then umount -l "${work}/rootfs/${d}"; fi
    done
    rm -rf "${work}"
}
trap cleanup EXIT

# --- 1. the base ------------------------------------------------------------------------
if "${B[@]}" inspect --type image "${BASE_REF}" > /dev/null 2>&1; then
    log "base cached: ${BASE_REF}"
else
    # shellcheck source=tools/apt-mirror.sh
    source "${here}/apt-mirror.sh"
    MIRROR="$(debian_mirror)" || die "no Debian mirror to debootstrap ${SUITE} from"
    log "base ${BASE_REF}: debootstrap ${SUITE} (minbase + ${BASE_PACKAGES[*]}) from ${MIRROR}"
    if ! build_base "${work}/rootfs" "${work}/debootstrap.log"; then
        cat "${work}/debootstrap.log" "${work}/rootfs/debootstrap/debootstrap.log" \
            > "${OUT}.failed.log" 2>&1 || true
        tail -n 40 "${work}/debootstrap.log" >&2 || true
        die "debootstrap failed (whole log: ${OUT}.failed.log)"
    fi
    c="$("${B[@]}" from --pull=never scratch)"
    containers+=("${c}")
    mnt="$("${B[@]}" mount "${c}")"
    tar -C "${work}/rootfs" --numeric-owner -cf - . | tar -C "${mnt}" --numeric-owner -xpf -
    "${B[@]}" umount "${c}" > /dev/null
    rm -rf "${work}/rootfs"
    "${B[@]}" config --os linux --arch "$(dpkg --print-architecture)" \
        --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        --env LANG=C.UTF-8 --cmd /bin/sh --label "io.hwaffinity.base-key=${BASE_KEY}" "${c}"
    "${B[@]}" commit --quiet --format oci --rm "${c}" "${BASE_REF}" > /dev/null
    containers=()
    log "base committed: ${BASE_REF} ($(elapsed))"
fi

# --- 2. the image from deploy/Dockerfile ------------------------------------------------
# --network host: the RUN steps reach PyPI; --isolation chroot needs no runtime setup
# (runc under cgroup v1 in a VM works too, chroot is simply the most portable).
# The host's CA bundle (PIP_CERT, else the system's) is mounted read-only for the RUN
# steps and named by the PIP_CERT build argument: where the network intercepts TLS
# (a proxy with its own CA) pip trusts what the host trusts. It never enters the image.
host_ca="${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}"
[ -s "${host_ca}" ] || die "no CA bundle at ${host_ca} (install ca-certificates or set PIP_CERT)"
log "buildah bud -f deploy/Dockerfile (BASE_IMAGE=${BASE_REF}) -> ${REF}"
"${B[@]}" bud --layers --pull=never --network host --isolation chroot --format oci \
    --volume "${host_ca}:/run/hwaffinity-build-ca.crt:ro" \
    --build-arg PIP_CERT=/run/hwaffinity-build-ca.crt \
    --force-rm --build-arg "BASE_IMAGE=${BASE_REF}" -f "${root}/deploy/Dockerfile" \
    -t "${REF}" --iidfile "${work}/iid" "${root}" 2>&1 | sed 's/^/    /'
log "built ${REF} ($(elapsed))"

# --- the OCI archive: gzip layers (as a registry gets them), containerd's name annotation
# (buildah 1.28 compresses layers for an oci: destination even with --disable-compression)
"${B[@]}" push --quiet --format oci "${REF}" "oci:${work}/layout:${REF}"
python3 - "${work}/layout" "${REF}" > "${work}/image.json" <<'EOF'
import gzip, json, os, sys
layout, ref = sys.argv[1:]
path = os.path.join(layout, "index.json")
index = json.load(open(path))
assert len(index["manifests"]) == 1, index
desc = index["manifests"][0]
desc.setdefault("annotations", {})["io.containerd.image.name"] = ref
desc["annotations"]["org.opencontainers.image.ref.name"] = ref.rsplit(":", 1)[1]
with open(path, "w") as f:
    json.dump(index, f, sort_keys=True, separators=(",", ":"))
algo, hexd = desc["digest"].split(":")
manifest = json.load(open(os.path.join(layout, "blobs", algo, hexd)))
size = compressed = 0
for layer in manifest["layers"]:                # the layer tars' bytes, unpacked
    compressed += layer["size"]
    algo, hexd = layer["digest"].split(":")
    opener = gzip.open if layer["mediaType"].endswith("+gzip") else open
    with opener(os.path.join(layout, "blobs", algo, hexd), "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            size += len(chunk)
mib = lambda n: round(n / 1048576.0, 1)
json.dump({"reference": ref, "digest": desc["digest"], "layers": len(manifest["layers"]),
           "size_bytes": size, "size_mib": mib(size),
           "compressed_bytes": compressed, "compressed_mib": mib(compressed)},
          sys.stdout, indent=2, sort_keys=True)
print()
EOF
mkdir -p "${work}/out"
tar -C "${work}/layout" --numeric-owner --owner=0 --group=0 -cf "${work}/out/${ARCHIVE_NAME}" \
    oci-layout index.json blobs
mv "${work}/image.json" "${work}/out/image.json"
"${B[@]}" rmi "${REF}" > /dev/null

rm -rf "${OUT}"
mv "${work}/out" "${OUT}"
# the three newest archives stay (other checkouts, a change undone); older ones go
find "${CACHE_ROOT}" -maxdepth 1 -type d -regex '.*/image-[0-9a-f]\{12\}' -printf '%T@ %p\n' \
    | sort -rn | tail -n +4 | cut -d' ' -f2- | while read -r old; do
        log "removing the older archive ${old}"
        rm -rf "${old}"
    done

# --- bounded storage: drop every image but the base when it grew too large --------------
store_mib="$(du -sm "${STORE}/root" | cut -f1)"
if [ "${store_mib}" -gt "${STORE_MAX_MIB}" ]; then
    log "buildah storage ${store_mib} MiB > ${STORE_MAX_MIB} MiB: removing all images but ${BASE_REF}"
    base_id="$("${B[@]}" images --quiet --no-trunc "${BASE_REF}")"
    "${B[@]}" images --all --quiet --no-trunc | sort -u | while read -r id; do
        [ "${id}" = "${base_id}" ] || "${B[@]}" rmi --force "${id}" > /dev/null 2>&1 || true
    done
fi

size="$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%(size_bytes)d bytes (%(size_mib).1f MiB) unpacked, %(compressed_mib).1f MiB compressed, %(layers)d layers" % d)' "${OUT}/image.json")"
log "built ${ARCHIVE} in $(elapsed): ${REF}, ${size}"
