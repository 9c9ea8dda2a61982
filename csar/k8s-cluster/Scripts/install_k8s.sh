#!/usr/bin/env bash
# install_k8s.sh - install a Kubernetes node with kubeadm on an Ubuntu LTS
# cloud image (22.04, 24.04, 26.04; amd64 or arm64; IPv4).
#
# Scripts/install_k8s.sh of the tacker-hwaffinity Kubernetes cluster package.
# The MgmtDriver runs it over SSH, as root, when the operator asks for an
# installation; node labelling never depends on it. The interface below is
# documented in doc/packages.md of tacker-hwaffinity.
#
#   install_k8s.sh --role init --node-ip IP --control-plane-endpoint HOST[:PORT] [OPTIONS]
#   install_k8s.sh --role join-control-plane --node-ip IP --join-file FILE [OPTIONS]
#   install_k8s.sh --role join-worker --node-ip IP --join-file FILE [OPTIONS]
#   install_k8s.sh --role refresh-join [OPTIONS]
#
# Roles:
#   init                 first control-plane node: kubeadm init, CNI (flannel),
#                        then the join information (as refresh-join)
#   join-control-plane   another control-plane node (kubeadm join --control-plane)
#   join-worker          a worker (kubeadm join), registered with the taint
#                        hwaffinity.io/host-unknown:NoSchedule, which the
#                        MgmtDriver lifts once the node's compute-host label
#                        is Nova's (no pod lands on it before its host is known)
#   refresh-join         on a control-plane node: a new bootstrap token and
#                        certificate key, written to the join file
#
# Options:
#   --node-ip IP                   address of this node's Kubernetes network
#                                  (kubelet --node-ip; the InternalIP the
#                                  MgmtDriver matches the VM with)
#   --node-name NAME               default: <short hostname>-<node IP, dashed>
#   --control-plane-endpoint H[:P] init only: address of the API server(s);
#                                  with several masters a VIP or load balancer
#                                  (port default 6443)
#   --join-file FILE               join roles: file written by init/refresh-join
#                                  on a control-plane node (mode 0600 or
#                                  stricter); deleted after a successful join
#   --join-file-out FILE           init/refresh-join: where to write it
#                                  (default <state directory>/join.env)
#   --kubernetes-minor X.Y         pkgs.k8s.io repository (default 1.35)
#   --pod-cidr CIDR                default 10.244.0.0/16
#   --service-cidr CIDR            default 10.96.0.0/12
#   --flannel-version vX.Y.Z       default v0.26.1
#   --token-ttl DURATION           bootstrap token lifetime (default 2h)
#   --vip ADDRESS                  control-plane roles: hold this VIP with
#                                  keepalived (VRRP) while the local API
#                                  server is healthy
#   --vip-router-id N              VRRP router id, 1-255 (default 51)
#   --dry-run                      check the arguments and the join file, print
#                                  the steps, change nothing
#   -h, --help
#
# Output: progress lines "[install_k8s] ..." on stdout; command output goes to
# /var/log/hwaffinity-k8s/install.log (mode 0600). Machine-readable lines:
#   HWAFFINITY_JOIN {json}    stdout, init and refresh-join: the endpoint, the
#                             CA certificate hash and the join file's path
#                             (never the token or the certificate key)
#   HWAFFINITY_RESULT {json}  stdout, last line of every successful run
#   HWAFFINITY_ERROR {json}   stderr, when a step fails (followed by the end of
#                             the log, with tokens and keys redacted)
# Exit status: 0 done (also when there was nothing to do), 1 a step failed,
# 2 bad arguments or join file (nothing was changed).
#
# Idempotent: every step checks what is there first; an initialised or joined
# node is not initialised or joined again; what a failed kubeadm init/join of
# this script left behind is reset before the next attempt. State directory:
# $HWAFFINITY_K8S_STATE_DIR, default /var/lib/hwaffinity-k8s (mode 0700). Secrets never appear on a command
# line, in stdout/stderr or in a file readable by others.
set -Eeuo pipefail
umask 077

readonly PROG="install_k8s"
readonly STATE_DIR="${HWAFFINITY_K8S_STATE_DIR:-/var/lib/hwaffinity-k8s}"
readonly LOG_DIR="/var/log/hwaffinity-k8s"
readonly LOG="${LOG_DIR}/install.log"
readonly KEYRING="/etc/apt/keyrings/kubernetes-apt-keyring.gpg"
readonly APT_SOURCE="/etc/apt/sources.list.d/kubernetes.list"
readonly CRI_SOCKET="unix:///var/run/containerd/containerd.sock"
# tacker_hwaffinity.constants.HOST_UNKNOWN_TAINT (a test keeps the two equal)
readonly HOST_UNKNOWN_TAINT="hwaffinity.io/host-unknown"
readonly APT_OPTS=(-y -q -o DPkg::Lock::Timeout=600)
# what this script made of the node: the role whose kubeadm step succeeded,
# and the role whose kubeadm step was started (a failed run leaves the latter)
readonly DONE_MARKER="${STATE_DIR}/node-role"
readonly ATTEMPT_MARKER="${STATE_DIR}/node-role.attempt"

