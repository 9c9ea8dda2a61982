"""The test control plane as a Kubernetes VIM of a real Tacker, registered the way a user
does (``/v1.0/vims`` with the cluster's endpoint, a ServiceAccount token and its CA),
Tacker keeping the VIM's key in a real Barbican:

1. a wrong token: Tacker asks the cluster, and refuses the VIM with the cluster's 401;
2. the right one: the VIM is ACTIVE, Tacker's answers hold neither the token nor the CA,
   and Barbican holds one new secret, the VIM's key;
3. deleting the VIM deletes its secret from Barbican.

The tests run in this order and share the VIM. That v2 finds a VIM by its id alone,
decrypting it with the key from Barbican, is shown by VNF-B's instantiate
(``test_tacker_cnf.py``).
"""
import json

import pytest
from tackerharness import SERVICE_PASSWORD, SERVICE_USER

from . import kubevim

pytestmark = [pytest.mark.tacker, pytest.mark.openstack, pytest.mark.controlplane]
VIM_NAME = "hwaffinity-k8s-vim"


@pytest.fixture(scope="module")
def keys(barbican):
    """python-barbicanclient as Tacker's service user: the secrets Barbican holds for
    Tacker are its service project's."""
    return barbican.client(SERVICE_USER, SERVICE_PASSWORD)


def secrets(keys):
    """{uuid: python-barbicanclient Secret} of the secrets KEYS sees."""
    return {s.secret_ref.rsplit("/", 1)[1]: s for s in keys.secrets.list(limit=100)}


@pytest.fixture(scope="module")
def registered(v1_client, control_plane, keys):
    """The VIM as Tacker answered its registration, and Barbican's secrets before it."""
    before = set(secrets(keys))
    vim = kubevim.register(v1_client, control_plane, VIM_NAME)
    yield vim, before
    if any(v["id"] == vim["id"] for v in v1_client.list_vims()["vims"]):
        v1_client.delete_vim(vim["id"])


def test_a_wrong_token_is_refused_with_the_clusters_answer(v1_client, control_plane, keys):
    from tackerclient.common.exceptions import TackerClientException
    before = set(secrets(keys))
    _, ca = kubevim.credentials(control_plane)
    with pytest.raises(TackerClientException) as refused:
        v1_client.create_vim({"vim": {
            "type": "kubernetes", "name": "wrong-token", "is_default": False,
            "auth_url": control_plane.server,
            "auth_cred": {"bearer_token": "not-a-token", "ssl_ca_cert": ca},
            "vim_project": {"name": "default"}}})
    assert refused.value.status_code == 500, refused.value
    message = str(refused.value)
    assert message.startswith("(401)\nReason: Unauthorized\n"), message
    assert '"message":"Unauthorized","reason":"Unauthorized","code":401' in message, message
    assert "not-a-token" not in message
    assert not [v for v in v1_client.list_vims()["vims"] if v["name"] == "wrong-token"]
    assert set(secrets(keys)) == before


def test_the_vim_is_active_its_credentials_encrypted_its_key_in_barbican(
        registered, v1_client, control_plane, keys):
    from cryptography.fernet import Fernet
    vim, before = registered
    token, ca = kubevim.credentials(control_plane)
    assert (vim["type"], vim["status"], vim["auth_url"]) == (
        "kubernetes", "ACTIVE", control_plane.server), vim
    assert "default" in vim["placement_attr"]["regions"]
    shown = v1_client.show_vim(vim["id"])["vim"]
    assert shown["status"] == "ACTIVE", shown
    for answer in (vim, shown):
        text = json.dumps(answer)
        assert token not in text and ca.splitlines()[1] not in text, answer
        cred = answer["auth_cred"]
        assert (cred["key_type"], cred["bearer_token"], cred["secret_uuid"]) == (
            "barbican_key", "***", "***"), cred
    held = secrets(keys)
    new = set(held) - before
    assert len(new) == 1, new
    # the one new secret is the VIM's key: it decrypts the CA Tacker keeps encrypted
    stored = shown["auth_cred"]["ssl_ca_cert"].encode()
    assert Fernet(held[new.pop()].payload).decrypt(stored).decode() == ca
    # the registration's answer has the same ciphertext as numbers (oslo's
    # mask_dict_password makes a tuple of bytes it meets)
    assert bytes(vim["auth_cred"]["ssl_ca_cert"]) == stored


def test_deleting_the_vim_deletes_its_secret(registered, v1_client, keys):
    vim, before = registered
    assert len(set(secrets(keys)) - before) == 1
    v1_client.delete_vim(vim["id"])
    assert not [v for v in v1_client.list_vims()["vims"] if v["id"] == vim["id"]]
    assert set(secrets(keys)) == before

