"""Schedule pods one at a time, as kube-scheduler does: filter, score, pick, bind."""
from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL
from tacker_hwaffinity.scheduling import sampling

GT_LT_NOTE = ("pod %s uses Gt/Lt in a pod (anti-)affinity label selector: a hwaffinity "
              "extension (the Gt/Lt proposal) that plain Kubernetes rejects")


NOT_MODELLED_NOTE = ("pod %s uses %s, which kube-scheduler's plugins check and the plan does "
                     "not model: it assumes every node passes them")
PREEMPTION_NOTE = ("pod %s fits no node: kube-scheduler's DefaultPreemption would then try "
                   "to evict lower-priority pods to make room, which is not modelled")
NO_IMAGES_NOTE = ("no node lists status.images: ImageLocality scores 0 on every node, as "
                  "kube-scheduler does for nodes that report no images (a live cluster's "
                  "nodes do report them)")


def state_notes(state, framework):
    """What a person should know about how the snapshot is read."""
    scorers = {p.name for p, _ in framework.scorers}
    if "ImageLocality" in scorers and state.nodes and not any(n.images for n in state.nodes):
        return [NO_IMAGES_NOTE]
    return []


def pod_notes(pod):
    """What a person should know about how this pod's spec is read."""
    notes = [NOT_MODELLED_NOTE % (pod.key, what) for what in pod.spec.unmodelled]
    if pod.spec.uses_extension:
        notes.append(GT_LT_NOTE % pod.key)
    if pod.spec.required_node is not None:
        for err in pod.spec.required_node.errors:
            notes.append("pod %s: a required node selector term never matches, as in "
                         "kube-scheduler: %s" % (pod.key, err))
    return notes


class Placement:
    __slots__ = ("pod", "node", "domain", "reasons")

    def __init__(self, pod, node, domain, reasons):
        self.pod, self.node, self.domain, self.reasons = pod, node, domain, reasons


class Plan:
    def __init__(self, placements, topology_key, notes):
        self.placements, self.topology_key, self.notes = placements, topology_key, notes

    @property
    def complete(self):
        return all(p.node is not None for p in self.placements)

    def domains(self):
        """Topology value -> pods placed there, in scheduling order (values sorted)."""
        out = {}
        for p in self.placements:
            if p.domain is not None:
                out.setdefault(p.domain, []).append(p.pod.key)
        return dict(sorted(out.items()))

    def to_dict(self):
        return {
            "topologyKey": self.topology_key,
            "placements": [{"pod": p.pod.key, "node": p.node, "domain": p.domain,
                            "reasons": list(p.reasons)} for p in self.placements],
            "domains": self.domains(),
            "notes": list(self.notes),
        }


def plan(state, framework, pods, topology_key=DEFAULT_HOST_LABEL):
    """Place PODS in order on STATE (mutated: placed pods are bound)."""
    placements, notes = [], state_notes(state, framework)
    seen = set()
    percentage = framework.percentage_of_nodes_to_score
    sampled = 0
    for pod in pods:
        for note in pod_notes(pod):
            if note not in seen:
                seen.add(note)
                notes.append(note)
        ev = framework.evaluate(state, pod)
        if sampling.exceeds_sample(percentage, len(state.nodes), int(ev.feasible.sum())):
            sampled += 1
        i = framework.select(state, ev)
        if i is None:
            placements.append(Placement(pod, None, None, [ev.summary()]))
            if framework.preemption:
                notes.append(PREEMPTION_NOTE % pod.key)
            continue
        state.bind(pod, i)
        node = state.nodes[i]
        placements.append(Placement(pod, node.name, node.labels.get(topology_key), []))
    note = sampling.sampling_note(percentage, len(state.nodes), sampled)
    if note:
        notes.append(note)
    return Plan(placements, topology_key, notes)
