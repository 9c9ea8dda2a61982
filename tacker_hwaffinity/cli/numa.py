"""``hwaffinity numa``: container NUMA affinity (CRI Resource Manager annotations).

* ``numa explain POD.yaml... [--cluster PODS.yaml]``: each container's
  expanded affinities and its effective affinity A(C1, C2) towards every
  other known container;
* ``numa plan (--sysfs-root DIR | --machine M.yaml) POD.yaml...``: place the
  containers one at a time on the machine's pool tree and show the pool, CPUs,
  memory nodes and every candidate pool's score (``-o text|json|yaml|svg``).

Exit status: 0 fine; 1 some container could not be placed (capacity);
2 bad input, including malformed affinity annotations (reported per
container in the output as well as on stderr).
"""
import argparse
import sys
from collections.abc import Sequence

from tacker_hwaffinity import table
from tacker_hwaffinity.cli import output
from tacker_hwaffinity.cli.common import add_namespace_arg
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.intake import read
from tacker_hwaffinity.numa import config as configmod
from tacker_hwaffinity.numa import report as reportmod
from tacker_hwaffinity.numa.subjects import Pod, load_pods
from tacker_hwaffinity.numa.topology import Machine


def _pods(paths: Sequence[str], namespace: str | None, each_file: bool = False
          ) -> list[Pod]:
    """The pods of the files PATHS, those naming no namespace in NAMESPACE's (-n, as
    kubectl's); EACH_FILE: a file that holds none is an error. Each file's text is kept:
    the errors of an annotation give the file's line."""
    given, texts = read.annotated(paths, read.namespace(namespace), "no pods in the file: "
                                  "expected Pod manifests" if each_file else None)
    return load_pods(list(given.content), texts)


def register(subparsers):
    parser = subparsers.add_parser(
        "numa", help="container NUMA affinity: explain annotations, plan placement",
        description="Container NUMA affinity as the node agent decides it, offline: "
                    "CRI Resource Manager's affinity annotations "
                    "(cri-resource-manager.intel.com/ and resource-policy.nri.io/ "
                    "affinity and anti-affinity) and its topology-aware policy. explain: "
                    "what a pod's annotations ask of each container; plan: where the "
                    "containers land on a machine's pools. Exit 0: done; 1: plan could "
                    "not place a container; 2: bad input, a malformed annotation "
                    "included.")
    sub = parser.add_subparsers(dest="numa_command", metavar="SUBCOMMAND")
    sub.required = True

    ex = sub.add_parser(
        "explain", help="expanded affinities and effective affinity per container",
        description="Read Pod manifests (YAML or JSON; a directory gives its .yaml, .yml "
                    "and .json files; '-' reads standard input) and, with --cluster, the "
                    "other pods on the node. For each container print its affinities, "
                    "expanded from its pod's affinity annotations (the shorthand "
                    "'c1: [c2]' made symmetric, weights signed and clamped to +-1000), "
                    "and its effective affinity towards every other container: the sum "
                    "of the weights of the affinities whose scope and match select it. "
                    "A malformed annotation fails its pod's affinities, as upstream, and "
                    "its error gives the file's line. Exit 0: every annotation decoded; "
                    "2: bad input or a malformed annotation (on stderr and in the "
                    "output).")
    ex.add_argument("pods", nargs="+", metavar="POD.yaml",
                    help="pods to explain (a file, a directory, or '-' for standard input)")
    ex.add_argument("--cluster", action="append", default=[], metavar="PODS.yaml",
                    help="other pods known on the node, whose containers the affinities "
                         "may select (repeatable)")
    output.add_output_arg(ex, (output.TEXT, output.JSON, output.YAML))
    configmod.add_colocation_arguments(ex)
    add_namespace_arg(ex)
    ex.set_defaults(func=run_explain)

    pl = sub.add_parser(
        "plan", help="place containers on a machine's pools, one at a time",
        description="Read a machine (this one's sysfs, another's under --sysfs-root, or a "
                    "YAML description with --machine) and Pod manifests; replay the "
                    "--existing containers, then place each container of the pods in "
                    "order on the machine's pool tree (sockets, dies, NUMA nodes) as the "
                    "node agent does, and print its pool, CPUs, memory nodes and every "
                    "candidate pool's score. Exit 0: all placed; 1: some container not "
                    "placed (no pool has room; each named on stderr); 2: bad input or a "
                    "malformed affinity or preference annotation.")
    src = pl.add_mutually_exclusive_group()
    src.add_argument("--sysfs-root", metavar="DIR", help="sysfs tree to read (default /sys)")
    src.add_argument("--machine", metavar="M.yaml",
                     help="a machine described in YAML: name, threadsPerCore, sockets (each "
                          "{id, nodes: [{id, cpus: CPU list, memory: quantity}]}), and "
                          "optionally distances (the NUMA distance matrix), isolated, "
                          "reserved, offline (CPU lists), memoryNodes and threadLayout "
                          "(halves or adjacent)")
    pl.add_argument("pods", nargs="+", metavar="POD.yaml",
                    help="pods to place, in order (a file, a directory, or '-' for standard "
                         "input)")
    pl.add_argument("--existing", action="append", default=[], metavar="PODS.yaml",
                    help="containers already on the node, replayed first (repeatable)")
    pl.add_argument("--reserved-cpus", metavar="LIST|QTY",
                    help="CPUs of the reserved class (kube-system): a CPU list such as 0-1, "
                         "or a quantity with a unit such as 750m or 1.5 (that many CPUs, "
                         "rounded up, lowest non-isolated ids first, as upstream's "
                         "ReservedResources)")
    pl.add_argument("--cgroup-driver", choices=("systemd", "cgroupfs"), default="systemd",
                    help="kubelet cgroup driver, for the cgroup directory in the JSON output")
    output.add_output_arg(pl, (output.TEXT, output.JSON, output.YAML, output.SVG))
    configmod.add_placement_arguments(pl)   # the agent's too: the plan is the node's
    add_namespace_arg(pl)
    pl.set_defaults(func=run_plan)
    return parser


