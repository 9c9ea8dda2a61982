"""``hwaffinity plan``: where a set of workloads' pods will land, per topology domain."""
import gc
import json
import sys

from tacker_hwaffinity.cli import progress, table
from tacker_hwaffinity.cli.common import PhaseTimes, add_cluster_args, load_inputs
from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL
from tacker_hwaffinity.scheduling import planner
from tacker_hwaffinity.scheduling.snapshot import load_workloads

EXIT_ALL_PLACED, EXIT_SOME_UNPLACED = 0, 1


def register(sub):
    p = sub.add_parser("plan", help="predict where workloads' pods land, like kube-scheduler",
                       description="Schedule the workloads' pods one at a time in order, as "
                                   "kube-scheduler does, and report each pod's node and "
                                   "topology domain. Exit 0: all placed; 1: some not; 2: bad "
                                   "input.")
    add_cluster_args(p)
    p.add_argument("workloads", nargs="+", metavar="WORKLOAD.yaml",
                   help="Pod, Deployment, ReplicaSet, StatefulSet or Job manifests")
    p.add_argument("--topology-key", default=DEFAULT_HOST_LABEL, metavar="KEY",
                   help="node label that names the domain to report (default: %(default)s, "
                        "the physical compute host)")
    p.add_argument("-o", "--output", choices=("text", "json", "svg"), default="text")
    p.set_defaults(func=run)


def run(args):
    times = PhaseTimes()
    with progress.Progress("plan") as status:
        status.phase("reading the cluster")
        snapshot, profile, notes = load_inputs(args, times)
        gc.freeze()  # the snapshot lives until exit: the cycle collector need not walk it
        status.phase("reading the workloads")
        pods, wnotes = load_workloads(args.workloads, snapshot)
        times.done("workloads")
        state = snapshot.state()
        result = planner.plan(state, profile.framework(),
                              status.counted(pods, "placing pods"), args.topology_key)
        result.notes[:0] = notes + wnotes
        times.done("plan")
    if args.output == "json":
        json.dump(result.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.output == "svg":
        from tacker_hwaffinity.cli.placement_svg import render_svg  # only for svg: xml import
        sys.stdout.write(render_svg(result, state))
    else:
        sys.stdout.write(render_text(result))
    times.done("output")
    times.report("plan")
    return EXIT_ALL_PLACED if result.complete else EXIT_SOME_UNPLACED


def render_text(result, width=table.WIDTH):
    """The text form, wrapped to WIDTH columns (None: one line per row and note)."""
    key = result.topology_key
    rows = [("POD", "NODE", key.upper() if key == DEFAULT_HOST_LABEL else key)]
    for p in result.placements:
        rows.append((p.pod.key, p.node or "<unschedulable>",
                     p.domain if p.domain is not None else "-"))
    out = table.table(rows, width)
    out.append("")
    out.append("Pods per %s:" % key)
    domains = result.domains()
    for value, pods in domains.items():
        out += table.wrap("%s: %d  (%s)" % (value, len(pods), ", ".join(pods)), width, "  ")
    no_domain = [p.pod.key for p in result.placements if p.node and p.domain is None]
    if no_domain:
        out += table.wrap("<node without %s>: %d  (%s)" % (key, len(no_domain),
                                                           ", ".join(no_domain)), width, "  ")
    unplaced = [p for p in result.placements if p.node is None]
    placed = len(result.placements) - len(unplaced)
    out.append("")
    out.append("%d of %d pods placed on %d distinct %s value(s)."
               % (placed, len(result.placements), len(domains), key))
    for p in unplaced:
        out.append("Unschedulable %s: %s" % (p.pod.key, "; ".join(p.reasons)))
    out += table.notes("Note: ", result.notes, width)
    return "\n".join(out) + "\n"
