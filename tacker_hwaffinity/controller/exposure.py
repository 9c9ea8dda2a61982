"""The controller's exposure gauges: what one physical host failing would take, per workload,
and which node labels are stale, computed from the controller's caches.

Once per Nova poll (never per tick), the leader (or a ``--dry-run`` controller) computes:

* per workload (``namespace``, ``kind``, ``name``; a Deployment's pods are counted under the
  Deployment, through their ReplicaSet's name and ``pod-template-hash``; bare pods are
  their own workload): running replicas, replicas on the most loaded host, the share of
  the running replicas one host failing takes (``loss ratio``), and, when its pods carry
  RequiredDuringExecution rules on the host key, whether they hold now (1/0);
* per worker node, whether its host label is stale (1: Nova has its VM on another host
  than the label says; 0: the label is right).

Hosts are Nova's, not the labels': a node whose VM Nova places on another host than its
label says counts on Nova's host (so a live migration shows at once, before any relabel);
other nodes count on their label's value, and a node without the label is its own host.
Denominators are the running replicas (the controller does not cache Deployments), so a
workload that lost replicas to a host already looks as it runs now.

Pods are grouped into workloads by the audit's rule (``audit.owners.workload_of``). The
intent is the RequiredDuringExecution rules, judged by the controller's own evaluation
(``controller.rules``, what it enforces) on Nova's hosts: ``hwaffinity audit``
(``audit.core``) also judges scheduling-time anti-affinity and topology spread with the
scheduling engine, which needs the pods' full specs (the controller's cache keeps a
projection) and costs about 2 s per computation at 5,000 pods, against 15 ms here.

Cardinality is bounded: only workloads with two or more running replicas, or with rules,
are exported, at most ``max_workloads`` of them (the worst first: 500 by default, four
series each, so at most 2,000 workload series); the rest are counted in
``hwaffinity_exposure_workloads_dropped``. A workload that went (or fell under the bar)
has its series removed at the next computation; a leader that stands down removes all of
its series (only the leader exports them).
"""
import time

from tacker_hwaffinity.audit import owners
from tacker_hwaffinity.controller import rules as rulesmod

MAX_WORKLOADS = 500     # x 4 gauges: at most 2,000 workload series
WORKLOAD_LABELS = ("namespace", "kind", "name")


class ExposureMetrics:
    def __init__(self, registry):
        from prometheus_client import Gauge, Histogram
        w = WORKLOAD_LABELS
        self.replicas = Gauge("hwaffinity_workload_replicas",
                              "Running replicas of the workload", w, registry=registry)
        self.busiest = Gauge("hwaffinity_workload_replicas_on_busiest_host",
                             "Running replicas on the physical host that carries the most",
                             w, registry=registry)
        self.loss = Gauge("hwaffinity_workload_host_loss_ratio",
                          "Share of the running replicas one physical host failing takes "
                          "(the worst host)", w, registry=registry)
        self.intent = Gauge("hwaffinity_workload_intent_met",
                            "1 when the workload's RequiredDuringExecution rules on the host "
                            "key hold now, 0 when not (workloads with rules only)",
                            w, registry=registry)
        self.stale = Gauge("hwaffinity_node_label_stale",
                           "1 when the node's host label is not the host Nova reports for "
                           "its VM now, else 0 (worker nodes only)", ["node"],
                           registry=registry)
        self.dropped = Gauge("hwaffinity_exposure_workloads_dropped",
                             "Workloads not exported at the last computation: over the "
                             "cap", registry=registry)
        self.seconds = Histogram("hwaffinity_exposure_seconds",
                                 "One computation of the exposure gauges",
                                 registry=registry)


class Workload:
    __slots__ = ("namespace", "kind", "name", "hosts", "pods", "has_rules", "violated")

    def __init__(self, namespace, kind, name):
        self.namespace, self.kind, self.name = namespace, kind, name
        self.hosts = {}             # host -> running replicas
        self.pods = 0
        self.has_rules = False
        self.violated = False

    @property
    def key(self):
        return (self.namespace, self.kind, self.name)

    @property
    def busiest(self):
        return max(self.hosts.values(), default=0)

    @property
    def loss(self):
        return self.busiest / self.pods if self.pods else 0.0


def owner_of(meta):
    """(kind, name) of the workload a pod belongs to: the audit's rule
    (``audit.owners.workload_of`` without the owners, which the controller does not cache)."""
    return owners.workload_of(meta)


def workloads(pod_objs, host_of, violators=()):
    """{key: Workload} of the running pods POD_OBJS, each counted on HOST_OF(node name)
    (None: the node is unknown, the pod is not counted); VIOLATORS: keys
    (namespace/name) of pods breaking a rule on the host key."""
    out = {}
    violators = set(violators)
    for obj in pod_objs:
        meta, spec = obj["metadata"], obj.get("spec") or {}
        node = spec.get("nodeName")
        if not node or meta.get("deletionTimestamp") \
                or (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        host = host_of(node)
        if host is None:
            continue
        ns = meta.get("namespace") or "default"
        kind, name = owner_of(meta)
        w = out.get((ns, kind, name))
        if w is None:
            w = out[(ns, kind, name)] = Workload(ns, kind, name)
        w.pods += 1
        w.hosts[host] = w.hosts.get(host, 0) + 1
        if (meta.get("annotations") or {}).get(rulesmod.ANNOTATION):
            w.has_rules = True
        if "%s/%s" % (ns, meta["name"]) in violators:
            w.violated = True
    return out


class Exposure:
    """Sets METRICS (ExposureMetrics) from the caches; KEY: the host label."""

    def __init__(self, metrics, key, max_workloads=MAX_WORKLOADS, log=None):
        self.metrics, self.key, self.max_workloads, self.log = metrics, key, max_workloads, log
        self.exported = set()       # workload keys with series
        self.nodes_exported = set()
        self.capped = False         # said once per crossing

    def update(self, node_objs, pod_objs, nova_hosts, stale, violations=()):
        """NOVA_HOSTS: {node: label value Nova's host gives it}; STALE: {node: bool} for
        the worker nodes; VIOLATIONS: rulesmod.Violation of the running pods (their
        keys judge the intent, on this key only)."""
        t0 = time.monotonic()
        labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in node_objs}

        def host_of(node):
            if node not in labels:
                return None
            return nova_hosts.get(node) or labels[node].get(self.key) or "node/" + node
        violators = {v.pod.key for v in violations if v.key in (None, self.key)}
        found = workloads(pod_objs, host_of, violators)
        chosen = [w for w in found.values() if w.pods >= 2 or w.has_rules]
        chosen.sort(key=lambda w: (-w.loss, -w.busiest, w.key))
        dropped = max(0, len(chosen) - self.max_workloads)
        chosen = chosen[:self.max_workloads]
        m = self.metrics
        for w in chosen:
            k = w.key
            m.replicas.labels(*k).set(w.pods)
            m.busiest.labels(*k).set(w.busiest)
            m.loss.labels(*k).set(w.loss)
            if w.has_rules:
                m.intent.labels(*k).set(0 if w.violated else 1)
            elif k in self.exported:
                _remove(m.intent, k)
        now = {w.key for w in chosen}
        for k in self.exported - now:
            for g in (m.replicas, m.busiest, m.loss, m.intent):
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


    def clear(self):
        """Remove every series (the term ended: a standby exports none, so that the
        new leader's are the only ones)."""
        m = self.metrics
        for k in self.exported:
            for g in (m.replicas, m.busiest, m.loss, m.intent):
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
