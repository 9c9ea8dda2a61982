#!/usr/bin/env bash
# Create (once) the virtualenv that runs REAL OpenStack Nova, Placement and
# Heat for the `openstack` test tier (tests/openstack/). The test process
# itself never imports nova or heat: the servers run as subprocesses with
# this venv's python.
#
# The venv lives OUTSIDE the checkout, keyed by the Python version and a hash
# of the pinned requirement list below:
#
#   ${HWAFFINITY_CACHE:-$HOME/.cache/tacker-hwaffinity}/openstack-<key>/
#
# A cache hit (completion marker present, python runs) returns in well under
# a second. A cold build installs ~165 wheels from PyPI (~50 s, ~520 MB).
# The LAST line printed on stdout is the venv's python path.
#
# Environment:
#   HWAFFINITY_CACHE   cache root (default: $HOME/.cache/tacker-hwaffinity)
#   PYTHON             base interpreter, must be >= 3.11 (default: python3)
set -euo pipefail

# Exact versions: the harness calls Nova/Heat test internals (see
# doc/openstack-harness.md). SQLAlchemy 2.1 breaks Nova 34's test fixtures.
REQUIREMENTS=(
    "nova==34.0.0"
    "openstack-placement==16.0.0"
    "openstack-heat==27.0.1"
    "SQLAlchemy<2.1"
    "oslotest"
    "wsgi-intercept"
)

CACHE_ROOT="${HWAFFINITY_CACHE:-${HOME}/.cache/tacker-hwaffinity}"
PYTHON="${PYTHON:-python3}"
MARKER_NAME=".hwaffinity-openstack-complete"

log() { printf '[openstack-venv] %s\n' "$*" >&2; }
die() { printf '[openstack-venv] ERROR: %s\n' "$*" >&2; exit 1; }

command -v "${PYTHON}" >/dev/null 2>&1 || die "base interpreter '${PYTHON}' not found (set PYTHON)"
pyver="$("${PYTHON}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
"${PYTHON}" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
    || die "nova 34 / heat 27 need Python >= 3.11; '${PYTHON}' is ${pyver} (set PYTHON)"

req_text="$(printf '%s\n' "${REQUIREMENTS[@]}")"
key="${pyver}-$(printf '%s' "${req_text}" | sha256sum | cut -c1-12)"
venv="${CACHE_ROOT}/openstack-${key}"
marker="${venv}/${MARKER_NAME}"

cache_hit() {
    [ -f "${marker}" ] && [ -x "${venv}/bin/python" ] \
        && "${venv}/bin/python" -c 'import sys' >/dev/null 2>&1
}

# pip, quietly; drops the harmless "Location ... is ignored" lines some
# machines' pip.conf produces, keeps everything else (on stderr).
pip_quiet() {
    local rc=0 out
    out="$(mktemp)"
    "${venv}/bin/python" -m pip "$@" >"${out}" 2>&1 || rc=$?
    grep -v 'is ignored: it is neither a file nor a directory' "${out}" >&2 || true
    rm -f "${out}"
    return "${rc}"
}

build() {
    local start site
    start="$(date +%s)"
    log "creating ${venv} (Python ${pyver})"
    rm -rf "${venv}"
    "${PYTHON}" -m venv "${venv}"
    pip_quiet install -q --upgrade pip
    log "pip install ${REQUIREMENTS[*]}"
    if ! pip_quiet install -q "${REQUIREMENTS[@]}"; then
        rm -rf "${venv}"
        die "pip install failed (network? PyPI reachable?); nothing cached"
    fi
    # The wheels install their data files (api-paste.ini, heat's
    # environment.d) under <venv>/etc, while the test fixtures look for
    # them next to the packages, as in a source tree.
    site="$("${venv}/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    ln -sfn "$(realpath --relative-to="${site}" "${venv}/etc")" "${site}/etc"
    [ -f "${site}/etc/nova/api-paste.ini" ] || die "nova api-paste.ini not found under ${venv}/etc"
    [ -d "${site}/etc/heat/environment.d" ] || die "heat environment.d not found under ${venv}/etc"
    "${venv}/bin/python" -m pip freeze >"${venv}/requirements.lock"
    printf '%s\n' "${req_text}" >"${marker}"
    log "built in $(( $(date +%s) - start )) s, $(du -sm "${venv}" | cut -f1) MB"
}

mkdir -p "${CACHE_ROOT}"
if cache_hit; then
    log "cache hit: ${venv}"
else
    # Serialise concurrent builders (two test runs at once) on one lock.
    exec 9>"${CACHE_ROOT}/openstack-${key}.lock"
    flock -w 900 9 || die "timed out waiting for another build of ${venv}"
    if cache_hit; then
        log "cache hit (built by another process): ${venv}"
    else
        build
    fi
    exec 9>&-
fi
printf '%s\n' "${venv}/bin/python"