def _report_errors(args, entries):
    seen = []
    for e in entries:
        if e and e not in seen:
            seen.append(e)
            sys.stderr.write("%s: error: %s\n" % (args.command_name, e))
    return bool(seen)


def _warn(args, warnings):
    for w in warnings:
        sys.stderr.write("%s: warning: %s\n" % (args.command_name, w))


def run_explain(args):
    pods = _pods(args.pods, args.namespace, each_file=True)
    cluster = _pods(args.cluster, args.namespace)
    rep, sources, warnings = reportmod.explain(pods, cluster, args.colocate_pods,
                                               args.colocate_namespaces)
    if args.output in output.STRUCTURED:
        output.dump(output.document("NumaExplanation", rep), args.output)
    else:
        sys.stdout.write(format_explain(rep, sources))
    _warn(args, warnings)
    bad = _report_errors(args, [e for c in rep["containers"] for e in c["errors"]])
    return 2 if bad else 0


def _expr(e):
    return "<%s %s %s>" % (e["key"] or "''", e["operator"], ",".join(e["values"]))


def format_explain(rep, sources):
    out = []
    for c in rep["containers"]:
        out.append("%s/%s" % (c["pod"], c["container"]))
        for err in c["errors"]:
            out.append("  error: %s" % err)
        if not c["errors"]:
            out.append("  affinities:" if c["affinities"] else "  affinities: none")
            for a, src in zip(c["affinities"], sources[(c["pod"], c["container"])]):
                out.append("    %+5d  scope %s  match %s  [%s]" % (
                    a["weight"], _expr(a["scope"]), _expr(a["match"]), src))
            out.append("  effective:" if c["effective"] else "  effective: none")
            for e in c["effective"]:
                out.append("    %+5d  %s/%s" % (e["weight"], e["pod"], e["container"]))
    return "\n".join(out) + "\n"


