"""Stale host labels: each node's host label against the host Nova reports for its VM now.

A node is matched to a Nova server as the controller and the MgmtDriver match them
(``labeling.plan.NodeIndex``): the server its spec.providerID names, else the server one
of whose addresses is the node's InternalIP (unless the node's providerID names another
server: the address was reused), never by name. The servers are every server Nova lists
that is a node of the cluster: no Heat stack or metadata is needed. The label a node
should carry is what ``labeling.plan`` would set: the server's ``host``
(``label_value``-sanitised), or its ``hostId`` when the credentials do not see hosts
(``labeling.plan.choose_source``, ``--host-source``) or the key is
``topology.openstack.org/host-id`` or ``topology.scs.community/host-id``. One Nova call
(``/servers/detail``, all projects if Nova allows it: ``openstack.servers.ServerPoll``),
whatever the number of nodes.

Each node checked gets a state:

* ``ok``: the label is what Nova says;
* ``stale``: the label names another host (a live migration or an evacuation the
  labels have not followed), or the node has no label although its VM is known;
* ``moving``: the VM is being migrated (its host is not settled): not judged;
* ``unknown``: no server Nova lists is the node's VM (the VM was deleted, or belongs to
  a project the credentials do not see), and the node carries the label or its
  spec.providerID names an OpenStack server of the credentials' region
  (``openstack:///ID``, ``openstack://REGION/ID``): ``server`` is then that id, and
  the node's host cannot be read;
* ``ambiguous``: several servers have its address: not judged.

A node with neither the label, nor a server, nor such a providerID is no worker the
labels manage and is left out, and so is a control-plane node without the label (and
without such a providerID) that no pod may land on
(kubeadm's ``node-role.kubernetes.io/control-plane`` or ``master`` taint, NoSchedule or
NoExecute): the masters of a cluster whose workers the MgmtDriver labels.
``check_nodes`` is pure; ``check`` reads the credentials and Nova.
"""
import argparse
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from tacker_hwaffinity.constants import (CONTROL_PLANE_TAINTS, OPENSTACK_HOST_ID_LABEL,
                                         SCS_HOST_ID_LABEL)
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.labeling import provider_id
from tacker_hwaffinity.labeling.nodes import NodeObjectError, kube_node
from tacker_hwaffinity.labeling.plan import NO_SERVER, NodeIndex, Worker, choose_source
from tacker_hwaffinity.labeling.sanitize import label_value

HOST_ID_KEYS = (OPENSTACK_HOST_ID_LABEL, SCS_HOST_ID_LABEL)    # hold Nova's hostId
MOVING = ("MIGRATING", "RESIZE", "VERIFY_RESIZE", "REVERT_RESIZE", "REBUILD", "BUILD")
STATES = ("stale", "unknown", "moving", "ambiguous", "ok")   # worst first


class NodeCheck(typing.NamedTuple):
    node: str
    state: str              # one of STATES
    label: typing.Optional[str]      # the node's label now (None: none)
    expected: typing.Optional[str]   # what Nova says it should be (None: no server)
    server: typing.Optional[str] = None
    server_name: typing.Optional[str] = None
    status: typing.Optional[str] = None
    provider: typing.Optional[provider_id.ProviderID] = None    # the node's, if any

    def to_json(self):
        return {"node": self.node, "state": self.state, "label": self.label,
                "novaHost": self.expected, "server": self.server,
                "serverName": self.server_name, "serverStatus": self.status}

    def message(self, key):
        if self.state == "stale" and self.label is None:
            return "node %s has no %s label; Nova has its VM %s on %s" % (
                self.node, key, self.server_name or self.server, self.expected)
        if self.state == "stale":
            return "node %s is labelled %s=%s but Nova has its VM %s on %s" % (
                self.node, key, self.label, self.server_name or self.server, self.expected)
        if self.state == "unknown" and self.server and self.provider:
            return "node %s (%s): providerID %s: %s" % (
                self.node, "labelled %s=%s" % (key, self.label) if self.label is not None
                else "no %s label" % key, provider_id.text(self.provider), NO_SERVER)
        if self.state == "unknown":
            return ("node %s (labelled %s=%s): no Nova server is its VM (%s; VM deleted, "
                    "or not visible to these credentials)" % (
                        self.node, key, self.label,
                        "none is %s" % provider_id.text(self.provider) if self.provider else
                        "none has its address"))
        if self.state == "moving":
            return "node %s: its VM %s is moving (%s)" % (
                self.node, self.server_name or self.server, self.status)
        if self.state == "ambiguous":
            return "node %s: several Nova servers have its address: %s" % (
                self.node, self.server)
        return "node %s: %s=%s as Nova says" % (self.node, key, self.label)


