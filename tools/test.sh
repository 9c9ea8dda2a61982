#!/usr/bin/env bash
# Run the test suite: installs what the selected tests need, then runs pytest.
#
#   bash tools/test.sh                          # everything (unit, NUMA, real control plane)
#   bash tools/test.sh --fast                   # the two-minute loop: no root, no build
#   bash tools/test.sh --fast tests/numa        # ... on some tests only
#   bash tools/test.sh -m "not controlplane"    # without the control-plane tests
#   bash tools/test.sh tests/scheduling -k interpod   # any pytest arguments
#
# What is installed depends on the tests pytest selects with the given arguments (a
# collection pass reads their markers, registered in tox.ini): none for tests without
# a marker, and for the others
#
#   ssh           Debian's sshd (tools/install-test-packages.sh ssh)
#   openstack     the OpenStack (Nova, Placement, Heat) venv (tools/openstack-venv.sh,
#                 from PyPI) and RabbitMQ (tools/install-test-packages.sh broker)
#   tacker        RabbitMQ and MariaDB (tools/install-test-packages.sh broker db) and
#                 the kubernetes client Tacker's processes import
#                 (tools/tacker-kubernetes-client.sh, from PyPI)
#   browser       Debian's Chromium (tools/install-test-packages.sh browser)
#   controlplane  the Kubernetes binaries (tools/build-kube.sh, from Debian; kubectl
#                 from the trixie source tools/install-node-runtime.sh adds)
#   realnode      containerd 1.7 with NRI and runc (tools/install-node-runtime.sh) and
#                 the image from deploy/Dockerfile (tools/build-image.sh)
#   vm            the cgroup v2 test VM's image (QEMU, trixie, systemd, containerd 1.7;
#                 tools/build-vm-image.sh) and the node runtime's busybox and socat
#
# With no argument everything is installed (as CI does, through .ci/run), without the
# collection pass, and after the suite the fast loop runs again on Debian trixie's
# Python 3.13 (tools/test-python.sh, root). --fast selects the tests that carry none of tox.ini's markers, runs
# them on every core (pytest-xdist) with HYPOTHESIS_PROFILE=dev unless set, and installs
# nothing beyond the venv.
#
# Everything is cached OUTSIDE the checkout under
# ${HWAFFINITY_CACHE:-$HOME/.cache/tacker-hwaffinity} and rebuilt when missing; the
# first of all is a virtualenv with this package and its test extras (from PyPI), one per
# checkout, Python version and pyproject.toml (tools/test-venv.sh): two checkouts on one
# machine each have their own. Each run removes the venvs whose checkout is gone (unused
# for HWAFFINITY_VENV_KEEP_DAYS, default 7) and this checkout's superseded ones. Debian
# packages are installed waiting for a held dpkg or apt lock, up to 10 minutes
# (tools/apt-lock.sh).
# Installing Debian packages and building images needs root; a step that would, run
# by another user, stops the run and says which tests need it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${here}"
cache="${HWAFFINITY_CACHE:-${HOME}/.cache/tacker-hwaffinity}"
python="${PYTHON:-python3}"
# shellcheck source=tools/test-venv.sh
source tools/test-venv.sh
venv="$(test_venv_path "${cache}" "${python}" "${here}")"

log() { printf '[test] %s\n' "$*"; }
die() { printf '[test] ERROR: %s\n' "$*" >&2; exit 1; }

# Run a step that can be long and quiet the first time (a download, a compile), saying
# every 30 s that it still runs and for how long; its exit status is the step's.
step_pid=
trap '[ -n "${step_pid}" ] && kill "${step_pid}" 2>/dev/null' EXIT
with_progress() {
    local what="$1" started="${SECONDS}" next=30 rc=0
    shift
    "$@" &
    step_pid=$!
    while kill -0 "${step_pid}" 2>/dev/null; do
        sleep 0.2
        if (( SECONDS - started >= next )) && kill -0 "${step_pid}" 2>/dev/null; then
            log "still ${what}: $(( (SECONDS - started) / 60 ))m$(( (SECONDS - started) % 60 ))s so far"
            next=$(( next + 30 ))
        fi
    done
    wait "${step_pid}" || rc=$?
    step_pid=
    return "${rc}"
}

