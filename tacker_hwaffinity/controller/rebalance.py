"""Rebalancing (``--rebalance``): after each Nova poll, the leader plans with
``audit.rebalance`` on its caches and evicts what the plan says, through the Eviction API.

The plan judges the workloads on the hosts Nova reports now (as the exposure gauges do),
with the default scheduler profile predicting where each replacement goes: an eviction
is planned only where that place exists and keeps the workload's intent (anti-affinity,
required or preferred, and topology spread on the host key), never past a
PodDisruptionBudget, at most ``limit`` per poll. A workload whose eviction failed (a
budget the server enforces, 429; a refusal; an API error) sits out the next run, so that
one workload the server never lets move cannot take every run's ``limit`` from the
others (the plan is worst first). A workload whose intent includes the
``hwaffinity.io/required-during-execution`` annotation is left to its enforcement
(``controller.enforcement``; ``audit.rebalance``), so a pod is never evicted twice for
one move.

descheduler's conventions, so that an operator who knows descheduler reads it at once:

* Events on the pod: an eviction is a Normal Event whose reason is the strategy
  (``RemovePodsViolatingInterPodAntiAffinity``, ``RemovePodsViolatingTopologySpreadConstraint``)
  and whose message starts "pod eviction from NODE node by hwaffinity-controller"; one
  that failed, or that the plan did not attempt (a budget, no place), is a Warning
  ``EvictionFailed`` with the same words and "failed: " or "not attempted: " and why;
* the counter ``hwaffinity_rebalance_pods_evicted_total`` with descheduler's labels
  (``result``, ``strategy``, ``namespace``, ``node``, ``profile``); ``result`` is
  ``success``, ``dry-run``, ``blocked`` (a budget, 429), ``gone``, ``refused``, ``error``
  or ``not-attempted``.

In a dry run (``--dry-run``) the API server decides each eviction without doing it
(``dryRun: All``): the log says what would be evicted and whether a budget would allow
it; no Event is recorded, nothing changes.
"""
import dataclasses
import typing

from prometheus_client import Counter

from tacker_hwaffinity.audit import rebalance as planner
from tacker_hwaffinity.controller.events import COMPONENT
from tacker_hwaffinity.kube import evict as evictmod
from tacker_hwaffinity.kube.client import KubeError
from tacker_hwaffinity.scheduling.profile import Profile
from tacker_hwaffinity.scheduling.snapshot import SELECTOR_KINDS

PROFILE = "default-scheduler"       # the profile the replacements are predicted with


class RebalanceMetrics:
    def __init__(self, registry):
        self.evicted = Counter(
            "hwaffinity_rebalance_pods_evicted", "Rebalancing evictions by result, as "
            "descheduler's descheduler_pods_evicted", ["result", "strategy", "namespace",
                                                       "node", "profile"],
            registry=registry)


class Cache(typing.Protocol):
    """An informer's cache as rebalancing reads it (``kube.informer.Informer``)."""

    def list(self) -> typing.List[typing.Any]: ...


@dataclasses.dataclass(frozen=True)
class RebalanceInputs:
    """What rebalancing works with: KEY, the host label; LIMIT, the most evictions a
    run; the caches OWNERS (of the pods' owner kinds) and PDBS (None: not read);
    METRICS, its counter."""

    key: str
    limit: int
    owners: typing.Sequence[Cache]
    pdbs: typing.Optional[Cache]
    metrics: RebalanceMetrics


class Rebalancer:
    """Plans and evicts with INPUTS (``RebalanceInputs``). TERM, EVENTS, LOG: the
    controller's (``controller.runner``)."""

    def __init__(self, conn, settings, inputs: RebalanceInputs, term, events, log):
        self.conn, self.s, self.key, self.limit = conn, settings, inputs.key, inputs.limit
        self.owners, self.pdbs = tuple(inputs.owners), inputs.pdbs
        self.metrics = inputs.metrics
        self.term, self.events, self.log = term, events, log
        self.framework = Profile().framework()
        # workloads whose eviction failed in the last run: they sit out the next
        self.failed: typing.Set[typing.Tuple[str, ...]] = set()

    def run(self, node_objs, pod_objs, namespace_objs, nova_hosts, report=None):
        """One run on the caches' objects; NOVA_HOSTS: {node: the host Nova gives it};
        REPORT: the exposure gauges' audit of the same objects (None: audited here)."""
        owner_objs = [o for cache in self.owners for o in cache.list()]
        plan = planner.plan(
            node_objs, pod_objs, self.key,
            self.framework, limit=self.limit, owners=owner_objs if self.owners else None,
            pdbs=self.pdbs.list() if self.pdbs is not None else (),
            namespace_objs=namespace_objs, host_override=nova_hosts,
            selector_objs=[o for o in owner_objs if o.get("kind") in SELECTOR_KINDS],
            report=report, skip=self.failed)
        self.failed = set()
        for held in plan.held:
            self._failed(held.pod, held.strategy, "not attempted: " + held.reason,
                         "not-attempted")
        for e in plan.evictions:
            self._evict(e)

    def _evict(self, e):
        try:
            with self.term.acting("evicting pod %s (rebalance)" % e.key):
                result = evictmod.evict(self.conn, e.namespace, e.name, uid=e.uid,
                                        dry_run=self.s.dry_run)
        except KubeError as err:
            self.failed.add(e.workload)
            self._count("error", e.strategy, e.namespace, e.node)
            self.log.warning("rebalance: pod %s not evicted: %s", e.key, err)
            self._failed(e.pod, e.strategy, "failed: %s" % err, None)
            return
        if result.outcome != "evicted":
            self._count(result.outcome, e.strategy, e.namespace, e.node)
            self.log.info("rebalance: pod %s not evicted (%s): %s", e.key, result.outcome,
                          result.message)
            if result.outcome != "gone":
                self.failed.add(e.workload)
                self._failed(e.pod, e.strategy, "failed: %s" % result.message, None)
            return
        if self.s.dry_run:
            self._count("dry-run", e.strategy, e.namespace, e.node)
            self.log.info("rebalance (dry run): would evict pod %s from node %s: %s",
                          e.key, e.node, e.message())
            return
        self._count("success", e.strategy, e.namespace, e.node)
        self.log.info("rebalance: evicted pod %s from node %s: %s", e.key, e.node,
                      e.message())
        self.events.record(e.pod, "Normal", e.strategy, "pod eviction from %s node by %s: %s"
                           % (e.node, COMPONENT, e.message()))

    def _failed(self, pod, strategy, text, result):
        """A Warning EvictionFailed on POD; counted under RESULT unless None."""
        node = (pod.get("spec") or {}).get("nodeName") or ""
        if result is not None:
            self._count(result, strategy, pod["metadata"].get("namespace") or "default", node)
        self.events.record(pod, "Warning", "EvictionFailed", "pod eviction from %s node by "
                           "%s %s" % (node, COMPONENT, text))

    def _count(self, result, strategy, namespace, node):
        self.metrics.evicted.labels(result, strategy, namespace, node, PROFILE).inc()


