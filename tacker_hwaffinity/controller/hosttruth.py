"""Host truth before scheduling: a node carrying the host-unknown taint
(``constants.HOST_UNKNOWN_TAINT``; the kubelet registers with it, or the webhook adds it
when the Node is created) has it lifted once its host labels are Nova's answer; until
then no pod that does not tolerate it is bound there. A tainted node whose host cannot
be read keeps it, with a Warning Event on the node and the gauge
``hwaffinity_controller_nodes_host_unknown{reason}`` saying why:

* ``no-server``: no worker server matches the node (its providerID names a server Nova
  does not list to these credentials, or no worker has its InternalIP);
* ``unresolved``: a worker matches it but its host cannot be said (the planner's error,
  e.g. two nodes claim the server);
* ``moving``: its server is being built or migrated: judged once it settles;
* ``not-ready``: the node is not Ready: judged once it is;
* ``unlabelled``: its labels are not Nova's yet (the relabel failed; tried again).

A worker's node that is not Ready (its Ready condition says False or Unknown) gets the
taint too, with a ``HostUnverified`` Event: its VM may be rebooting, or coming back on
another compute host (an evacuation, a cold migration), and a node whose Node object
survives that does not register again, so nothing else would taint it. Once it is Ready
and its labels are Nova's answer again, the taint is lifted as above. (It is not
schedulable while down anyway: kube's node lifecycle controller taints it not-ready.)

When the controller's workers are every node of the cluster (``--cluster-nodes``), a node
without the taint whose providerID names an OpenStack server (``openstack://``) of its
region that Nova does not list to its credentials gets the taint too (``no-server``, a
``HostUnknown`` Warning): a node that registered before the webhook's configuration
existed, or whose VM went. A node with no such providerID is left alone: it may be a
bare-metal node of a hybrid cluster, which no Nova server stands behind; and so is a
control-plane node (kubeadm's taint), as the webhook leaves it.

After each Nova poll ``controller.hostlabels.HostLabels`` hands over what it knows: the
planner's assignments of every worker and the labels it has just applied.
"""
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import Gauge

from tacker_hwaffinity.constants import HOST_UNKNOWN_TAINT
from tacker_hwaffinity.controller.hosts import SETTLED
from tacker_hwaffinity.kube import taints
from tacker_hwaffinity.kube.client import KubeError
from tacker_hwaffinity.labeling import provider_id
from tacker_hwaffinity.labeling.nodes import carries_control_plane, carries_host_unknown
from tacker_hwaffinity.labeling.plan import Assignment
from tacker_hwaffinity.openstack.servers import ServerState

REASONS = ("no-server", "unresolved", "moving", "not-ready", "unlabelled")
TAINT = {"key": HOST_UNKNOWN_TAINT, "effect": "NoSchedule"}


