"""The audit: every workload's running replicas per physical host, what the worst single
host failing takes, its PodDisruptionBudgets after that, its intent on the host key and
whether it is met now. Pure: raw Kubernetes objects in, a Report out (no I/O).

Hosts are the nodes' values of the host label KEY (HOST_OVERRIDE {node: host} first, e.g.
the host Nova reports now: the intent is then judged on those hosts too); a node without
the label is its own host ``node/<name>``, flagged ``labelled: false``. Running = bound
to a known node, not terminal (Succeeded/Failed), not being deleted. Every structure is
indexed once: O(nodes + pods).
"""
import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from tacker_hwaffinity.audit import intent as intentmod
from tacker_hwaffinity.audit import owners as ownersmod
from tacker_hwaffinity.audit.pdb import Budget
from tacker_hwaffinity.constants import TERMINAL_PHASES, UNLABELLED_HOST_PREFIX
from tacker_hwaffinity.scheduling import selectors
from tacker_hwaffinity.scheduling.diagnosis import missing_label_warning
from tacker_hwaffinity.scheduling.labelindex import LabelIndex

VERSION = 1
# What the verdict (``intent``) reads of a judged pod's spec: its terms and constraints,
# where it runs and the nodes it may run on; not its containers (nor their requests).
JUDGED_SPEC = ("nodeName", "nodeSelector", "tolerations", "affinity",
               "topologySpreadConstraints")


class Exposure:
    """One workload's figures; ``to_json()`` is its JSON record."""

    __slots__ = ("namespace", "kind", "name", "desired", "desired_from", "running", "hosts",
                 "worst_host", "worst_loss", "loss_ratio", "pdbs", "intent", "intent_met",
                 "violations", "unprotected", "pods", "unjudged")

    def __init__(self, namespace, kind, name):
        self.namespace, self.kind, self.name = namespace, kind, name
        self.hosts, self.pods = {}, []
        self.running, self.desired, self.desired_from = 0, 0, "running"
        self.worst_host, self.worst_loss, self.loss_ratio = None, 0, 0.0
        self.pdbs, self.intent, self.intent_met, self.violations = [], [], None, []
        self.unprotected = False
        self.unjudged = False       # a pod's term annotations are malformed

    @property
    def key(self):
        return (self.namespace, self.kind, self.name)

    @property
    def pdb_holds(self):
        return all(p["holds"] for p in self.pdbs) if self.pdbs else None

    def finish(self):
        if self.hosts:
            # the worst host: most replicas; ties by host name, so the output is stable
            self.worst_host, self.worst_loss = min(self.hosts.items(),
                                                   key=lambda kv: (-kv[1], kv[0]))
        den = self.desired or self.running
        self.loss_ratio = min(1.0, self.worst_loss / den) if den else 0.0

    def to_json(self):
        return {"namespace": self.namespace, "kind": self.kind, "name": self.name,
                "desired": self.desired, "desiredFrom": self.desired_from,
                "running": self.running,
                "hosts": [{"host": h, "replicas": n} for h, n in
                          sorted(self.hosts.items(), key=lambda kv: (-kv[1], kv[0]))],
                "worstHost": self.worst_host, "worstLoss": self.worst_loss,
                "lossRatio": round(self.loss_ratio, 4),
                "pdbs": self.pdbs, "pdbHoldsAfterWorstHost": self.pdb_holds,
                "intent": self.intent, "intentMet": self.intent_met,
                "violations": self.violations, "unprotected": self.unprotected}


class Report:
    """The audit's answer; ``failures``: [(what, exception)] of the pods and workloads
    whose evaluation raised, left out (one object's problem, never the report's);
    ``warnings``: likely input mistakes (``cli/warnings.py`` prints them)."""

    def __init__(self, key, workloads, hosts, notes, failures=(), warnings=(), engine=None):
        self.key, self.workloads, self.hosts, self.notes = key, workloads, hosts, notes
        self.failures = list(failures)
        self.warnings = list(warnings)
        # (ClusterState, {pod key: (engine pod, node index)}) the intents were judged on,
        # every running pod bound, when audit() was asked to keep it and a workload
        # declares an intent; else None (audit.rebalance)
        self.engine = engine

    def to_json(self):
        return {"version": VERSION, "topologyKey": self.key,
                "hosts": [{"host": h, "labelled": lab, "nodes": n}
                          for h, (lab, n) in sorted(self.hosts.items())],
                "workloads": [w.to_json() for w in self.workloads],
                "notes": list(self.notes), "warnings": list(self.warnings)}


