"""``hwaffinity explain``: every node's filter verdict and scores for one pod."""
import argparse
import sys

from tacker_hwaffinity import table
from tacker_hwaffinity.cli import output, warnings
from tacker_hwaffinity.cli.common import (
    add_cluster_args, add_namespace_arg, add_schema_args, schema_check, source)
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.intake import read
from tacker_hwaffinity.scheduling import diagnosis, planner, sampling
from tacker_hwaffinity.scheduling.planner import pod_notes
from tacker_hwaffinity.scheduling.snapshot import first_workload_pod


EXIT_FITS, EXIT_FITS_NOWHERE = 0, 1


def register(sub):
    p = sub.add_parser("explain", help="why each node can or cannot take a pod, and its scores",
                       description="For one incoming pod, every node: feasible or not, the "
                                   "failing plugin's kube-scheduler reasons, and the normalised "
                                   "score of each scoring plugin with the weighted total. "
                                   "Exit 0: some node can take the pod; 1: none can; 2: bad "
                                   "input.")
    add_cluster_args(p)
    add_namespace_arg(p)
    add_schema_args(p)
    p.add_argument("--pod", required=True, metavar="FILE",
                   help="the incoming pod (a Pod, or a workload whose first replica is used; "
                        "'-' reads standard input)")
    output.add_output_arg(p, (output.TEXT, output.WIDE, output.JSON, output.YAML, output.NAME))
    p.set_defaults(func=run)


def explain(snapshot, profile, pod, workload_pods=None):
    """The verdicts for POD; WORKLOAD_PODS (default: POD alone) are judged for warnings."""
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
            "warnings": diagnosis.input_warnings(state, workload_pods or [pod]),
            "summary": None if chosen is not None else ev.summary(),
            "notes": ([planner.preemption_note([pod.key])] if chosen is None and fw.preemption
                      else [])
            + ([sampling.sampling_note(fw.percentage_of_nodes_to_score,
                                       len(state.nodes), 1)] if sampled else [])}


def run(args: argparse.Namespace) -> int:
    check = schema_check(args)
    cluster_source = source(args)
    where = read.namespace(args.namespace, cluster_source)
    cluster = read.cluster(cluster_source, check, args.scheduler_config)
    snapshot = cluster.content.snapshot
    given = read.manifests([args.pod], check, where)
    missing = read.check_answerable(given, cluster)
    objects = given.content
    for obj, _ in objects:  # a Service beside the pod selects it for default spreading
        if isinstance(obj, dict) and obj.get("kind") == "Service":
            snapshot.add_selectors(obj)
    pod, count, wnotes = first_workload_pod(objects, snapshot.nodes)     # makes that one pod only
    if pod is None:
        raise InputError("no pod found (expected a Pod or a workload)", source=args.pod)
    result = explain(snapshot, cluster.content.profile, pod)
    result["warnings"][:0] = missing
    warnings.emit(result["warnings"])
    result["notes"] = (list(cluster.notes) + list(given.notes) + wnotes + pod_notes(pod)
                       + result["notes"])
    if count > 1:
        result["notes"].append("%s holds %d pods; explaining the first, %s"
                               % (args.pod, count, pod.key))
    if args.output in output.STRUCTURED:
        result["warnings"] = list(cluster.warnings + given.warnings) + result["warnings"]
        output.dump(output.document("Explanation", result), args.output)
    elif args.output == output.NAME:  # the nodes that can take the pod, best first
        feasible = sorted((n for n in result["nodes"] if n["feasible"]),
                          key=lambda n: -n["total"])
        output.names(("node", n["name"]) for n in feasible)
    else:
        width = None if args.output == output.WIDE else table.WIDTH
        sys.stdout.write(render_text(result, width))
    return EXIT_FITS if result["selected"] is not None else EXIT_FITS_NOWHERE


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
