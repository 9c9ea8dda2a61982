#!/bin/sh
# The guest side of tests/realnode/vm.py, run INSIDE the test VM (POSIX sh).
#
# The harness copies this file and its settings (setup.env) into the read-only
# 9p share mounted at /mnt/hwaffinity/ctl; results go to the writable share
# /mnt/hwaffinity/out (a directory on the host). Keeping this out of the cached
# image means a change here needs no image rebuild.
#
#   setup.sh boot      run by the image's hwaffinity-boot.service before sshd:
#                      installs the per-boot SSH keys, then (CONTAINERD=1)
#                      starts phase "runtime" as its own unit and returns
#   setup.sh runtime   writes containerd's config, starts containerd, forwards
#                      its CRI socket to TCP CRI_PORT (socat), imports the OCI
#                      tarballs listed in IMAGES; writes out/runtime.rc (0 = ready)
#                      and out/runtime.log
#   setup.sh switch R  stops the running containerd and the forward, then runs
#                      phase "runtime" with RUNTIME=R (what a node upgrade does)
#
# setup.env (shell assignments written by the harness):
#   CONTAINERD=1|0  NRI=1|0  CRI_PORT  SANDBOX_IMAGE
#   NRI_REQUEST_TIMEOUT  NRI_REGISTRATION_TIMEOUT  IMAGES (file names in ctl/)
#   RUNTIME=containerd   trixie's containerd 1.7 (the package's unit, config v2)
#   RUNTIME=containerd2  Debian's containerd 2.x unpacked in /opt/containerd2 by
#                        tools/build-vm-image.sh: its own unit (the package's, with
#                        the binaries' path), config v3 that sets only what a kubelet
#                        node needs and leaves NRI to its defaults (on in 2.x)
#   Both serve the CRI on /run/containerd/containerd.sock, with roots of their own
#   (a 1.7 root is not for 2.x to migrate, nor the other way).
set -eu

base=/mnt/hwaffinity
ctl="$base/ctl"
out="$base/out"
CONTAINERD=1
NRI=1
CRI_PORT=7010
SANDBOX_IMAGE=localhost/hwaffinity-pause:1
NRI_REQUEST_TIMEOUT=2s
NRI_REGISTRATION_TIMEOUT=5s
IMAGES=
RUNTIME=containerd
if [ -f "$ctl/setup.env" ]; then
    # shellcheck disable=SC1091  # written by the harness at each boot
    . "$ctl/setup.env"
fi
RUNTIME=${RUNTIME_SWITCH:-$RUNTIME}
CONTAINERD2=/opt/containerd2/usr/bin
case "$RUNTIME" in
    containerd) CTR=ctr ;;
    containerd2) CTR=$CONTAINERD2/ctr ;;
    *) echo "setup.sh: unknown RUNTIME $RUNTIME" >&2; exit 2 ;;
esac

log() { echo "[setup $(date +%T)] $*"; }

phase_boot() {
    install -d -m 0700 /root/.ssh
    install -m 0600 "$ctl/authorized_keys" /root/.ssh/authorized_keys
    install -m 0600 "$ctl/ssh_host_ed25519_key" /etc/ssh/ssh_host_ed25519_key
    install -m 0644 "$ctl/ssh_host_ed25519_key.pub" /etc/ssh/ssh_host_ed25519_key.pub
    log "ssh keys installed"
    if [ "$CONTAINERD" = 1 ]; then
        systemd-run --no-block --unit=hwaffinity-runtime --collect \
            --description="hwaffinity test VM: containerd for the tests" \
            /bin/sh "$ctl/setup.sh" runtime
        log "runtime phase started (unit hwaffinity-runtime)"
    fi
}

# Wait (bounded) until COMMAND succeeds; fail naming WHAT.
wait_for() {
    what=$1 limit=$2
    shift 2
    i=0
    until "$@" > /dev/null 2>&1; do
        i=$((i + 1))
        if [ "$i" -gt $((limit * 5)) ]; then
            log "ERROR: $what not ready after ${limit}s"
            return 1
        fi
        sleep 0.2
    done
}

containerd_config() {
    nri_disable=true
    [ "$NRI" = 1 ] && nri_disable=false
    cat <<EOF
# Written by tests/realnode/guest/setup.sh at boot.
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$SANDBOX_IMAGE"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = true

[plugins."io.containerd.nri.v1.nri"]
  disable = $nri_disable
  disable_connections = false
  plugin_config_path = "/etc/nri/conf.d"
  plugin_path = "/opt/nri/plugins"
  plugin_registration_timeout = "$NRI_REGISTRATION_TIMEOUT"
  plugin_request_timeout = "$NRI_REQUEST_TIMEOUT"
  socket_path = "/var/run/nri/nri.sock"
EOF
}

