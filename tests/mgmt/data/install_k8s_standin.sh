#!/usr/bin/env bash
# Stand-in for the package's Scripts/install_k8s.sh in the driver's installation
# tests: kubeadm cannot run here (no Ubuntu VM), so this keeps the script's
# documented contract (doc/packages.md) and does what the cluster would see:
#
# * --dry-run: runs the REAL script's --dry-run with this VM's state directory
#   (the preflight is the real one: arguments, recorded role, join-file rules);
# * init / refresh-join: write a join file (0600) and print HWAFFINITY_JOIN;
# * join-*: check the join file the driver uploaded (regular, 0600, the same
#   bytes init wrote), register the node with the real control plane
#   (InternalIP = --node-ip, as kubelet --node-ip does) and delete the file;
# * the role done is recorded where the real script records it; a rerun
#   changes nothing ("changed": false);
# * a file fail/<VM address> under the test root makes the kubeadm step fail
#   with the script's HWAFFINITY_ERROR line.
# The "VM" is the loopback address sshd was reached on (SSH_CONNECTION).
# The test substitutes the @...@ values.
set -euo pipefail
ROOT='@ROOT@'
REAL='@REAL@'
KUBECTL='@KUBECTL@'
KUBECONFIG_FILE='@KUBECONFIG@'

role="" node_ip="" join_file="" endpoint="" dry=0
args=("$@")
while [ $# -gt 0 ]; do
    case "$1" in
        --role) role=$2; shift 2 ;;
        --node-ip) node_ip=$2; shift 2 ;;
        --join-file) join_file=$2; shift 2 ;;
        --control-plane-endpoint) endpoint=$2; shift 2 ;;
        --dry-run) dry=1; shift ;;
        *) shift ;;
    esac
done
me=$(printf '%s' "${SSH_CONNECTION:-}" | cut -d' ' -f3)
state="${ROOT}/vm/${me}"
mkdir -p "${state}/real"
chmod 0700 "${state}/real"
printf '%s %s\n' "${me}" "${args[*]}" >>"${ROOT}/calls.log"

if [ "${dry}" -eq 1 ]; then
    HWAFFINITY_K8S_STATE_DIR="${state}/real" exec bash "${REAL}" "${args[@]}"
fi

if [ -e "${ROOT}/fail/${me}" ]; then
    echo "[install_k8s] kubeadm join failed"
    printf 'HWAFFINITY_ERROR {"step":"kubeadm-join","exit_code":1,"log":"/var/log/hwaffinity-k8s/install.log"}\n' >&2
    exit 1
fi

done_role=""
if [ -f "${state}/real/node-role" ]; then done_role=$(cat "${state}/real/node-role"); fi
changed=false
name="vm-${node_ip//./-}"

write_join() {
    local out="${state}/join.env" token
    token="abcdef.$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
    (umask 077; printf 'control_plane_endpoint=%s\ntoken=%s\nca_cert_hash=sha256:%s\ncertificate_key=%s\n' \
        "${endpoint:-$(cat "${ROOT}/endpoint")}" "${token}" "$(printf 'a%.0s' {1..64})" \
        "$(printf 'c%.0s' {1..64})" >"${out}")
    cp "${out}" "${ROOT}/join.expected"
    printf 'HWAFFINITY_JOIN {"control_plane_endpoint":"%s","ca_cert_hash":"sha256:...","join_file":"%s","token_ttl":"2h","kubernetes_version":"v1.35.0"}\n' \
        "${endpoint:-$(cat "${ROOT}/endpoint")}" "${out}"
}

register() {
    [ -z "${done_role}" ] || return 0
    "${KUBECTL}" --kubeconfig "${KUBECONFIG_FILE}" create -f - >/dev/null <<JSON
{"apiVersion": "v1", "kind": "Node",
 "metadata": {"name": "${name}", "labels": {"kubernetes.io/hostname": "${name}"}},
 "status": {"addresses": [{"type": "InternalIP", "address": "${node_ip}"},
                          {"type": "Hostname", "address": "${name}"}],
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
JSON
    printf '%s\n' "${role}" >"${state}/real/node-role"
    changed=true
}

case "${role}" in
    init)
        printf '%s\n' "${endpoint}" >"${ROOT}/endpoint"
        register
        write_join ;;
    refresh-join)
        write_join ;;
    join-worker|join-control-plane)
        if [ -z "${done_role}" ]; then
            if [ ! -f "${join_file}" ] || [ -L "${join_file}" ]; then echo "no join file" >&2; exit 2; fi
            [ "$(stat -c %a "${join_file}")" = 600 ] || { echo "join file mode" >&2; exit 2; }
            cmp -s "${join_file}" "${ROOT}/join.expected" || { echo "join file differs" >&2; exit 2; }
            printf '%s join-file-ok\n' "${me}" >>"${ROOT}/calls.log"
        fi
        register
        rm -f "${join_file}" ;;
esac
printf 'HWAFFINITY_RESULT {"role":"%s","node_name":"%s","node_ip":"%s","changed":%s,"kubernetes_version":"v1.35.0"}\n' \
    "${role}" "${name}" "${node_ip}" "${changed}"
