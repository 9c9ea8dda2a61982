#!/usr/bin/env bash
# Build (once) the Kubernetes binaries the test harnesses need, from Debian
# bookworm's own `kubernetes` source package: the control plane (tests/controlplane)
# and the kubelet and kube-proxy of the real node (tests/realnode/kubenode.py); install
# the runtime Debian packages (etcd-server, openssl) and kubectl.
#
# Everything comes from Debian's package archive: no other download happens.
# The binaries land OUTSIDE the checkout, keyed by version AND by this
# recipe (the first 12 hex digits of this file's SHA-256), so that any change
# to the recipe builds once into a new directory instead of reusing binaries
# built the old way:
#
#   ${HWAFFINITY_CACHE:-$HOME/.cache/tacker-hwaffinity}/kubernetes-<version>-<recipe>/bin/
#       kube-apiserver kube-scheduler kube-controller-manager kubelet kube-proxy kubectl
#
# kubectl is Debian trixie's binary package (1.32, kustomize v5: `kubectl apply -k`
# with directories as resources, as the README says), unpacked into the cache only;
# bookworm's kubectl 1.20 embeds kustomize v2, which refuses deploy/'s kustomization.
# The trixie apt source comes from tools/install-node-runtime.sh (run it first).
#
# A cache hit (all binaries present and reporting the expected version) skips
# the source download and the build. Safe to run again at any time.
# `build-kube.sh --print-bin-dir` prints that directory and does nothing else
# (the test harness finds the binaries the same way).
#
# Dependency fix: Kubernetes 1.20 vendors github.com/modern-go/reflect2
# v1.0.1, which reads Go runtime internals that changed in Go 1.18. Built with
# Debian's Go 1.19, json-iterator then panics (nil pointer in
# reflect2.(*frozenConfig).Type2) the first time it builds a decoder for a map
# type after start-up, so kube-apiserver fails requests at random. We replace
# the vendored copy by Debian's golang-github-modern-go-reflect2-dev (1.0.2,
# the release that fixed it; same API). See doc/controlplane.md.
#
# Environment:
#   HWAFFINITY_CACHE       cache root (default: $HOME/.cache/tacker-hwaffinity)
#   HWAFFINITY_BUILD_JOBS  parallel Go compile jobs (default 2; the machines
#                          have 2 cores shared with other work)
#   HWAFFINITY_KEEP_SRC=1  keep the unpacked source tree after a build
#   HWAFFINITY_BUILD_NICE  niceness of the build (default 0). It was 10: beside a
#                          second job at 0 the build of a cold CI run got a tenth of
#                          the CPU and took over 22 minutes instead of 6 (it is the
#                          run's critical path); set it to yield on a workstation
#
# Must run as root (it calls apt-get) unless every package is already there.
set -euo pipefail

KUBE_VERSION="1.20.2"            # upstream version inside Debian's package
DEB_SRC_PACKAGE="kubernetes"
GO_PACKAGE="golang-1.19-go"
GO_ROOT="/usr/lib/go-1.19"
CACHE_ROOT="${HWAFFINITY_CACHE:-${HOME}/.cache/tacker-hwaffinity}"
RECIPE_KEY="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)"
PREFIX="${CACHE_ROOT}/kubernetes-${KUBE_VERSION}-${RECIPE_KEY}"
BIN_DIR="${PREFIX}/bin"
JOBS="${HWAFFINITY_BUILD_JOBS:-2}"
NICE="${HWAFFINITY_BUILD_NICE:-0}"
BINARIES=(kube-apiserver kube-scheduler kube-controller-manager kubelet kube-proxy)
RUNTIME_PACKAGES=(etcd-server openssl)
REFLECT2_PACKAGE="golang-github-modern-go-reflect2-dev"
REFLECT2_VERSION="1.0.2"         # upstream release inside Debian's package
REFLECT2_SRC="/usr/share/gocode/src/github.com/modern-go/reflect2"
BUILD_PACKAGES=("${GO_PACKAGE}" "${REFLECT2_PACKAGE}" rsync make dpkg-dev ca-certificates)

log() { printf '[build-kube] %s\n' "$*"; }
die() { printf '[build-kube] ERROR: %s\n' "$*" >&2; exit 1; }

APT_UPDATED=0
apt_update_once() {
    if [ "${APT_UPDATED}" -eq 0 ]; then
        log "apt-get update"
        DEBIAN_FRONTEND=noninteractive apt_get_update -qq
        APT_UPDATED=1
    fi
}

# Install the given Debian packages unless all of them are installed already.
# shellcheck source=tools/apt-lock.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt-lock.sh"

apt_install() {
    bash "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh" "$@" || die "cannot install: $*"
}

