#!/usr/bin/env bash
# Build (once) the QEMU guest image that the real-node tests boot
# (tests/realnode/vm.py): a Debian trixie system with systemd on cgroup v2,
# containerd 1.7 (NRI capable) and, unpacked beside it, containerd 2.x from Debian's
# next suite, runc, sshd and python3 with this project's
# runtime dependencies, so that real containers run under the CRI the way a
# current Kubernetes node runs them, and the node agent can run in the guest.
#
# Why a VM: this host is on cgroup v1 and its /dev/kvm is a nested paravirtual
# hypervisor a stock kernel cannot use; QEMU's TCG emulation boots the image
# instead (see doc in tests/realnode/vm.py).
#
# What it produces, OUTSIDE the checkout, keyed by this recipe (the first 12
# hex digits of this file's SHA-256: any edit builds a new image once):
#
#   ${HWAFFINITY_CACHE:-$HOME/.cache/tacker-hwaffinity}/vm-<key>/
#       rootfs.img   ext4 root file system (made with mkfs.ext4 -d: no loop mount)
#       vmlinuz      the trixie kernel from the rootfs
#       initrd.img   its initramfs (MODULES=list: virtio, ext4, 9p and little else)
#       manifest     versions and sizes; written last
#
# The image bakes in no SSH key and no test logic. At boot its unit
# hwaffinity-boot.service mounts the 9p shares the harness passes (tags
# hwctl, hwsrc, hwout), sets up the slirp network, and runs the share's
# guest script (tests/realnode/guest/setup.sh, copied there by the harness)
# before sshd starts. containerd is installed but not enabled: the guest
# script starts it with the configuration the test asks for.
#
# How long: about 3-4 minutes cold (host packages, debootstrap of trixie from
# the Debian mirror, initramfs, mkfs); a complete cache exits in well under a
# second. Safe to run concurrently (flock) and again at any time; the image is
# built in a temporary directory and renamed into place.
#
#   bash tools/build-vm-image.sh               # build unless cached
#   bash tools/build-vm-image.sh --print-dir   # print the image directory only
#
# Environment:
#   HWAFFINITY_CACHE          cache root (default: $HOME/.cache/tacker-hwaffinity)
#   HWAFFINITY_DEBIAN_MIRROR  Debian mirror (default: the one the machine's apt uses,
#                             tools/apt-mirror.sh)
#
# Must run as root when building (debootstrap, apt-get).
set -euo pipefail

started="${SECONDS}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE_ROOT="${HWAFFINITY_CACHE:-${HOME}/.cache/tacker-hwaffinity}"
RECIPE_KEY="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)"
OUT="${CACHE_ROOT}/vm-${RECIPE_KEY}"
SUITE="trixie"
HOST_PACKAGES=(qemu-system-x86 qemu-utils debootstrap e2fsprogs python3-venv curl xz-utils)
# python3-* : the project's install_requires (PyYAML, numpy, kubernetes,
# prometheus_client; httptools below), so `python3 -m tacker_hwaffinity...` runs from
# the share.
# python3-cffi-backend is named because debootstrap does not resolve virtual
# packages: python3-cryptography (under python3-kubernetes) needs one it provides.
GUEST_PACKAGES=(systemd-sysv udev dbus iproute2 kmod procps util-linux linux-image-amd64
                initramfs-tools containerd runc socat openssh-server busybox-static
                ca-certificates python3 python3-cffi-backend python3-yaml python3-numpy
                python3-prometheus-client python3-kubernetes)
