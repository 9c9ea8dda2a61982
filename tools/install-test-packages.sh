#!/usr/bin/env bash
# Install the Debian packages the test suite needs beyond Python packages.
#
#   sudo bash tools/install-test-packages.sh
#
# Idempotent: packages already installed are not downloaded again, and
# apt-get update only runs when something is missing. Needs root (apt-get).
#
#   openssh-server   the real sshd that tests/ssh starts on 127.0.0.1
#                    (only the binary is used: no service is enabled or
#                    started; the tests run it with a private config)
#   openssh-client   ssh-keygen, which generates the test host and user keys
set -euo pipefail

packages=(openssh-server openssh-client)

log() { printf '[install-test-packages] %s\n' "$*"; }

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "${p}" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("${p}")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    log "already installed: ${packages[*]}"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    log "missing ${missing[*]}; run this script as root" >&2
    exit 1
fi

log "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# policy-rc.d keeps the package's postinst from starting a system sshd on
# port 22: the tests start their own on a free loopback port.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "${policy}" ]; then
    printf '#!/bin/sh\nexit 101\n' > "${policy}"
    chmod 0755 "${policy}"
    created_policy=1
fi
cleanup() { if [ "${created_policy}" -eq 1 ]; then rm -f "${policy}"; fi; }
trap cleanup EXIT
apt-get install -y -q --no-install-recommends "${missing[@]}"
log "installed: $(command -v sshd || echo /usr/sbin/sshd) $(dpkg-query -W -f='${Version}' openssh-server)"