# True when BIN_DIR holds every binary and each reports the expected version.
cache_hit() {
    local b out
    for b in "${BINARIES[@]}" kubectl; do
        [ -x "${BIN_DIR}/${b}" ] || return 1
    done
    for b in "${BINARIES[@]}"; do
        out="$("${BIN_DIR}/${b}" --version 2>/dev/null || true)"
        case "${out}" in
            *"v${KUBE_VERSION}"*) ;;
            *) return 1 ;;
        esac
    done
    return 0
}

# Debian ships kubectl 1.20 in kubernetes-client. Machines may already carry
# another /usr/bin/kubectl from a different package (file conflict), so we
# unpack Debian's .deb into the cache instead of installing it system-wide.
install_kubectl() {
    if [ -x "${BIN_DIR}/kubectl" ]; then
        log "kubectl already cached: ${BIN_DIR}/kubectl"
        return 0
    fi
    local tmp
    tmp="$(mktemp -d "${CACHE_ROOT}/kubectl.XXXXXX")"
    chmod 0755 "${tmp}"   # lets APT's _apt user write the download
    apt_update_once
    log "apt-get download kubectl/trixie (unpacked into the cache only)"
    (cd "${tmp}" && apt_get download -qq kubectl/trixie) ||
        die "cannot download trixie's kubectl: run tools/install-node-runtime.sh first (it adds the pinned trixie source)"
    dpkg-deb -x "${tmp}"/kubectl_*.deb "${tmp}/root"
    install -m 0755 "${tmp}/root/usr/bin/kubectl" "${BIN_DIR}/kubectl"
    rm -rf "${tmp}"
    log "kubectl: $("${BIN_DIR}/kubectl" version --client 2>/dev/null | head -n 1 || echo unknown)"
}

# Make sure APT knows a deb-src entry for bookworm main.
ensure_deb_src() {
    if apt-cache showsrc "${DEB_SRC_PACKAGE}" >/dev/null 2>&1 \
        && apt-cache showsrc "${DEB_SRC_PACKAGE}" 2>/dev/null | grep -q "^Package: ${DEB_SRC_PACKAGE}$"; then
        log "deb-src for ${DEB_SRC_PACKAGE} already known to APT"
        return 0
    fi
    local f=/etc/apt/sources.list.d/hwaffinity-bookworm-src.sources
    if [ ! -e "${f}" ]; then
        [ "$(id -u)" -eq 0 ] || die "need root to add a deb-src entry (${f})"
        local mirror
        # shellcheck source=tools/apt-mirror.sh
        source "$(dirname "${BASH_SOURCE[0]}")/apt-mirror.sh"
        mirror="$(debian_mirror)" || die "no Debian mirror for the deb-src entry"
        log "adding deb-src entry for bookworm main (${mirror}): ${f}"
        cat >"${f}" <<EOF
# Added by tacker-hwaffinity tools/build-kube.sh (source of Debian's kubernetes)
Types: deb-src
URIs: ${mirror}
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    fi
    APT_UPDATED=0
    apt_update_once
    apt-cache showsrc "${DEB_SRC_PACKAGE}" >/dev/null 2>&1 \
        || die "APT still has no source for ${DEB_SRC_PACKAGE}"
}

# Replace the vendored reflect2 (1.0.1, broken on Go >= 1.18) by Debian's.
replace_reflect2() {
    local src="$1" vendored="$1/vendor/github.com/modern-go/reflect2" have
    have="$(dpkg-query -W -f='${Version}' "${REFLECT2_PACKAGE}" 2>/dev/null || true)"
    case "${have}" in
        "${REFLECT2_VERSION}"*) ;;
        *) die "${REFLECT2_PACKAGE} ${REFLECT2_VERSION} needed, found '${have:-none}'" ;;
    esac
    [ -f "${REFLECT2_SRC}/reflect2.go" ] || die "no reflect2 source in ${REFLECT2_SRC}"
    [ -d "${vendored}" ] || die "no vendored reflect2 in ${vendored}"
    log "vendor: modern-go/reflect2 -> Debian's ${have} (${REFLECT2_SRC})"
    rm -rf "${vendored}"
    mkdir -p "${vendored}"
    # Only the package's Go sources (no tests, no module files: GOPATH mode).
    find "${REFLECT2_SRC}" -maxdepth 1 -type f \( -name '*.go' -o -name '*.s' \) \
        ! -name '*_test.go' -exec cp {} "${vendored}/" \;
}