# Pure-Python wheels from PyPI over Debian's: trixie's python3-kubernetes (30.1) predates
# the _content_type argument the project's patches need. 36.0.0 is the oldest client the
# project supports (pyproject.toml) and the last one without pydantic (compiled) to install.
# httptools: trixie's python3-httptools (0.1.1) predates llhttp and the leniency switches
# kube.serve sets; its manylinux wheel for the guest's Python is taken instead.
GUEST_WHEELS=(kubernetes==36.0.0 durationpy==0.11 httptools==0.9.0)
# containerd 2.x beside the suite's 1.7: Debian's package from this suite (forky: 2.1),
# unpacked (dpkg-deb -x) under CONTAINERD2_DIR, not installed: the guest script starts
# one runtime or the other (tests/realnode/guest/setup.sh, RUNTIME=containerd2). It needs
# only libc6 (>= 2.34) and a runc, which trixie has.
CONTAINERD2_SUITE="forky"
CONTAINERD2_DIR="/opt/containerd2"
# Downloaded .debs are kept here, so that a recipe change rebuilds without
# downloading everything again (remove it to reclaim the space).
DEB_CACHE="${CACHE_ROOT}/debootstrap-debs-${SUITE}"
# Kernel modules the guest never needs (about half of the module tree).
PRUNE_MODULES=(drivers/gpu drivers/media drivers/net/wireless drivers/infiniband
               drivers/staging drivers/bluetooth drivers/iio drivers/isdn drivers/mtd
               drivers/hid drivers/input/joystick drivers/input/touchscreen drivers/usb
               drivers/scsi/qla2xxx drivers/scsi/lpfc drivers/net/ethernet sound
               net/bluetooth net/wireless net/mac80211)
INITRD_MODULES=(virtio_pci virtio_blk ext4 9p 9pnet_virtio)

log() { printf '[build-vm-image] %s\n' "$*"; }
die() { printf '[build-vm-image] ERROR: %s\n' "$*" >&2; exit 1; }
elapsed() { printf '%dm%02ds' $(( (SECONDS - started) / 60 )) $(( (SECONDS - started) % 60 )); }

complete() {
    [ -s "${OUT}/manifest" ] && [ -s "${OUT}/rootfs.img" ] && [ -s "${OUT}/vmlinuz" ] \
        && [ -s "${OUT}/initrd.img" ]
}

if [ "${1:-}" = "--print-dir" ]; then
    printf '%s\n' "${OUT}"
    exit 0
fi
[ "$#" -eq 0 ] || die "usage: build-vm-image.sh [--print-dir]"

if complete; then
    log "cached: ${OUT} ($(elapsed))"
    exit 0
fi

[ "$(id -u)" -eq 0 ] || die "building the image needs root (debootstrap, apt-get)"
# shellcheck source=tools/apt-mirror.sh
source "${here}/apt-mirror.sh"
MIRROR="$(debian_mirror)" || die "no Debian mirror to debootstrap ${SUITE} from"
mkdir -p "${CACHE_ROOT}"
# One lock for every recipe: builds are heavy (2 cores) and share the .deb cache.
lock="${CACHE_ROOT}/vm-build.lock"
exec 9>"${lock}"
log "waiting for the build lock ${lock}"
flock -w 1800 9 || die "another build held ${lock} for 30 minutes"
if complete; then
    log "built by another run meanwhile: ${OUT} ($(elapsed))"
    exit 0
fi

bash "${here}/apt-install.sh" "${HOST_PACKAGES[@]}"

work="$(mktemp -d "${CACHE_ROOT}/vm-${RECIPE_KEY}.tmp.XXXXXX")"
cleanup() {
    local d
    for d in proc sys dev/pts dev; do
        if mountpoint -q "${work}/rootfs/${d}" 2>/dev/null; then umount -l "${work}/rootfs/${d}"; fi
    done
    rm -rf "${work}"
}
trap cleanup EXIT
rootfs="${work}/rootfs"

include="$(IFS=,; printf '%s' "${GUEST_PACKAGES[*]}")"
log "debootstrap ${SUITE} (minbase + ${#GUEST_PACKAGES[@]} packages) from ${MIRROR}"
mkdir -p "${DEB_CACHE}"
if ! debootstrap --variant=minbase --include="${include}" --cache-dir="${DEB_CACHE}" \
        "${SUITE}" "${rootfs}" "${MIRROR}" \
        > "${work}/debootstrap.log" 2>&1; then
    cat "${work}/debootstrap.log" "${rootfs}/debootstrap/debootstrap.log" > "${OUT}.failed.log" 2>&1 || true
    tail -n 40 "${work}/debootstrap.log" >&2 || true
    die "debootstrap failed (whole log: ${OUT}.failed.log)"
fi
log "debootstrap done ($(elapsed))"

