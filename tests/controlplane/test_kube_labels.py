"""Node labels by server-side apply through the API, sharing the field manager with the
MgmtDriver's `kubectl apply --server-side`: the two paths own the same fields."""
import subprocess

import pytest

from tacker_hwaffinity.constants import FIELD_MANAGER
from tacker_hwaffinity.kube import client as kube_client
from tacker_hwaffinity.kube.client import KubeError
from tacker_hwaffinity.kube.labels import apply_node_labels
from tacker_hwaffinity.labeling import kubectl

pytestmark = pytest.mark.controlplane


def managers(node, key):
    return sorted(m["manager"] for m in node["metadata"].get("managedFields", [])
                  if "f:" + key in str(m.get("fieldsV1", {}).get("f:metadata", {})
                                       .get("f:labels", {})))


def test_api_and_kubectl_label_the_same_fields(control_plane):
    cp = control_plane
    cp.add_node("label-node", {"kubernetes.io/hostname": "label-node"})
    conn = kube_client.connect(cp.kubeconfig)
    try:
        node = apply_node_labels(conn, "label-node", {"CIS-node": "host-a"})
        assert node["metadata"]["labels"]["CIS-node"] == "host-a"
        assert managers(node, "CIS-node") == [FIELD_MANAGER]
        argv, stdin = kubectl.apply_labels({"label-node": {"CIS-node": "host-b"}})
        exe = cp.bin["kubectl"]
        subprocess.run([exe, "--kubeconfig", cp.kubeconfig] + argv[1:], input=stdin,
                       check=True, capture_output=True, text=True, timeout=60)
        node = apply_node_labels(conn, "label-node", {"CIS-node": "host-c"})
        assert node["metadata"]["labels"]["CIS-node"] == "host-c"
        assert managers(node, "CIS-node") == [FIELD_MANAGER]   # one owner, no fight
        uid = node["metadata"]["uid"]
        assert apply_node_labels(conn, "label-node", {"CIS-node": "host-d"},
                                 uid=uid)["metadata"]["labels"]["CIS-node"] == "host-d"
        with pytest.raises(KubeError) as e:     # gone: not created again
            apply_node_labels(conn, "no-such-node", {"CIS-node": "x"}, uid=uid)
        assert "node no-such-node" in str(e.value)
        assert not [n for n in cp.admin.get("/api/v1/nodes")["items"]
                    if n["metadata"]["name"] == "no-such-node"]
    finally:
        conn.close()
        cp.delete_node("label-node")
