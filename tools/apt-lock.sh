#!/usr/bin/env bash
# apt-get that waits for a held dpkg or apt lock instead of failing at once (sourced by
# the scripts that install Debian packages):
#
#   apt_get ARGS...          apt-get -o DPkg::Lock::Timeout=N ARGS...: apt waits up to N s
#                            for the dpkg locks, printing "Waiting for cache lock: ..."
#   apt_get_update ARGS...   apt-get update, which that option does not cover (apt 2.6):
#                            while the lists lock is held, it says so and tries again,
#                            for up to N s in all
#
# N is HWAFFINITY_APT_LOCK_TIMEOUT, default 600 (an unattended upgrade, or another
# checkout's tools/test.sh installing at the same time, usually ends well within it).
# Every apt-get of tools/*.sh goes through these two or carries the option itself
# (tests/test_tools.py checks it).

APT_LOCK_TIMEOUT="${HWAFFINITY_APT_LOCK_TIMEOUT:-600}"

apt_get() {
    apt-get -o DPkg::Lock::Timeout="${APT_LOCK_TIMEOUT}" "$@"
}

apt_get_update() {
    local started="${SECONDS}" said=-30 rc err
    err="$(mktemp)"
    while true; do
        rc=0
        apt_get update "$@" 2> "${err}" || rc=$?
        if [ "${rc}" -eq 0 ] || ! grep -q 'Could not get lock' "${err}" \
                || (( SECONDS - started >= APT_LOCK_TIMEOUT )); then
            cat "${err}" >&2
            rm -f "${err}"
            return "${rc}"
        fi
        if (( SECONDS - started - said >= 30 )); then
            said=$(( SECONDS - started ))
            printf '[apt-lock] waiting for the apt lists lock (%ds of %ds): %s\n' "${said}" \
                "${APT_LOCK_TIMEOUT}" "$(grep -m1 'Could not get lock' "${err}")" >&2
        fi
        sleep 1
    done
}
