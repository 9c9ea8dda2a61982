"""Exit-status thresholds: ``--max-loss`` and ``--fail-on``.

``--max-loss`` (a percent like ``50%`` or a replica count like ``2``) is over when a
workload with two or more replicas (desired or running) loses MORE than that to its worst
host (single-replica workloads always lose all and are not judged). ``--fail-on``:
``unprotected`` (several replicas, no intent on the key), ``intent-unmet``,
``pdb-violated`` (a budget no longer holds after the worst host), ``stale-labels``.

The loss and the budget after the worst host need each replica's host: a gate over a
workload with a replica on a node that carries no host label (counted as a host of its
own) cannot be answered as asked, and ``check_hosts_known`` says so (exit 2) rather than
pass it.
"""
import re
from collections.abc import Collection
from typing import TYPE_CHECKING

from tacker_hwaffinity.constants import UNLABELLED_HOST_PREFIX
from tacker_hwaffinity.errors import InputError

if TYPE_CHECKING:     # for the annotations only: no import at run time
    from tacker_hwaffinity.audit.core import Exposure, Report
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


# the gates whose answer depends on which replicas share a host
HOST_GATES = ("pdb-violated",)
MAX_NAMED = 3           # workloads and nodes named in one error


def _gated(w: "Exposure") -> bool:
    return max(w.desired, w.running) >= 2


def check_hosts_known(report: "Report", max_loss: tuple[str, float] | None,
                      fail_on: Collection[str]) -> None:
    """InputError when --max-loss or a host gate of FAIL_ON would judge a workload of
    REPORT with a running replica on a node without the host label."""
    asked = (["--max-loss"] if max_loss is not None else []) + [
        "--fail-on " + g for g in HOST_GATES if g in fail_on]
    if not asked:
        return
    unknown = {h for h, (labelled, _n) in report.hosts.items() if not labelled}
    blind = [w for w in report.workloads if _gated(w) and unknown.intersection(w.hosts)]
    if not blind:
        return
    nodes = sorted({h[len(UNLABELLED_HOST_PREFIX):] for w in blind for h in w.hosts
                    if h in unknown})
    named = ", ".join("%s %s/%s" % (w.kind, w.namespace, w.name) for w in blind[:MAX_NAMED])
    raise InputError(
        "%d workload(s) (%s%s) run replicas on node(s) without the %s label (%s%s): which "
        "host they share is unknown, so %s cannot be answered; label them (hwaffinity "
        "relabel), ask Nova (--openstack), or narrow the audit (-n)" % (
            len(blind), named, " ..." if len(blind) > MAX_NAMED else "", report.key,
            ", ".join(nodes[:MAX_NAMED]),
            " ..." if len(nodes) > MAX_NAMED else "", " and ".join(asked)),
        field=asked[0].split()[0])


def findings(report: "Report", max_loss: tuple[str, float] | None = None,
             fail_on: Collection[str] = (), stale: "StaleReport | None" = None) -> list[str]:
    """[str]: what is over the thresholds (empty: exit 0)."""
    out = []
    for w in report.workloads:
        name = "%s %s/%s" % (w.kind, w.namespace, w.name)
        if max_loss is not None and _gated(w):
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
