#!/usr/bin/env bash
# Create (once) the directory that gives the Tacker processes of the `tacker` test
# tier the kubernetes client Tacker 16 works with, and print its path (last line).
#
# Tacker 16's Kubernetes infra drivers build client objects with the
# `local_vars_configuration` argument, which the kubernetes client 37 (pydantic
# models; the test venv's, which our manifest checks need) refuses: v1 CNF
# instantiate fails with "Failed to init resource.". In the field Tacker runs in a
# venv of its own; here the harness puts this directory first on the PYTHONPATH of
# tacker-server, tacker-conductor and tacker-db-manage, and the client there is the
# newest before 37. Its dependencies are a subset of 37's, so --no-deps.
#
# The directory lives OUTSIDE the checkout:
#   ${HWAFFINITY_CACHE:-$HOME/.cache/tacker-hwaffinity}/tacker-kubernetes-<version>/
# A cache hit returns at once; a cold build fetches one wheel from PyPI (~5 s).
#
# Environment:
#   HWAFFINITY_CACHE   cache root (default: $HOME/.cache/tacker-hwaffinity)
#   PYTHON             the interpreter whose pip installs it (default: python3)
set -euo pipefail

VERSION="36.0.3"
CACHE_ROOT="${HWAFFINITY_CACHE:-${HOME}/.cache/tacker-hwaffinity}"
PYTHON="${PYTHON:-python3}"
dir="${CACHE_ROOT}/tacker-kubernetes-${VERSION}"
marker="${dir}/.hwaffinity-complete"

log() { printf '[tacker-kubernetes] %s\n' "$*" >&2; }
die() { printf '[tacker-kubernetes] ERROR: %s\n' "$*" >&2; exit 1; }

mkdir -p "${CACHE_ROOT}"
if [ ! -f "${marker}" ]; then
    exec 9>"${dir}.lock"
    flock -w 300 9 || die "timed out waiting for another build of ${dir}"
    if [ ! -f "${marker}" ]; then
        log "pip install --target ${dir} kubernetes==${VERSION}"
        rm -rf "${dir}"
        out="$(mktemp)"
        if ! "${PYTHON}" -m pip install -q --no-deps --target "${dir}" \
                "kubernetes==${VERSION}" >"${out}" 2>&1; then
            grep -v 'is ignored: it is neither a file nor a directory' "${out}" >&2 || true
            rm -rf "${dir}" "${out}"
            die "pip install failed (network? PyPI reachable?); nothing cached"
        fi
        rm -f "${out}"
        printf '%s\n' "${VERSION}" >"${marker}"
    fi
    exec 9>&-
fi
printf '%s\n' "${dir}"
