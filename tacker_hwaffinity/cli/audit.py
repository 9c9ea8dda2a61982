"""``hwaffinity audit``: every workload's exposure to one physical host failing.

Reads the cluster as ``plan`` does (``--cluster`` snapshots or ``--kubeconfig``), hands
the raw objects to the pure core ``tacker_hwaffinity.audit.core`` and renders the Report.
Exit 0: nothing over the thresholds; 1: something is; 2: bad input (one line).
"""
import gc
import sys

from tacker_hwaffinity.audit import owners, pdb, render, stale, thresholds
from tacker_hwaffinity.cli import progress
from tacker_hwaffinity.cli.common import TIMING_ENV, PhaseTimes  # noqa: F401 (TIMING_ENV: docs)
from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects.yamlio import gc_paused, load_objects
from tacker_hwaffinity.scheduling.snapshot import SELECTOR_KINDS, SNAPSHOT_FIELDS

KINDS = ("Node", "Pod", "Namespace", "PodDisruptionBudget", "Service",
         "ReplicationController") + owners.OWNER_KINDS
# What the audit reads: the engine's fields plus owners, annotations (intent), node
# addresses (stale labels), replica counts and budgets.
AUDIT_FIELDS = dict(SNAPSHOT_FIELDS)
AUDIT_FIELDS["Node"] = {"metadata": ("name", "namespace", "labels"),
                        "status": ("allocatable", "capacity", "images", "addresses")}
AUDIT_FIELDS["Pod"] = dict(SNAPSHOT_FIELDS["Pod"], metadata=(
    "name", "namespace", "labels", "deletionTimestamp", "ownerReferences", "annotations"),
    spec=SNAPSHOT_FIELDS["Pod"]["spec"] + ("topologySpreadConstraints",))
AUDIT_FIELDS.update({k: owners.FIELDS for k in owners.OWNER_KINDS})
AUDIT_FIELDS["PodDisruptionBudget"] = pdb.FIELDS


def register(sub):
    from tacker_hwaffinity.cli.common import add_cluster_args
    p = sub.add_parser(
        "audit", help="what one physical host failing takes from every workload",
        description="For every workload: running replicas per physical host (the host "
                    "label), the worst single-host loss against the desired count, its "
                    "PodDisruptionBudgets after that loss, its anti-affinity/spread intent "
                    "on the host key and whether it holds now. Exit 0: nothing over the "
                    "thresholds; 1: something is; 2: bad input.")
    add_cluster_args(p)
    p.add_argument("--topology-key", default=DEFAULT_HOST_LABEL, metavar="KEY",
                   help="the node label naming the physical host (default %(default)s)")
    p.add_argument("-o", "--output", choices=("text", "json", "svg"), default="text")
    p.add_argument("--max-loss", metavar="N|P%",
                   help="exit 1 when a workload of 2+ replicas loses more than this to one "
                        "host (a percent of its desired replicas, or a count)")
    p.add_argument("--fail-on", action="append", default=[], choices=thresholds.FAIL_ON,
                   help="exit 1 on these findings (repeatable)")
    p.add_argument("--all", action="store_true",
                   help="text: list single-replica workloads too")
    stale.register_openstack_args(p)
    p.set_defaults(func=run)


def read_objects(args):
    """[(object, source)] and notes, from the snapshots or the API server."""
    if getattr(args, "context", None) is not None and args.kubeconfig is None:
        raise InputError("--context needs --kubeconfig", field="--context")
    if args.kubeconfig is not None:
        from tacker_hwaffinity.objects import pruning
        from tacker_hwaffinity.kube import client, cluster
        try:
            conn = client.connect(args.kubeconfig, args.context)
            try:
                return cluster.read_cluster(conn, pruning.pruner(AUDIT_FIELDS),
                                            lists=cluster.AUDIT_LISTS)
            finally:
                conn.close()
        except client.KubeError as e:
            raise InputError(str(e), field="--kubeconfig")
    if sum(1 for c in args.cluster if c == "-") > 1:
        raise InputError("standard input ('-') can be given only once", field="--cluster")
    return load_objects(args.cluster, keep=AUDIT_FIELDS), []


def split(objects):
    """{kind: [raw object]} of the kinds the audit reads; InputError for others."""
    by = {k: [] for k in KINDS}
    for obj, source in objects:
        kind = obj.get("kind") if isinstance(obj, dict) else None
        if kind not in by:
            raise InputError("unknown kind %r in a cluster snapshot: expected %s"
                             % (kind, ", ".join(KINDS)), source=source, field="kind")
        meta = obj.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            raise InputError("object has no metadata.name", source=source,
                             obj=kind, field="metadata.name")
        by[kind].append(obj)
    return by


def run(args):
    from tacker_hwaffinity.audit import core
    times = PhaseTimes()
    max_loss = thresholds.parse_max_loss(args.max_loss) if args.max_loss else None
    with gc_paused(), progress.Progress("audit") as status:
        status.phase("reading the cluster")
        objects, notes = read_objects(args)
        gc.freeze()  # what was read lives until exit: neither collections nor the
        times.done("read")   # interpreter's teardown need walk it again
        by = split(objects)
        del objects
        report_stale = None
        if stale.wanted(args):
            status.phase("asking Nova where the VMs are")
            report_stale = stale.check(args, by["Node"], args.topology_key)
        elif "stale-labels" in args.fail_on:
            raise InputError("--fail-on stale-labels needs OpenStack credentials "
                             "(--openstack or --os-cloud)", field="--fail-on")
        override = report_stale.nova_hosts() if report_stale is not None else None
        status.phase("judging %d pods' placement" % len(by["Pod"]))
        owner_objs = [o for k in owners.OWNER_KINDS for o in by[k]]
        report = core.audit(by["Node"], by["Pod"], args.topology_key, owners=owner_objs,
                            pdbs=by["PodDisruptionBudget"], host_override=override,
                            namespace_objs=by["Namespace"],
                            selector_objs=[o for k in SELECTOR_KINDS for o in by[k]])
        times.done("audit")
    report.notes[:0] = notes
    found = thresholds.findings(report, max_loss, args.fail_on, report_stale)
    if args.output == "json":
        text = render.to_json(report, report_stale, found)
    elif args.output == "svg":
        from tacker_hwaffinity.cli.audit_svg import render_svg
        text = render_svg(report)
    else:
        text = render.to_text(report, report_stale, found, show_all=args.all)
    sys.stdout.write(text)
    times.done("render")
    times.report("audit")
    return 1 if found else 0
