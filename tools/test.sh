#!/usr/bin/env bash
# Run the whole test suite: installs what the tests need, then runs pytest.
#
#   bash tools/test.sh                  # everything (unit, NUMA, real control plane)
#   bash tools/test.sh -m "not controlplane"   # without the control-plane tests
#   bash tools/test.sh tests/unit -k interpod  # any pytest arguments
#
# What it installs, all cached OUTSIDE the checkout under
# ${HWAFFINITY_CACHE:-$HOME/.cache/tacker-hwaffinity} and rebuilt when missing:
#   - a virtualenv with this package and its test extras (from PyPI);
#   - the Kubernetes control-plane binaries (tools/build-kube.sh, from Debian),
#     unless the run excludes the control-plane tests;
#   - the OpenStack (Nova, Placement, Heat) venv (tools/openstack-venv.sh, from
#     PyPI), unless the run excludes the openstack tests.
# Debian packages the tests run (sshd) come from tools/install-test-packages.sh; the
# real-node tests' containerd 1.7 (NRI) and runc from tools/install-node-runtime.sh; the
# cgroup v2 test VM's image (QEMU, trixie, systemd, containerd 1.7) from
# tools/build-vm-image.sh, unless the run excludes the vm tests.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${here}"
cache="${HWAFFINITY_CACHE:-${HOME}/.cache/tacker-hwaffinity}"
python="${PYTHON:-python3}"
key="$("${python}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')-$(sha256sum setup.cfg | cut -c1-12)"
venv="${cache}/venv-${key}"

log() { printf '[test] %s\n' "$*"; }

# Run a step that can be long and quiet the first time (a download, a compile), saying
# every 30 s that it still runs and for how long; its exit status is the step's.
step_pid=
trap '[ -n "${step_pid}" ] && kill "${step_pid}" 2>/dev/null' EXIT
with_progress() {
    local what="$1" started="${SECONDS}" rc=0
    shift
    "$@" &
    step_pid=$!
    while kill -0 "${step_pid}" 2>/dev/null; do
        sleep 1
        if (( (SECONDS - started) % 30 == 0 )) && kill -0 "${step_pid}" 2>/dev/null; then
            log "still ${what}: $(( (SECONDS - started) / 60 ))m$(( (SECONDS - started) % 60 ))s so far"
        fi
    done
    wait "${step_pid}" || rc=$?
    step_pid=
    return "${rc}"
}

if [ ! -x "${venv}/bin/python" ] || ! "${venv}/bin/python" -c 'import pytest, hypothesis, yaml, numpy' 2>/dev/null; then
    log "creating ${venv}"
    rm -rf "${venv}"
    mkdir -p "${cache}"
    "${python}" -m venv "${venv}"
    "${venv}/bin/python" -m pip install -q --upgrade pip
fi
log "installing tacker-hwaffinity (editable) with test extras (first run: a few minutes)"
with_progress "installing Python packages" "${venv}/bin/python" -m pip install -q -e ".[test]"

with_progress "installing Debian packages" bash tools/install-test-packages.sh
with_progress "installing containerd 1.7 with NRI (tests/realnode)" bash tools/install-node-runtime.sh

case " $* " in
    *"not vm"*) log "VM tests excluded: not building the test VM's image" ;;
    *) with_progress "building the cgroup v2 test VM's image (first run: about 2-4 minutes)" \
           bash tools/build-vm-image.sh ;;
esac
case " $* " in
    *"not controlplane"*) log "control-plane tests excluded: not building Kubernetes" ;;
    *) with_progress "building Kubernetes (first run: about 10 minutes)" bash tools/build-kube.sh ;;
esac
case " $* " in
    *"not realnode"*) log "real-node tests excluded: not building the image (deploy/Dockerfile)" ;;
    *) with_progress "building the image from deploy/Dockerfile (first run: about 3 minutes)" \
           bash tools/build-image.sh ;;
esac
case " $* " in
    *"not openstack"*) log "OpenStack tests excluded: not building the OpenStack venv" ;;
    *) with_progress "making the OpenStack venv (first run: a few minutes)" \
           bash tools/openstack-venv.sh ;;
esac

log "running pytest $*"
set +e
"${venv}/bin/python" -m pytest "$@"
rc=$?
set -e
if [ "${rc}" -eq 5 ]; then
    log "pytest collected no tests: failing"
    exit 1
fi
exit "${rc}"
