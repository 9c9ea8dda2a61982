"""Decide the labels: worker -> compute host -> Kubernetes node -> label changes.

Workers come from OpenStack (Heat/Nova), nodes from Kubernetes; a worker is
matched to the node whose ``spec.providerID`` names its server, else to the one
node whose InternalIP is one of the worker's addresses (never by guessing
names): :func:`node_of`, doc/mgmt-driver.md "How a node is matched to its
server". Every problem is reported per worker; nothing is skipped silently.
"""
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tacker_hwaffinity.labeling import provider_id
from tacker_hwaffinity.labeling.params import HwParams
from tacker_hwaffinity.labeling.provider_id import ProviderID
from tacker_hwaffinity.labeling.sanitize import label_value

NO_HOST = ("the compute host is not visible (Nova attribute OS-EXT-SRV-ATTR:host): the VIM "
           "user lacks the admin role that policy os_compute_api:os-extended-server-attributes "
           "requires; give it the role, or set hwaffinity_param.host_source to hostId")
NO_HOST_ID = "the server has no hostId (is it ACTIVE?)"
# a node whose providerID names a server Nova does not list: its host cannot be read
NO_SERVER = "no such server in Nova (or these credentials cannot see it)"


class Worker:
    """A worker VM as OpenStack sees it."""

    __slots__ = ("name", "server_id", "addresses", "host", "host_id", "zone")

    def __init__(self, name: str, server_id: str, addresses: Iterable[str],
                 host: str | None = None, host_id: str | None = None, zone: str | None = None):
        self.name, self.server_id, self.addresses = name, server_id, tuple(addresses)
        self.host, self.host_id, self.zone = host or None, host_id or None, zone or None


class KubeNode:
    """A Kubernetes node: name, InternalIP addresses, current labels, the Nova server its
    spec.providerID names (``labeling.provider_id.ProviderID``; None: names none), and
    whether it carries the taint ``constants.HOST_UNKNOWN_TAINT``. Built from a Node
    object by ``labeling.nodes.kube_node``."""

    __slots__ = ("name", "internal_ips", "labels", "provider", "host_unknown")

    def __init__(self, name: str, internal_ips: Iterable[str], labels: Mapping[str, str],
                 provider: ProviderID | None = None, host_unknown: bool = False):
        self.name, self.internal_ips, self.labels = name, tuple(internal_ips), dict(labels)
        self.provider, self.host_unknown = provider, host_unknown

    @property
    def provider_id(self) -> str | None:
        """The server id the node's providerID names, or None."""
        return self.provider.server_id if self.provider else None


class Assignment:
    __slots__ = ("worker", "node", "host", "labels", "error")

    def __init__(self, worker: Worker, node: KubeNode | None = None, host: str | None = None,
                 labels: Mapping[str, str] | None = None, error: str | None = None):
        self.worker, self.node, self.host = worker, node, host
        self.labels, self.error = labels or {}, error


class LabelPlan:
    def __init__(self, assignments: Sequence["Assignment"], source: str,
                 colocated: Mapping[str, Sequence[str]], on_colocation: str):
        self.assignments, self.source = assignments, source
        self.colocated, self.on_colocation = colocated, on_colocation

    @property
    def errors(self) -> list[str]:
        out = ["%s (server %s): %s" % (a.worker.name, a.worker.server_id, a.error)
               for a in self.assignments if a.error]
        if self.colocated and self.on_colocation == "fail":
            out.extend(colocation_messages(self.colocated))
        return out

    @property
    def warnings(self) -> list[str]:
        if self.colocated and self.on_colocation in ("warn", "respread"):
            return colocation_messages(self.colocated)
        return []

    def desired(self) -> dict[str, dict[str, str]]:
        """{node: {key: value}} for every matched worker."""
        return {a.node.name: dict(a.labels) for a in self.assignments if a.node and not a.error}

    def changes(self) -> dict[str, dict[str, str]]:
        """{node: {key: value}} where a node's label differs from what it should be."""
        out = {}
        for a in self.assignments:
            if a.node and not a.error:
                diff = {k: v for k, v in a.labels.items() if a.node.labels.get(k) != v}
                if diff:
                    out[a.node.name] = diff
        return out

    def host_known(self) -> list[str]:
        """The nodes carrying the host-unknown taint whose labels this plan makes true (a
        matched worker, no error): once the labels are applied, the taint is lifted."""
        return sorted(a.node.name for a in self.assignments
                      if a.node and not a.error and a.node.host_unknown)

    def mapping(self) -> list[dict[str, Any]]:
        """The worker -> host -> node report (log and VNF instance metadata)."""
        return [{"worker": a.worker.name, "server": a.worker.server_id, "host": a.host,
                 "hostSource": self.source, "node": a.node.name if a.node else None,
                 "labels": dict(a.labels), "error": a.error} for a in self.assignments]


def colocation_messages(colocated):
    return ["workers %s share compute host %s: one hardware fault takes them all down"
            % (", ".join(sorted(names)), host) for host, names in sorted(colocated.items())]


def choose_source(workers: Sequence[Worker], host_source: str) -> str:
    """host or hostId: 'auto' is host when the VIM user sees hosts (every worker has one)."""
    if host_source != "auto":
        return host_source
    return "host" if workers and all(w.host for w in workers) else "hostId"