# The markers tox.ini registers, one a line.
registered_markers() {
    "${venv}/bin/python" - <<'EOF'
import configparser
ini = configparser.ConfigParser(interpolation=None)
ini.read("tox.ini")
for line in ini["pytest"]["markers"].strip().splitlines():
    print(line.split(":", 1)[0].strip())
EOF
}

# The registered markers of the tests pytest selects with the arguments ("$@"), one a
# line: a collection pass with a plugin that reads each selected item's markers.
selected_markers() {
    local out rc=0
    out="$(mktemp)"
    "${venv}/bin/python" - "$@" > "${out}" 2>&1 <<'EOF' || rc=$?
import configparser, sys
import pytest
ini = configparser.ConfigParser(interpolation=None)
ini.read("tox.ini")
registered = {line.split(":", 1)[0].strip()
              for line in ini["pytest"]["markers"].strip().splitlines()}
class Markers:
    found = set()
    def pytest_collection_finish(self, session):   # after every modifyitems hook
        for item in session.items:
            self.found.update(m.name for m in item.iter_markers() if m.name in registered)
plugin = Markers()
rc = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider"] + sys.argv[1:],
                 plugins=[plugin])
print("selected-markers:", " ".join(sorted(plugin.found)))
sys.exit(0 if rc in (0, 5) else int(rc))
EOF
    if [ "${rc}" -ne 0 ]; then
        tail -n 40 "${out}" >&2
        rm -f "${out}"
        die "pytest could not collect the tests (arguments: $*)"
    fi
    sed -n 's/^selected-markers: *//p' "${out}" | tr ' ' '\n' | sed '/^$/d'
    rm -f "${out}"
}

fast=0
if [ "${1:-}" = "--fast" ]; then
    fast=1
    shift
fi
full=0
if [ "${fast}" -eq 0 ] && [ "$#" -eq 0 ]; then
    full=1
fi

if [ ! -x "${venv}/bin/python" ] || ! "${venv}/bin/python" -c 'import pytest, hypothesis, yaml, numpy' 2>/dev/null; then
    log "creating ${venv}"
    rm -rf "${venv}"
    mkdir -p "${cache}"
    "${python}" -m venv "${venv}"
    "${venv}/bin/python" -m pip install -q --upgrade pip
fi
printf '%s\n' "${here}" > "${venv}/.hwaffinity-checkout"     # its checkout, and its last use
while read -r pruned; do
    log "removed ${pruned}: its checkout is gone (unused for a week), or it is this one's with an older pyproject.toml"
done < <(prune_test_venvs "${cache}" "${venv}")
# The venv is this checkout's and keyed by pyproject.toml, so its packages change only
# with it; the stamp says that the editable install of this checkout is done.
stamp="${venv}/.hwaffinity-editable"
if [ "$(cat "${stamp}" 2>/dev/null)" != "${here}" ]; then
    log "installing tacker-hwaffinity (editable) with test extras (first run: a few minutes)"
    rm -f "${stamp}"
    with_progress "installing Python packages" "${venv}/bin/python" -m pip install -q -e ".[test]"
    printf '%s\n' "${here}" > "${stamp}"
fi

if [ "${fast}" -eq 1 ]; then
    expr="not ($(registered_markers | paste -sd' ' | sed 's/ / or /g'))"
    export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-dev}"
    log "the fast loop: -m \"${expr}\" on every core, HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE}; nothing to install"
    set -- -p xdist -n auto -m "${expr}" "$@"
    markers=""
elif [ "${full}" -eq 1 ]; then
    log "no arguments: the whole suite, everything installed"
    markers="$(registered_markers)"
else
    log "collecting the selected tests to see what they need"
    markers="$(selected_markers "$@")"
    log "markers of the selected tests: $(printf '%s' "${markers:-none (nothing to install)}" | paste -sd' ')"
