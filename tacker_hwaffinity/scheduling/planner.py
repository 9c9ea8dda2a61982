"""Schedule pods one at a time, as kube-scheduler does: filter, score, pick, bind."""
from collections.abc import Iterable, Sequence
from typing import Any, TypedDict

from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL
from tacker_hwaffinity.scheduling import sampling
from tacker_hwaffinity.scheduling.arrays import BoolArray
from tacker_hwaffinity.scheduling.framework import Evaluation, Framework
from tacker_hwaffinity.scheduling.model import Pod
from tacker_hwaffinity.scheduling.plugins import Rejection
from tacker_hwaffinity.scheduling.state import ClusterState

# each note says "<subject> use(s)": the pod, or every pod of its workload (one note for all)
GT_LT_NOTE = ("%s Gt/Lt in a pod (anti-)affinity label selector: a hwaffinity "
              "extension (the Gt/Lt proposal) that plain Kubernetes rejects")
NOT_MODELLED_NOTE = ("%s %s, which kube-scheduler's plugins check and the plan does "
                     "not model: it assumes every node passes them")
PREEMPTION_NOTE = ("%s no node: kube-scheduler's DefaultPreemption would then try "
                   "to evict lower-priority pods to make room, which is not modelled")


def preemption_note(keys: Sequence[str]) -> str:
    """The one note on preemption for the pods KEYS (in order) that fit no node."""
    if len(keys) == 1:
        return PREEMPTION_NOTE % ("pod %s fits" % keys[0])
    return PREEMPTION_NOTE % ("pods %s fit" % pod_run(keys))


def pod_run(keys: Sequence[str]) -> str:
    """KEYS (pod keys, in order) in a few words: a comma list of up to three, else
    ``first .. last (N pods)``."""
    if len(keys) <= 3:
        return ", ".join(keys)
    return "%s .. %s (%d pods)" % (keys[0], keys[-1], len(keys))


def pod_notes(pod: Pod) -> list[str]:
    """What a person should know about how this pod's spec is read: said once of all the
    pods of its workload (their specs are the one template's), else of the pod."""
    made = pod.workload is not None and not pod.workload.startswith("Pod ")
    who = "the pods of %s" % pod.workload if made else "pod %s" % pod.key
    uses = who + (" use" if made else " uses")
    notes = [NOT_MODELLED_NOTE % (uses, what) for what in pod.spec.unmodelled]
    if pod.spec.uses_extension:
        notes.append(GT_LT_NOTE % uses)
    if pod.spec.required_node is not None:
        for err in pod.spec.required_node.errors:
            notes.append("%s: a required node selector term never matches, as in "
                         "kube-scheduler: %s" % (who, err))
    return notes


class Unfit:
    """Why no node took a pod: the engine's filter verdicts of its cycle. ``prefilter``:
    (plugin, message) of a PreFilter that rejected every node, or None; ``absent``: the
    nodes PreFilter results left out (bool per node) or None; ``rejections``: filter
    plugin name -> its ``Rejection`` (only the plugins that rejected a node)."""

    __slots__ = ("prefilter", "absent", "rejections")

    def __init__(self, ev: Evaluation) -> None:
        self.prefilter: tuple[str, str] | None = ev.prefilter_msg
        self.absent: BoolArray | None = ev.prefilter_absent
        self.rejections: dict[str, Rejection] = {
            f.name: r for f, r in zip(ev.filters, ev.rejections) if r is not None}


class Placement:
    """One pod's outcome: its node and domain, or (node None) the engine's summary in
    ``reasons`` and its filter verdicts in ``unfit``."""

    __slots__ = ("pod", "node", "domain", "reasons", "unfit")

    def __init__(self, pod: Pod, node: str | None, domain: str | None, reasons: list[str],
                 unfit: Unfit | None = None) -> None:
        self.pod, self.node, self.domain, self.reasons = pod, node, domain, reasons
        self.unfit = unfit


class Unplaced(TypedDict):
    """One workload with replicas left over (``diagnosis.unplaced``)."""

    workload: str
    placed: int
    desired: int
    reason: str
    limit: int | None


class Plan:
    """The placements in scheduling order; ``warnings`` and ``unplaced`` (one record per
    workload with replicas left over) are filled by ``diagnosis.diagnose``."""

    def __init__(self, placements: list[Placement], topology_key: str, notes: list[str]) -> None:
        self.placements, self.topology_key, self.notes = placements, topology_key, notes
        self.warnings: list[str] = []
        self.unplaced: list[Unplaced] = []

    @property
    def complete(self) -> bool:
        """Every pod placed, and no workload left short (a DaemonSet on no node is one)."""
        return all(p.node is not None for p in self.placements) and not self.unplaced

    def domains(self) -> dict[str, list[str]]:
        """Topology value -> pods placed there, in scheduling order (values sorted)."""
        out: dict[str, list[str]] = {}
        for p in self.placements:
            if p.domain is not None:
                out.setdefault(p.domain, []).append(p.pod.key)
        return dict(sorted(out.items()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "topologyKey": self.topology_key,
            "placements": [{"pod": p.pod.key, "node": p.node, "domain": p.domain,
                            "reasons": list(p.reasons)} for p in self.placements],
            "domains": self.domains(),
            "notes": list(self.notes),
            "warnings": list(self.warnings),
            "unplaced": [dict(u) for u in self.unplaced],
        }


def plan(state: ClusterState, framework: Framework, pods: Iterable[Pod],
         topology_key: str = DEFAULT_HOST_LABEL) -> Plan:
    """Place PODS in order on STATE (mutated: placed pods are bound)."""
    placements: list[Placement] = []
    notes: list[str] = []
    unfit: list[str] = []
    seen: set[str] = set()
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
            placements.append(Placement(pod, None, None, [ev.summary()], Unfit(ev)))
            unfit.append(pod.key)
            continue
        state.bind(pod, i)
        node = state.nodes[i]
        placements.append(Placement(pod, node.name, node.labels.get(topology_key), []))
    if unfit and framework.preemption:
        notes.append(preemption_note(unfit))
    sampled_note = sampling.sampling_note(percentage, len(state.nodes), sampled)
    if sampled_note:
        notes.append(sampled_note)
    return Plan(placements, topology_key, notes)
