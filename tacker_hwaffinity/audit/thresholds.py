"""Exit-status thresholds: ``--max-loss`` and ``--fail-on``.

``--max-loss`` (a percent like ``50%`` or a replica count like ``2``) is over when a
workload with two or more replicas (desired or running) loses MORE than that to its worst
host (single-replica workloads always lose all and are not judged). ``--fail-on``:
``unprotected`` (several replicas, no intent on the key), ``intent-unmet``,
``pdb-violated`` (a budget no longer holds after the worst host), ``stale-labels``.
"""
import re
from collections.abc import Collection
from typing import TYPE_CHECKING

from tacker_hwaffinity.errors import InputError

if TYPE_CHECKING:     # for the annotations only: no import at run time
    from tacker_hwaffinity.audit.core import Report
    from tacker_hwaffinity.audit.stale import StaleReport

FAIL_ON = ("unprotected", "intent-unmet", "pdb-violated", "stale-labels")
# a percent, or a replica count of at most 9 digits (a workload has fewer replicas)
_LOSS = re.compile(r"(100|[1-9]?[0-9])%|([0-9]{1,9})")


def parse_max_loss(text: str | None) -> tuple[str, float]:
    """('ratio', float) or ('count', int); InputError naming --max-loss."""
    m = _LOSS.fullmatch(text or "")
    if not m:
        raise InputError("expected a percent from 0%% to 100%% or a replica count (at most "
                         "9 digits), got %r"
                         % text, field="--max-loss")
    if m.group(1) is not None:
        return "ratio", int(m.group(1)) / 100.0
    return "count", int(m.group(2))


def findings(report: "Report", max_loss: tuple[str, float] | None = None,
             fail_on: Collection[str] = (), stale: "StaleReport | None" = None) -> list[str]:
    """[str]: what is over the thresholds (empty: exit 0)."""
    out = []
    for w in report.workloads:
        name = "%s %s/%s" % (w.kind, w.namespace, w.name)
        if max_loss is not None and max(w.desired, w.running) >= 2:
            kind, limit = max_loss
            over = w.loss_ratio > limit + 1e-9 if kind == "ratio" else w.worst_loss > limit
            if over:
                out.append("%s: loses %d of %d (%.0f%%) to host %s" % (
                    name, w.worst_loss, w.desired or w.running, 100 * w.loss_ratio,
                    w.worst_host))
        if "unprotected" in fail_on and w.unprotected:
            out.append("%s: %d replicas and no intent on the host key" % (
                name, max(w.desired, w.running)))
        if "intent-unmet" in fail_on and w.intent_met is False:
            out.append("%s: intent not met (%d replica(s))" % (name, len(w.violations)))
        if "pdb-violated" in fail_on and w.pdb_holds is False:
            out.append("%s: PodDisruptionBudget broken after losing host %s" % (
                name, w.worst_host))
    if "stale-labels" in fail_on and stale is not None:
        for p in stale.problems():
            out.append("node %s: host label stale or VM unknown to Nova" % getattr(
                p, "node", p))
    return out
