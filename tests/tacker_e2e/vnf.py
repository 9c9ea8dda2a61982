"""One VNF-A instance driven through Tacker's VNF LCM API (v1 or v2), and the checks
made after each operation: every worker's node on the real control plane carries
``CIS-node=<its compute host>``, and the instance's metadata holds our report."""
import json
import os
import time

from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL

from . import lcm

HOST = "OS-EXT-SRV-ATTR:host"
WORKER_VDU = "workerNode"


class Vnf:
    """The VNF instance under test, through API VERSION (1 or 2) of CLIENT
    (python-tackerclient), and the operations run on it."""

    def __init__(self, client, version, cloud, master, kubelets, received=None, vim_id=None):
        self.client, self.version, self.cloud = client, version, cloud
        self.master, self.kubelets, self.received, self.vim_id = master, kubelets, received, vim_id
        self.id, self.seconds = None, {}

    def request(self, name):
        """The sample request NAME of this API version, for the harness."""
        body = lcm.sample_request(os.path.join("v%d" % self.version, name), self.cloud,
                                  self.master.ssh)
        if "vimConnectionInfo" not in body:
            return body
        if self.version == 1:                # a VIM registered with Tacker
            body["vimConnectionInfo"][0]["vimId"] = self.vim_id
        else:                                # v2 takes the VIM inline, as it is
            creds = self.cloud.credentials("admin")
            body["vimConnectionInfo"]["vim1"] = {
                "vimId": body["vimConnectionInfo"]["vim1"]["vimId"],
                "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
                "interfaceInfo": {"endpoint": creds["auth_url"]},
                "accessInfo": {"username": creds["username"], "password": creds["password"],
                               "project": creds["project_name"], "projectDomain": "Default",
                               "userDomain": "Default", "region": "RegionOne"}}
        return body

    def run(self, operation, call, *args, label=None):
        """Start OPERATION with CALL(*ARGS); its occurrence once it has settled (the
        time it took is kept under LABEL)."""
        known = {o["id"] for o in self.client.list_vnf_lcm_op_occs()}
        t0 = time.monotonic()
        lcm.start_operation(call, *args)
        occ_id = lcm.operation_of(self.client.list_vnf_lcm_op_occs, self.id, operation, known)
        return self.wait(occ_id, label or operation.lower(), t0)

    def wait(self, occ_id, what, t0=None):
        t0 = t0 or time.monotonic()
        occ = lcm.wait_operation(self.client.show_vnf_lcm_op_occs, occ_id, each=self.kubelets.sync)
        self.seconds[what] = time.monotonic() - t0
        return occ

    def instance(self):
        return self.client.show_vnf_instance(self.id)

    def workers(self):
        """{VNFC id (what a heal names: v2 vnfcInfo, v1 vnfcResourceInfo): server id} of
        the worker VDU."""
        info = self.instance()["instantiatedVnfInfo"]
        servers = {v["id"]: v["computeResource"]["resourceId"]
                   for v in info["vnfcResourceInfo"] if v["vduId"] == WORKER_VDU}
        if self.version == 1:
            return servers
        return {i["id"]: servers[i["vnfcResourceInfoId"]] for i in info["vnfcInfo"]
                if i["vnfcResourceInfoId"] in servers}

    def worker_group(self):
        """The one Nova server group all the workers are members of (compute API 2.64:
        one ``policy``)."""
        nova = self.cloud.nova("admin", version="2.64")
        servers = set(self.workers().values())
        (group,) = [g for g in nova.server_groups.list(all_projects=True)
                    if servers <= set(g.members)]
        return group

    def report(self):
        """Our report in the instance's metadata (v1 keeps it as a JSON string)."""
        report = self.instance()["metadata"]["hwaffinity"]
        return json.loads(report) if isinstance(report, str) else report

    def node_name(self, server_id):
        server = self.cloud.nova("admin", version="latest").servers.get(server_id)
        return self.kubelets.node_name(self.kubelets.address(server))

    def assert_labelled(self, hook=None):
        """Every worker's node carries its compute host, on distinct hosts, and the
        instance's metadata holds HOOK's worker -> host -> node report."""
        nova = self.cloud.nova("admin", version="latest")
        servers = sorted(self.workers().values())
        hosts = {s: getattr(nova.servers.get(s), HOST) for s in servers}
        labels = {s: (self.kubelets.node(s)["metadata"].get("labels") or {}).get(
            DEFAULT_HOST_LABEL) for s in servers}
        assert labels == hosts
        assert len(set(hosts.values())) == len(hosts), hosts  # the anti-affinity held
        if hook is None:
            return hosts
        report = self.report()
        assert report["hook"] == hook and report["warnings"] == [], report
        assert {w["server"]: (w["host"], w["node"]) for w in report["workers"]} == {
            s: (hosts[s], self.node_name(s)) for s in servers}
        return hosts

    def scale_in_checked(self):
        """Scale the workers in by one (the sample request): the removed worker's node is
        drained and deleted by scale_start, whose report says so; the others stay
        labelled. Returns the removed node's name."""
        before = self.workers()
        nodes = {s: self.node_name(s) for s in before.values()}
        occ = self.run("SCALE", self.client.scale_vnf_instance, self.id,
                       self.request("scale_in_workers.json"), label="scale in")
        assert occ["operationState"] == "COMPLETED", occ.get("error")
        after = self.workers()
        removed = set(before.values()) - set(after.values())
        assert len(removed) == 1 and len(after) == len(before) - 1
        names = {n["metadata"]["name"]
                 for n in self.kubelets.cp.admin.get("/api/v1/nodes")["items"]}
        gone = nodes[removed.pop()]
        assert gone not in names                             # the driver deleted it
        assert {nodes[s] for s in after.values()} <= names
        self.assert_labelled()
        # scale_end of a scale-in has nothing to do: the report is scale_start's
        report = self.report()
        assert (report["hook"], report["removedNodes"]) == ("scale_start", [gone]), report
        return gone

    def heal_worker_checked(self):
        """Heal the first worker's VNFC (the sample request): a new server for it, its
        node labelled with its host and then uncordoned (heal_end). Returns the
        occurrence."""
        before = self.workers()
        vnfc_id = sorted(before)[0]
        body = self.request("heal_worker.json")
        body["vnfcInstanceId"] = [vnfc_id]
        occ = self.run("HEAL", self.client.heal_vnf_instance, self.id, body)
        assert occ["operationState"] == "COMPLETED", occ.get("error")
        after = self.workers()
        assert len(after) == len(before)
        healed = set(after.values()) - set(before.values())
        assert len(healed) == 1, (before, after)             # a new server for that VNFC
        node = self.kubelets.node(healed.pop())
        assert not node["spec"].get("unschedulable")         # drained, then uncordoned
        self.assert_labelled("heal_end")
        assert self.report()["uncordonedNodes"] == [node["metadata"]["name"]]
        return occ

    def terminate_checked(self):
        """Terminate (forceful) and delete the instance: NOT_INSTANTIATED first, and
        nothing of it left in OpenStack (``assert_nothing_left``)."""
        made = self.made()
        occ = self.run("TERMINATE", self.client.terminate_vnf_instance, self.id,
                       {"terminationType": "FORCEFUL"})
        assert occ["operationState"] == "COMPLETED", occ.get("error")
        assert self.instance()["instantiationState"] == "NOT_INSTANTIATED"
        self.assert_nothing_left(made)
        lcm.start_operation(self.client.delete_vnf_instance, self.id)
        return occ

    def made(self):
        """{physical id: type} of the servers and server groups the instance's stack made
        (both kinds present)."""
        heat = self.cloud.heat("admin")
        (stack,) = [st for st in heat.stacks.list() if self.id in st.stack_name]
        made = {r.physical_resource_id: r.resource_type
                for r in heat.resources.list(stack.id, nested_depth=2)
                if r.resource_type in ("OS::Nova::Server", "OS::Nova::ServerGroup")
                and r.physical_resource_id}
        assert sorted(set(made.values())) == ["OS::Nova::Server", "OS::Nova::ServerGroup"]
        return made

    def assert_nothing_left(self, made):
        """After terminate: no stack of the instance, and none of MADE (``made()`` before
        it; a resource Heat failed to delete would outlive the stack's record). The nodes
        of those servers are the harness's kubelets; in the field they go with the
        masters' etcd."""
        heat = self.cloud.heat("admin")
        nova = self.cloud.nova("admin", version="2.64")
        assert not [st for st in heat.stacks.list() if self.id in st.stack_name]
        left = {x.id for x in nova.servers.list(search_opts={"all_tenants": 1})} | {
            g.id for g in nova.server_groups.list(all_projects=True)}
        assert [(i, t) for i, t in made.items() if i in left] == []

    def notified(self, occ_id):
        """The operation states notified for OCC_ID, in order."""
        lines = [json.loads(x) for x in self.received.read_text().splitlines() if x.strip()]
        return [n["operationState"] for n in lines
                if n.get("notificationType") == "VnfLcmOperationOccurrenceNotification"
                and n.get("vnfLcmOpOccId") == occ_id]

    def wait_notified(self, occ_id, state, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and state not in self.notified(occ_id):
            time.sleep(0.5)
        return self.notified(occ_id)
