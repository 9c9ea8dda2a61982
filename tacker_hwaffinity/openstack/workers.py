"""Which Nova servers are the cluster's workers: by server metadata, by Heat stack, or
every server that is a node of the cluster.

* ``MetadataWorkers({key: value})``: a server is a worker when its metadata has
  every given pair (what an operator tags VMs with);
* ``StackWorkers(openstack, stack, aspects, vdus)``: the servers of a Tacker VNF's
  Heat stack, found the MgmtDriver's way (``labeling.inventory``): the members of
  the AutoScalingGroups named by the scaling aspect ids, and the plain VDU servers.
  One Heat call (``resources?nested_depth=2``) reads them; it is made at the first
  poll and again when a poll shows a server not known yet (a scale-out or a heal
  creates one), at most once per ``refresh_interval``. The MgmtDriver's
  ``scale_end``/``heal_end`` label new workers themselves, so a late refresh delays
  nothing. Heat failing keeps the last known set (and says so);
* ``ClusterNodeWorkers(node_objects, region)``: a server is a worker when a node of
  the cluster is its VM, as the planner matches them (``labeling.plan.NodeIndex``:
  the node's spec.providerID names the server, else the node's InternalIP is one of
  the server's addresses and the node's providerID names no other server). The
  nodes are the controller's node cache; no Nova or Kubernetes call of its own. For
  a cluster made without Tacker (Cluster API OpenStack, Magnum, Kubespray with
  openstack-cloud-controller-manager): no Heat stack, no metadata.
"""
import logging
import time
import typing

from tacker_hwaffinity.labeling import inventory
from tacker_hwaffinity.labeling import plan as planning
from tacker_hwaffinity.labeling.nodes import NodeObjectError, kube_node
from tacker_hwaffinity.openstack.api import OpenStack, OpenStackError
from tacker_hwaffinity.openstack.servers import ServerState


class WorkerSelector(typing.Protocol):
    """Which servers are workers: what the three selectors below have in common.
    COVERS_EVERY_NODE: every node of the cluster that names an OpenStack server (its
    providerID) is meant to be a worker, so a node whose server Nova does not list is one
    whose host cannot be read (``controller.hosttruth``); else such a node may be any VM
    outside the selection (a master, another pool)."""

    covers_every_node: bool

    def describe(self) -> str:
        """Which servers are workers, for the start line."""

    def select(self, states: typing.List[ServerState]) -> typing.List[ServerState]:
        """The workers among STATES (what one Nova poll reported)."""


class MetadataWorkers:
    covers_every_node = False

    def __init__(self, metadata: typing.Mapping[str, str]) -> None:
        self.metadata = dict(metadata)

    def describe(self) -> str:
        return "servers with metadata %s" % ", ".join(
            "%s=%s" % kv for kv in sorted(self.metadata.items()))

    def select(self, states: typing.List[ServerState]) -> typing.List[ServerState]:
        return [s for s in states
                if all((s.metadata or {}).get(k) == v for k, v in self.metadata.items())]


class StackWorkers:
    covers_every_node = False

    def __init__(self, openstack: OpenStack, stack: str, aspects: typing.Iterable[str] = (),
                 vdus: typing.Iterable[str] = (), refresh_interval: float = 60.0,
                 clock: typing.Callable[[], float] = time.monotonic,
                 log: typing.Optional[logging.Logger] = None) -> None:
        self.openstack, self.stack = openstack, stack
        self.aspects, self.vdus = tuple(aspects), tuple(vdus)
        self.refresh_interval, self.clock = refresh_interval, clock
        self.log = log or logging.getLogger("hwaffinity.controller")
        self.ids: typing.Optional[typing.Set[str]] = None   # the workers' server ids, once read
        self.last_read = -1e9
        self.reads = 0
        # server id -> last state, of servers not (yet) workers
        self.others: typing.Dict[str, ServerState] = {}

    def describe(self) -> str:
        what = ["aspect %s" % a for a in self.aspects] + ["VDU %s" % v for v in self.vdus]
        return "servers of stack %s (%s)" % (self.stack, ", ".join(what))

    def select(self, states: typing.List[ServerState]) -> typing.List[ServerState]:
        """The workers among STATES, plus earlier-seen servers that a new read of the
        stack made workers (their change may have come before the read)."""
        known: typing.Set[str] = self.ids or set()
        for s in states:
            if s.status == "DELETED":
                self.others.pop(s.id, None)
            elif s.id not in known:
                self.others[s.id] = s
        unknown = [s for s in states if s.status != "DELETED" and s.id not in known]
        if self.ids is None or (unknown and
                                self.clock() - self.last_read >= self.refresh_interval):
            self._read()
        ids: typing.Set[str] = self.ids or set()
        out = [s for s in states if s.id in ids]
        given = {s.id for s in out}
        out.extend(self.others[i] for i in sorted(ids & set(self.others)) if i not in given)
        for i in ids:
            self.others.pop(i, None)
        return out

    def _read(self):
        self.last_read = self.clock()
        self.reads += 1
        try:
            resources = self.openstack.stack_resources(self.stack)
        except OpenStackError as e:
            self.log.warning("Heat: stack %s not read, workers as last known: %s",
                             self.stack, e)
            return
        refs, problems = [], []
        for aspect in self.aspects:
            found = inventory.members(resources, aspect)
            if isinstance(found, str):
                problems.append("aspect %s: %s" % (aspect, found))
            else:
                refs.extend(found)
        found, missing = inventory.vdu_servers(resources, self.vdus)
        refs.extend(found)
        if missing:
            problems.append("the stack has no server %s" % ", ".join(missing))
        for p in problems:
            self.log.warning("Heat: stack %s: %s", self.stack, p)
        ids = {r.server_id for r in refs}
        if ids != self.ids:
            self.log.info("Heat: stack %s has %d worker server(s)", self.stack, len(ids))
        self.ids = ids


class ClusterNodeWorkers:
    """NODE_OBJECTS: gives the cluster's Node objects (the node informer's ``list``);
    REGION: the credentials' region (None: unknown)."""

    covers_every_node = True

    def __init__(self, node_objects: typing.Callable[[], typing.List[typing.Any]],
                 region: typing.Optional[str] = None) -> None:
        self.node_objects, self.region = node_objects, region
        # server id -> last state, of servers not (yet) nodes
        self.others: typing.Dict[str, ServerState] = {}

    def describe(self) -> str:
        return "every server that is a node of this cluster (spec.providerID, else InternalIP)"

    def select(self, states: typing.List[ServerState]) -> typing.List[ServerState]:
        """The servers among STATES that a node of the cluster is the VM of, plus the
        earlier-seen servers whose node has joined since (a poll lists only the servers
        that changed)."""
        nodes = []
        for obj in self.node_objects():
            try:
                nodes.append(kube_node(obj))
            except NodeObjectError:
                continue        # the relabelling reports the node (controller.hostlabels)
        index = planning.NodeIndex(nodes, self.region)
        for s in states:
            if s.status == "DELETED":
                self.others.pop(s.id, None)
            else:
                self.others[s.id] = s
        out = [s for s in self.others.values()
               if index.eligible(planning.Worker(s.name, s.id, s.addresses))]
        for s in out:
            del self.others[s.id]
        return out
