#!/usr/bin/env bash
# The fast loop (the tests with none of tox.ini's markers) on Debian trixie's Python 3.13,
# the newest Python Debian ships, beside the machine's own (3.11, the whole suite).
#
#   bash tools/test-python.sh                  # the fast loop on trixie's python3
#   bash tools/test-python.sh tests/cli        # any pytest arguments instead
#
# trixie's python3 needs trixie's C library, so it runs in a trixie chroot: a minbase
# debootstrap with python3, python3-venv and ca-certificates, and a virtualenv in it with
# this package's test extras from PyPI (the checkout is copied in, so the chroot never
# writes into it). Both are cached under
# ${HWAFFINITY_CACHE:-$HOME/.cache/tacker-hwaffinity}/python-trixie-<key>, rebuilt when
# this script or pyproject.toml changes; a cold build takes 3-5 minutes, the tests about
# 2 more on 2 cores. tools/test.sh runs this after the whole suite.
#
# Environment:
#   HWAFFINITY_CACHE          cache root
#   HWAFFINITY_DEBIAN_MIRROR  Debian mirror (default: the one the machine's apt uses,
#                             tools/apt-mirror.sh)
#
# Needs root (debootstrap, chroot, mounts).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/.." && pwd)"
CACHE_ROOT="${HWAFFINITY_CACHE:-${HOME}/.cache/tacker-hwaffinity}"
SUITE="trixie"
PACKAGES=(python3 python3-venv ca-certificates openssh-client openssl zsh)
KEY="$(cat "${BASH_SOURCE[0]}" "${root}/pyproject.toml" | sha256sum | cut -c1-12)"
OUT="${CACHE_ROOT}/python-${SUITE}-${KEY}"
HOST_CA=/etc/ssl/host-ca-certificates.crt
DEB_CACHE="${CACHE_ROOT}/debootstrap-debs-${SUITE}"
started="${SECONDS}"

log() { printf '[test-python] %s\n' "$*"; }
die() { printf '[test-python] ERROR: %s\n' "$*" >&2; exit 1; }
elapsed() { printf '%dm%02ds' $(( (SECONDS - started) / 60 )) $(( (SECONDS - started) % 60 )); }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot)"
mkdir -p "${CACHE_ROOT}"
exec 9>"${CACHE_ROOT}/python-${SUITE}.lock"
flock -w 1800 9 || die "another run held ${CACHE_ROOT}/python-${SUITE}.lock for 30 minutes"

rootfs="${OUT}/rootfs"
mounted=()
cleanup() {
    local i
    for (( i=${#mounted[@]}-1; i>=0; i-- )); do umount -l "${mounted[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
mount_in() {  # mount_in SRC DEST [options]: a bind mount (or proc/devpts) inside the chroot
    mkdir -p "$2"
    if [ "$1" = proc ]; then mount -t proc proc "$2"; else mount --rbind "$1" "$2"; fi
    mounted+=("$2")
}
in_root() {
    chroot "${rootfs}" /usr/bin/env -i PATH=/venv/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_CERT="${HOST_CA}" \
        HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-dev}" CI="${CI:-}" "$@"
}

if [ ! -f "${OUT}/.complete" ]; then
    rm -rf "${OUT}"
    bash "${here}/apt-install.sh" debootstrap
    # shellcheck source=tools/apt-mirror.sh
    source "${here}/apt-mirror.sh"
    mirror="$(debian_mirror)" || die "no Debian mirror to debootstrap ${SUITE} from"
    mkdir -p "${OUT}" "${DEB_CACHE}"
    log "debootstrap ${SUITE} (minbase + ${PACKAGES[*]}) from ${mirror}"
    if ! debootstrap --variant=minbase --include="$(IFS=,; printf '%s' "${PACKAGES[*]}")" \
            --cache-dir="${DEB_CACHE}" "${SUITE}" "${rootfs}" "${mirror}" \
            > "${OUT}/debootstrap.log" 2>&1; then
        tail -n 40 "${OUT}/debootstrap.log" >&2 || true
        die "debootstrap failed (log: ${OUT}/debootstrap.log)"
    fi
    log "debootstrap done ($(elapsed))"
fi

cp /etc/resolv.conf "${rootfs}/etc/resolv.conf"
# pip in the chroot trusts what the machine trusts (a machine may reach PyPI through a
# proxy whose CA only its own bundle holds)
cp "${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}" "${rootfs}${HOST_CA}"
mount_in proc "${rootfs}/proc"
mount_in /dev "${rootfs}/dev"
mount_in /sys "${rootfs}/sys"
# the checkout, copied: the chroot's pip and pytest write nothing into it
rm -rf "${rootfs}/src"
mkdir -p "${rootfs}/src"
tar -C "${root}" --exclude=.git --exclude='*.egg-info' --exclude=__pycache__ \
    --exclude=.venv --exclude=build --exclude=dist -cf - . | tar -C "${rootfs}/src" -xf -

if [ ! -f "${OUT}/.complete" ]; then
    log "virtualenv on $(in_root python3 --version) with the test extras (from PyPI)"
    in_root python3 -m venv /venv
    if ! in_root /venv/bin/pip install -q "/src[test]" > "${OUT}/pip.log" 2>&1; then
        tail -n 40 "${OUT}/pip.log" >&2 || true
        die "pip install failed (log: ${OUT}/pip.log)"
    fi
    touch "${OUT}/.complete"
    log "built ${OUT} ($(elapsed))"
fi

if [ "$#" -eq 0 ]; then
    markers="$(in_root /venv/bin/python - <<'EOF'
import configparser
ini = configparser.ConfigParser(interpolation=None)
ini.read("/src/tox.ini")
print(" or ".join(line.split(":", 1)[0].strip()
                  for line in ini["pytest"]["markers"].strip().splitlines()))
EOF
)"
    # What checks the checkout and the machine's tools rather than Python (the git
    # history, shellcheck, the cached kubectl) ran in the whole suite on this commit.
    set -- -p xdist -n auto -m "not (${markers})" \
        --deselect tests/test_tools.py::test_no_registry_host_name_is_written_in_the_repository \
        --deselect tests/packages/test_install_script.py::test_shellcheck_clean \
        --deselect tests/test_deploy_manifests.py::test_kubectl_kustomize_renders_what_the_expansion_reads
fi
log "pytest on $(in_root python3 --version): $*"
# the copy first on the path, over the installed package: the tests import the checkout
in_root /usr/bin/env PYTHONPATH=/src sh -c 'cd /src && exec /venv/bin/python -m pytest -p no:cacheprovider "$@"' pytest "$@"
log "passed ($(elapsed))"
