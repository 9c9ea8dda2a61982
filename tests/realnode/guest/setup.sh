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
#
# setup.env (shell assignments written by the harness):
#   CONTAINERD=1|0  NRI=1|0  CRI_PORT  SANDBOX_IMAGE
#   NRI_REQUEST_TIMEOUT  NRI_REGISTRATION_TIMEOUT  IMAGES (file names in ctl/)
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
if [ -f "$ctl/setup.env" ]; then
    # shellcheck disable=SC1091  # written by the harness at each boot
    . "$ctl/setup.env"
fi

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

phase_runtime() {
    mkdir -p /etc/containerd
    containerd_config > /etc/containerd/config.toml
    cp /etc/containerd/config.toml "$out/containerd.toml"
    log "starting containerd"
    systemctl start containerd.service
    wait_for "containerd socket" 60 ctr version
    if [ "$NRI" = 1 ]; then
        wait_for "NRI socket /var/run/nri/nri.sock" 30 test -S /var/run/nri/nri.sock
    fi
    log "forwarding the CRI socket to TCP port $CRI_PORT"
    systemd-run --unit=hwaffinity-cri-forward --collect \
        --description="hwaffinity test VM: CRI socket on TCP $CRI_PORT" \
        socat "TCP-LISTEN:$CRI_PORT,fork,reuseaddr" UNIX-CONNECT:/run/containerd/containerd.sock
    for image in $IMAGES; do
        log "importing $image"
        ctr -n k8s.io images import "$ctl/$image"
    done
    ctr -n k8s.io images list -q > "$out/images.txt"
    containerd --version > "$out/containerd.version"
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
    *)
        echo "usage: setup.sh boot|runtime" >&2
        exit 2
        ;;
esac
