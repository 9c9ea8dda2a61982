"""``hwaffinity plan``: where a set of workloads' pods will land, per topology domain."""
import argparse
import gc
import sys

from tacker_hwaffinity import table
from tacker_hwaffinity.cli import output, progress, warnings
from tacker_hwaffinity.cli.common import (
    PhaseTimes, add_cluster_args, add_limit_args, add_namespace_arg, add_schema_args,
    schema_check, source)
from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.intake import read
from tacker_hwaffinity.scheduling import diagnosis, planner
from tacker_hwaffinity.scheduling.snapshot import workloads_from_objects

EXIT_ALL_PLACED, EXIT_SOME_UNPLACED = 0, 1


def register(sub):
    p = sub.add_parser("plan", help="predict where workloads' pods land, like kube-scheduler",
                       description="Schedule the workloads' pods one at a time in order, as "
                                   "kube-scheduler does, and report each pod's node and "
                                   "topology domain. Exit 0: all placed; 1: some not; 2: bad "
                                   "input.")
    add_cluster_args(p)
    add_namespace_arg(p)
    add_schema_args(p)
    p.add_argument("workloads", nargs="*", metavar="WORKLOAD.yaml",
                   help="Pod, Deployment, ReplicaSet, StatefulSet, Job, DaemonSet or "
                        "ReplicationController manifests, other objects skipped with a note "
                        "(files, directories or '-' for standard input; -f works too)")
    p.add_argument("-f", "--filename", action="append", default=[], metavar="FILE|DIR",
                   dest="more_workloads", help="a workload file or directory, as kubectl's "
                                               "-f (repeatable)")
    p.add_argument("--topology-key", default=DEFAULT_HOST_LABEL, metavar="KEY",
                   help="node label that names the domain to report (default: %(default)s, "
                        "the physical compute host)")
    output.add_output_arg(p, (output.TEXT, output.WIDE, output.JSON, output.YAML, output.NAME,
                              output.SVG))
    add_limit_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    workload_files = args.workloads + args.more_workloads
    if not workload_files:
        raise InputError("no workloads to plan: give WORKLOAD.yaml files or -f FILE|DIR",
                         field="WORKLOAD.yaml")
    times = PhaseTimes()
    check = schema_check(args)
    cluster_source = source(args)
    # read, checked and counted first: a wrong file or too many pods is refused before
    # the cluster is read
    given = read.workloads(workload_files, check, args.max_pods,
                           read.namespace(args.namespace, cluster_source))
    times.done("manifests")
    with progress.Progress("plan") as status:
        status.phase("reading the cluster")
        cluster = read.cluster(cluster_source, check, args.scheduler_config)
        missing = read.check_answerable(given, cluster, args.topology_key)
        times.ended(cluster.phases)
        snapshot, profile = cluster.content.snapshot, cluster.content.profile
        gc.freeze()  # the snapshot lives until exit: the cycle collector need not walk it
        status.phase("making the workloads' pods")
        pods, wnotes, nowhere = workloads_from_objects(given.content, snapshot,
                                                       max_pods=args.max_pods)
        times.done("workloads")
        state = snapshot.state()
        result = planner.plan(state, profile.framework(),
                              status.counted(pods, "placing pods"), args.topology_key)
        result.notes[:0] = list(cluster.notes) + list(given.notes) + wnotes
        diagnosis.diagnose(state, pods, result, nowhere)
        times.done("plan")
    result.warnings[:0] = missing
    warnings.emit(result.warnings)
    if args.output in output.STRUCTURED:
        doc = result.to_dict()
        doc["warnings"] = list(given.warnings + cluster.warnings) + doc["warnings"]
        output.dump(output.document("Plan", doc), args.output)
    elif args.output == output.NAME:
        output.names(("pod", p.pod.key) for p in result.placements if p.node)
    elif args.output == output.SVG:
        from tacker_hwaffinity.cli.placement_svg import render_svg  # only for svg: xml import
        sys.stdout.write(render_svg(result, state))
    else:
        width = None if args.output == output.WIDE else table.WIDTH
        sys.stdout.write(render_text(result, width))
    times.done("output")
    times.report("plan")
    return EXIT_ALL_PLACED if result.complete else EXIT_SOME_UNPLACED


def render_text(result, width=table.WIDTH):
    """The plan as text, wrapped to WIDTH columns; WIDTH None (-o wide): one line per row
    and note, and each unplaced pod's reason as a column."""
    wide = width is None
    key = result.topology_key
    rows = [("POD", "NODE", key.upper() if key == DEFAULT_HOST_LABEL else key)
            + (("REASON",) if wide else ())]
    for p in result.placements:
        rows.append((p.pod.key, p.node or "<unschedulable>",
                     p.domain if p.domain is not None else "-")
                    + (("; ".join(p.reasons) or "-",) if wide else ()))
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
    for line in [diagnosis.unplaced_line(u) for u in result.unplaced] \
            + unschedulable_lines(unplaced):
        out += table.wrap(line, width)
    out += table.notes("Note: ", result.notes, width)
    return "\n".join(out) + "\n"


def unschedulable_lines(unplaced):
    """One 'Unschedulable' line per distinct reason, naming the pods that share it."""
    by_reason = {}
    for p in unplaced:
        by_reason.setdefault("; ".join(p.reasons), []).append(p.pod.key)
    return ["Unschedulable %s: %s" % (planner.pod_run(keys), reason)
            for reason, keys in by_reason.items()]
