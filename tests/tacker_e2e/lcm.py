"""What the v1 and v2 LCM tests share: the sample requests pointed at the harness and at
the test's master, the master itself (down until started), the sample's Nova keypair,
and waiting for an operation occurrence to settle."""
import json
import os
import time

from osharness import free_port

from sshkeys import ed25519_keypair

from .packages import ROOT

SAMPLES = os.path.join(ROOT, "samples", "requests", "k8s-cluster")


PRIVATE_KEY, PUBLIC_KEY = ed25519_keypair()  # the sample's Nova keypair


def ensure_keypair(cloud):
    """The sample's keypair ``k8s-nodes`` (the VIM user's), registered once."""
    nova = cloud.nova("admin", version="2.1")
    if "k8s-nodes" not in [k.name for k in nova.keypairs.list()]:
        nova.keypairs.create("k8s-nodes", public_key=PUBLIC_KEY)


def sample_request(name, cloud, ssh):
    """The sample request NAME (instantiate, scale or heal) with only addresses, ids and
    the key changed: the networks are the harness's, SSH goes to the test's master
    (SSH: ``Master.ssh``, the address and the master's kubectl), and the cluster joins
    on its own. The harness's VMs run no OS, so the installation is off; the VMs'
    kubelets register by themselves (``kubelets.Kubelets``), and the driver waits for
    them (``join_timeout``) as it would for VMs whose user data joins them."""
    with open(os.path.join(SAMPLES, name)) as f:
        body = json.load(f)
    for link in body.get("extVirtualLinks", ()):
        link["resourceId"] = cloud.network_id
        for cp in link["extCps"]:
            configs = cp["cpConfig"]            # v2: {id: config}; v1: [config]
            for cfg in configs.values() if isinstance(configs, dict) else configs:
                for proto in cfg["cpProtocolData"]:
                    for addr in proto["ipOverEthernet"]["ipAddresses"]:
                        addr["subnetId"] = cloud.subnet_id
    hw = body.get("additionalParams", {}).get("hwaffinity_param")
    if hw is not None:  # v1 scale and heal keep the instantiate's (none given)
        hw["install"]["enabled"] = False
        hw["join_timeout"] = 120
        hw["ssh"].update(connect_timeout=2, retries=0, private_key=PRIVATE_KEY, **ssh)
    return body


class Master:
    """The cluster's master as the driver reaches it: an sshd on 127.0.0.1 that takes
    the Nova keypair ``k8s-nodes`` (as a VM booted with it would) and runs the real
    kubectl against the control plane. Its port is chosen now and stays closed (the
    master is down) until ``start``."""

    def __init__(self, control_plane):
        from controlplane import harness
        from ssh import sshd
        self.sshd = sshd.SSHServer()
        self.sshd.prepare()
        with open(self.sshd.path("authorized_keys"), "a") as f:
            f.write(PUBLIC_KEY + "\n")
        self.port = free_port()
        self.ssh = {"host": sshd.HOST, "port": self.port, "username": self.sshd.username,
                    "kubectl": harness.find_binaries()["kubectl"],
                    "kubeconfig_path": control_plane.kubeconfig}

    def start(self):
        """Bring the master up (once)."""
        if self.sshd.proc is None or self.sshd.proc.poll() is not None:
            self.sshd.start(port=self.port)

    def stop(self):
        self.sshd.stop()
        self.sshd.cleanup(keep_logs=False)


def start_operation(call, *args, timeout=30):
    """CALL(*ARGS) (a tackerclient LCM request), again while Tacker answers 409 "Other LCM
    operation of vnfInstance ... is in progress": v2's conductor commits an occurrence as
    COMPLETED, then sends its notification, and only then releases the instance's lock,
    so the next request of a client that saw COMPLETED can still meet the lock (CI: one
    terminate after a heal). A client waits for the lock, as this does, at most TIMEOUT s."""
    from tackerclient.common.exceptions import TackerClientException
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call(*args)
        except TackerClientException as e:
            if (getattr(e, "status_code", None) != 409 or "is in progress" not in str(e)
                    or time.monotonic() > deadline):
                raise
        time.sleep(0.5)


def operation_of(list_occs, instance_id, operation, known=(), timeout=30):
    """The id of INSTANCE_ID's new occurrence of OPERATION (e.g. INSTANTIATE), one not
    in KNOWN (LIST_OCCS() lists them)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        occs = [o for o in list_occs() if o["vnfInstanceId"] == instance_id
                and o["operation"] == operation and o["id"] not in known]
        assert len(occs) <= 1, occs
        if occs:
            return occs[0]["id"]
        time.sleep(0.5)
    raise AssertionError("no operation occurrence for %s after %d s" % (instance_id, timeout))


# SOL003's states an occurrence stays in without a request: FAILED_TEMP waits for a retry,
# a rollback or a fail; the others are final (ROLLED_BACK: an error before the operation
# started, which Tacker rolls back itself).
SETTLED = ("FAILED_TEMP", "COMPLETED", "ROLLED_BACK", "FAILED")


def wait_operation(show, occ_id, timeout=240, each=lambda: None):
    """The occurrence (SHOW(occ_id)) once it has settled (``SETTLED``); EACH() runs
    every second meanwhile (the VMs' kubelets registering)."""
    deadline, occ = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        each()
        occ = show(occ_id)
        if occ["operationState"] in SETTLED:
            return occ
        time.sleep(1)
    raise AssertionError("operation %s still %s after %d s" % (
        occ_id, occ and occ["operationState"], timeout))


# what an operator does with an occurrence left FAILED_TEMP: SOL003 rolls back only these
ROLLBACK = ("INSTANTIATE", "SCALE", "CHANGE_EXT_CONN", "MODIFY_INFO")


def settle_left(client, timeout=240):
    """Bring every occurrence CLIENT lists out of the states that block an instance's next
    operation, as an operator would: one still running is waited for; one FAILED_TEMP is
    rolled back where SOL003 allows it, else (or if the rollback does not end) marked
    FAILED. Returns one line per occurrence it acted on."""
    done = []
    for occ in client.list_vnf_lcm_op_occs():
        state = occ["operationState"]
        if state not in SETTLED:
            occ = wait_operation(client.show_vnf_lcm_op_occs, occ["id"], timeout)
            state = occ["operationState"]
        if state != "FAILED_TEMP":
            continue
        what = "%s %s of instance %s" % (occ["operation"], occ["id"], occ["vnfInstanceId"])
        if occ["operation"] in ROLLBACK:
            start_operation(client.rollback_vnf_instance, occ["id"])
            try:
                occ = _wait_state(client, occ["id"], ("ROLLED_BACK", "FAILED"), timeout)
                done.append("%s: rolled back (%s)" % (what, occ["operationState"]))
                continue
            except AssertionError as e:
                done.append("%s: the rollback did not end (%s)" % (what, e))
        start_operation(client.fail_vnf_instance, occ["id"])
        _wait_state(client, occ["id"], ("FAILED",), timeout)
        done.append("%s: marked FAILED" % what)
    return done


def _wait_state(client, occ_id, states, timeout):
    deadline, occ = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        occ = client.show_vnf_lcm_op_occs(occ_id)
        if occ["operationState"] in states:
            return occ
        time.sleep(1)
    raise AssertionError("operation %s still %s after %d s" % (
        occ_id, occ and occ["operationState"], timeout))


def secret_free(detail, cloud):
    """Neither the SSH key nor the VIM password appears in DETAIL."""
    return PRIVATE_KEY.splitlines()[1] not in detail \
        and cloud.credentials("admin")["password"] not in detail