role=""
node_ip=""
node_name=""
endpoint=""
join_file=""
join_file_out="${STATE_DIR}/join.env"
kube_minor="1.35"
pod_cidr="10.244.0.0/16"
service_cidr="10.96.0.0/12"
flannel_version="v0.26.1"
token_ttl="2h"
vip=""
vip_router_id="51"
dry_run=0

current_step="arguments"
changed=false
# secrets read from a join file or generated here; never printed
join_endpoint=""
join_token=""
join_ca_hash=""
join_cert_key=""

log() { printf '[%s] %s\n' "${PROG}" "$*"; }

usage() { sed -n '2,/^set -Eeuo/{/^#/s/^# \{0,1\}//p}' "$0"; }

die_usage() {
    printf '%s: error: %s\n' "${PROG}" "$*" >&2
    printf '%s: see %s --help\n' "${PROG}" "$0" >&2
    exit 2
}

json_escape() {
    local s=$1
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    printf '%s' "${s}"
}

# HWAFFINITY_JOIN ENDPOINT CA_HASH JOIN_FILE TOKEN_TTL VERSION (no secret among them)
emit_join_line() {
    printf 'HWAFFINITY_JOIN {"control_plane_endpoint":"%s","ca_cert_hash":"%s","join_file":"%s","token_ttl":"%s","kubernetes_version":"%s"}\n' \
        "$(json_escape "$1")" "$(json_escape "$2")" "$(json_escape "$3")" "$(json_escape "$4")" "$(json_escape "$5")"
}

# HWAFFINITY_RESULT ROLE NODE_NAME NODE_IP CHANGED(true|false) VERSION
emit_result_line() {
    printf 'HWAFFINITY_RESULT {"role":"%s","node_name":"%s","node_ip":"%s","changed":%s,"kubernetes_version":"%s"}\n' \
        "$(json_escape "$1")" "$(json_escape "$2")" "$(json_escape "$3")" "$4" "$(json_escape "$5")"
}

redact() {
    sed -E -e 's/[a-z0-9]{6}\.[a-z0-9]{16}/<redacted-token>/g' \
        -e 's/[0-9a-fA-F]{64}/<redacted-hex>/g'
}

on_error() {
    local rc=$?
    trap - ERR
    # a failing command substitution or pipeline element: its parent reports
    if [ "${BASH_SUBSHELL}" -gt 0 ]; then exit "${rc}"; fi
    printf 'HWAFFINITY_ERROR {"step":"%s","exit_code":%d,"log":"%s"}\n' \
        "$(json_escape "${current_step}")" "${rc}" "${LOG}" >&2
    if [ -r "${LOG}" ]; then
        printf -- '--- last lines of %s ---\n' "${LOG}" >&2
        tail -n 25 "${LOG}" | redact >&2 || true
    fi
    exit 1
}

step() {
    current_step=$1
    log "step ${current_step}"
    if [ -d "${LOG_DIR}" ]; then
        printf '\n=== %s %s ===\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${current_step}" >>"${LOG}"
    fi
}

# run CMD...: command output to the log only (kubeadm prints tokens)
run() { "$@" >>"${LOG}" 2>&1; }

# ---------------------------------------------------------------- arguments

