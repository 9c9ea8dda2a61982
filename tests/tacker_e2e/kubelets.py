"""The kubelets of the VNF's VMs. The harness's VMs run no OS, so nothing on them
registers with Kubernetes; ``Kubelets.sync`` does what their kubelets would: every
ACTIVE server with an address registers once as the node ``vm-<address>`` with that
address as InternalIP (the real control plane, kept alive by its fake kubelet). A
master VM's node (its Heat name holds the VDU ``masterNode``) carries what kubeadm
init gives a v1.20 control-plane node: the ``node-role.kubernetes.io/master`` label and
NoSchedule taint, so workloads go to the workers. A worker's node registers with the
taint ``hwaffinity.io/host-unknown:NoSchedule``, as install_k8s.sh's join configuration
makes its kubelet do: nothing is bound to it until the MgmtDriver has labelled it with
its host and lifted the taint.

A healed VM keeps its port, so its new server takes its old node back, as a kubelet
registering under an existing name does. Nodes are never removed here: removing the
node of a scaled-in worker is the MgmtDriver's job, and that is what the tests check.
"""
from tacker_hwaffinity.constants import HOST_UNKNOWN_TAINT

MASTER_VDU = "masterNode"
MASTER_ROLE = "node-role.kubernetes.io/master"


class Kubelets:

    def __init__(self, cloud, control_plane):
        self.nova = cloud.nova("admin", version="latest")
        self.cp = control_plane
        self.registered = set()           # server ids whose kubelet registered
        self.created = set()              # node names, deleted by ``cleanup``

    @staticmethod
    def node_name(address):
        return "vm-" + address.replace(".", "-").replace(":", "-")

    @staticmethod
    def address(server):
        return next((a["addr"] for nets in (server.addresses or {}).values() for a in nets),
                    None)

    def sync(self):
        """Register every ACTIVE server not registered yet; returns the new node names."""
        fresh = [s for s in self.nova.servers.list(search_opts={"all_tenants": 1})
                 if s.status == "ACTIVE" and s.id not in self.registered and self.address(s)]
        if not fresh:
            return []
        existing = {n["metadata"]["name"] for n in self.cp.admin.get("/api/v1/nodes")["items"]}
        added = []
        for server in fresh:
            name = self.node_name(self.address(server))
            if name not in existing:
                master = MASTER_VDU in server.name
                self.cp.add_node(name, labels={MASTER_ROLE: ""} if master else None,
                                 address=self.address(server), wait=False,
                                 taints=() if master else [
                                     {"key": HOST_UNKNOWN_TAINT, "effect": "NoSchedule"}])
                if master:
                    self.cp.admin.patch("/api/v1/nodes/" + name, {"spec": {"taints": [
                        {"key": MASTER_ROLE, "effect": "NoSchedule"}]}})
                self.created.add(name)
                added.append(name)
            self.registered.add(server.id)
        return added

    def node(self, server_id):
        """The node object of a server (404: None)."""
        server = self.nova.servers.get(server_id)
        status, node = self.cp.admin.request(
            "GET", "/api/v1/nodes/" + self.node_name(self.address(server)), ok=(200, 404))
        return node if status == 200 else None

    def cleanup(self):
        for name in sorted(self.created):
            self.cp.delete_node(name)
        self.created.clear()
