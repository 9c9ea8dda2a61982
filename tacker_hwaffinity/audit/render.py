"""Text and JSON renderings of an audit Report."""
import json


def to_json(report, stale=None, findings=(), warnings=()):
    out = report.to_json()
    out["staleLabels"] = None if stale is None else stale.to_json()
    out["findings"] = list(findings)
    out["warnings"] = list(warnings)
    return json.dumps(out, indent=2, sort_keys=False) + "\n"


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
    for w in report.workloads:
        if not show_all and max(w.desired, w.running) < 2 and w.intent_met is not False:
            continue
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
