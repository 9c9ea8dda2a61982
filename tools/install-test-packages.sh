#!/usr/bin/env bash
# Install the Debian packages the test suite runs, beyond Python packages.
#
#   bash tools/install-test-packages.sh [GROUP...]   # as root when something is missing
#
# GROUP is one of these (all of them when none is given); tools/test.sh asks for the
# ones the selected tests' markers need:
#
#   ssh      openssh-server, the real sshd that tests/ssh starts on 127.0.0.1 (only the
#            binary is used: no service is enabled or started; the tests run it with a
#            private config), and openssh-client (ssh-keygen, which generates the test
#            host and user keys)                                  (marker ssh)
#   broker   rabbitmq-server, the broker that carries Nova's versioned notifications to
#            the controller (tests/openstack/rabbit.py starts a private one on loopback;
#            the package's own service is never started)          (openstack, tacker)
#   db       mariadb-server, Tacker's database in tests/tacker_e2e (a private server on
#            loopback, tests/tacker_e2e/mariadb.py; the package's own service is never
#            started)                                             (tacker)
#   lint     shellcheck, which tests/packages/test_install_script.py runs when it is
#            there (tox -e lint has its own)
#   shells   zsh, which tests/cli/test_kubectl_conventions.py loads the completion script
#            in (unmarked: skipped where zsh is missing, failed under CI)
#   browser  chromium, the headless browser tests/cli/test_svg.py draws the SVGs in and
#            screenshots (no service; a private profile per run)   (browser)
set -euo pipefail

packages=()
[ "$#" -gt 0 ] || set -- ssh broker db lint shells browser
for group in "$@"; do
    case "${group}" in
        ssh) packages+=(openssh-server openssh-client) ;;
        broker) packages+=(rabbitmq-server) ;;
        db) packages+=(mariadb-server) ;;
        lint) packages+=(shellcheck) ;;
        shells) packages+=(zsh) ;;
        browser) packages+=(chromium) ;;
        *) printf '[install-test-packages] unknown group %s (ssh, broker, db, lint, shells, browser)\n' "${group}" >&2
           exit 2 ;;
    esac
done
exec bash "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh" "${packages[@]}"
