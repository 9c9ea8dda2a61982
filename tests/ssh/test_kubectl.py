"""Integration: label a node of the real control plane with the real kubectl,
run over SSH by the adapter, the kubeconfig (with its client key) on stdin."""
import base64
import json
import logging
import uuid

import pytest

from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL
from tacker_hwaffinity.ssh import STDIN_FILE, SSHSession, Target, stdin_as_file

pytestmark = [pytest.mark.ssh, pytest.mark.controlplane]


def _self_contained(kubeconfig_path):
    """The admin kubeconfig with certificate and key embedded, as a remote
    master would receive it."""
    with open(kubeconfig_path) as f:
        cfg = json.load(f)

    def embed(section, field):
        with open(section.pop(field), "rb") as f:
            section[field + "-data"] = base64.b64encode(f.read()).decode()
    embed(cfg["clusters"][0]["cluster"], "certificate-authority")
    embed(cfg["users"][0]["user"], "client-certificate")
    embed(cfg["users"][0]["user"], "client-key")
    return json.dumps(cfg), cfg["users"][0]["user"]["client-key-data"]


def test_label_a_node_with_kubectl_over_ssh(sshd, target, control_plane, caplog):
    from controlplane import harness
    kubectl = harness.find_binaries()["kubectl"]
    node = "ssh-worker-" + uuid.uuid4().hex[:6]
    control_plane.add_node(node, {DEFAULT_HOST_LABEL: "host-old"}, wait=False)
    kubeconfig, client_key = _self_contained(control_plane.kubeconfig)
    caplog.set_level(logging.DEBUG)
    try:
        with SSHSession(Target(**target), command_timeout=30) as ssh:
            def kubectl_run(*args):
                argv = stdin_as_file([kubectl, "--kubeconfig", STDIN_FILE, *args])
                return ssh.run(argv, stdin=kubeconfig, check=True)
            # a changed host (heal): --overwrite makes the relabel idempotent
            for value in ("host-a", "host-b", "host-b"):
                kubectl_run("label", "node", node, "%s=%s" % (DEFAULT_HOST_LABEL, value),
                            "--overwrite")
            out = kubectl_run("get", "node", node, "-o", "json").stdout
            assert ssh.stats.connections == 1 and ssh.stats.commands == 4
    finally:
        control_plane.delete_node(node)
    assert json.loads(out)["metadata"]["labels"][DEFAULT_HOST_LABEL] == "host-b"
    assert "label node %s" % node in caplog.text  # the command is logged ...
    assert client_key not in caplog.text and client_key[:40] not in caplog.text  # ... not its key
