"""Markers and paths of the MgmtDriver tests. Their fixtures ``master_sshd``
(a real OpenSSH sshd standing in for a Kubernetes master; it runs the real
kubectl against the real control plane of tests/controlplane) and
``ssh_params`` (how the driver reaches it) are in tests/conftest.py, shared
with tests/packages."""
import os
import sys

# the OpenStack harness (osharness, fakekeystone) lives in tests/openstack
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "openstack"))


def pytest_configure(config):
    for name, doc in (("ssh", "needs a real OpenSSH sshd on 127.0.0.1"),
                      ("controlplane", "needs the real Kubernetes control plane"),
                      ("openstack", "needs the real Nova/Heat venv (tools/openstack-venv.sh)")):
        config.addinivalue_line("markers", "%s: %s" % (name, doc))
