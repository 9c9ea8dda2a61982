#!/usr/bin/env bash
# The Debian mirror the machine's apt already uses, for the build scripts (sourced):
#
#   source tools/apt-mirror.sh
#   mirror="$(debian_mirror)" || exit 1     # e.g. http://mirror.example/debian
#
# HWAFFINITY_DEBIAN_MIRROR, when set, is the answer. Otherwise the mirror is read from
# apt's configuration: the deb822 files /etc/apt/sources.list.d/*.sources (URIs:) and
# the one-line entries of /etc/apt/sources.list and /etc/apt/sources.list.d/*.list.
# An entry counts when it is a binary (deb) source, enabled, with the component main
# and a plain suite: security, updates, backports and proposed-updates archives
# (suite "X-...", or "security" in the URI) do not, nor the sources this project's
# scripts add themselves (hwaffinity-*). Among those, the entry whose suite is the
# host's release codename (VERSION_CODENAME of os-release) wins, else the first one.
# Only a Debian host (os-release ID=debian) is read: elsewhere, set the variable.
#
# debian_mirror prints the URI without a trailing slash, and fails, saying why, when
# there is none. HWAFFINITY_APT_ROOT names another file system root to read apt's
# configuration and os-release under (the tests' sample configurations).

# apt_entries ROOT: "URI SUITE" for every entry that counts, in apt's reading order
apt_entries() {
    local apt="$1/etc/apt" f files=()
    [ -f "${apt}/sources.list" ] && files+=("${apt}/sources.list")
    for f in "${apt}"/sources.list.d/*.list "${apt}"/sources.list.d/*.sources; do
        [ -f "${f}" ] || continue
        case "${f##*/}" in hwaffinity-*) continue ;; esac
        files+=("${f}")
    done
    [ "${#files[@]}" -gt 0 ] || return 0
    awk '
        function emit(uris, suites, comps,    u, s, nu, ns, i, j, main) {
            main = 0
            if (split(comps, c, /[ \t]+/) > 0)
                for (i in c) if (c[i] == "main") main = 1
            if (!main) return
            nu = split(uris, us, /[ \t]+/); ns = split(suites, ss, /[ \t]+/)
            for (i = 1; i <= nu; i++) {
                u = us[i]; sub(/\/+$/, "", u)
                if (u == "" || u ~ /security/) continue
                for (j = 1; j <= ns; j++) {
                    s = ss[j]
                    if (s == "" || s ~ /-/ || s ~ /\//) continue
                    print u, s
                }
            }
        }
        function flush() {
            if (types ~ /(^|[ \t])deb([ \t]|$)/ && tolower(enabled) != "no")
                emit(uris, suites, comps)
            types = uris = suites = comps = enabled = last = ""
        }
        FNR == 1 { flush() }
        FILENAME ~ /\.sources$/ {
            if ($0 ~ /^[ \t]*#/) next
            if ($0 ~ /^[ \t]*$/) { flush(); next }
            if ($0 ~ /^[ \t]/) {                         # a continuation line
                line = $0; gsub(/^[ \t]+|[ \t]+$/, "", line)
                if (last == "uris") uris = uris " " line
                else if (last == "suites") suites = suites " " line
                else if (last == "components") comps = comps " " line
                next
            }
            key = tolower($0); sub(/:.*/, "", key)
            value = $0; sub(/^[^:]*:[ \t]*/, "", value); sub(/[ \t]+$/, "", value)
            last = key
            if (key == "types") types = value
            else if (key == "uris") uris = value
            else if (key == "suites") suites = value
            else if (key == "components") comps = value
            else if (key == "enabled") enabled = value
            next
        }
        {                                               # one-line format
            line = $0; sub(/#.*/, "", line)
            if (line !~ /^[ \t]*deb[ \t]/) next
            sub(/^[ \t]*deb[ \t]+/, "", line)
            if (line ~ /^\[/) sub(/^\[[^]]*\][ \t]*/, "", line)
            n = split(line, w, /[ \t]+/)
            if (n < 3) next
            comps = ""
            for (i = 3; i <= n; i++) comps = comps " " w[i]
            emit(w[1], w[2], comps)
            types = uris = suites = comps = enabled = last = ""
        }
        END { flush() }
    ' "${files[@]}"
}

# os_release_field ROOT NAME: NAME's value in ROOT's os-release, unquoted
os_release_field() {
    local f
    for f in "$1/etc/os-release" "$1/usr/lib/os-release"; do
        if [ -f "${f}" ]; then
            sed -n "s/^$2=//p" "${f}" | head -n 1 | tr -d '"'"'"
            return 0
        fi
    done
}

debian_mirror() {
    local root="${HWAFFINITY_APT_ROOT:-}" id codename entries uri suite first=""
    if [ -n "${HWAFFINITY_DEBIAN_MIRROR:-}" ]; then
        printf '%s\n' "${HWAFFINITY_DEBIAN_MIRROR%/}"
        return 0
    fi
    root="${root%/}"
    id="$(os_release_field "${root}" ID)"
    if [ "${id}" != "debian" ]; then
        printf 'apt-mirror: not a Debian host (os-release ID=%s): set HWAFFINITY_DEBIAN_MIRROR to a Debian mirror\n' \
            "${id:-unknown}" >&2
        return 1
    fi
    codename="$(os_release_field "${root}" VERSION_CODENAME)"
    entries="$(apt_entries "${root}")"
    while read -r uri suite; do
        [ -n "${uri}" ] || continue
        if [ -n "${codename}" ] && [ "${suite}" = "${codename}" ]; then
            printf '%s\n' "${uri}"
            return 0
        fi
        [ -n "${first}" ] || first="${uri}"
    done <<< "${entries}"
    if [ -n "${first}" ]; then
        printf '%s\n' "${first}"
        return 0
    fi
    printf 'apt-mirror: no Debian archive entry (deb, component main, not security/updates) in %s/etc/apt/sources.list or %s/etc/apt/sources.list.d/: set HWAFFINITY_DEBIAN_MIRROR\n' \
        "${root}" "${root}" >&2
    return 1
}