in_root() { chroot "${rootfs}" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

# --- newer wheels, for the guest's Python, unpacked into its site directory -----------
guest_python="$(in_root python3 -c 'import sys; print("%d%d" % sys.version_info[:2])')"
python3 -m venv "${work}/pip"
"${work}/pip/bin/python" -m pip download -q --no-deps --only-binary=:all: \
    --python-version "${guest_python}" --implementation cp --abi "cp${guest_python}" \
    --platform "manylinux_2_28_$(uname -m)" --platform "manylinux2014_$(uname -m)" \
    -d "${work}/wheels" "${GUEST_WHEELS[@]}"
site="$(in_root python3 -c 'import site; print(site.getsitepackages()[0])')"
mkdir -p "${rootfs}${site}"
for wheel in "${work}"/wheels/*.whl; do
    python3 -m zipfile -e "${wheel}" "${rootfs}${site}"
done
# bytecode now: the guest's imports would otherwise compile kubernetes' 30,000-line
# modules again at every agent start (seconds under TCG)
in_root python3 -m compileall -q "${site}" > /dev/null
log "wheels ${GUEST_WHEELS[*]} in ${site}"

# --- containerd 2.x from CONTAINERD2_SUITE, its SHA-256 checked against the index -----
arch="$(dpkg --print-architecture)"
curl -fsS --retry 3 --max-time 300 -o "${work}/Packages.xz" \
    "${MIRROR}/dists/${CONTAINERD2_SUITE}/main/binary-${arch}/Packages.xz"
read -r deb_path deb_sha deb_version < <(xz -dc "${work}/Packages.xz" | awk '
    BEGIN { RS = ""; FS = "\n" }
    /(^|\n)Package: containerd\n/ {
        for (i = 1; i <= NF; i++) {
            if ($i ~ /^Filename: /) path = substr($i, 11)
            if ($i ~ /^SHA256: /) sha = substr($i, 9)
            if ($i ~ /^Version: /) version = substr($i, 10)
        }
        print path, sha, version
    }')
[ -n "${deb_path:-}" ] || die "no containerd in ${CONTAINERD2_SUITE}'s index"
deb="${DEB_CACHE}/$(basename "${deb_path}")"
if ! echo "${deb_sha}  ${deb}" | sha256sum -c --status 2>/dev/null; then
    curl -fsS --retry 3 --max-time 600 -o "${deb}.part" "${MIRROR}/${deb_path}"
    echo "${deb_sha}  ${deb}.part" | sha256sum -c --status \
        || die "${deb_path}: SHA-256 does not match ${CONTAINERD2_SUITE}'s index"
    mv "${deb}.part" "${deb}"
fi
dpkg-deb -x "${deb}" "${rootfs}${CONTAINERD2_DIR}"
in_root "${CONTAINERD2_DIR}/usr/bin/containerd" --version > /dev/null \
    || die "containerd ${deb_version} from ${CONTAINERD2_SUITE} does not run in ${SUITE}"
log "containerd ${deb_version} (${CONTAINERD2_SUITE}) in ${CONTAINERD2_DIR}"

# --- identity, console, file systems -------------------------------------------------
printf 'hwaffinity-vm\n' > "${rootfs}/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 hwaffinity-vm\n::1 localhost\n' > "${rootfs}/etc/hosts"
printf '/dev/vda / ext4 rw,noatime 0 0\n' > "${rootfs}/etc/fstab"
rm -f "${rootfs}/etc/machine-id" "${rootfs}/var/lib/dbus/machine-id"
in_root systemd-machine-id-setup > /dev/null 2>&1
mkdir -p "${rootfs}/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\nForwardToConsole=no\n' \
    > "${rootfs}/etc/systemd/journald.conf.d/hwaffinity.conf"
# Nothing that burns the emulated CPUs during tests or prompts on the console.
for unit in systemd-firstboot.service apt-daily.timer apt-daily-upgrade.timer \
            dpkg-db-backup.timer e2scrub_all.timer fstrim.timer man-db.timer \
            systemd-tmpfiles-clean.timer; do
    ln -sf /dev/null "${rootfs}/etc/systemd/system/${unit}"
done
# -cpu max under TCG offers SVM/VMX, so udev would load kvm: its static-key flips
# patch live kernel text, which oopsed (int3) under multi-threaded TCG here.
printf 'install kvm /bin/false\ninstall kvm_amd /bin/false\ninstall kvm_intel /bin/false\n' \
    > "${rootfs}/etc/modprobe.d/hwaffinity-no-kvm.conf"
# The guest script starts containerd with the test's configuration.
in_root systemctl disable containerd.service > /dev/null 2>&1 || true
rm -f "${rootfs}/etc/systemd/system/multi-user.target.wants/containerd.service"

# --- sshd: root by public key only; keys come from the harness at boot ---------------
rm -f "${rootfs}"/etc/ssh/ssh_host_*
mkdir -p "${rootfs}/etc/ssh/sshd_config.d" "${rootfs}/root/.ssh"
chmod 0700 "${rootfs}/root/.ssh"
cat > "${rootfs}/etc/ssh/sshd_config.d/hwaffinity.conf" <<'EOF'
# tacker-hwaffinity test VM: the harness passes a per-boot host key and client key.
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
EOF
in_root passwd -l root > /dev/null

# --- the boot unit: 9p shares, network, the share's guest script ----------------------
cat > "${rootfs}/usr/local/sbin/hwaffinity-boot" <<'EOF'
#!/bin/sh
# Mount the harness's 9p shares, bring up the slirp network, run the share's
# guest script (phase "boot"), and make sure sshd has a host key.
set -u
base=/mnt/hwaffinity
say() { echo "hwaffinity-boot: $*" > /dev/console; echo "hwaffinity-boot: $*"; }
modprobe -a 9pnet_virtio 9p 2>/dev/null || true
for share in ctl:ro src:ro out:rw; do
    name=${share%%:*}; mode=${share#*:}
    mkdir -p "$base/$name"
    if mount -t 9p -o "trans=virtio,version=9p2000.L,msize=262144,$mode" "hw$name" "$base/$name" 2>/dev/null; then
        say "mounted hw$name on $base/$name ($mode)"
    else
        say "no share hw$name"
    fi
done
# udev loads virtio_net asynchronously: load it here and wait (bounded) for the device
modprobe virtio_net 2>/dev/null || true
dev=
for _ in $(seq 1 100); do
    dev=$(ls /sys/class/net | grep -v '^lo$' | head -n 1)
    [ -n "$dev" ] && break
    sleep 0.1
done
if [ -z "$dev" ]; then
    say "no network device after 10 s"
else
    ip link set lo up
    ip link set "$dev" up
    ip addr add 10.0.2.15/24 dev "$dev"
    ip route add default via 10.0.2.2
    say "network on $dev: 10.0.2.15/24 via 10.0.2.2"
fi
rc=0
if [ -f "$base/ctl/setup.sh" ]; then
    mkdir -p "$base/out"
    sh "$base/ctl/setup.sh" boot > "$base/out/boot.log" 2>&1 || rc=$?
    echo "$rc" > "$base/out/boot.rc"
    say "guest script (boot) exited $rc"
fi
if [ ! -s /etc/ssh/ssh_host_ed25519_key ]; then
    ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key
fi
say "host key $(ssh-keygen -l -f /etc/ssh/ssh_host_ed25519_key.pub)"
exit 0
EOF
chmod 0755 "${rootfs}/usr/local/sbin/hwaffinity-boot"
cat > "${rootfs}/etc/systemd/system/hwaffinity-boot.service" <<'EOF'
[Unit]
Description=tacker-hwaffinity test VM: 9p shares, network, guest script
After=local-fs.target systemd-udevd.service
Before=ssh.service ssh.socket network.target
Wants=network.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/hwaffinity-boot

[Install]
WantedBy=multi-user.target
EOF
in_root systemctl enable hwaffinity-boot.service > /dev/null 2>&1
in_root systemctl enable ssh.service > /dev/null 2>&1 || true

# --- kernel: a small initramfs with what the VM boots from ------------------------------
kver="$(basename "$(find "${rootfs}/lib/modules" -mindepth 1 -maxdepth 1 -type d | sort | tail -n 1)")"
[ -n "${kver}" ] || die "no kernel modules in the rootfs"
for d in "${PRUNE_MODULES[@]}"; do rm -rf "${rootfs}/lib/modules/${kver}/kernel/${d}"; done
in_root depmod -a "${kver}"
printf 'MODULES=list\nCOMPRESS=gzip\n' > "${rootfs}/etc/initramfs-tools/conf.d/hwaffinity.conf"
printf '%s\n' "${INITRD_MODULES[@]}" > "${rootfs}/etc/initramfs-tools/modules"
log "initramfs for ${kver}"
in_root update-initramfs -u -k "${kver}" > "${work}/initramfs.log" 2>&1 \
    || { tail -n 20 "${work}/initramfs.log" >&2; die "update-initramfs failed"; }
mkdir -p "${work}/out"
cp "${rootfs}/boot/vmlinuz-${kver}" "${work}/out/vmlinuz"
cp "${rootfs}/boot/initrd.img-${kver}" "${work}/out/initrd.img"
chmod 0644 "${work}/out/vmlinuz" "${work}/out/initrd.img"
in_root lsinitramfs "/boot/initrd.img-${kver}" > "${work}/initrd.list"
for m in "${INITRD_MODULES[@]}"; do
    pattern="/${m//[-_]/[-_]}\.ko"      # file names may use - where module names use _
    grep -q "${pattern}" "${work}/initrd.list" \
        || grep -q "${pattern}" "${rootfs}/lib/modules/${kver}/modules.builtin" \
        || die "module ${m} is neither in the initramfs nor built in"
done
rm -f "${rootfs}"/boot/vmlinuz-* "${rootfs}"/boot/initrd.img-*

# --- versions, then slim down -----------------------------------------------------------
# shellcheck disable=SC2016  # dpkg-query's own ${field} syntax
versions="$(in_root dpkg-query -W -f='${Package} ${Version}\n' \
    containerd runc systemd linux-image-amd64 python3 openssh-server)"
in_root apt-get -o DPkg::Lock::Timeout=600 clean
rm -rf "${rootfs}"/var/lib/apt/lists/* "${rootfs}"/var/cache/apt/*.bin "${rootfs}"/usr/share/doc/* \
    "${rootfs}"/usr/share/man/* "${rootfs}"/usr/share/info/* "${rootfs}"/var/log/*.log \
    "${rootfs}"/debootstrap

# --- the ext4 image: content plus 2 GiB for container images and logs ------------------
used_mib="$(du -sm "${rootfs}" | cut -f1)"
size_mib=$(( used_mib + 2048 ))
log "mkfs.ext4 -d (${used_mib} MiB of files, ${size_mib} MiB image)"
# /usr is final: mark /etc and /var up to date, or every boot of the (snapshot)
# image runs ldconfig.service and systemd-update-done.service (ConditionNeedsUpdate).
usr_stamp="$(stat -c %Y "${rootfs}/usr")"
for d in etc var; do
    printf 'TIMESTAMP_NSEC=%s000000000\n' "${usr_stamp}" > "${rootfs}/${d}/.updated"
    touch -d "@${usr_stamp}" "${rootfs}/${d}/.updated"
done
mkfs.ext4 -q -F -L hwaffinity-root -E root_owner=0:0 -d "${rootfs}" "${work}/out/rootfs.img" \
    "${size_mib}M" > "${work}/mkfs.log" 2>&1 || { cat "${work}/mkfs.log" >&2; die "mkfs.ext4 failed"; }
{
    printf 'recipe %s\nsuite %s\nkernel %s\nbuilt %s\n' "${RECIPE_KEY}" "${SUITE}" "${kver}" "$(date -u +%FT%TZ)"
    printf '%s\n' "${versions}"
    printf 'containerd2 %s (%s, %s)\n' "${deb_version}" "${CONTAINERD2_SUITE}" "${CONTAINERD2_DIR}"
    printf 'rootfs_files_mib %s\nrootfs_image_mib %s\n' "${used_mib}" "${size_mib}"
} > "${work}/out/manifest.tmp"
mv "${work}/out/manifest.tmp" "${work}/out/manifest"

rm -rf "${OUT}"
mv "${work}/out" "${OUT}"
log "built ${OUT} in $(elapsed): $(du -sh --apparent-size "${OUT}" | cut -f1) apparent, $(du -sh "${OUT}" | cut -f1) on disk"