fi
mapfile -t needed <<< "${markers}"

needs() {
    local m want
    for m in "${needed[@]}"; do
        for want in "$@"; do [ "${m}" = "${want}" ] && return 0; done
    done
    return 1
}

# provision WHAT MARKERS COMMAND...: run a provisioning step for the tests with one of
# MARKERS (space-separated); when it fails, say which tests need it and whether root is
# what is missing.
provision() {
    local what="$1" which="${2// / or }"
    shift 2
    with_progress "${what}" "$@" && return 0
    if [ "$(id -u)" -ne 0 ]; then
        die "${what} failed: the selected tests marked ${which} need it, and installing or building it needs root. Run as root, or deselect them with -m \"not (${which})\""
    fi
    die "${what} failed (needed by the tests marked ${which})"
}

# tools/install-test-packages.sh's groups; with no argument it installs all of them
# (shellcheck too, which tests/packages uses when it is there)
groups=()
needs ssh && groups+=(ssh)
needs openstack tacker && groups+=(broker)
needs tacker && groups+=(db)
needs browser && groups+=(browser)
if [ "${full}" -eq 1 ]; then
    provision "installing Debian packages" "ssh openstack tacker browser" \
        bash tools/install-test-packages.sh
elif [ "${#groups[@]}" -gt 0 ]; then
    provision "installing Debian packages (${groups[*]})" "ssh openstack tacker browser" \
        bash tools/install-test-packages.sh "${groups[@]}"
fi
if needs realnode vm controlplane; then
    provision "installing containerd 1.7 with NRI" "realnode vm controlplane" \
        bash tools/install-node-runtime.sh
fi
if needs vm; then
    provision "building the cgroup v2 test VM's image (first run: about 2-4 minutes)" vm \
        bash tools/build-vm-image.sh
fi
if needs controlplane; then
    provision "building Kubernetes (first run: about 10 minutes)" controlplane \
        bash tools/build-kube.sh
fi
if needs realnode; then
    provision "building the image from deploy/Dockerfile (first run: about 3 minutes)" realnode \
        bash tools/build-image.sh
fi
if needs openstack; then
    provision "making the OpenStack venv (first run: a few minutes)" openstack \
        bash tools/openstack-venv.sh
fi
if needs tacker; then
    provision "fetching Tacker's kubernetes client" tacker \
        env PYTHON="${venv}/bin/python" bash tools/tacker-kubernetes-client.sh
fi

# run_pytest ARGS...: pytest's exit status, a run that collected nothing failing
run_pytest() {
    local rc=0
    log "running pytest $*"
    "${venv}/bin/python" -m pytest "$@" || rc=$?
    if [ "${rc}" -eq 5 ]; then
        log "pytest collected no tests: failing"
        rc=1
    fi
    return "${rc}"
}

rc=0
if [ "${full}" -eq 1 ]; then
    # The whole suite in two passes, each test in exactly one: the tests that need nothing
    # installed (slow ones included) on every core, then the integration tests in two
    # workers, each running one group of modules from start to end (tests/xdist_groups.py:
    # the QEMU guest's tests beside the control plane's, Tacker's beside the light rest).
    # Each pass prints its slowest tests (doc/testing.md, "How long").
    integration="$(registered_markers | grep -vx slow | paste -sd' ' | sed 's/ / or /g')"
    run_pytest -p xdist -n auto --durations=15 -m "not (${integration})" || rc=$?
    run_pytest -p xdist -n 2 --by-group --durations=40 -m "${integration}" || rc=$?
else
    run_pytest "$@" || rc=$?
fi
if [ "${full}" -eq 1 ] && [ "${rc}" -eq 0 ]; then
    # the whole suite ran on this Python; the fast loop also runs on the newest Python
    # Debian ships (trixie's), in a chroot (tools/test-python.sh)
    log "the fast loop on Debian trixie's Python (first run: 3-5 minutes to set up)"
    bash tools/test-python.sh || die "the fast loop failed on Debian trixie's Python (above)"
fi
exit "${rc}"