# containerd 2.x's configuration (version 3): the kubelet's cgroup driver and the pause
# image; NRI as the package ships it, but where the test asks otherwise.
containerd2_config() {
    cat <<EOF
# Written by tests/realnode/guest/setup.sh at boot.
version = 3
root = "/var/lib/containerd2"
state = "/run/containerd2"

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$SANDBOX_IMAGE"

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  SystemdCgroup = true
EOF
    if [ "$NRI" != 1 ] || [ "$NRI_REQUEST_TIMEOUT" != 2s ] \
            || [ "$NRI_REGISTRATION_TIMEOUT" != 5s ]; then
        nri_disable=true
        [ "$NRI" = 1 ] && nri_disable=false
        cat <<EOF

[plugins.'io.containerd.nri.v1.nri']
  disable = $nri_disable
  plugin_registration_timeout = "$NRI_REGISTRATION_TIMEOUT"
  plugin_request_timeout = "$NRI_REQUEST_TIMEOUT"
EOF
    fi
}

# The package's own unit for containerd 2.x, pointed at the unpacked binaries.
containerd2_unit() {
    sed -e "s|^ExecStart=.*|ExecStart=$CONTAINERD2/containerd --config /etc/containerd/config2.toml|" \
        -e "s|^\\[Service\\]|[Service]\\nEnvironment=PATH=$CONTAINERD2:/usr/sbin:/usr/bin:/sbin:/bin|" \
        /opt/containerd2/usr/lib/systemd/system/containerd.service
}

start_containerd() {
    mkdir -p /etc/containerd
    if [ "$RUNTIME" = containerd2 ]; then
        containerd2_config > /etc/containerd/config2.toml
        cp /etc/containerd/config2.toml "$out/containerd.toml"
        containerd2_unit > /run/systemd/system/containerd2.service
        cp /run/systemd/system/containerd2.service "$out/containerd2.service"
        systemctl daemon-reload
        log "starting containerd 2 (containerd2.service)"
        systemctl start containerd2.service
    else
        containerd_config > /etc/containerd/config.toml
        cp /etc/containerd/config.toml "$out/containerd.toml"
        log "starting containerd"
        systemctl start containerd.service
    fi
}

phase_runtime() {
    start_containerd
    wait_for "containerd socket" 60 "$CTR" version
    if [ "$NRI" = 1 ]; then
        wait_for "NRI socket /var/run/nri/nri.sock" 30 test -S /var/run/nri/nri.sock
    fi
    log "forwarding the CRI socket to TCP port $CRI_PORT"
    systemd-run --unit=hwaffinity-cri-forward --collect \
        --description="hwaffinity test VM: CRI socket on TCP $CRI_PORT" \
        socat "TCP-LISTEN:$CRI_PORT,fork,reuseaddr" UNIX-CONNECT:/run/containerd/containerd.sock
    for image in $IMAGES; do
        log "importing $image"
        "$CTR" -n k8s.io images import "$ctl/$image"
    done
    "$CTR" -n k8s.io images list -q > "$out/images.txt"
    "$CTR" version | sed -n 's/^ *Version: *//p' | tail -n 1 > "$out/containerd.version"
    log "runtime ready"
}

case "${1:-}" in
    boot)
        phase_boot
        ;;
    runtime)
        rc=0
        rm -f "$out/runtime.rc"
        # a new shell, so that set -e holds inside (it would not in a "|| rc=" list)
        sh "$0" runtime-steps > "$out/runtime.log" 2>&1 || rc=$?
        echo "$rc" > "$out/runtime.rc"
        exit "$rc"
        ;;
    runtime-steps)
        phase_runtime
        ;;
    switch)
        [ -n "${2:-}" ] || { echo "usage: setup.sh switch containerd|containerd2" >&2; exit 2; }
        systemctl stop hwaffinity-cri-forward.service containerd.service \
            containerd2.service 2> /dev/null || true
        rm -f /var/run/nri/nri.sock
        RUNTIME_SWITCH=$2 sh "$0" runtime
        ;;
    *)
        echo "usage: setup.sh boot|runtime|switch RUNTIME" >&2
        exit 2
        ;;
esac
