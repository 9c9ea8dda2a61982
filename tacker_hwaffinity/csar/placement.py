"""``hwaffinity plan`` over a CNF package's manifests, as problems.

The manifests' workloads are expanded and scheduled exactly as ``hwaffinity
plan`` does (``snapshot.workloads_from_objects``, ``planner.plan``), in
file-name order, then:

* every pod must be placed;
* a workload whose pods carry a *required* pod anti-affinity term on the
  host label (``CIS-node``) that selects its own pods asks for one replica
  per compute host: the planner, like kube-scheduler, never puts two of them
  on one labelled host (they stay unplaced instead), but a node without the
  label satisfies the term, so a replica placed there is a problem.

A *preferred* term asks for spreading only when possible: replicas sharing
a host are a note, not a problem.
"""
from tacker_hwaffinity.csar.problems import Problem, from_error
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects.naming import object_label
from tacker_hwaffinity.scheduling import planner
from tacker_hwaffinity.scheduling.snapshot import workloads_from_objects


def _asks(pods, kind, key, state):
    """Does a term of KIND ('required_anti'/'preferred_anti') on KEY select the siblings?"""
    if len(pods) < 2:
        return False
    first, other = pods[0], pods[1]
    ns_labels = state.ns_labels(other.namespace)
    return any(t.topology_key == key and t.matches(other.namespace, other.labels, ns_labels)
               for t in first.terms.get(kind, ()))


def _spread(workload, source, pods, placed, state, key, problems, notes):
    """A required term is a filter: the planner never puts two such replicas on one
    labelled host, but a node without the label satisfies it. A preferred term
    yields to capacity: shared hosts are a note."""
    required = _asks(pods, "required_anti", key, state)
    if not required and not _asks(pods, "preferred_anti", key, state):
        return
    by_domain = {}
    for pod in pods:
        p = placed[pod.key]
        if p.node is not None and p.domain is None and required:
            problems.append(Problem(source, "placed on node %s, which has no %s label: the "
                                    "required anti-affinity on %s cannot hold there"
                                    % (p.node, key, key), "pod %s" % pod.key))
        elif p.domain is not None and not required:
            by_domain.setdefault(p.domain, []).append(pod.key)
    for domain, keys in sorted(by_domain.items()):
        if len(keys) > 1:
            notes.append("%s: %s: %d replicas on %s=%s (%s); its anti-affinity on %s is only "
                         "preferred" % (source, workload, len(keys), key, domain,
                                        ", ".join(keys), key))


def check(objects, snapshot, profile, key):
    """(problems, notes, summary) of planning OBJECTS [(object, source)] on SNAPSHOT."""
    problems, notes, groups, pods = [], [], [], []
    seen = {p.key for p in snapshot.pods}
    for obj, source in objects:
        try:
            made, skipped, nowhere = workloads_from_objects([(obj, source)], snapshot,
                                                            avoid=seen)
            notes.extend(skipped)
            problems.extend(Problem(d.source, d.reason, d.workload, "spec.template.spec")
                            for d in nowhere)
        except InputError as e:
            problems.append(from_error(e, source))
            continue
        dup = [p.key for p in made if p.key in seen]
        if dup:
            problems.append(Problem(source, "pod %s is created twice (or already exists in "
                                    "the cluster snapshot)" % dup[0], object_label(obj),
                                    "metadata.name"))
            continue
        seen.update(p.key for p in made)
        if made:
            groups.append((object_label(obj), source, made))
            pods.extend(made)
    state = snapshot.state()
    result = planner.plan(state, profile.framework(), pods, key)
    placed = {p.pod.key: p for p in result.placements}
    for p in result.placements:
        if p.node is None:
            problems.append(Problem(p.pod.source, "not placed: %s" % "; ".join(p.reasons),
                                    "pod %s" % p.pod.key))
    for workload, source, made in groups:
        _spread(workload, source, made, placed, state, key, problems, notes)
    done = [p for p in result.placements if p.node is not None]
    summary = ("plan: %d of %d pods placed on %d distinct %s value(s)"
               % (len(done), len(result.placements), len(result.domains()), key))
    return problems, notes + result.notes, summary
