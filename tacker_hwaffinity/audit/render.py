"""Text and document (-o json|yaml) renderings of an audit Report."""

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tacker_hwaffinity import table

if TYPE_CHECKING:     # for the annotations only: no import at run time
    from tacker_hwaffinity.audit.core import Exposure, Report
    from tacker_hwaffinity.audit.stale import StaleReport


def to_dict(report: "Report", stale: "StaleReport | None" = None, findings: Iterable[str] = (),
            warnings: Iterable[str] = ()) -> dict[str, Any]:
    """The report as the body of the Audit document (-o json|yaml)."""
    out = report.to_json()
    out["staleLabels"] = None if stale is None else stale.to_json()
    out["findings"] = list(findings)
    out["warnings"] = list(warnings) + out.get("warnings", [])    # the schema's first
    return out


def shown(report: "Report", show_all: bool = False) -> "list[Exposure]":
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


def to_text(report: "Report", stale: "StaleReport | None" = None, findings: Iterable[str] = (),
            show_all: bool = False, width: int | None = table.WIDTH) -> str:
    """The text form, wrapped to WIDTH columns (None: one line per row and note)."""
    rows = [("WORKLOAD", "REPLICAS", "WORST HOST", "LOSS", "PDB AFTER", "INTENT")]
    for w in shown(report, show_all):
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
