#!/usr/bin/env bash
# Install a container runtime with NRI for the real-node tests (tests/realnode).
#
#   bash tools/install-node-runtime.sh      # as root when something is missing
#
# Why: the node agent is an NRI plugin, and NRI needs containerd 1.7 or later.
# Debian bookworm ships containerd 1.6 (no NRI); trixie ships 1.7, whose
# binaries run on bookworm (they need only libc6 >= 2.34 and runc). So this
# adds an apt source for trixie (from the Debian mirror the machine's apt uses,
# tools/apt-mirror.sh; HWAFFINITY_DEBIAN_MIRROR overrides it) with a pin that lets exactly one package come
# from it:
#
#   containerd      from trixie (1.7.x, NRI built in); priority 500 for it,
#                   priority 1 for every other trixie package, so nothing
#                   else is ever upgraded from trixie
#   runc            from bookworm (trixie's needs glibc 2.38)
#   busybox-static  the one binary the test images are built from
#                   (tests/realnode/images.py)
#   socat           forwards a containerd socket over TCP (the VM tests) and the
#                   API server to the real node's pods (tests/realnode/kubenode.py)
#   iptables, conntrack
#                   kube-proxy's Service rules on the real node (removed after it)
#   containernetworking-plugins
#                   the CNI plugins (bridge, host-local, loopback) of its pods
#
# The packaged containerd service is never used: the tests start a private
# containerd with their own config, sockets and state under a temp dir
# (tests/realnode/containerd.py). Package scripts are kept from starting it
# (tools/apt-install.sh's policy-rc.d) and the unit is disabled.
#
# Idempotent: the apt files are rewritten only when their content differs,
# and apt runs only when a package is missing or containerd is not 1.7.
set -euo pipefail

log() { printf '[install-node-runtime] %s\n' "$*"; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sources=/etc/apt/sources.list.d/hwaffinity-trixie.sources
prefs=/etc/apt/preferences.d/hwaffinity-trixie-containerd
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

# shellcheck source=tools/apt-mirror.sh
source "${here}/apt-mirror.sh"
# trixie from the mirror the machine's apt uses for its own release
mirror="$(debian_mirror)" || { log "no Debian mirror for the trixie source" >&2; exit 1; }
sources_text="# Added by tacker-hwaffinity tools/install-node-runtime.sh: containerd 1.7 (NRI)
# only; ${prefs} pins everything else from trixie to priority 1.
Types: deb
URIs: ${mirror}
Suites: trixie
Components: main
Signed-By: ${keyring}
"

prefs_text="# Added by tacker-hwaffinity tools/install-node-runtime.sh: nothing from trixie
# unless asked for, except containerd (1.7, with NRI).
Package: *
Pin: release n=trixie
Pin-Priority: 1

Package: containerd
Pin: release n=trixie
Pin-Priority: 500
"

containerd_is_17() {
    command -v containerd >/dev/null 2>&1 &&
        containerd --version 2>/dev/null | grep -Eq '[[:space:]]v?1\.7\.'
}

# write_if_changed FILE TEXT: (re)write FILE only when its content differs
write_if_changed() {
    if [ -f "$1" ] && [ "$(cat "$1")" = "$(printf '%s' "$2")" ]; then
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        log "$1 is missing or stale; run as root" >&2
        exit 1
    fi
    log "writing $1"
    printf '%s' "$2" > "$1"
}

write_if_changed "${sources}" "${sources_text}"
write_if_changed "${prefs}" "${prefs_text}"

# Missing packages (containerd among them on a fresh host) are installed with
# the pin in place: apt's candidate for containerd is then trixie's.
bash "${here}/apt-install.sh" containerd runc busybox-static socat iptables conntrack containernetworking-plugins

# containerd installed earlier from bookworm (1.6): ask for trixie's by name.
if ! containerd_is_17; then
    log "containerd is not 1.7 ($(containerd --version 2>&1 || true)); installing trixie's"
    bash "${here}/apt-install.sh" containerd/trixie
fi

if ! containerd_is_17; then
    log "containerd --version does not say 1.7: $(containerd --version 2>&1 || true)" >&2
    exit 1
fi
for tool in ctr runc busybox socat; do
    command -v "${tool}" >/dev/null 2>&1 || { log "${tool} is not on PATH" >&2; exit 1; }
done

# The packaged service must not run (or start at boot): the tests run their own.
if command -v systemctl >/dev/null 2>&1; then
    if [ -d /run/systemd/system ]; then
        if systemctl is-active --quiet containerd.service 2>/dev/null ||
                systemctl is-enabled --quiet containerd.service 2>/dev/null; then
            log "stopping and disabling the packaged containerd.service"
            systemctl disable --now containerd.service >/dev/null 2>&1 || true
        fi
    elif systemctl is-enabled --quiet containerd.service 2>/dev/null; then
        # not booted with systemd: disable works offline (unit symlinks only)
        log "disabling the packaged containerd.service"
        systemctl disable containerd.service >/dev/null 2>&1 || true
    fi
fi

log "ready: $(containerd --version), runc $(runc --version | head -n 1 | awk '{print $3}')"
