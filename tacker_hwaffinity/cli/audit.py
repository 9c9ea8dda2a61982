"""``hwaffinity audit``: every workload's exposure to one physical host failing.

Reads the cluster as ``plan`` does (``--cluster`` snapshots or ``--kubeconfig``), hands
the raw objects to the pure core ``tacker_hwaffinity.audit.core`` and renders the Report.
Exit 0: nothing over the thresholds; 1: something is; 2: bad input (one line).
"""
import argparse
import difflib
import gc
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from tacker_hwaffinity import extras
from tacker_hwaffinity.audit import hostkey, owners, pdb, render, stale, thresholds
from tacker_hwaffinity.cli import output, progress, warnings
from tacker_hwaffinity.cli import common
from tacker_hwaffinity.cli.common import (  # noqa: F401 (TIMING_ENV: docs)
    TIMING_ENV, PhaseTimes, add_schema_args, schema_check)
from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.intake import read
from tacker_hwaffinity.intake.files import check_nodes
from tacker_hwaffinity.objects.naming import DEFAULT_NAMESPACE
from tacker_hwaffinity.objects.yamlio import gc_paused
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


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser(
        "audit", help="what one physical host failing takes from every workload",
        description="For every workload: running replicas per physical host (the host "
                    "label), the worst single-host loss against the desired count, its "
                    "PodDisruptionBudgets after that loss, its anti-affinity/spread intent "
                    "on the host key and whether it holds now. Exit 0: nothing over the "
                    "thresholds; 1: something is; 2: bad input.")
    common.add_cluster_args(p)
    add_schema_args(p)
    p.add_argument("--topology-key", default=hostkey.AUTO, metavar="KEY",
                   help="the node label naming the physical host; auto (the default): "
                        "the first of %s that a node carries (exit 2 when none does, "
                        "unless --openstack)" % ", ".join(hostkey.HOST_KEYS))
    output.add_output_arg(p, (output.TEXT, output.WIDE, output.JSON, output.YAML, output.NAME,
                              output.SVG))
    p.add_argument("--max-loss", metavar="N|P%",
                   help="exit 1 when a workload of 2+ replicas loses more than this to one "
                        "host (a percent of its desired replicas, or a count)")
    p.add_argument("--fail-on", action="append", default=[], choices=thresholds.FAIL_ON,
                   help="exit 1 on these findings (repeatable)")
    p.add_argument("--all", action="store_true",
                   help="text: list single-replica workloads too")
    p.add_argument("-n", "--namespace", action="append", default=[], metavar="NS",
                   help="report only the workloads of this namespace (repeatable); the "
                        "judgement still counts every pod, as the scheduler does")
    stale.register_openstack_args(p)
    p.set_defaults(func=run)


def split(objects, notes=None):
    """{kind: [raw object]} of the kinds the audit reads. The others are skipped by
    objects.kinds's rule, one note naming them added to NOTES (a list); what the API
    server would refuse (a mistyped built-in kind, say) is an InputError."""
    from tacker_hwaffinity.objects import kinds
    read = kinds.Kinds(KINDS)
    by = {k: [] for k in KINDS}
    skipped = []
    for obj, source in objects:
        if not read.reads(obj, source):
            skipped.append((source, kinds.entry(obj)))
            continue
        kind = obj["kind"]
        meta = obj.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            raise InputError("object has no metadata.name", source=source,
                             obj=kind, field="metadata.name")
        by[kind].append(obj)
    if notes is not None:
        notes.extend(kinds.note(skipped, "is not read by the audit and is skipped",
                                "are not read by the audit and are skipped"))
    return by