def _running(obj):
    spec, meta = obj.get("spec") or {}, obj.get("metadata") or {}
    return bool(spec.get("nodeName")) and not meta.get("deletionTimestamp") \
        and (obj.get("status") or {}).get("phase") not in TERMINAL_PHASES


def host_index(node_objs, key, host_override=None):
    """({node: host}, {host: (labelled, nodes)})."""
    override = host_override or {}
    of, hosts = {}, {}
    for n in node_objs:
        meta = n.get("metadata") or {}
        name = meta.get("name") or ""
        h = override.get(name) or (meta.get("labels") or {}).get(key)
        labelled = h is not None
        if not labelled:
            h = UNLABELLED_HOST_PREFIX + name
        of[name] = h
        lab, cnt = hosts.get(h, (True, 0))
        hosts[h] = (lab and labelled, cnt + 1)
    return of, hosts


def audit(node_objs: Iterable[Mapping[str, Any]], pod_objs: Iterable[Mapping[str, Any]],
          key: str, owners: Iterable[Mapping[str, Any]] | None = None,
          pdbs: Iterable[Mapping[str, Any]] = (), host_override: Mapping[str, str] | None = None,
          namespace_objs: Iterable[Mapping[str, Any]] = (),
          selector_objs: Iterable[Mapping[str, Any]] = (), keep_engine: bool = False
          ) -> Report:
    """Report for the cluster given as raw objects. OWNERS: raw ReplicaSets, Deployments,
    StatefulSets, DaemonSets and Jobs, or None (group pods by owner reference alone, see
    ``owners``); PDBS: raw PodDisruptionBudgets; NAMESPACE_OBJS / SELECTOR_OBJS: Namespaces
    and Services etc. for the engine (namespace selectors, default spreading).
    KEEP_ENGINE: keep the snapshot the intents were judged on in ``Report.engine``, and
    each workload's running raw pods in its ``pods`` (for ``audit.rebalance``; otherwise
    both are freed as soon as they are used)."""
    node_objs, pod_objs = list(node_objs), list(pod_objs)
    owner_index = ownersmod.index_owners(owners) if owners is not None else None
    host_of, hosts = host_index(node_objs, key, host_override)
    found: dict[tuple[str, str, str], Exposure] = {}
    notes: list[str] = []
    pending = 0
    failures: list[tuple[str, Exception]] = []
    for obj in pod_objs:
        try:
            pending += _count_pod(obj, found, host_of, owner_index)
        except Exception as e:  # noqa: BLE001 - that pod is left out and named
            failures.append(("pod %s" % _pod_name(obj), e))
    if pending:
        notes.append("%d pod(s) are not scheduled yet: not counted on any host" % pending)
    for k, w in list(found.items()):
        try:
            w.desired, w.desired_from = ownersmod.desired(owner_index, w.namespace, w.kind,
                                                          w.name, w.running)
            w.finish()
        except Exception as e:  # noqa: BLE001 - that workload is left out and named
            failures.append(("workload %s" % "/".join(map(str, k)), e))
            del found[k]
    _budgets(found.values(), pdbs, host_of)
    engine = _intents(found, relabelled(node_objs, key, host_override), namespace_objs,
                      selector_objs, key, notes, keep_engine)
    for w in found.values():
        w.unprotected = max(w.desired, w.running) >= 2 and not w.intent and not w.unjudged
    # worst first; single-replica workloads (always lose everything) after the rest
    ordered = sorted(found.values(), key=lambda w: (
        max(w.desired, w.running) < 2, -w.loss_ratio, -w.worst_loss,
        w.intent_met is not False, w.namespace, w.kind, w.name))
    if not keep_engine:         # audit.rebalance moves the workloads' running pods
        for w in ordered:
            w.pods = []
    notes.extend("%s left out: it could not be evaluated (%s: %.200s)"
                 % (what, type(e).__name__, e) for what, e in failures)
    return Report(key, ordered, hosts, notes, failures,
                  key_warnings(node_objs, key) if host_override is None else (),
                  engine if keep_engine else None)


