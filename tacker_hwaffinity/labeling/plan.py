"""Decide the labels: worker -> compute host -> Kubernetes node -> label changes.

Workers come from OpenStack (Heat/Nova), nodes from Kubernetes; a worker is
matched to the node whose InternalIP is one of the worker's addresses (never
by guessing names). Every problem is reported per worker; nothing is
skipped silently.
"""
from tacker_hwaffinity.labeling.sanitize import label_value

NO_HOST = ("the compute host is not visible (Nova attribute OS-EXT-SRV-ATTR:host): the VIM "
           "user lacks the admin role that policy os_compute_api:os-extended-server-attributes "
           "requires; give it the role, or set hwaffinity_param.host_source to hostId")
NO_HOST_ID = "the server has no hostId (is it ACTIVE?)"


class Worker:
    """A worker VM as OpenStack sees it."""

    __slots__ = ("name", "server_id", "addresses", "host", "host_id", "zone")

    def __init__(self, name, server_id, addresses, host=None, host_id=None, zone=None):
        self.name, self.server_id, self.addresses = name, server_id, tuple(addresses)
        self.host, self.host_id, self.zone = host or None, host_id or None, zone or None


class KubeNode:
    """A Kubernetes node: name, InternalIP addresses, current labels."""

    __slots__ = ("name", "internal_ips", "labels")

    def __init__(self, name, internal_ips, labels):
        self.name, self.internal_ips, self.labels = name, tuple(internal_ips), dict(labels)


class Assignment:
    __slots__ = ("worker", "node", "host", "labels", "error")

    def __init__(self, worker, node=None, host=None, labels=None, error=None):
        self.worker, self.node, self.host = worker, node, host
        self.labels, self.error = labels or {}, error


class LabelPlan:
    def __init__(self, assignments, source, colocated, on_colocation):
        self.assignments, self.source = assignments, source
        self.colocated, self.on_colocation = colocated, on_colocation

    @property
    def errors(self):
        out = ["%s (server %s): %s" % (a.worker.name, a.worker.server_id, a.error)
               for a in self.assignments if a.error]
        if self.colocated and self.on_colocation == "fail":
            out.extend(colocation_messages(self.colocated))
        return out

    @property
    def warnings(self):
        if self.colocated and self.on_colocation == "warn":
            return colocation_messages(self.colocated)
        return []

    def desired(self):
        """{node: {key: value}} for every matched worker."""
        return {a.node.name: dict(a.labels) for a in self.assignments if a.node and not a.error}

    def changes(self):
        """{node: {key: value}} where a node's label differs from what it should be."""
        out = {}
        for a in self.assignments:
            if a.node and not a.error:
                diff = {k: v for k, v in a.labels.items() if a.node.labels.get(k) != v}
                if diff:
                    out[a.node.name] = diff
        return out

    def mapping(self):
        """The worker -> host -> node report (log and VNF instance metadata)."""
        return [{"worker": a.worker.name, "server": a.worker.server_id, "host": a.host,
                 "hostSource": self.source, "node": a.node.name if a.node else None,
                 "labels": dict(a.labels), "error": a.error} for a in self.assignments]


def colocation_messages(colocated):
    return ["workers %s share compute host %s: one hardware fault takes them all down"
            % (", ".join(sorted(names)), host) for host, names in sorted(colocated.items())]


def choose_source(workers, host_source):
    """host or hostId: 'auto' is host when the VIM user sees hosts (every worker has one)."""
    if host_source != "auto":
        return host_source
    return "host" if workers and all(w.host for w in workers) else "hostId"


def nodes_by_ip(nodes):
    """{InternalIP: [the nodes that have it]} of NODES."""
    by_ip = {}
    for n in nodes:
        for ip in n.internal_ips:
            by_ip.setdefault(ip, []).append(n)
    return by_ip


def node_of(worker, by_ip):
    """(node, None) when exactly one node has an InternalIP among WORKER's addresses,
    else (None, why not): no such node, or several (never a guess between them).
    BY_IP: :func:`nodes_by_ip` of the cluster's nodes."""
    matches = {n.name: n for ip in worker.addresses for n in by_ip.get(ip, ())}
    if not matches:
        return None, ("no Kubernetes node has an InternalIP among %s (has it joined the "
                      "cluster? hwaffinity_param.join_timeout waits for it)"
                      % ", ".join(worker.addresses or ("<no address>",)))
    if len(matches) > 1:
        return None, "addresses %s match several nodes: %s" % (
            ", ".join(worker.addresses), ", ".join(sorted(matches)))
    return next(iter(matches.values())), None


def plan(workers, nodes, hw):
    """The LabelPlan for WORKERS over NODES with validated parameters HW."""
    source = choose_source(workers, hw["host_source"])
    by_ip = nodes_by_ip(nodes)
    assignments, hosts = [], {}
    for w in workers:
        raw = w.host if source == "host" else w.host_id
        if not raw:
            assignments.append(Assignment(w, error=NO_HOST if source == "host" else NO_HOST_ID))
            continue
        host = label_value(raw)
        hosts.setdefault(host, []).append(w.name)
        node, error = node_of(w, by_ip)
        if error:
            assignments.append(Assignment(w, host=host, error=error))
            continue
        labels = {k: host for k in hw["label_keys"]}
        if hw.get("zone_label_key") and w.zone:
            labels[hw["zone_label_key"]] = label_value(w.zone)
        assignments.append(Assignment(w, node=node, host=host, labels=labels))
    colocated = {h: names for h, names in hosts.items() if len(names) > 1}
    return LabelPlan(assignments, source, colocated, hw["on_colocation"])