class HostTruth:
    """Lifts the taint through CONN while TERM (``controller.term.Term``) confirms the
    lease; Events through EVENTS (``controller.events.EventLog``); GAUGE: the gauge
    above (label ``reason``). DRY_RUN: only say what would be lifted. EVERY_NODE: the
    workers are every node of the cluster (``WorkerSelector.covers_every_node``), in
    REGION (None: unknown): a node naming a server Nova does not list is tainted."""

    def __init__(self, conn: Any, gauge: Gauge, term: Any, events: Any, log: logging.Logger,
                 dry_run: bool = False, every_node: bool = False,
                 region: str | None = None) -> None:
        self.conn, self.gauge, self.term, self.events = conn, gauge, term, events
        self.log, self.dry_run = log, dry_run
        self.every_node, self.region = every_node, region
        for reason in REASONS:
            gauge.labels(reason).set(0)

    def judge(self, node_objs: Iterable[Any], assignments: Iterable[Assignment],
              workers: Mapping[str, ServerState], labelled: Mapping[str, Mapping[str, str]]
              ) -> None:
        """Judge every tainted node of NODE_OBJS (the node cache's) by ASSIGNMENTS (the
        planner's, of every worker server), WORKERS (server id -> its state) and
        LABELLED (node -> the labels applied to it by this poll): lift the taint where
        the labels are Nova's, else say why not."""
        by_node = {a.node.name: a for a in assignments if a.node is not None}
        counts = dict.fromkeys(REASONS, 0)
        for obj in node_objs:
            spec = obj.get("spec") or {}
            name = obj["metadata"]["name"]
            if not carries_host_unknown(spec.get("taints")):
                if name in by_node:
                    if not _ready(obj) and self._taint(obj, "Normal", "HostUnverified", (
                            "the node is not Ready: its VM may come back on another "
                            "compute host; %s until Nova's host is read again"
                            % HOST_UNKNOWN_TAINT)):
                        counts["not-ready"] += 1
                    continue
                unlisted = self._unlisted(obj, workers)
                if unlisted and self._taint(obj, "Warning", "HostUnknown", "%s added: %s" % (
                        HOST_UNKNOWN_TAINT, unlisted)):
                    counts["no-server"] += 1
                continue
            reason, why = _why_unknown(obj, by_node.get(name), workers, labelled.get(name))
            if reason is None and not self._lift(obj, by_node[name]):
                reason, why = "unlabelled", "the node changed while its taint was lifted"
            if reason is not None:
                counts[reason] += 1
                if reason != "not-ready":   # said by HostUnverified, and by the node itself
                    self.events.record(obj, "Warning", "HostUnknown", "%s stays: %s"
                                       % (HOST_UNKNOWN_TAINT, why))
        for reason, n in counts.items():
            self.gauge.labels(reason).set(n)

    def _unlisted(self, obj: Any, workers: Mapping[str, ServerState]) -> str | None:
        """Why OBJ, a node without the taint, is to get it when the workers are every
        node: its providerID names a server of this region that is no worker Nova lists
        (None: it names none, it is a control-plane node, or the workers are not every
        node)."""
        spec = obj.get("spec") or {}
        if not self.every_node or carries_control_plane(spec.get("taints")):
            return None
        named = provider_id.parse(spec.get("providerID"))
        if named is None or named.server_id in workers or (
                named.region and self.region and named.region != self.region):
            return None
        return ("its providerID %s names server %s, which Nova does not list to these "
                "credentials" % (spec["providerID"], named.server_id))

    def _taint(self, obj: Any, kind: str, reason: str, text: str) -> bool:
        """Taint OBJ, saying TEXT in an Event of KIND and REASON; False when it was not
        (the node changed since it was read, a dry run, or the API failed: judged
        again)."""
        name, meta = obj["metadata"]["name"], obj["metadata"]
        if self.dry_run:
            self.log.info("node %s: a dry run, not done: %s", name, text)
            return False
        try:
            with self.term.acting("adding %s to node %s" % (HOST_UNKNOWN_TAINT, name)):
                added = taints.add(self.conn, name, meta["uid"], meta.get("resourceVersion"),
                                   (obj.get("spec") or {}).get("taints"), TAINT)
        except KubeError as e:
            self.log.warning("node %s: %s not added: %s", name, HOST_UNKNOWN_TAINT, e)
            return False
        if added:
            self.log.info("node %s: %s", name, text)
            self.events.record(obj, kind, reason, text)
        return added

    def _lift(self, obj: Any, a: Assignment) -> bool:
        """Lift the taint from OBJ, whose labels are Nova's (A); False when the node
        changed since it was read (judged again at the next poll)."""
        name = obj["metadata"]["name"]
        text = "host %s is Nova's answer for server %s: %s lifted" % (
            a.host, a.worker.server_id, HOST_UNKNOWN_TAINT)
        if self.dry_run:
            self.log.info("node %s: would lift %s (host %s)", name, HOST_UNKNOWN_TAINT, a.host)
            return True
        try:
            with self.term.acting("lifting %s from node %s" % (HOST_UNKNOWN_TAINT, name)):
                lifted = taints.lift(self.conn, name, obj["metadata"]["uid"],
                                     obj["spec"]["taints"], HOST_UNKNOWN_TAINT)
        except KubeError as e:
            self.log.warning("node %s: %s not lifted: %s", name, HOST_UNKNOWN_TAINT, e)
            return False
        if lifted:
            self.log.info("node %s: %s", name, text)
            self.events.record(obj, "Normal", "HostKnown", text)
        return lifted


def _why_unknown(obj: Any, a: Assignment | None, workers: Mapping[str, ServerState],
                 applied: Mapping[str, str] | None) -> tuple[str | None, str]:
    """(reason, message) of why OBJ's host is not known (reason None: it is) from its
    assignment A, the WORKERS' states and the labels APPLIED to it by this poll."""
    if a is None:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        provider = spec.get("providerID")
        if provider:
            return "no-server", ("its providerID %s names no worker server Nova lists to "
                                 "these credentials" % provider)
        ips = [x.get("address") for x in status.get("addresses") or ()
               if isinstance(x, dict) and x.get("type") == "InternalIP"]
        return "no-server", ("no worker server has its InternalIP (%s)"
                             % (", ".join(str(i) for i in ips) or "none"))
    if a.error:
        return "unresolved", "server %s: %s" % (a.worker.server_id, a.error)
    state = workers.get(a.worker.server_id)
    if state is None or state.status not in SETTLED or state.task_state:
        return "moving", "server %s is %s%s: judged once it settles" % (
            a.worker.server_id, state.status if state else "gone",
            " (%s)" % state.task_state if state and state.task_state else "")
    if not _ready(obj):
        return "not-ready", "the node is not Ready: judged once it is"
    current = applied if applied is not None else obj["metadata"].get("labels") or {}
    wrong = sorted(k for k, v in a.labels.items() if current.get(k) != v)
    if wrong:
        return "unlabelled", "its label %s is not yet Nova's answer (%s)" % (
            ", ".join(wrong), ", ".join("%s=%s" % (k, a.labels[k]) for k in wrong))
    return None, ""


def to_judge(obj: Any) -> bool:
    """Has the node OBJ anything for ``HostTruth.judge`` to do: it carries the taint, or
    it is not Ready?"""
    return carries_host_unknown((obj.get("spec") or {}).get("taints")) or not _ready(obj)


def _ready(obj: Any) -> bool:
    """Is the node OBJ Ready? Only a Ready condition that says False or Unknown is not
    (a node the kubelet has not reported on yet has none, and is judged as it is)."""
    status = obj.get("status") or {}
    for cond in status.get("conditions") or ():
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return cond.get("status") not in ("False", "Unknown")
    return True
