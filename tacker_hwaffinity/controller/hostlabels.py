"""Node labels follow the VMs: Nova polled, the workers that settled on a new host
relabelled with the MgmtDriver's own planner (``labeling.plan``), an Event on the node.

The host-id labels (``Settings.host_id_labels``: ``topology.openstack.org/host-id``,
``topology.scs.community/host-id``) are part of the same plan: each matched worker's
assignment also carries them, set to Nova's ``hostId`` of its server, so they are
written, compared and judged stale together with the host label, by one code path."""
import dataclasses
import time

from tacker_hwaffinity.controller.events import meta_of
from tacker_hwaffinity.controller.hosts import SETTLED, HostTracker
from tacker_hwaffinity.controller import hosttruth
from tacker_hwaffinity.controller.hosttruth import HostTruth
from tacker_hwaffinity.kube import labels
from tacker_hwaffinity.kube.client import KubeError
from tacker_hwaffinity.labeling import plan as planning
from tacker_hwaffinity.labeling.nodes import kube_node
from tacker_hwaffinity.labeling.sanitize import label_value


class HostLabels:
    """Polls Nova (POLL: ``openstack.servers.ServerPoll``) and relabels the nodes of
    NODES (an informer) whose VM moved, through TERM (``controller.term.Term``) and
    EVENTS (``controller.events.EventLog``); FAILED: ``controller.events.Failures``."""

    def __init__(self, conn, poll, settings, nodes, metrics, term, events, failed, log):
        self.conn, self.poll_nova, self.s, self.nodes = conn, poll, settings, nodes
        self.metrics, self.term, self.events, self.failed = metrics, term, events, failed
        self.log = log
        self.tracker = None         # HostTracker, once the host source is decided
        self.workers = {}           # server id -> ServerState (worker servers only)
        self.moved_nodes = set()    # nodes relabelled since the last move: evicted first
        self.resync = False         # relabel every worker at the next poll
        self.labelled = {}          # node -> the labels this poll applied to it
        self.truth = HostTruth(conn, metrics.nodes_host_unknown, term, events, log,
                               settings.dry_run, settings.workers.covers_every_node,
                               settings.region)

    def concerns(self, event_type, server_id):
        """Does a Nova notification of EVENT_TYPE about SERVER_ID call for a poll: it
        concerns a worker, or may add one."""
        return server_id in self.workers or event_type == "instance.create.end" \
            or self.tracker is None

    def poll(self):
        """Poll Nova and relabel the workers that settled on a new host (all of them
        after the first poll and on a resync), then judge the nodes that carry the
        host-unknown taint. Nova failing keeps the labels and the taints."""
        t0 = time.monotonic()
        try:
            states = self.poll_nova.poll()
        except Exception as e:  # noqa: BLE001 - OpenStackError and transport errors
            self.metrics.poll_errors.inc()
            self.log.warning("Nova poll failed, labels kept as they are: %s", e)
            return
        finally:
            self.metrics.poll.observe(time.monotonic() - t0)
        self.labelled = {}
        self._follow(states)
        self._judge_host_truth()

    def _follow(self, states):
        """Relabel the workers among STATES (one poll's) that settled on a new host."""
        chosen = self.s.workers.select(states)
        ids = {s.id for s in chosen}
        states = chosen + [s for s in states if s.id in self.workers and s.id not in ids]
        first = self.tracker is None
        if first:
            live = [s for s in states if s.status != "DELETED"]
            if not live and self.s.hw.host_source == "auto":
                return      # no worker yet: host or hostId is decided on the first ones
            self.tracker = HostTracker(planning.choose_source(live, self.s.hw.host_source))
        joined = [st for st in states if st.status != "DELETED" and st.id not in self.workers]
        for st in states:
            if st.status == "DELETED":
                self.workers.pop(st.id, None)
            else:
                self.workers[st.id] = st
        moves = self.tracker.update(states)
        moved = {m.server_id: m for m in moves}
        if moves:
            self.moved_nodes = set()    # the pods of these nodes go first (eviction_order)
        if first or self.resync:
            if first:
                self.log.info("Nova: %d worker server(s), hosts by %s", len(self.workers),
                              self.tracker.source)
            self._relabel(list(self.workers.values()), moved)
            self.resync = False         # not reached when the tick was abandoned
        elif moves or joined:
            # a server that became a worker settled (a new node of the cluster) is
            # labelled now; one still building is when it settles (a move)
            todo = [i for i in moved if i in self.workers] + [
                st.id for st in joined if st.id not in moved and st.status in SETTLED
                and not st.task_state]
            self._relabel([self.workers[i] for i in todo], moved)

    def _judge_host_truth(self):
        """Lift the host-unknown taint from the nodes whose labels are now Nova's, and
        taint the workers' nodes that are down and, when the workers are every node, the
        nodes naming a server Nova does not list (``controller.hosttruth``); the plan of
        every worker is made only when a node carries the taint or is not Ready."""
        node_objs = self.nodes.list()
        assignments = (self._plan(list(self.workers.values())).assignments
                       if self.tracker is not None and self.workers
                       and any(map(hosttruth.to_judge, node_objs)) else [])
        self.truth.judge(node_objs, assignments, self.workers, self.labelled)

    def _plan(self, servers):
        """The MgmtDriver planner's Plan for SERVERS on the nodes of the cache, each
        matched worker's labels with the host-id labels (its server's hostId) added."""
        hw = dataclasses.replace(self.s.hw, host_source=self.tracker.source)
        workers = [planning.Worker(s.name, s.id, list(s.addresses), s.host, s.host_id)
                   for s in servers]
        p = planning.plan(workers, self._kube_nodes(), hw, self.s.region)
        if self.s.host_id_labels:
            for a in p.assignments:
                if a.node is not None and not a.error and a.worker.host_id:
                    a.labels.update(dict.fromkeys(self.s.host_id_labels,
                                                  label_value(a.worker.host_id)))
        return p

    def _relabel(self, servers, moves):
        if not servers:
            return
        p = self._plan(servers)
        for err in p.errors:
            self.log.warning("%s", err)
        by_node = {a.node.name: a for a in p.assignments if a.node is not None}
        desired = p.desired()
        for node, wanted in sorted(desired.items()):
            obj = self.nodes.get(None, node)
            if obj is None:
                continue
            current = obj["metadata"].get("labels") or {}
            if all(current.get(k) == v for k, v in wanted.items()):
                continue
            old = {k: current.get(k) for k in wanted}
            if self.s.dry_run:
                self.log.info("would label node %s %s (was %s)", node, wanted, old)
                continue
            try:
                with self.term.acting("relabelling node %s" % node):
                    labels.apply_node_labels(self.conn, node, wanted,
                                             uid=obj["metadata"]["uid"])
            except KubeError as e:
                self.log.warning("node %s not relabelled: %s", node, e)
                continue
            self.metrics.relabels.inc()
            self.labelled[node] = wanted
            a = by_node[node]
            move = moves.get(a.worker.server_id)
            text = ("worker %s (server %s) %s: labels %s" % (
                a.worker.name, a.worker.server_id,
                "moved from host %s to %s" % (move.old, move.new) if move and move.old else
                "settled on host %s after a move" % move.new if move else
                "is on host %s" % a.host,
                ", ".join("%s=%s" % kv for kv in sorted(wanted.items()))))
            self.log.info("node %s: %s", node, text)
            self.moved_nodes.add(node)  # moved, or found on another host (a new term)
            self.events.record(obj, "Normal", "HostLabelChanged", text)

    def _kube_nodes(self):
        """The planner's KubeNodes of the node cache; a node that cannot be read is
        skipped (``failed``)."""
        out = []
        for n in self.nodes.list():
            try:
                out.append(kube_node(n))
            except Exception as e:  # noqa: BLE001 - one node's problem, not the tick's
                self.failed("node", "node %s" % meta_of(n).get("name"), e)
        return out

    def nova_hosts(self, key):
        """({node: the value of label KEY Nova's answer gives it}, {node: label stale?})
        for the worker nodes matched to a settled server, as the relabelling matches
        them."""
        if self.tracker is None or not self.workers:
            return {}, {}
        hosts, stale = {}, {}
        for a in self._plan(self.workers.values()).assignments:
            if a.node is None or a.error or key not in a.labels:
                continue
            state = self.workers[a.worker.server_id]
            if state.status not in SETTLED or state.task_state:
                continue        # moving: not judged until it settles
            hosts[a.node.name] = a.labels[key]
            stale[a.node.name] = a.node.labels.get(key) != a.labels[key]
        return hosts, stale

