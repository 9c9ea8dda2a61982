"""Text and document (-o json|yaml) renderings of an audit Report."""


def to_dict(report, stale=None, findings=(), warnings=()):
    """The report as the body of the Audit document (-o json|yaml)."""
    out = report.to_json()
    out["staleLabels"] = None if stale is None else stale.to_json()
    out["findings"] = list(findings)
    out["warnings"] = list(warnings) + out.get("warnings", [])    # the schema's first
    return out


def shown(report, show_all=False):
    """The workloads the text table lists: 2+ replicas or unmet intent (all: every one)."""
    return [w for w in report.workloads
            if show_all or max(w.desired, w.running) >= 2 or w.intent_met is False]


def _intent_cell(w):
    if not w.intent:
        return "NONE" if w.unprotected else "-"
    types = ",".join(sorted({i["type"] for i in w.intent}))
    return "%s:%s" % (types, "met" if w.intent_met else "UNMET")


def _pdb_cell(w):
    if not w.pdbs:
        return "-"
    return "holds" if w.pdb_holds else "BROKEN"


def to_text(report, stale=None, findings=(), show_all=False):
    rows = [("WORKLOAD", "REPLICAS", "WORST HOST", "LOSS", "PDB AFTER", "INTENT")]
    for w in shown(report, show_all):
        rows.append(("%s %s/%s" % (w.kind, w.namespace, w.name),
                     "%d/%d" % (w.running, w.desired),
                     w.worst_host or "-",
                     "%d (%.0f%%)" % (w.worst_loss, 100 * w.loss_ratio),
                     _pdb_cell(w), _intent_cell(w)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    out = ["Exposure to one physical host failing (host key %s)" % report.key]
    out += ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r[:-1])) + "  " + r[-1]
            for r in rows]
    hidden = sum(1 for w in report.workloads) - (len(rows) - 1)
    if hidden:
        out.append("(%d single-replica workload(s) not shown: --all shows them)" % hidden)
    for w in report.workloads:
        for v in w.violations:
            out.append("Unmet: %s %s/%s pod %s on %s: %s" % (
                w.kind, w.namespace, w.name, v["pod"], v["node"], "; ".join(v["reasons"])))
    unlabelled = sorted(h for h, (lab, _n) in report.hosts.items() if not lab)
    if unlabelled:
        out.append("Unknown host: %d node(s) lack the %s label, each counted as its own "
                   "host: %s" % (len(unlabelled), report.key, ", ".join(unlabelled[:10])
                                 + (" ..." if len(unlabelled) > 10 else "")))
    if stale is not None:
        out.extend(stale.text_lines())
    out.extend("Note: %s" % n for n in report.notes)
    out.extend("Over threshold: %s" % f for f in findings)
    return "\n".join(out) + "\n"