def key_warnings(node_objs, key):
    """A host KEY no node carries (the nodes lacking it in part are the text's 'Unknown
    host' line already)."""
    label_keys = {k for n in node_objs for k in ((n.get("metadata") or {}).get("labels")
                                                  or {})}
    if not node_objs or key in label_keys:
        return []
    return [missing_label_warning("--topology-key", key, label_keys)]


def _count_pod(obj, found, host_of, owner_index):
    """Count pod OBJ in its workload of FOUND; 1 when it is not scheduled yet, else 0."""
    if not _running(obj):
        return int(not (obj.get("spec") or {}).get("nodeName") and
                   (obj.get("status") or {}).get("phase") not in TERMINAL_PHASES)
    h = host_of.get(obj["spec"]["nodeName"])
    if h is None:
        return 0
    meta = obj["metadata"]
    ns = meta.get("namespace") or "default"
    kind, name = ownersmod.workload_of(meta, owner_index)
    w = found.get((ns, kind, name))
    if w is None:
        w = found[(ns, kind, name)] = Exposure(ns, kind, name)
    w.running += 1
    w.hosts[h] = w.hosts.get(h, 0) + 1
    w.pods.append(obj)
    return 0


def _pod_name(obj):
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    return "%s/%s" % (meta.get("namespace"), meta.get("name"))


def relabelled(node_objs, key, host_override):
    """NODE_OBJS with KEY set to HOST_OVERRIDE's host where it names one (shallow
    copies): the intent is judged on the hosts the replicas are counted on."""
    if not host_override:
        return node_objs
    out = []
    for n in node_objs:
        meta = n.get("metadata") or {}
        h = host_override.get(meta.get("name"))
        if h is not None and (meta.get("labels") or {}).get(key) != h:
            n = dict(n, metadata=dict(meta, labels=dict(meta.get("labels") or {}, **{key: h})))
        out.append(n)
    return out


def _budgets(workloads, pdb_objs, host_of):
    # budgets indexed by (namespace, key, value) of their first In/= requirement, so a
    # workload looks only at those its labels can meet (the rest: per namespace, scanned)
    indexed, scanned, n = {}, {}, 0
    for obj in pdb_objs:
        b, n = Budget(obj), n + 1
        for r in b.selector.requirements:
            if r.op in (selectors.IN, selectors.EQUALS):
                for v in r.values:
                    indexed.setdefault((b.namespace, r.key, v), []).append(b)
                break
        else:
            scanned.setdefault(b.namespace, []).append(b)
    if not n:
        return
    for w in workloads:
        items = {kv for p in w.pods for kv in (p["metadata"].get("labels") or {}).items()}
        cands = list(scanned.get(w.namespace, ()))
        for k, v in items:
            cands.extend(indexed.get((w.namespace, k, v), ()))
        seen = set()
        for b in cands:
            if id(b) in seen:
                continue
            seen.add(id(b))
            mine = [p for p in w.pods if b.selector.matches(
                (p["metadata"].get("labels") or {}))]
            if not mine:
                continue
            lost = sum(1 for p in mine if host_of[p["spec"]["nodeName"]] == w.worst_host)
            w.pdbs.append(b.after_loss(w.desired, len(mine), lost))
        w.pdbs.sort(key=lambda d: d["name"])


