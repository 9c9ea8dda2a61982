"""Paths of the MgmtDriver tests (tox.ini registers their markers). Their fixtures
``master_sshd`` (a real OpenSSH sshd standing in for a Kubernetes master; it runs the real
kubectl against the real control plane of tests/controlplane) and
``ssh_params`` (how the driver reaches it) are in tests/conftest.py, shared
with tests/packages."""
import os
import sys

# the OpenStack harness (osharness, fakekeystone) lives in tests/openstack
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "openstack"))
