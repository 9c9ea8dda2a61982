#!/usr/bin/env bash
# Install the Debian packages the test suite runs, beyond Python packages.
#
#   bash tools/install-test-packages.sh      # as root when something is missing
#
#   openssh-server   the real sshd that tests/ssh starts on 127.0.0.1
#                    (only the binary is used: no service is enabled or
#                    started; the tests run it with a private config)
#   openssh-client   ssh-keygen, which generates the test host and user keys
#   rabbitmq-server  the broker that carries Nova's versioned notifications to the
#                    controller (tests/openstack/rabbit.py starts a private one on
#                    loopback; the package's own service is never started)
#   mariadb-server   Tacker's database in tests/tacker_e2e (a private server on loopback,
#                    tests/tacker_e2e/mariadb.py; the package's own service is never started)
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh" openssh-server openssh-client shellcheck rabbitmq-server mariadb-server