class StaleReport:
    """KEY: the label checked; SOURCE: "host" or "hostId"; CHECKS: [NodeCheck]."""

    def __init__(self, key, source, checks, scope=None):
        self.key, self.source, self.scope = key, source, scope
        rank = {s: i for i, s in enumerate(STATES)}
        self.checks = sorted(checks, key=lambda c: (rank[c.state], c.node))

    def of(self, state):
        return [c for c in self.checks if c.state == state]

    @property
    def stale(self):
        return self.of("stale")

    @property
    def unknown(self):
        return self.of("unknown")

    def problems(self):
        """Stale and unknown nodes: what ``--fail-on stale-labels`` fails on."""
        return self.stale + self.unknown

    def nova_hosts(self):
        """{node: the label value Nova's host gives it} for the nodes judged (ok or
        stale): what an audit counts them on when it trusts Nova over the labels."""
        return {c.node: c.expected for c in self.checks if c.state in ("ok", "stale")}

    def to_json(self):
        return {"key": self.key, "hostSource": self.source, "novaScope": self.scope,
                "nodes": [c.to_json() for c in self.checks],
                "counts": {s: len(self.of(s)) for s in STATES}}

    def text_lines(self):
        lines = ["%s labels against Nova (%s): %s" % (
            self.key, self.source, ", ".join("%d %s" % (len(self.of(s)), s) for s in STATES))]
        lines.extend("  %-9s %s" % (c.state, c.message(self.key))
                     for c in self.checks if c.state != "ok")
        return lines


# What the check reads of a Node: keep these when reading a snapshot or the API server
# (objects.pruning keep= / SNAPSHOT_FIELDS shape).
NODE_FIELDS = {"metadata": ("name", "labels"), "spec": ("providerID",),
               "status": ("addresses",)}


def nodes_from_objects(objects):
    """[labeling.plan.KubeNode] from Kubernetes Node objects (dicts: metadata.name,
    metadata.labels, spec.providerID, status.addresses); InputError for a nameless one."""
    try:
        return [kube_node(obj) for obj in objects]
    except NodeObjectError as e:
        raise InputError(str(e), obj="Node", field="metadata.name") from None


def tainted_masters(objects):
    """Names of the Node objects a control-plane taint keeps pods off (see the module)."""
    out = set()
    for obj in objects:
        spec = obj.get("spec") if isinstance(obj, dict) else None
        taints = spec.get("taints") if isinstance(spec, dict) else None
        if isinstance(taints, list) and any(
                isinstance(t, dict) and t.get("key") in CONTROL_PLANE_TAINTS
                and t.get("effect") in ("NoSchedule", "NoExecute") for t in taints):
            out.add(obj["metadata"]["name"])
    return out


def source_for(key, host_source="auto"):
    """host_source as labeling.plan takes it: the host-id keys always hold hostIds."""
    if host_source == "auto" and key in HOST_ID_KEYS:
        return "hostId"
    return host_source


def servers_of(nodes, servers, region=None):
    """{node name: [the servers of SERVERS that node may be the VM of]}: the planner's
    rule (``labeling.plan.NodeIndex.eligible``) seen from the nodes."""
    index = NodeIndex(nodes, region)
    matched = {n.name: [] for n in nodes}
    for s in servers:
        if s.status != "DELETED":
            for n in index.eligible(Worker(s.name, s.id, s.addresses)):
                matched[n.name].append(s)
    return matched


