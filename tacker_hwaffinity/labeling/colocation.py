"""Workers that share a compute host, and which of them to move away
(``hwaffinity_param.on_colocation: respread``).

A soft anti-affinity group is weighed, never checked: members created together can land
on one host while another is free, because Nova's weigher counts only the members that
already have a host (doc/packages.md). A live migration with no destination named lets
the scheduler weigh the moved member against the others, all placed by then. What to
move is decided here, purely; ``mgmt.respread`` makes the moves.
"""
from collections.abc import Collection, Sequence

from tacker_hwaffinity.labeling.plan import Worker


def host_of(worker: Worker, source: str) -> str | None:
    """WORKER's compute host as SOURCE ('host' or 'hostId', ``plan.choose_source``) reads
    it; None when Nova did not say."""
    return worker.host if source == "host" else worker.host_id


def shared(workers: Sequence[Worker], source: str) -> dict[str, list[Worker]]:
    """{host: its workers, by name} for every host that has more than one."""
    by_host: dict[str, list[Worker]] = {}
    for w in workers:
        host = host_of(w, source)
        if host:
            by_host.setdefault(host, []).append(w)
    return {h: sorted(ws, key=lambda w: (w.name, w.server_id))
            for h, ws in by_host.items() if len(ws) > 1}


def spread(workers: Sequence[Worker], source: str) -> int:
    """How many distinct hosts WORKERS are on (workers whose host is unknown: none)."""
    return len({host_of(w, source) for w in workers} - {None})


def movers(workers: Sequence[Worker], source: str, settled: Collection[str]) -> list[Worker]:
    """The workers to move, best first: on every shared host all but one. The one kept is
    a settled worker (its server id in SETTLED: its node already carries its host label,
    so it may run pods), else the first by name; the others go in host, then name order."""
    out: list[Worker] = []
    for _host, ws in sorted(shared(workers, source).items()):
        keep = next((w for w in ws if w.server_id in settled), ws[0])
        out.extend(w for w in ws if w is not keep)
    return out