class NodeIndex:
    """The nodes of a cluster by the server their providerID names and by InternalIP.
    REGION: the region of the credentials (None: unknown); a node whose providerID
    names another region belongs to another cloud and is matched to no worker."""

    def __init__(self, nodes: Iterable[KubeNode], region: str | None = None):
        self.region = region or None
        self.by_server: dict[str, list[KubeNode]] = {}
        self.by_ip: dict[str, list[KubeNode]] = {}
        for n in nodes:
            if n.provider is not None:
                self.by_server.setdefault(n.provider.server_id, []).append(n)
            for ip in n.internal_ips:
                self.by_ip.setdefault(ip, []).append(n)

    def foreign(self, node: KubeNode) -> bool:
        """Does NODE's providerID name a region other than the credentials'?"""
        return bool(self.region and node.provider and node.provider.region
                    and node.provider.region != self.region)

    def named(self, worker: Worker) -> list[KubeNode]:
        """The nodes whose providerID names WORKER's server, in this region."""
        return [n for n in self.by_server.get(_id(worker), ()) if not self.foreign(n)]

    def by_address(self, worker: Worker) -> dict[str, KubeNode]:
        """{name: node} of the nodes with an InternalIP among WORKER's addresses."""
        return {n.name: n for ip in worker.addresses for n in self.by_ip.get(ip, ())}

    def serverless(self, server_ids: Iterable[str]) -> list[KubeNode]:
        """The nodes, by name, whose providerID names a server of this region that
        SERVER_IDS (every server Nova lists) lacks: nodes whose host cannot be read."""
        listed = {i.lower() for i in server_ids}
        return sorted((n for sid, named in self.by_server.items() if sid not in listed
                       for n in named if not self.foreign(n)), key=lambda n: n.name)

    def eligible(self, worker: Worker) -> list[KubeNode]:
        """The nodes WORKER may be the VM of: those whose providerID names its server;
        if none, those with an InternalIP among its addresses and no providerID of
        their own (a node whose providerID names another server is that server's,
        whatever its address)."""
        named = self.named(worker)
        if named:
            return named
        if self.by_server.get(_id(worker)):
            return []       # named in another region only: never by address
        return [n for _, n in sorted(self.by_address(worker).items()) if n.provider is None]


def _id(worker):
    """WORKER's server id as a providerID gives it (UUIDs in lower case)."""
    return (worker.server_id or "").lower()


def node_of(worker: Worker, index: NodeIndex) -> tuple[KubeNode | None, str | None]:
    """(node, None) when exactly one node of INDEX (a :class:`NodeIndex`) is WORKER's:
    the node whose spec.providerID names its server, else the one node with an
    InternalIP among its addresses and no providerID naming another server; else
    (None, why not), naming both ways of matching (never a guess between nodes)."""
    found = index.eligible(worker)
    if len(found) == 1:
        return found[0], None
    names = ", ".join(sorted(n.name for n in found))
    if found and index.named(worker):
        return None, "several nodes have a providerID naming server %s: %s" % (
            worker.server_id, names)
    if found:
        return None, ("addresses %s match several nodes: %s (none has a providerID naming "
                      "server %s)" % (", ".join(worker.addresses), names, worker.server_id))
    return None, _unmatched(worker, index)


def _unmatched(worker, index):
    """Why no node is WORKER's."""
    addresses = ", ".join(worker.addresses or ("<no address>",))
    elsewhere = index.by_server.get(_id(worker), ())
    if elsewhere:
        return ("node(s) %s have a providerID naming server %s in region %s, but the "
                "credentials are for region %s: another cloud's node, not matched (by "
                "providerID or by InternalIP)" % (
                    ", ".join(sorted(n.name for n in elsewhere)), worker.server_id,
                    ", ".join(sorted({n.provider.region for n in elsewhere})), index.region))
    taken = sorted(index.by_address(worker).values(), key=lambda n: n.name)
    if taken:
        return ("no node has a providerID naming server %s, and the node(s) with an "
                "InternalIP among %s are another server's by their providerID (%s): an "
                "address reused by a new VM, not matched (has this server's node joined?)" % (
                    worker.server_id, addresses,
                    ", ".join("%s: %s" % (n.name, provider_id.text(n.provider))
                              for n in taken)))
    return ("no Kubernetes node has an InternalIP among %s or a providerID naming server "
            "%s (has it joined the cluster? hwaffinity_param.join_timeout waits for it)"
            % (addresses, worker.server_id))


def plan(workers: Sequence[Worker], nodes: Iterable[KubeNode], hw: HwParams,
         region: str | None = None) -> LabelPlan:
    """The LabelPlan for WORKERS over NODES with the parameters HW (``params.HwParams``);
    REGION: the credentials' region (``NodeIndex``)."""
    source = choose_source(workers, hw.host_source)
    index = NodeIndex(nodes, region)
    assignments: list[Assignment] = []
    hosts: dict[str, list[str]] = {}
    for w in workers:
        raw = w.host if source == "host" else w.host_id
        if not raw:
            assignments.append(Assignment(w, error=NO_HOST if source == "host" else NO_HOST_ID))
            continue
        host = label_value(raw)
        hosts.setdefault(host, []).append(w.name)
        node, error = node_of(w, index)
        if error:
            assignments.append(Assignment(w, host=host, error=error))
            continue
        labels = {k: host for k in hw.label_keys}
        if hw.zone_label_key and w.zone:
            labels[hw.zone_label_key] = label_value(w.zone)
        assignments.append(Assignment(w, node=node, host=host, labels=labels))
    colocated = {h: names for h, names in hosts.items() if len(names) > 1}
    return LabelPlan(assignments, source, colocated, hw.on_colocation)
