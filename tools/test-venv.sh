#!/usr/bin/env bash
# Where tools/test.sh keeps a checkout's virtualenv, and the pruning of the ones no
# checkout uses any more (sourced by tools/test.sh; tests/test_tools.py runs both).
#
# One venv per checkout, Python version and pyproject.toml:
#   CACHE/venv-<X.Y>-<checkout>-<pyproject>, each a sha256 prefix (of the checkout's
# absolute path, 8 hex digits, and of pyproject.toml, 12), so that two checkouts on one
# machine never install into each other's. The venv records its checkout in the file
# .hwaffinity-checkout as it is made.

# test_venv_path CACHE PYTHON CHECKOUT: the venv's path
test_venv_path() {
    local cache="$1" python="$2" checkout="$3" version
    version="$("${python}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    printf '%s/venv-%s-%s-%s\n' "${cache}" "${version}" \
        "$(printf '%s' "${checkout}" | sha256sum | cut -c1-8)" \
        "$(sha256sum "${checkout}/pyproject.toml" | cut -c1-12)"
}

# prune_test_venvs CACHE KEEP: remove the venvs of CACHE, other than KEEP, that are
# * of a checkout that no longer exists and unused for HWAFFINITY_VENV_KEEP_DAYS days
#   (default 7: a checkout made again at the same path, as a CI clone may be, finds its
#   venv; tools/test.sh touches .hwaffinity-checkout at each run),
# * or of KEEP's own checkout and Python with another pyproject.toml (superseded).
# A venv's checkout is in its .hwaffinity-checkout; for a venv of an older tools/test.sh,
# keyed by Python and pyproject.toml only, it is the checkout of its editable install
# (.hwaffinity-editable). A venv that names no checkout (made by hand, or never finished)
# is left alone. Prints each one removed.
prune_test_venvs() {
    local cache="$1" keep="$2" days="${HWAFFINITY_VENV_KEEP_DAYS:-7}" venv record
    for venv in "${cache}"/venv-*; do
        if [ ! -d "${venv}" ] || [ "${venv}" = "${keep}" ]; then
            continue
        fi
        record="${venv}/.hwaffinity-checkout"
        [ -f "${record}" ] || record="${venv}/.hwaffinity-editable"
        [ -f "${record}" ] || continue
        if [ "${venv%-*}" = "${keep%-*}" ] || { [ ! -d "$(cat "${record}")" ] \
                && [ -n "$(find "${record}" -mmin +$(( days * 1440 )))" ]; }; then
            printf '%s\n' "${venv}"
            rm -rf "${venv}"
        fi
    done
}