def _judged(obj):
    """Raw pod OBJ with only what the verdict reads of a judged pod's spec (a shallow copy)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return obj
    return dict(obj, spec={k: v for k, v in spec.items() if k in JUDGED_SPEC})


def _counted(obj):
    """Raw pod OBJ with only what the verdict reads of a pod it counts: where it runs and
    its labels (a new object)."""
    meta = obj["metadata"]
    return {"apiVersion": obj.get("apiVersion"), "kind": obj["kind"],
            "metadata": {k: meta[k] for k in ("name", "namespace", "labels") if k in meta},
            "spec": {"nodeName": obj["spec"]["nodeName"]}}


def _selectors_on(pods, key):
    """The label selectors of the anti-affinity terms and spread constraints on KEY of the
    engine PODS, one of each signature."""
    out = {}
    for pod in pods:
        for t in pod.terms["required_anti"] + pod.terms["preferred_anti"]:
            if t.topology_key == key:
                out[t.selector.sig] = t.selector
        for c in pod.spread:
            if c.topology_key == key:
                out[c.selector.sig] = c.selector
    return list(out.values())


def _countable(raw_pods, selectors):
    """The raw pods of RAW_PODS that one of SELECTORS may select, and those whose labels
    are no {string: string} (the engine's parse names what is wrong with them), in order.
    Pods are looked at a label set at a time (a workload's pods share one)."""
    pods_of, label_sets, chosen = {}, LabelIndex(), set()
    for p in raw_pods:
        labels = p["metadata"].get("labels") or {}
        try:
            pods_of.setdefault(frozenset(labels.items()), []).append(p)
        except (AttributeError, TypeError):     # no mapping, or a value no string is
            chosen.add(id(p))
    for labels, pods in pods_of.items():
        if all(isinstance(k, str) and isinstance(v, str) for k, v in labels):
            label_sets.add(labels, dict(labels))
        else:
            chosen.update(map(id, pods))
    for sel in selectors:
        candidates = label_sets.candidates(sel)
        if candidates is None:
            return list(raw_pods)
        for labels in itertools.chain.from_iterable(candidates):
            if sel.matches(dict(labels)):
                chosen.update(map(id, pods_of[labels]))
    return [p for p in raw_pods if id(p) in chosen]


def _intents(found, node_objs, namespace_objs, selector_objs, key, notes, keep_engine=False):
    """Judge the intents of the workloads FOUND that declare one; (state, engine pods)
    of the snapshot they were judged on (``Report.engine``), None when none does.

    Unless KEEP_ENGINE, the engine is given what the verdict reads (``intent``): of the
    judged workloads' pods, their terms, constraints and where they run, not their
    containers; of the others, only the pods a judged term or constraint may select (its
    label selector: the namespaces aside), and of those their labels and node."""
    todo = [w for w in found.values() if w.pods and intentmod.mentions(w.pods[0], key)]
    if not todo:
        return None
    bad = {}    # pod key -> InputError: its term annotations are malformed

    def bad_annotations(obj, e):
        meta = obj["metadata"]
        bad["%s/%s" % (meta.get("namespace") or "default", meta["name"])] = e
    from tacker_hwaffinity.scheduling.snapshot import cluster_from_objects
    objs = [(o, "cluster") for o in node_objs]
    objs += [(o, "cluster") for o in namespace_objs]
    objs += [(o, "cluster") for o in selector_objs]
    if keep_engine:
        objs += [(p, "cluster") for w in found.values() for p in w.pods]
    else:
        objs += [(_judged(p), "cluster") for w in todo for p in w.pods]
    # a pod creator writes the annotations: one malformed pod must not stop the audit
    # (nor the controller's gauges); it counts without them, its workload is not judged
    snap = cluster_from_objects(objs, bad_annotations)
    if not keep_engine:
        judged = {id(w) for w in todo}
        others = [p for w in found.values() if id(w) not in judged for p in w.pods]
        counted = _countable(others, _selectors_on(snap.pods, key)) if others else []
        if counted:
            snap.pods.extend(cluster_from_objects(
                [(o, "cluster") for o in node_objs]
                + [(_counted(p), "cluster") for p in counted]).pods)
    state = snap.state()
    engine = {p.key: (p, state.index[p.node_name]) for p in snap.pods}
    index = intentmod.label_index(state)
    for w in todo:
        broken = [p for p in w.pods if "%s/%s" % (w.namespace, p["metadata"]["name"]) in bad]
        if broken:
            w.unjudged = True
            name = "%s/%s" % (w.namespace, broken[0]["metadata"]["name"])
            notes.append("%s %s/%s: intent not judged: pod %s: field %s: %s" % (
                w.kind, w.namespace, w.name, name, bad[name].field, bad[name].message))
            continue
        first = engine["%s/%s" % (w.namespace, w.pods[0]["metadata"]["name"])][0]
        w.intent = intentmod.declared(first, w.pods[0], key, state.ns_labels(w.namespace))
        if not w.intent:
            continue
        seen, violations = {}, []
        for raw in w.pods:
            pod, i = engine["%s/%s" % (w.namespace, raw["metadata"]["name"])]
            vk = (pod.class_key, int(state.domains(key).ids[i]) if
                  state.domains(key).ids[i] >= 0 else -1 - i)
            reasons = seen.get(vk)
            if reasons is None:
                reasons = seen[vk] = intentmod.verdict(state, pod, i, key, index)
            if reasons:
                violations.append({"pod": pod.name, "node": pod.node_name,
                                   "reasons": reasons})
        w.intent_met = not violations
        w.violations = violations
    return state, engine