build() {
    local work="${CACHE_ROOT}/build-${KUBE_VERSION}"
    local src gopath link ldflags pkg b start
    start="$(date +%s)"
    rm -rf "${work}"
    mkdir -p "${work}/src"
    chmod 0755 "${work}" "${work}/src"
    log "apt-get source ${DEB_SRC_PACKAGE} into ${work}/src"
    (cd "${work}/src" && apt_get source -qq "${DEB_SRC_PACKAGE}")
    src="$(find "${work}/src" -mindepth 1 -maxdepth 1 -type d -name "${DEB_SRC_PACKAGE}-*" | head -n 1)"
    if [ -z "${src}" ] || [ ! -d "${src}/vendor" ]; then
        die "unpacked source tree with vendor/ not found under ${work}/src"
    fi
    log "source tree: ${src}"
    replace_reflect2 "${src}"

    gopath="${work}/gopath"
    link="${gopath}/src/k8s.io/kubernetes"
    mkdir -p "$(dirname "${link}")"
    ln -sfn "${src}" "${link}"

    export PATH="${GO_ROOT}/bin:${PATH}"
    # GOPATH mode against the vendored tree; no network for Go at all.
    export GOPATH="${gopath}" GO111MODULE=off GOPROXY=off CGO_ENABLED=0
    export GOCACHE="${work}/gocache" GOTOOLCHAIN=local
    unset GOFLAGS
    # Tell Kubernetes' build scripts the version so they never ask git.
    export KUBE_GIT_VERSION="v${KUBE_VERSION}" KUBE_GIT_TREE_STATE=clean \
        KUBE_GIT_COMMIT="debian-bookworm" KUBE_GIT_MAJOR=1 KUBE_GIT_MINOR="${KUBE_VERSION#1.}"
    KUBE_GIT_MINOR="${KUBE_GIT_MINOR%%.*}"
    log "go: $(go version)"

    log "make gen_openapi (generated OpenAPI definitions)"
    (cd "${link}" && nice -n "${NICE}" make gen_openapi)

    local build_date
    build_date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    ldflags="-s -w"
    for pkg in k8s.io/kubernetes/vendor/k8s.io/component-base/version \
               k8s.io/kubernetes/vendor/k8s.io/client-go/pkg/version; do
        ldflags+=" -X ${pkg}.gitVersion=v${KUBE_VERSION}"
        ldflags+=" -X ${pkg}.gitMajor=1"
        ldflags+=" -X ${pkg}.gitMinor=${KUBE_GIT_MINOR}"
        ldflags+=" -X ${pkg}.gitCommit=${KUBE_GIT_COMMIT}"
        ldflags+=" -X ${pkg}.gitTreeState=clean"
        ldflags+=" -X ${pkg}.buildDate=${build_date}"
    done

    mkdir -p "${work}/out"
    for b in "${BINARIES[@]}"; do
        log "go build cmd/${b} (nice ${NICE}, -p ${JOBS})"
        (cd "${link}" && nice -n "${NICE}" go build -p "${JOBS}" -trimpath \
            -ldflags "${ldflags}" -o "${work}/out/${b}" "./cmd/${b}")
    done
    mkdir -p "${BIN_DIR}"
    for b in "${BINARIES[@]}"; do
        install -m 0755 "${work}/out/${b}" "${BIN_DIR}/${b}.tmp"
        mv -f "${BIN_DIR}/${b}.tmp" "${BIN_DIR}/${b}"
    done
    log "build took $(( $(date +%s) - start )) s"
    if [ "${HWAFFINITY_KEEP_SRC:-0}" != "1" ]; then
        log "removing build tree ${work} (set HWAFFINITY_KEEP_SRC=1 to keep it)"
        chmod -R u+w "${work}" 2>/dev/null || true
        rm -rf "${work}"
    fi
}

main() {
    if [ "${1:-}" = "--print-bin-dir" ]; then
        printf '%s\n' "${BIN_DIR}"
        return 0
    fi
    local t0
    t0="$(date +%s)"
    log "cache: ${PREFIX}"
    mkdir -p "${BIN_DIR}"
    apt_install "${RUNTIME_PACKAGES[@]}"
    install_kubectl
    if cache_hit; then
        log "cache hit: v${KUBE_VERSION} binaries present in ${BIN_DIR}; skipping source download and build"
    else
        log "cache miss: building v${KUBE_VERSION} from Debian's ${DEB_SRC_PACKAGE} source package"
        apt_install "${BUILD_PACKAGES[@]}"
        ensure_deb_src
        build
        cache_hit || die "built binaries do not report v${KUBE_VERSION}"
    fi
    local b
    for b in "${BINARIES[@]}"; do
        log "$(basename "${b}"): $("${BIN_DIR}/${b}" --version 2>&1 | sed -n 1p)"
    done
    log "etcd: $(etcd --version 2>/dev/null | sed -n 1p)"
    log "done in $(( $(date +%s) - t0 )) s; binaries in ${BIN_DIR}"
}

main "$@"
