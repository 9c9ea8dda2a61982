"""The test control plane as a Kubernetes VIM of Tacker, made the way Tacker's guides make
one: a ServiceAccount bound to cluster-admin, its token Secret, the cluster's CA."""
import base64

from controlplane import harness

VIM_ACCOUNT = "tacker-vim-test"   # the user guide makes "tacker-vim"


def credentials(cp):
    """(bearer token, CA certificate PEM) of the VIM's ServiceAccount, made once."""
    ns = "kube-system"
    cp.admin.request("POST", "/api/v1/namespaces/%s/serviceaccounts" % ns, {
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": VIM_ACCOUNT}},
        ok=(201, 409))
    cp.admin.request("POST", "/api/v1/namespaces/%s/secrets" % ns, {
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
        "metadata": {"name": VIM_ACCOUNT + "-token",
                     "annotations": {"kubernetes.io/service-account.name": VIM_ACCOUNT}}},
        ok=(201, 409))
    cp.bind_cluster_role(VIM_ACCOUNT, "cluster-admin", "ServiceAccount",
                         ns + "/" + VIM_ACCOUNT)

    def token():
        data = cp.admin.get("/api/v1/namespaces/%s/secrets/%s-token" % (ns, VIM_ACCOUNT)).get(
            "data") or {}
        return data if data.get("token") and data.get("ca.crt") else None
    data = harness.wait_until(token, 30, what="the VIM account's token")
    return base64.b64decode(data["token"]).decode(), base64.b64decode(data["ca.crt"]).decode()


def register(client, cp, name, is_default=False):
    """The control plane registered through Tacker's ``/v1.0/vims`` (CLIENT: a
    python-tackerclient), as ``openstack vim register`` sends it; the VIM."""
    token, ca = credentials(cp)
    return client.create_vim({"vim": {
        "type": "kubernetes", "name": name, "is_default": is_default,
        "auth_url": cp.server,
        "auth_cred": {"bearer_token": token, "ssl_ca_cert": ca},
        "vim_project": {"name": "default"}}})["vim"]

