#!/usr/bin/env bash
# Install Debian packages unless all of them are installed already.
#
#   bash tools/apt-install.sh PACKAGE...
#
# Idempotent: apt-get update and install run only when something is missing. A held
# dpkg or apt lock is waited for (tools/apt-lock.sh), up to 10 minutes.
# Needs root then. Package maintainer scripts are kept from starting services
# (policy-rc.d), so installing e.g. openssh-server or etcd-server starts no
# daemon on a well-known port: the tests start their own on loopback.
set -euo pipefail

log() { printf '[apt-install] %s\n' "$*"; }

[ "$#" -gt 0 ] || { log "usage: apt-install.sh PACKAGE..." >&2; exit 2; }

missing=()
for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "${p}" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("${p}")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    log "already installed: $*"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    log "missing ${missing[*]}; run as root" >&2
    exit 1
fi

log "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# shellcheck source=tools/apt-lock.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt-lock.sh"
apt_get_update -q
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "${policy}" ]; then
    printf '#!/bin/sh\nexit 101\n' > "${policy}"
    chmod 0755 "${policy}"
    created_policy=1
fi
cleanup() { if [ "${created_policy}" -eq 1 ]; then rm -f "${policy}"; fi; }
trap cleanup EXIT
apt_get install -y -q --no-install-recommends "${missing[@]}"
