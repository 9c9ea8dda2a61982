"""``hwaffinity explain``: every node's filter verdict and scores for one pod."""
import json
import sys

from tacker_hwaffinity.cli import table
from tacker_hwaffinity.cli.common import add_cluster_args, load_inputs
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling import planner, sampling
from tacker_hwaffinity.scheduling.planner import pod_notes
from tacker_hwaffinity.objects.yamlio import load_objects
from tacker_hwaffinity.scheduling.snapshot import workloads_from_objects


def register(sub):
    p = sub.add_parser("explain", help="why each node can or cannot take a pod, and its scores",
                       description="For one incoming pod, every node: feasible or not, the "
                                   "failing plugin's kube-scheduler reasons, and the normalised "
                                   "score of each scoring plugin with the weighted total.")
    add_cluster_args(p)
    p.add_argument("--pod", required=True, metavar="FILE",
                   help="the incoming pod (a Pod, or a workload whose first replica is used)")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")
    p.set_defaults(func=run)


def explain(snapshot, profile, pod):
    state = snapshot.state()
    fw = profile.framework()
    ev = fw.evaluate(state, pod)
    chosen = fw.select(state, ev)
    sampled = sampling.exceeds_sample(fw.percentage_of_nodes_to_score, len(state.nodes),
                                      int(ev.feasible.sum()))
    nodes = []
    for i, node in enumerate(state.nodes):
        feasible = bool(ev.feasible[i])
        nodes.append({
            "name": node.name,
            "feasible": feasible,
            "reasons": [] if feasible else ev.reasons(i),
            "scores": {name: int(s[i]) for name, s in ev.scores.items()} if feasible else {},
            "total": int(ev.total[i]) if feasible else None,
        })
    return {"pod": pod.key, "nodes": nodes,
            "selected": None if chosen is None else state.nodes[chosen].name,
            "summary": None if chosen is not None else ev.summary(),
            "notes": planner.state_notes(state, fw) + (
                [planner.PREEMPTION_NOTE % pod.key] if chosen is None and fw.preemption else [])
            + ([sampling.sampling_note(fw.percentage_of_nodes_to_score,
                                       len(state.nodes), 1)] if sampled else [])}


def run(args):
    snapshot, profile, notes = load_inputs(args)
    objects = load_objects([args.pod])
    for obj, source in objects:  # a Service beside the pod selects it for default spreading
        if isinstance(obj, dict) and obj.get("kind") == "Service":
            snapshot.add_selectors(obj)
    pods, wnotes = workloads_from_objects(objects)
    if not pods:
        raise InputError("no pod found (expected a Pod or a workload)", source=args.pod)
    pod = pods[0]
    result = explain(snapshot, profile, pod)
    result["notes"] = notes + wnotes + pod_notes(pod) + result["notes"]
    if len(pods) > 1:
        result["notes"].append("%s holds %d pods; explaining the first, %s"
                               % (args.pod, len(pods), pod.key))
    if args.output == "json":
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_text(result))
    return 0


def render_text(result, width=table.WIDTH):
    """The text form: one row per node, the scores of a feasible node or the reasons of
    an infeasible one last (wrapped to WIDTH columns; None: one line per row)."""
    rows = [("NODE", "FEASIBLE", "TOTAL", "SCORES / REASONS")]
    for n in result["nodes"]:
        if n["feasible"]:
            detail = " ".join("%s=%d" % kv for kv in n["scores"].items()) or "-"
        else:
            detail = "; ".join(n["reasons"]) or "-"
        rows.append((n["name"], "yes" if n["feasible"] else "no",
                     "-" if n["total"] is None else str(n["total"]), detail))
    out = ["Pod %s" % result["pod"]] + table.table(rows, width)
    out += table.wrap("Selected: %s" % (result["selected"] or "none (%s)" % result["summary"]),
                      width)
    out += table.notes("Note: ", result["notes"], width)
    return "\n".join(out) + "\n"