is_ipv4() {
    local ip=$1 part
    local -a parts
    [[ ${ip} =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] || return 1
    IFS=. read -r -a parts <<<"${ip}"
    for part in "${parts[@]}"; do
        [ "$((10#${part}))" -le 255 ] || return 1
    done
}

is_cidr() {
    local addr=${1%/*} bits=${1##*/}
    [[ $1 == */* && ${bits} =~ ^[0-9]{1,2}$ ]] || return 1
    is_ipv4 "${addr}" && [ "${bits}" -le 32 ]
}

is_hostname() {
    [[ $1 =~ ^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*$ ]]
}

# HOST[:PORT] -> "HOST:PORT" (port default 6443); HOST: IPv4 or DNS name
normalise_endpoint() {
    local host port
    [[ $1 =~ ^([^:]+)(:([0-9]{1,5}))?$ ]] || return 1
    host=${BASH_REMATCH[1]}
    port=${BASH_REMATCH[3]:-6443}
    is_ipv4 "${host}" || is_hostname "${host}" || return 1
    if [ "$((10#${port}))" -lt 1 ] || [ "$((10#${port}))" -gt 65535 ]; then return 1; fi
    printf '%s:%d' "${host}" "$((10#${port}))"
}

need_value() {
    if [ "$#" -lt 2 ] || [ -z "$2" ] || [[ $2 == --* ]]; then die_usage "option $1 needs a value"; fi
}

parse_args() {
    while [ "$#" -gt 0 ]; do
        case "$1" in
            --role) need_value "$@"; role=$2; shift 2 ;;
            --node-ip) need_value "$@"; node_ip=$2; shift 2 ;;
            --node-name) need_value "$@"; node_name=$2; shift 2 ;;
            --control-plane-endpoint) need_value "$@"; endpoint=$2; shift 2 ;;
            --join-file) need_value "$@"; join_file=$2; shift 2 ;;
            --join-file-out) need_value "$@"; join_file_out=$2; shift 2 ;;
            --kubernetes-minor) need_value "$@"; kube_minor=$2; shift 2 ;;
            --pod-cidr) need_value "$@"; pod_cidr=$2; shift 2 ;;
            --service-cidr) need_value "$@"; service_cidr=$2; shift 2 ;;
            --flannel-version) need_value "$@"; flannel_version=$2; shift 2 ;;
            --token-ttl) need_value "$@"; token_ttl=$2; shift 2 ;;
            --vip) need_value "$@"; vip=$2; shift 2 ;;
            --vip-router-id) need_value "$@"; vip_router_id=$2; shift 2 ;;
            --dry-run) dry_run=1; shift ;;
            -h|--help) usage; exit 0 ;;
            --token|--ca-cert-hash|--certificate-key|--discovery-token-ca-cert-hash)
                die_usage "$1: secrets are never taken on the command line; give a --join-file (mode 0600)" ;;
            *) die_usage "unknown argument: $1" ;;
        esac
    done
}

check_args() {
    case "${role}" in
        init|join-control-plane|join-worker|refresh-join) ;;
        "") die_usage "--role is required (init, join-control-plane, join-worker, refresh-join)" ;;
        *) die_usage "--role ${role}: expected init, join-control-plane, join-worker or refresh-join" ;;
    esac
    if [ "${role}" != refresh-join ]; then
        [ -n "${node_ip}" ] || die_usage "--node-ip is required for --role ${role}"
        is_ipv4 "${node_ip}" || die_usage "--node-ip ${node_ip}: not an IPv4 address"
    elif [ -n "${node_ip}" ]; then
        is_ipv4 "${node_ip}" || die_usage "--node-ip ${node_ip}: not an IPv4 address"
    fi
    [[ ${kube_minor} =~ ^1\.[0-9]{2}$ ]] || die_usage "--kubernetes-minor ${kube_minor}: expected 1.NN, e.g. 1.35"
    [ "${kube_minor#1.}" -ge 31 ] || die_usage "--kubernetes-minor ${kube_minor}: 1.31 or later (kubeadm v1beta4 configuration)"
    is_cidr "${pod_cidr}" || die_usage "--pod-cidr ${pod_cidr}: not an IPv4 CIDR"
    is_cidr "${service_cidr}" || die_usage "--service-cidr ${service_cidr}: not an IPv4 CIDR"
    [[ ${flannel_version} =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || die_usage "--flannel-version ${flannel_version}: expected vX.Y.Z"
    [[ ${token_ttl} =~ ^[0-9]+[hm]$ ]] || die_usage "--token-ttl ${token_ttl}: expected e.g. 2h or 90m"
    if ! [[ ${vip_router_id} =~ ^[0-9]{1,3}$ ]] || [ "$((10#${vip_router_id}))" -lt 1 ] ||
        [ "$((10#${vip_router_id}))" -gt 255 ]; then
        die_usage "--vip-router-id ${vip_router_id}: expected 1-255"
    fi
    if [ -n "${vip}" ]; then
        is_ipv4 "${vip}" || die_usage "--vip ${vip}: not an IPv4 address"
        [ "${role}" != join-worker ] || die_usage "--vip is for control-plane roles only"
    fi
    if [ "${role}" = init ]; then
        [ -n "${endpoint}" ] || die_usage "--control-plane-endpoint is required for --role init"
        endpoint=$(normalise_endpoint "${endpoint}") ||
            die_usage "--control-plane-endpoint: expected HOST[:PORT] (DNS name or IPv4)"
    elif [ -n "${endpoint}" ]; then
        die_usage "--control-plane-endpoint is for --role init; joins read it from the join file"
    fi
    if [ -n "${node_name}" ]; then
        [[ ${node_name} =~ ^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$ ]] ||
            die_usage "--node-name ${node_name}: expected a lower-case DNS label"
    elif [ "${role}" != refresh-join ]; then
        local short
        short=$(hostname -s 2>/dev/null || hostname)
        short=$(printf '%s' "${short,,}" | tr -c 'a-z0-9-' '-' | sed -E 's/^-+//; s/-+$//')
        node_name="${short:-node}-${node_ip//./-}"
        node_name=${node_name:0:63}
        node_name=${node_name%-}
    fi
    case "${join_file_out}" in
        /*) ;;
        *) die_usage "--join-file-out ${join_file_out}: expected an absolute path" ;;
    esac
}

# Parse KEY=VALUE lines without executing anything; check every value's form.
read_join_file() {
    local file=$1 mode key value line_no=0
    if [ ! -f "${file}" ] || [ -L "${file}" ]; then die_usage "--join-file ${file}: not a regular file"; fi
    mode=$(stat -c '%a' "${file}")
    [ "$((8#${mode} & 8#077))" -eq 0 ] ||
        die_usage "--join-file ${file}: mode ${mode} lets others read a secret; expected 0600 or stricter"
    while IFS= read -r line || [ -n "${line}" ]; do
        line_no=$((line_no + 1))
        [[ -z ${line} || ${line} == \#* ]] && continue
        [[ ${line} == *=* ]] || die_usage "--join-file ${file}: line ${line_no} is not KEY=VALUE"
        key=${line%%=*}
        value=${line#*=}
        case "${key}" in
            control_plane_endpoint)
                join_endpoint=$(normalise_endpoint "${value}") ||
                    die_usage "--join-file ${file}: line ${line_no}: control_plane_endpoint is not HOST[:PORT]" ;;
            token)
                [[ ${value} =~ ^[a-z0-9]{6}\.[a-z0-9]{16}$ ]] ||
                    die_usage "--join-file ${file}: line ${line_no}: token is not a kubeadm bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})"
                join_token=${value} ;;
            ca_cert_hash)
                [[ ${value} =~ ^sha256:[0-9a-f]{64}$ ]] ||
                    die_usage "--join-file ${file}: line ${line_no}: ca_cert_hash is not sha256:<64 hex digits>"
                join_ca_hash=${value} ;;
            certificate_key)
                [[ ${value} =~ ^[0-9a-f]{64}$ ]] ||
                    die_usage "--join-file ${file}: line ${line_no}: certificate_key is not 64 hex digits"
                join_cert_key=${value} ;;
            *) die_usage "--join-file ${file}: line ${line_no}: unknown key ${key}" ;;
        esac
    done <"${file}"
    [ -n "${join_endpoint}" ] || die_usage "--join-file ${file}: control_plane_endpoint is missing"
    [ -n "${join_token}" ] || die_usage "--join-file ${file}: token is missing"
    [ -n "${join_ca_hash}" ] || die_usage "--join-file ${file}: ca_cert_hash is missing"
    if [ "${role}" = join-control-plane ] && [ -z "${join_cert_key}" ]; then
        die_usage "--join-file ${file}: certificate_key is missing (needed to join the control plane)"
    fi
}

done_role() { cat "${DONE_MARKER}" 2>/dev/null || true; }
attempted_role() { cat "${ATTEMPT_MARKER}" 2>/dev/null || true; }

# kubeadm files on the node, from any tool
has_kubeadm_state() {
    [ -e /etc/kubernetes/kubelet.conf ] || [ -e /etc/kubernetes/admin.conf ] ||
        compgen -G '/etc/kubernetes/manifests/*.yaml' >/dev/null || [ -d /var/lib/etcd/member ]
}

check_state() {
    local finished
    finished=$(done_role)
    if [ "${role}" != refresh-join ] && [ -n "${finished}" ] && [ "${finished}" != "${role}" ]; then
        die_usage "this node was set up with --role ${finished}; it cannot become ${role}"
    fi
    if [ "${role}" != refresh-join ] && [ -z "${finished}" ] && [ -z "$(attempted_role)" ] &&
        has_kubeadm_state; then
        die_usage "this node has a Kubernetes configuration this script did not make; run kubeadm reset -f first"
    fi
    case "${role}" in
        join-worker|join-control-plane)
            # a dry run may go without it: the driver's preflight runs before init wrote it
            if [ "${finished}" != "${role}" ] && [ -z "${join_file}" ] && [ "${dry_run}" -eq 0 ]; then
                die_usage "--join-file is required for --role ${role}"
            fi
            if [ -n "${join_file}" ]; then read_join_file "${join_file}"; fi ;;
        refresh-join)
            case "${finished}" in
                init|join-control-plane) ;;
                *) [ "${dry_run}" -eq 1 ] ||
                    die_usage "--role refresh-join runs on a control-plane node this script set up" ;;
            esac ;;
        init)
            if [ -n "${join_file}" ]; then die_usage "--join-file is for join roles"; fi ;;
    esac
}

# A run that failed half-way through kubeadm init/join left files behind that
# make the next attempt fail: reset them (only what this script started).
# (Explicit status checks: callers use it in "||", where errexit is off.)
reset_failed_attempt() {
    if [ -n "$(attempted_role)" ] && has_kubeadm_state; then
        log "an earlier $(attempted_role) did not finish: kubeadm reset -f"
        if ! run kubeadm reset -f --cri-socket "${CRI_SOCKET}"; then return 1; fi
        changed=true
    fi
}

# kubeadm init/join: marked as attempted before, as done after
run_kubeadm() {
    if ! reset_failed_attempt; then return 1; fi
    printf '%s\n' "${role}" >"${ATTEMPT_MARKER}" || return 1
    if ! run kubeadm "$@"; then return 1; fi
    printf '%s\n' "${role}" >"${DONE_MARKER}" || return 1
    rm -f "${ATTEMPT_MARKER}"
    changed=true
}

print_plan() {
    log "dry run: role ${role}, node ${node_name:-"(this node)"} ${node_ip:+(${node_ip})}, Kubernetes ${kube_minor}"
    if [ "$(done_role)" = "${role}" ]; then
        log "already set up as ${role} (${DONE_MARKER}): would check the packages and configuration only"
    fi
    case "${role}" in
        init) log "would: prepare the node, kubeadm init (endpoint ${endpoint}, pods ${pod_cidr}, services ${service_cidr}), flannel ${flannel_version}, write ${join_file_out}" ;;
        join-*) if [ -n "${join_token}" ]; then
                    log "would: prepare the node, kubeadm join ${join_endpoint} with token <redacted>${join_cert_key:+ and certificate key <redacted>}"
                elif [ "$(done_role)" != "${role}" ]; then
                    log "would: prepare the node, kubeadm join with the --join-file a real run needs (none was given to this dry run)"
                fi ;;
        refresh-join) log "would: create a bootstrap token (ttl ${token_ttl}) and certificate key, write ${join_file_out}" ;;
    esac
    if [ -n "${vip}" ]; then log "would: hold VIP ${vip} with keepalived (router id ${vip_router_id})"; fi
}

# ----------------------------------------------------------------- the node

check_host() {
    [ "$(id -u)" -eq 0 ] || die_usage "run as root (sudo)"
    [ -r /etc/os-release ] || die_usage "/etc/os-release is missing; Ubuntu LTS expected"
    local id version
    # shellcheck source=/dev/null
    id=$(. /etc/os-release && printf '%s' "${ID:-}")
    # shellcheck source=/dev/null
    version=$(. /etc/os-release && printf '%s' "${VERSION_ID:-}")
    [ "${id}" = ubuntu ] || die_usage "this is ${id:-an unknown OS}; Ubuntu LTS (22.04, 24.04, 26.04) expected"
    case "${version}" in
        22.04|24.04|26.04) ;;
        *) die_usage "Ubuntu ${version} is not a supported LTS release (22.04, 24.04, 26.04)" ;;
    esac
    case "$(dpkg --print-architecture)" in
        amd64|arm64) ;;
        *) die_usage "architecture $(dpkg --print-architecture) is not supported (amd64, arm64)" ;;
    esac
    if [ -n "${node_ip}" ] && ! ip -o -4 addr show | awk '{split($4, a, "/"); print a[1]}' | grep -qxF "${node_ip}"; then
        die_usage "--node-ip ${node_ip}: no interface of this node has that address"
    fi
    mkdir -p "${STATE_DIR}" "${LOG_DIR}"
    chmod 0700 "${STATE_DIR}" "${LOG_DIR}"
    touch "${LOG}"
    chmod 0600 "${LOG}"
}

wait_cloud_init() {
    step wait-cloud-init
    if command -v cloud-init >/dev/null 2>&1; then
        # cloud-init may still be running apt; its own errors are not ours
        if ! run cloud-init status --wait; then
            log "cloud-init reported errors (see ${LOG}); continuing"
        fi
    fi
}

prepare_kernel() {
    step kernel
    run swapoff -a
    if grep -Eq '^[^#].*[[:space:]]swap[[:space:]]' /etc/fstab; then
        sed -i -E 's/^([^#].*[[:space:]]swap[[:space:]].*)$/# disabled by install_k8s: \1/' /etc/fstab
        changed=true
    fi
    printf 'overlay\nbr_netfilter\n' >/etc/modules-load.d/hwaffinity-k8s.conf
    chmod 0644 /etc/modules-load.d/hwaffinity-k8s.conf
    run modprobe overlay
    run modprobe br_netfilter
    cat >/etc/sysctl.d/99-hwaffinity-k8s.conf <<'EOF'
net.bridge.bridge-nf-call-iptables = 1
net.bridge.bridge-nf-call-ip6tables = 1
net.ipv4.ip_forward = 1
net.ipv6.conf.all.forwarding = 1
EOF
    chmod 0644 /etc/sysctl.d/99-hwaffinity-k8s.conf
    run sysctl --system
    [ "$(sysctl -n net.ipv4.ip_forward)" = 1 ]
}

install_containerd() {
    step containerd
    export DEBIAN_FRONTEND=noninteractive
    if ! dpkg-query -W -f='${Status}' containerd 2>/dev/null | grep -q 'install ok installed'; then
        run apt-get update -q -o DPkg::Lock::Timeout=600
        run apt-get install "${APT_OPTS[@]}" --no-install-recommends containerd
        changed=true
    fi
    mkdir -p /etc/containerd
    if ! grep -Eq '^[[:space:]]*SystemdCgroup = true' /etc/containerd/config.toml 2>/dev/null; then
        containerd config default >/etc/containerd/config.toml.new 2>>"${LOG}"
        sed -i -E 's/^([[:space:]]*)SystemdCgroup = false/\1SystemdCgroup = true/' /etc/containerd/config.toml.new
        grep -Eq '^[[:space:]]*SystemdCgroup = true' /etc/containerd/config.toml.new
        chmod 0644 /etc/containerd/config.toml.new
        mv /etc/containerd/config.toml.new /etc/containerd/config.toml
        run systemctl restart containerd
        changed=true
    fi
    run systemctl enable --now containerd
    run systemctl is-active containerd
}

install_kubernetes_packages() {
    step kubernetes-packages
    export DEBIAN_FRONTEND=noninteractive
    local repo="https://pkgs.k8s.io/core:/stable:/v${kube_minor}/deb/"
    local line="deb [signed-by=${KEYRING}] ${repo} /"
    local installed
    installed=$(dpkg-query -W -f='${Version}' kubeadm 2>/dev/null || true)
    if [ -n "${installed}" ] && [[ ${installed} != "${kube_minor}".* ]]; then
        log "kubeadm ${installed} is installed, not ${kube_minor}: upgrade with kubeadm upgrade, not with this script"
        false
    fi
    if [ "$(cat "${APT_SOURCE}" 2>/dev/null || true)" != "${line}" ] || [ ! -s "${KEYRING}" ]; then
        run apt-get update -q -o DPkg::Lock::Timeout=600
        run apt-get install "${APT_OPTS[@]}" --no-install-recommends ca-certificates curl gpg
        install -d -m 0755 /etc/apt/keyrings
        curl -fsSL --retry 5 --retry-connrefused "${repo}Release.key" 2>>"${LOG}" |
            gpg --batch --yes --dearmor -o "${KEYRING}.new" 2>>"${LOG}"
        chmod 0644 "${KEYRING}.new"
        mv "${KEYRING}.new" "${KEYRING}"
        printf '%s\n' "${line}" >"${APT_SOURCE}"
        chmod 0644 "${APT_SOURCE}"
        changed=true
    fi
    if [ -z "${installed}" ] || ! command -v kubelet >/dev/null || ! command -v kubectl >/dev/null; then
        run apt-get update -q -o DPkg::Lock::Timeout=600
        run apt-get install "${APT_OPTS[@]}" kubelet kubeadm kubectl
        changed=true
    fi
    run apt-mark hold kubelet kubeadm kubectl
    [[ $(kubeadm version -o short) == v"${kube_minor}".* ]]
    run systemctl enable kubelet
}

kube_version() { kubeadm version -o short; }

# kubeadm configuration, v1beta4 (kubeadm 1.31 and later)
write_init_config() {
    local file=$1 token=$2 cert_key=$3
    {
        printf 'apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n'
        if [ -n "${token}" ]; then
            printf 'bootstrapTokens:\n- token: "%s"\n  ttl: "%s"\n' "${token}" "${token_ttl}"
            printf '  usages: [signing, authentication]\n  groups: [system:bootstrappers:kubeadm:default-node-token]\n'
        fi
        printf 'certificateKey: "%s"\n' "${cert_key}"
        if [ -n "${node_ip}" ]; then
            printf 'localAPIEndpoint:\n  advertiseAddress: "%s"\n  bindPort: 6443\n' "${node_ip}"
            printf 'nodeRegistration:\n  name: "%s"\n  criSocket: "%s"\n' "${node_name}" "${CRI_SOCKET}"
            printf '  kubeletExtraArgs:\n  - name: node-ip\n    value: "%s"\n' "${node_ip}"
        fi
        printf -- '---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n'
        printf 'kubernetesVersion: "%s"\ncontrolPlaneEndpoint: "%s"\n' "$(kube_version)" "${endpoint}"
        printf 'networking:\n  podSubnet: "%s"\n  serviceSubnet: "%s"\n' "${pod_cidr}" "${service_cidr}"
        printf -- '---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n'
    } >"${file}"
}

write_join_config() {
    local file=$1
    {
        printf 'apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n'
        printf 'discovery:\n  bootstrapToken:\n    apiServerEndpoint: "%s"\n    token: "%s"\n' "${join_endpoint}" "${join_token}"
        printf '    caCertHashes: ["%s"]\n' "${join_ca_hash}"
        printf 'nodeRegistration:\n  name: "%s"\n  criSocket: "%s"\n' "${node_name}" "${CRI_SOCKET}"
        printf '  kubeletExtraArgs:\n  - name: node-ip\n    value: "%s"\n' "${node_ip}"
        if [ "${role}" = join-worker ]; then
            # kubeadm join passes it as the kubelet's --register-with-taints: the Node
            # is created tainted, so nothing is bound to it before the MgmtDriver lifts it
            printf '  taints:\n  - key: "%s"\n    effect: NoSchedule\n' "${HOST_UNKNOWN_TAINT}"
        fi
        if [ "${role}" = join-control-plane ]; then
            printf 'controlPlane:\n  certificateKey: "%s"\n' "${join_cert_key}"
            printf '  localAPIEndpoint:\n    advertiseAddress: "%s"\n    bindPort: 6443\n' "${node_ip}"
        fi
    } >"${file}"
}

setup_kubeconfig() {
    step kubeconfig
    install -d -m 0700 /root/.kube
    install -m 0600 /etc/kubernetes/admin.conf /root/.kube/config
    if [ -n "${SUDO_USER:-}" ] && [ "${SUDO_USER}" != root ] && id "${SUDO_USER}" >/dev/null 2>&1; then
        local home
        home=$(getent passwd "${SUDO_USER}" | cut -d: -f6)
        install -d -m 0700 -o "${SUDO_USER}" "${home}/.kube"
        install -m 0600 -o "${SUDO_USER}" /etc/kubernetes/admin.conf "${home}/.kube/config"
    fi
}

kctl() { kubectl --kubeconfig /etc/kubernetes/admin.conf "$@"; }

setup_vip() {
    [ -n "${vip}" ] || return 0
    step keepalived
    local iface priority conf=/etc/keepalived/keepalived.conf
    iface=$(ip -o -4 addr show | awk -v ip="${node_ip}" '{split($4, a, "/"); if (a[1] == ip) {print $2; exit}}')
    [ -n "${iface}" ] || { log "no interface holds ${node_ip}"; false; }
    priority=100
    if [ "${role}" = init ]; then priority=110; fi
    if ! dpkg-query -W -f='${Status}' keepalived 2>/dev/null | grep -q 'install ok installed'; then
        run apt-get update -q -o DPkg::Lock::Timeout=600
        run apt-get install "${APT_OPTS[@]}" --no-install-recommends keepalived
        changed=true
    fi
    install -d -m 0755 /etc/keepalived
    cat >"${conf}.new" <<EOF
# written by install_k8s.sh: the control-plane VIP follows a healthy API server
global_defs {
    enable_script_security
    script_user root
}
vrrp_script hwaffinity_apiserver {
    script "/usr/bin/curl -fsk --max-time 3 -o /dev/null https://127.0.0.1:6443/livez"
    interval 3
    fall 3
    rise 2
    weight -20
}
vrrp_instance hwaffinity_k8s {
    state BACKUP
    interface ${iface}
    virtual_router_id ${vip_router_id}
    priority ${priority}
    advert_int 1
    virtual_ipaddress {
        ${vip}/32 dev ${iface}
    }
    track_script {
        hwaffinity_apiserver
    }
}
EOF
    chmod 0644 "${conf}.new"
    if ! cmp -s "${conf}.new" "${conf}"; then
        mv "${conf}.new" "${conf}"
        run systemctl enable keepalived
        run systemctl restart keepalived
        changed=true
    else
        rm -f "${conf}.new"
        run systemctl enable --now keepalived
    fi
    if [ "${role}" = init ]; then
        step wait-vip
        local tries=30
        while [ "${tries}" -gt 0 ]; do
            if ip -o -4 addr show | grep -qF " ${vip}/"; then return 0; fi
            tries=$((tries - 1))
            sleep 2
        done
        log "keepalived did not take ${vip} within 60 s (VRRP, protocol 112, must pass the security group)"
        false
    fi
}

ca_cert_hash() {
    printf 'sha256:%s' "$(openssl x509 -pubkey -noout -in /etc/kubernetes/pki/ca.crt |
        openssl pkey -pubin -outform der 2>>"${LOG}" | sha256sum | cut -d' ' -f1)"
}

saved_endpoint() { cat "${STATE_DIR}/control_plane_endpoint"; }

refresh_join() {
    step refresh-join
    local token cert_key cfg tmp ep hash
    ep=$(saved_endpoint)
    token=$(kubeadm token create --ttl "${token_ttl}" --kubeconfig /etc/kubernetes/admin.conf 2>>"${LOG}")
    [[ ${token} =~ ^[a-z0-9]{6}\.[a-z0-9]{16}$ ]]
    cert_key=$(kubeadm certs certificate-key 2>>"${LOG}")
    [[ ${cert_key} =~ ^[0-9a-f]{64}$ ]]
    cfg=$(mktemp "${STATE_DIR}/upload-certs.XXXXXX.yaml")
    endpoint=${ep}
    local saved_ip=${node_ip}
    node_ip=""
    write_init_config "${cfg}" "" "${cert_key}"
    node_ip=${saved_ip}
    if ! run kubeadm init phase upload-certs --upload-certs --config "${cfg}"; then
        rm -f "${cfg}"
        false
    fi
    rm -f "${cfg}"
    hash=$(ca_cert_hash)
    [[ ${hash} =~ ^sha256:[0-9a-f]{64}$ ]]
    install -d -m 0700 "$(dirname "${join_file_out}")"
    tmp=$(mktemp "${join_file_out}.XXXXXX")
    printf 'control_plane_endpoint=%s\ntoken=%s\nca_cert_hash=%s\ncertificate_key=%s\n' \
        "${ep}" "${token}" "${hash}" "${cert_key}" >"${tmp}"
    chmod 0600 "${tmp}"
    mv "${tmp}" "${join_file_out}"
    emit_join_line "${ep}" "${hash}" "${join_file_out}" "${token_ttl}" "$(kube_version)"
}

do_init() {
    if [ "$(done_role)" = init ]; then
        log "control plane already initialised by this script (${DONE_MARKER})"
        if [ "$(saved_endpoint 2>/dev/null || true)" != "${endpoint}" ]; then
            log "it was initialised with endpoint $(saved_endpoint 2>/dev/null || echo '?'), not ${endpoint}"
            current_step=init
            false
        fi
        setup_vip
    else
        setup_vip
        step kubeadm-init
        local token cert_key cfg
        token=$(kubeadm token generate 2>>"${LOG}")
        cert_key=$(kubeadm certs certificate-key 2>>"${LOG}")
        cfg="${STATE_DIR}/kubeadm-init.yaml"
        write_init_config "${cfg}" "${token}" "${cert_key}"
        printf '%s\n' "${endpoint}" >"${STATE_DIR}/control_plane_endpoint"
        local rc=0
        run_kubeadm init --config "${cfg}" --upload-certs || rc=$?
        rm -f "${cfg}"
        [ "${rc}" -eq 0 ]
    fi
    setup_kubeconfig
    step cni
    local manifest="${STATE_DIR}/kube-flannel-${flannel_version}.yml"
    if [ ! -s "${manifest}" ]; then
        curl -fsSL --retry 5 --retry-connrefused -o "${manifest}.new" \
            "https://github.com/flannel-io/flannel/releases/download/${flannel_version}/kube-flannel.yml" 2>>"${LOG}"
        grep -q '"Network": "10.244.0.0/16"' "${manifest}.new"
        sed -i "s#\"Network\": \"10.244.0.0/16\"#\"Network\": \"${pod_cidr}\"#" "${manifest}.new"
        grep -qF "\"Network\": \"${pod_cidr}\"" "${manifest}.new"
        mv "${manifest}.new" "${manifest}"
    fi
    run kctl apply -f "${manifest}"
    step wait-node-ready
    run kctl wait --for=condition=Ready "node/${node_name}" --timeout=300s
    refresh_join
}

do_join() {
    if [ "$(done_role)" = "${role}" ]; then
        log "node already joined by this script (${DONE_MARKER})"
    else
        step kubeadm-join
        local cfg="${STATE_DIR}/kubeadm-join.yaml"
        write_join_config "${cfg}"
        local rc=0
        run_kubeadm join --config "${cfg}" || rc=$?
        rm -f "${cfg}"
        [ "${rc}" -eq 0 ]
        if [ "${role}" = join-control-plane ]; then
            # for a later refresh-join on this node
            printf '%s\n' "${join_endpoint}" >"${STATE_DIR}/control_plane_endpoint"
        fi
    fi
    if [ -n "${join_file}" ] && [ -f "${join_file}" ]; then
        rm -f "${join_file}"
        log "removed ${join_file} (it held a bootstrap token)"
    fi
    if [ "${role}" = join-control-plane ]; then
        setup_kubeconfig
        setup_vip
    fi
}

main() {
    parse_args "$@"
    check_args
    check_state
    if [ "${dry_run}" -eq 1 ]; then
        print_plan
        exit 0
    fi
    check_host
    trap on_error ERR
    log "role ${role}, node ${node_name:-"(this node)"}, Kubernetes ${kube_minor}, log ${LOG}"
    if [ "${role}" = refresh-join ]; then
        refresh_join
    else
        wait_cloud_init
        prepare_kernel
        install_containerd
        install_kubernetes_packages
        case "${role}" in
            init) do_init ;;
            join-*) do_join ;;
        esac
    fi
    current_step="finished"
    emit_result_line "${role}" "${node_name}" "${node_ip}" "${changed}" "$(kube_version)"
}

# Sourcing the script (tests) defines the functions and runs nothing.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