def check_namespaces(asked: Sequence[str], namespace_objs: Sequence[Mapping[str, Any]],
                     pod_objs: Sequence[Mapping[str, Any]]) -> None:
    """InputError for a namespace of ASKED (-n) that the cluster does not have (when it
    lists its NAMESPACE_OBJS) or that no pod of POD_OBJS runs in: an audit of nothing
    would pass every gate."""
    if not asked:
        return
    listed = {(o.get("metadata") or {}).get("name") for o in namespace_objs}
    used = {(p.get("metadata") or {}).get("namespace") or DEFAULT_NAMESPACE for p in pod_objs}
    for ns in asked:
        if namespace_objs and ns not in listed:
            close = difflib.get_close_matches(ns, sorted(n for n in listed if n), n=1)
            raise InputError("no namespace %r in the cluster%s" % (
                ns, " (did you mean %r?)" % close[0] if close else ""), field="--namespace")
        if ns not in used:
            raise InputError("no pod of the cluster is in namespace %r: nothing to audit"
                             % ns, field="--namespace")


def run(args: argparse.Namespace) -> int:
    from tacker_hwaffinity.audit import core
    if stale.wanted(args):
        extras.require("audit", ("openstack",))   # before the credentials are read
    times = PhaseTimes()
    max_loss = thresholds.parse_max_loss(args.max_loss) if args.max_loss else None
    check = schema_check(args)
    with gc_paused(), progress.Progress("audit") as status:
        status.phase("reading the cluster")
        read_in = read.objects(common.source(args), AUDIT_FIELDS, check, lists="audit",
                               skipped=())  # every kind read is used
        objects, notes, schema_warnings = read_in.content, list(read_in.notes), read_in.warnings
        del read_in
        gc.freeze()  # what was read lives until exit: neither collections nor the
        times.done("read")   # interpreter's teardown need walk it again
        by = split(objects, notes)
        del objects
        check_namespaces(args.namespace, by["Namespace"], by["Pod"])
        key = hostkey.choose(by["Node"], args.topology_key)
        report_stale = None
        if stale.wanted(args):
            status.phase("asking Nova where the VMs are")
            report_stale = stale.check(args, by["Node"], key)
        elif "stale-labels" in args.fail_on:
            raise InputError("--fail-on stale-labels needs OpenStack credentials "
                             "(--openstack or --os-cloud)", field="--fail-on")
        else:   # the hosts come from the key alone
            hostkey.check_carried(by["Node"], key, args.topology_key)
        override = report_stale.nova_hosts() if report_stale is not None else None
        status.phase("judging %d pods' placement" % len(by["Pod"]))
        owner_objs = [o for k in owners.OWNER_KINDS for o in by[k]]
        report = core.audit(by["Node"], by["Pod"], key, owners=owner_objs,
                            pdbs=by["PodDisruptionBudget"], host_override=override,
                            namespace_objs=by["Namespace"],
                            selector_objs=[o for k in SELECTOR_KINDS for o in by[k]])
        if args.kubeconfig is None:     # after the objects' own errors, which say more
            check_nodes(by["Node"], args.cluster)
        if args.namespace:
            report.workloads = [w for w in report.workloads if w.namespace in args.namespace]
        times.done("audit")
    report.warnings.extend(hostkey.disagreements(by["Node"]))
    if args.topology_key == hostkey.AUTO and key != DEFAULT_HOST_LABEL:
        notes = notes + ["host key %s: the first of %s that a node carries (--topology-key "
                         "auto)" % (key, ", ".join(hostkey.HOST_KEYS))]
    report.notes[:0] = notes
    warnings.emit(report.warnings)
    thresholds.check_hosts_known(report, max_loss, args.fail_on)
    found = thresholds.findings(report, max_loss, args.fail_on, report_stale)
    if args.output in output.STRUCTURED:
        doc = render.to_dict(report, report_stale, found, list(schema_warnings))
        output.dump(output.document("Audit", doc), args.output)
    elif args.output == output.NAME:  # the workloads the table lists; an audit spans namespaces
        output.names((w.kind.lower(), "%s/%s" % (w.namespace, w.name))
                     for w in render.shown(report, args.all))
    elif args.output == output.SVG:
        from tacker_hwaffinity.cli.audit_svg import render_svg
        sys.stdout.write(render_svg(report))
    else:
        width = None if args.output == output.WIDE else render.table.WIDTH
        sys.stdout.write(render.to_text(report, report_stale, found, show_all=args.all,
                                        width=width))
    times.done("render")
    times.report("audit")
    return 1 if found else 0
