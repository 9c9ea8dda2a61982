"""What the v1 and v2 LCM tests share: the sample requests pointed at the harness with a
master that does not answer over SSH, the sample's Nova keypair, and waiting for an
operation occurrence to settle."""
import json
import os
import time

from osharness import free_port

from .packages import ROOT

SAMPLES = os.path.join(ROOT, "samples", "requests", "k8s-cluster")


def _keypair():
    """(OpenSSH private key text, its public key line): the sample's Nova keypair."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode()
    return private, public


PRIVATE_KEY, PUBLIC_KEY = _keypair()


def ensure_keypair(cloud):
    """The sample's keypair ``k8s-nodes`` (the VIM user's), registered once."""
    nova = cloud.nova("admin", version="2.1")
    if "k8s-nodes" not in [k.name for k in nova.keypairs.list()]:
        nova.keypairs.create("k8s-nodes", public_key=PUBLIC_KEY)


def sample_request(name, cloud):
    """The sample instantiate request NAME with only addresses, ids and the key changed,
    and the Kubernetes installation off (the harness's VMs run no sshd; every SSH target
    stays on loopback): the networks are the harness's, and the master is 127.0.0.1 on
    a port nobody listens on."""
    with open(os.path.join(SAMPLES, name)) as f:
        body = json.load(f)
    for link in body["extVirtualLinks"]:
        link["resourceId"] = cloud.network_id
        for cp in link["extCps"]:
            configs = cp["cpConfig"]            # v2: {id: config}; v1: [config]
            for cfg in configs.values() if isinstance(configs, dict) else configs:
                for proto in cfg["cpProtocolData"]:
                    for addr in proto["ipOverEthernet"]["ipAddresses"]:
                        addr["subnetId"] = cloud.subnet_id
    hw = body["additionalParams"]["hwaffinity_param"]
    hw["install"]["enabled"] = False
    hw["ssh"].update(host="127.0.0.1", port=free_port(), connect_timeout=2, retries=0,
                     private_key=PRIVATE_KEY)
    return body


def operation_of(list_occs, instance_id, timeout=30):
    """The id of the one operation occurrence of INSTANCE_ID (LIST_OCCS() lists them)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        occs = [o for o in list_occs() if o["vnfInstanceId"] == instance_id]
        assert len(occs) <= 1, occs
        if occs:
            return occs[0]["id"]
        time.sleep(0.5)
    raise AssertionError("no operation occurrence for %s after %d s" % (instance_id, timeout))


def wait_operation(show, occ_id, timeout=240):
    """The occurrence (SHOW(occ_id)) once it is FAILED_TEMP or COMPLETED."""
    deadline, occ = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        occ = show(occ_id)
        if occ["operationState"] in ("FAILED_TEMP", "COMPLETED"):
            return occ
        time.sleep(1)
    raise AssertionError("operation %s still %s after %d s" % (
        occ_id, occ and occ["operationState"], timeout))


def secret_free(detail, cloud):
    """Neither the SSH key nor the VIM password appears in DETAIL."""
    return PRIVATE_KEY.splitlines()[1] not in detail \
        and cloud.credentials("admin")["password"] not in detail
