"""The controller's exposure gauges: ``hwaffinity audit``'s figures, per workload, and which
node labels are stale, computed from the controller's caches.

Once per Nova poll (never per tick), the leader (or a ``--dry-run`` controller) runs the
audit's pure core (``audit.core.audit``) on its caches: nodes, pods (their projection keeps
what the audit reads: owners, labels, annotations, affinity, topology spread), namespaces,
the owners of the pods (ReplicaSets, Deployments, StatefulSets, DaemonSets, Jobs: the
desired counts) and the PodDisruptionBudgets. So the gauges are the audit's figures, on the
same rules: per workload (``namespace``, ``kind``, ``name``, grouped as the audit groups
them) running and desired replicas, replicas on the worst host, the share of the desired
replicas that host failing takes (``loss ratio``), whether the intent on the host key
(anti-affinity, topology spread, the RequiredDuringExecution annotation) holds now, and
whether its budgets hold after that host fails; per worker node, whether its host label
is stale.

Hosts are Nova's, not the labels': a node whose VM Nova places on another host than its
label says counts, and is judged, on Nova's host (``host_override``), so a live migration
shows at once, before any relabel. A cache that is not synced yet (or a kind the server
does not serve: PodDisruptionBudgets before 1.21) is read as empty: desired counts then
fall back to the running ones, as in the audit.

Cardinality is bounded: only workloads with two or more replicas (desired or running), or
with an intent, are exported, at most ``max_workloads`` of them (the audit's order, worst
first: 500 by default, six series each at most, so at most 3,000 workload series); the
rest are counted in ``hwaffinity_exposure_workloads_dropped``. A workload that went (or
fell under the bar) has its series removed at the next computation; a leader that stands
down removes all of its series (only the leader exports them).
"""
import time

from prometheus_client import Counter, Gauge, Histogram

from tacker_hwaffinity.audit import core as audit
from tacker_hwaffinity.audit import owners
from tacker_hwaffinity.scheduling.snapshot import SELECTOR_KINDS

MAX_WORKLOADS = 500     # x at most 6 gauges: at most 3,000 workload series
WORKLOAD_LABELS = ("namespace", "kind", "name")


class ExposureMetrics:
    def __init__(self, registry):
        w = WORKLOAD_LABELS
        self.replicas = Gauge("hwaffinity_workload_replicas",
                              "Running replicas of the workload", w, registry=registry)
        self.desired = Gauge("hwaffinity_workload_desired_replicas",
                             "Replicas the workload's owner asks for (the running count "
                             "when the owner is not known)", w, registry=registry)
        self.busiest = Gauge("hwaffinity_workload_replicas_on_busiest_host",
                             "Running replicas on the physical host that carries the most",
                             w, registry=registry)
        self.loss = Gauge("hwaffinity_workload_host_loss_ratio",
                          "Share of the desired replicas one physical host failing takes "
                          "(the worst host), as hwaffinity audit's lossRatio",
                          w, registry=registry)
        self.intent = Gauge("hwaffinity_workload_intent_met",
                            "1 when the workload's anti-affinity/spread intent on the host "
                            "key holds now, 0 when not (workloads with an intent only)",
                            w, registry=registry)
        self.pdb = Gauge("hwaffinity_workload_pdb_holds_after_host_loss",
                         "1 when every PodDisruptionBudget of the workload still holds "
                         "after its worst host fails, 0 when not (workloads with budgets "
                         "only)", w, registry=registry)
        self.stale = Gauge("hwaffinity_node_label_stale",
                           "1 when the node's host label is not the host Nova reports for "
                           "its VM now, else 0 (worker nodes only)", ["node"],
                           registry=registry)
        self.dropped = Gauge("hwaffinity_exposure_workloads_dropped",
                             "Workloads not exported at the last computation: over the "
                             "cap", registry=registry)
        self.failures = Counter("hwaffinity_exposure_failures",
                                "Pods and workloads left out of the exposure gauges: their "
                                "evaluation raised, by reason (the exception's type)",
                                ["reason"], registry=registry)
        self.seconds = Histogram("hwaffinity_exposure_seconds",
                                 "One computation of the exposure gauges",
                                 registry=registry)

    def workload_gauges(self):
        return (self.replicas, self.desired, self.busiest, self.loss, self.intent, self.pdb)


def owner_of(meta):
    """(kind, name) of the workload a pod belongs to, when its owners are not known
    (``audit.owners.workload_of``)."""
    return owners.workload_of(meta)