def check_nodes(nodes, servers, key, host_source="auto", scope=None, region=None,
                masters=frozenset()):
    """StaleReport of NODES ([labeling.plan.KubeNode]) against SERVERS
    ([openstack.servers.ServerState]); REGION: the credentials' region; MASTERS: the
    names of the nodes ``tainted_masters`` found."""
    matched = servers_of(nodes, servers, region)
    serverless = {n.name for n in NodeIndex(nodes, region).serverless(
        s.id for s in servers if s.status != "DELETED")}
    settled = [s[0] for s in matched.values() if len(s) == 1]
    source = choose_source(settled, source_for(key, host_source))
    checks = []
    for n in nodes:
        label, found = n.labels.get(key), matched[n.name]
        if n.name in serverless:        # its providerID names a server Nova lacks
            checks.append(NodeCheck(n.name, "unknown", label, None, n.provider_id,
                                    provider=n.provider))
            continue
        if label is None and n.name in masters:
            continue
        if not found:
            if label is not None:
                checks.append(NodeCheck(n.name, "unknown", label, None,
                                        provider=n.provider))
            continue
        if len(found) > 1:
            checks.append(NodeCheck(n.name, "ambiguous", label, None,
                                    ", ".join(sorted(s.id for s in found))))
            continue
        s = found[0]
        raw = s.host if source == "host" else s.host_id
        expected = label_value(raw) if raw else None
        if s.status in MOVING or s.task_state or not expected:
            state = "moving"
        else:
            state = "ok" if label == expected else "stale"
        checks.append(NodeCheck(n.name, state, label, expected, s.id, s.name,
                                s.status + ("/%s" % s.task_state if s.task_state else "")))
    return StaleReport(key, source, checks, scope)


def register_openstack_args(parser: argparse.ArgumentParser) -> None:
    """The OpenStack flags of ``hwaffinity audit``: credentials as ``relabel`` takes
    them (clouds.yaml or OS_*), used only when ``--openstack`` or ``--os-cloud`` is
    given."""
    g = parser.add_argument_group(
        "stale labels (OpenStack)",
        "compare every node's host label with the host Nova reports for its VM now: the "
        "server its spec.providerID names (openstack:///ID), else the server with its "
        "InternalIP; every server that is a node of the cluster, no stack or metadata "
        "needed (credentials from clouds.yaml or the OS_* variables, as 'hwaffinity "
        "relabel')")
    g.add_argument("--openstack", action="store_true",
                   help="check the labels against Nova with the OS_* credentials "
                        "(implied by --os-cloud)")
    g.add_argument("--os-cloud", metavar="NAME",
                   help="cloud in clouds.yaml (default: $OS_CLOUD, else the OS_* variables)")
    g.add_argument("--host-source", choices=("auto", "host", "hostId"), default="auto",
                   help="compare with Nova's host (admin) or hostId; auto: host when the "
                        "credentials see it, hostId for the %s keys"
                        % " and ".join(HOST_ID_KEYS))
    g.add_argument("--nova-scope", choices=("auto", "all-projects", "project"),
                   default="auto",
                   help="which servers to list: all projects (all_tenants=1), the "
                        "credentials' project, or auto (all projects if Nova allows it)")


def wanted(args: argparse.Namespace) -> bool:
    """True when the arguments ask for the Nova check."""
    return bool(getattr(args, "openstack", False) or getattr(args, "os_cloud", None))


def check(args: argparse.Namespace, node_objects: Sequence[Mapping[str, Any]], key: str,
          openstack: Any = None) -> StaleReport:
    """StaleReport of NODE_OBJECTS (Kubernetes Node dicts: status.addresses,
    spec.providerID) on the
    label KEY, from one Nova list with the credentials ARGS name. OpenStack failing
    (unreachable, refused credentials) is an InputError naming --os-cloud."""
    from tacker_hwaffinity.openstack import access_from_environment
    from tacker_hwaffinity.openstack.api import OpenStack, OpenStackError
    from tacker_hwaffinity.openstack.auth import session
    from tacker_hwaffinity.openstack.servers import ServerPoll
    if openstack is None:
        access = access_from_environment(args.os_cloud)
        openstack = OpenStack(session(access), region_name=access.get("region_name"))
    poll = ServerPoll(openstack, scope=args.nova_scope)
    try:
        servers = poll.poll()
    except OpenStackError as e:
        raise InputError("Nova: %s" % e, field="--os-cloud") from None
    except Exception as e:  # noqa: BLE001 - transport errors: one line, no traceback
        raise InputError("Nova not reached: %s" % e, field="--os-cloud") from None
    scope = "all-projects" if poll.all_tenants else "project"
    return check_nodes(nodes_from_objects(node_objects), servers, key,
                       args.host_source, scope, getattr(openstack, "region_name", None),
                       tainted_masters(node_objects))
