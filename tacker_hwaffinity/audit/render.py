"""Text and JSON renderings of an audit Report."""
import json

from tacker_hwaffinity.cli import table


def to_json(report, stale=None, findings=()):
    out = report.to_json()
    out["staleLabels"] = None if stale is None else stale.to_json()
    out["findings"] = list(findings)
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


def to_text(report, stale=None, findings=(), show_all=False, width=table.WIDTH):
    """The text form, wrapped to WIDTH columns (None: one line per row and note)."""
    rows = [("WORKLOAD", "REPLICAS", "WORST HOST", "LOSS", "PDB AFTER", "INTENT")]
    for w in report.workloads:
        if not show_all and max(w.desired, w.running) < 2 and w.intent_met is not False:
            continue
        rows.append(("%s %s/%s" % (w.kind, w.namespace, w.name),
                     "%d/%d" % (w.running, w.desired),
                     w.worst_host or "-",
                     "%d (%.0f%%)" % (w.worst_loss, 100 * w.loss_ratio),
                     _pdb_cell(w), _intent_cell(w)))
    out = ["Exposure to one physical host failing (host key %s)" % report.key]
    out += table.table(rows, width)
    hidden = sum(1 for w in report.workloads) - (len(rows) - 1)
    if hidden:
        out.append("(%d single-replica workload(s) not shown: --all shows them)" % hidden)
    out += table.notes("Unmet: ", ["%s %s/%s pod %s on %s: %s" % (
        w.kind, w.namespace, w.name, v["pod"], v["node"], "; ".join(v["reasons"]))
        for w in report.workloads for v in w.violations], width)
    unlabelled = sorted(h for h, (lab, _n) in report.hosts.items() if not lab)
    if unlabelled:
        out += table.wrap("Unknown host: %d node(s) lack the %s label, each counted as its "
                          "own host: %s" % (len(unlabelled), report.key,
                                            ", ".join(unlabelled[:10])
                                            + (" ..." if len(unlabelled) > 10 else "")),
                          width)
    if stale is not None:
        for line in stale.text_lines():
            text = line.lstrip()
            out += table.wrap(text, width, indent=line[:len(line) - len(text)])
    out += table.notes("Note: ", report.notes, width)
    out += table.notes("Over threshold: ", findings, width)
    return "\n".join(out) + "\n"
