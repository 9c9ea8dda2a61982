"""What the Kubernetes adapter says of the API server and the kubeconfig it uses names no
credential: not one written into the server's URL (``https://user:password@host``), not
one PyYAML would quote from a kubeconfig it refuses (an alias it cannot find)."""
import logging

import pytest

from tacker_hwaffinity.kube import client

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://admin:kc-s3c@ret@127.0.0.1:6443"}}]
users: [{name: u, user: {token: kc-t0ken}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


def test_the_server_is_named_without_its_userinfo(tmp_path, caplog):
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    conn = client.connect(str(path))
    try:
        with caplog.at_level(logging.DEBUG):
            logging.getLogger("test.kube.secrets").info("API server %s", conn.where)
    finally:
        conn.close()
    assert "kc-s3c" not in caplog.text and "ret@" not in caplog.text
    assert "kc-t0ken" not in caplog.text
    assert "https://127.0.0.1:6443 (context c)" in caplog.text


def test_a_kubeconfig_pyyaml_refuses_is_named_without_its_text(tmp_path, caplog):
    """'password: *Sw0rd' is an alias to PyYAML, which names it in its error."""
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\n"
                    "users: [{name: u, user: {password: *Sw0rd}}]\n")
    with pytest.raises(client.KubeError) as e:
        client.connect(str(path))
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("test.kube.secrets").error("%s", e.value, exc_info=e.value)
    assert "Sw0rd" not in caplog.text
    assert "line 3" in caplog.text