def load_machine(args: argparse.Namespace) -> Machine:
    from tacker_hwaffinity.numa import sysfs, topology
    if args.machine:
        docs = read.documents(args.machine).content
        if len(docs) != 1:
            raise InputError("expected exactly one machine document", source=args.machine)
        try:
            machine = topology.machine_from_yaml(docs[0][0], args.machine)
        except InputError as e:
            raise e.located(args.machine, "Machine")
    else:
        return sysfs.load(args.sysfs_root or "/sys", args.reserved_cpus)
    if args.reserved_cpus is not None:
        machine.reserve(args.reserved_cpus)
    return machine


def run_plan(args):
    machine = load_machine(args)
    pods = _pods(args.pods, args.namespace, each_file=True)
    existing = _pods(args.existing, args.namespace)
    refs = {}
    for p in existing + pods:
        if p.ref in refs:
            raise InputError("pod %s is given twice (also in %s)" % (p.ref, refs[p.ref]),
                             source=p.source, obj="Pod " + p.ref)
        refs[p.ref] = p.source
    rep, placer = reportmod.plan(machine, pods, existing, cgroup_driver=args.cgroup_driver,
                                 config=configmod.from_args(args))
    if args.output in output.STRUCTURED:
        output.dump(output.document("NumaPlan", rep), args.output)
    elif args.output == output.SVG:
        from tacker_hwaffinity.numa.svg import render
        sys.stdout.write(render(placer))
    else:
        sys.stdout.write(format_plan(rep))
    _warn(args, rep["warnings"])
    failed = [c for c in rep["containers"] if c["error"]]
    if _report_errors(args, [c["error"] for c in failed
                             if c["error"].startswith(reportmod.BAD_ANNOTATION)]):
        return 2
    for c in failed:
        sys.stderr.write("%s: %s/%s not placed: %s\n"
                         % (args.command_name, c["pod"], c["container"], c["error"]))
    return 1 if failed else 0


SCORE_HEADER = ("RANK", "POOL", "AFFINITY", "FREE SHARED", "COLOCATED")


def _score_lines(scores, width):
    """The candidate pools of one container as a table under it, indented by 2."""
    cols = [[], [], [], []]
    for s in scores:
        placed = s["rank"] is not None
        cols[0].append(str(s["rank"]) if placed else "-")
        cols[1].append(s["pool"])
        cols[2].append("%.4f" % s["affinity"] if placed else "")
        cols[3].append("%dm" % s["sharedCapacity"] if placed else "")
    for i in (0, 2, 3):     # numbers right-aligned under their header
        w = max(len(v) for v in cols[i] + [SCORE_HEADER[i]])
        cols[i] = [v.rjust(w) for v in cols[i]]
    rows = [SCORE_HEADER] + [
        (cols[0][k], cols[1][k], cols[2][k], cols[3][k],
         str(s["colocated"]) if s["rank"] is not None else "filtered out (memory)")
        for k, s in enumerate(scores)]
    return ["  " + line for line in table.table(rows, None if width is None else width - 2)]


def format_plan(rep, width=table.WIDTH):
    """The text form: the machine, then each container's pool and every candidate pool's
    score, wrapped to WIDTH columns (None: one line each)."""
    m = rep["machine"]
    out = ["machine %s: %d sockets, %d NUMA nodes, %d CPUs (online %s)"
           % (m["name"], m["sockets"], m["numaNodes"], m["cpus"], m["online"])]
    out += table.wrap("pools: " + ", ".join("%d=%s" % (p["id"], p["name"])
                                            for p in rep["pools"]), width)
    for c in rep["containers"]:
        out.append("")
        head = "%s/%s%s" % (c["pod"], c["container"], " (replayed)" if c["replayed"] else "")
        if c["error"]:
            out += table.wrap("%s: NOT PLACED: %s" % (head, c["error"]), width)
            continue
        r = c["request"]
        out += table.wrap("%s -> %s  cpus %s  mems %s  (%s: %d exclusive, %dm shared)"
                          % (head, c["pool"], c["cpus"], c["mems"], r["class"],
                             r["exclusive"], r["sharedMilli"]), width)
        if c["poolAffinity"]:
            out += table.wrap("affinity by pool: " + ", ".join(
                "%s %+d" % kv for kv in c["poolAffinity"].items()), width, indent="  ")
        out += _score_lines(c["scores"], width)
    return "\n".join(out) + "\n"