def exported(w):
    """Is audit workload W worth series: two or more replicas, or an intent."""
    return max(w.desired, w.running) >= 2 or bool(w.intent)


class Exposure:
    """Sets METRICS (ExposureMetrics) from the caches; KEY: the host label. OWNERS:
    informers (or anything with ``list()``) of the pods' owner kinds; PDBS: one of the
    PodDisruptionBudgets (None: not read)."""

    def __init__(self, metrics, key, max_workloads=MAX_WORKLOADS, log=None, owners=(),
                 pdbs=None, keep_engine=False):
        self.metrics, self.key, self.max_workloads, self.log = metrics, key, max_workloads, log
        self.keep_engine = keep_engine      # for --rebalance: see take_report
        self.owners, self.pdbs = tuple(owners), pdbs
        self.exported = set()       # workload keys with series
        self.nodes_exported = set()
        self.capped = False         # said once per crossing
        self.report = None          # the last computation's audit Report: take_report

    def update(self, node_objs, pod_objs, nova_hosts, stale, namespace_objs=()):
        """NOVA_HOSTS: {node: label value Nova's host gives it}; STALE: {node: bool} for
        the worker nodes. Returns the exported audit workloads (audit.core.Exposure)."""
        t0 = time.monotonic()
        self.report = None
        owner_objs = [o for cache in self.owners for o in cache.list()]
        report = audit.audit(
            node_objs, pod_objs, self.key, owners=owner_objs if self.owners else None,
            pdbs=self.pdbs.list() if self.pdbs is not None else (),
            host_override=nova_hosts, namespace_objs=namespace_objs,
            selector_objs=[o for o in owner_objs if o.get("kind") in SELECTOR_KINDS],
            keep_engine=self.keep_engine)
        self.report = report
        failures = list(report.failures)
        chosen = [w for w in report.workloads if exported(w)]
        dropped = max(0, len(chosen) - self.max_workloads)
        chosen = chosen[:self.max_workloads]
        m = self.metrics
        now = set()
        for w in chosen:
            try:
                self._set(w)
                now.add(w.key)
            except Exception as e:  # noqa: BLE001 - that workload is left out, counted
                failures.append(("workload %s" % "/".join(map(str, w.key)), e))
                for g in m.workload_gauges():
                    _remove(g, w.key)
        for what, error in failures:
            m.failures.labels(type(error).__name__).inc()
            if self.log is not None:
                self.log.warning("exposure gauges: %s left out: %s: %s", what,
                                 type(error).__name__, error)
        for k in self.exported - now:
            for g in m.workload_gauges():
                _remove(g, k)
        self.exported = now
        m.dropped.set(dropped)
        if dropped and not self.capped and self.log is not None:
            self.log.warning("exposure gauges: %d workload(s) over the cap of %d "
                             "are not exported (the worst are)", dropped, self.max_workloads)
        self.capped = bool(dropped)
        for node, is_stale in stale.items():
            m.stale.labels(node).set(1 if is_stale else 0)
        for node in self.nodes_exported - set(stale):
            _remove(m.stale, (node,))
        self.nodes_exported = set(stale)
        m.seconds.observe(time.monotonic() - t0)
        return chosen

    def take_report(self):
        """The audit Report of the last ``update`` (with its snapshot when KEEP_ENGINE),
        once: it is not kept until the next one (the snapshot is the size of the cluster).
        None when that update failed or it was taken."""
        report, self.report = self.report, None
        return report

    def _set(self, w):
        """The gauges of audit workload W."""
        m, k = self.metrics, w.key
        m.replicas.labels(*k).set(w.running)
        m.desired.labels(*k).set(w.desired)
        m.busiest.labels(*k).set(w.worst_loss)
        m.loss.labels(*k).set(w.loss_ratio)
        for gauge, value in ((m.intent, w.intent_met if w.intent else None),
                             (m.pdb, w.pdb_holds)):
            if value is not None:
                gauge.labels(*k).set(1 if value else 0)
            elif k in self.exported:
                _remove(gauge, k)

    def clear(self):
        """Remove every series (the term ended: a standby exports none, so that the
        new leader's are the only ones)."""
        m = self.metrics
        for k in self.exported:
            for g in m.workload_gauges():
                _remove(g, k)
        for node in self.nodes_exported:
            _remove(m.stale, (node,))
        self.exported, self.nodes_exported = set(), set()
        m.dropped.set(0)


def _remove(gauge, key):
    try:
        gauge.remove(*key)
    except KeyError:
        pass
