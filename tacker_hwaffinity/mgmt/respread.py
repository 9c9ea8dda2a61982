"""``on_colocation: respread``: move workers that share a compute host apart, through Nova.

After instantiate, scale-out or heal, the workers that share a host
(``labeling.colocation.movers``) are live-migrated one at a time, each to a compute host
that is up, enabled and free of workers (``os-hypervisors``, the first by name; Nova's
scheduler still checks it against its filters): the creation race of a soft
anti-affinity group converges without the operator. A host is named because the
scheduler's soft-anti-affinity weigher counts a member where its instance view puts it,
which lags a live migration (nova-compute's ``scheduler_instance_sync_interval``): left
to itself it can put the worker, with the pods it carries, on a host another worker has
just moved to. Where Nova does not list its hosts (a non-admin user) no host is named.
The live migration keeps the server (its id, its node, what Tacker recorded of it).

Bounded: at most one move per worker, all within ``respread_timeout`` seconds, and it
stops at the first move that did not add a host (Nova put the worker on another
member's host, or found no host: the group has more members than free hosts, and what
is left is Nova's best, reported as a warning). With no compute host free of workers it
moves nothing, since the move could only put the worker, and its pods, on another
worker's host.
A move Nova refuses (the VIM user may not live-migrate: policy
``os_compute_api:os-migrate-server:migrate_live`` is admin by default) or that does not
end in time is the hook's failure, after the labels are made true. Each move is in the
hook's report (``respread``).
"""
import dataclasses
import logging
import time
import typing

from tacker_hwaffinity.labeling import colocation
from tacker_hwaffinity.labeling.plan import Worker

if typing.TYPE_CHECKING:
    from tacker_hwaffinity.openstack import OpenStack

TASK_ATTR = "OS-EXT-STS:task_state"
POLL_S = 1.0


@dataclasses.dataclass
class Respread:
    """What the moves did: the workers now (Nova's truth after them), each move, and why
    it stopped short (None: every move ended; colocation may be left, Nova's best)."""

    workers: typing.List[Worker]
    moves: typing.List[typing.Dict[str, typing.Any]]
    error: typing.Optional[str] = None

    def report(self) -> typing.Dict[str, typing.Any]:
        return {"moves": self.moves, "error": self.error}


def converge(os_: "OpenStack", workers: typing.List[Worker],
             reread: typing.Callable[[], typing.List[Worker]], source: str,
             settled: typing.Collection[str], timeout: float, log: logging.Logger,
             clock: typing.Callable[[], float] = time.monotonic,
             sleep: typing.Callable[[float], None] = time.sleep) -> Respread:
    """Move WORKERS apart; REREAD gives them again as Nova has them now (one Nova list);
    SOURCE: 'host' or 'hostId' (``plan.choose_source``); SETTLED: server ids of workers
    to keep in place when they share a host (their nodes are labelled already)."""
    from tacker_hwaffinity.openstack import OpenStackError
    deadline = clock() + timeout
    moves: typing.List[typing.Dict[str, typing.Any]] = []
    for _ in range(len(workers)):
        candidates = colocation.movers(workers, source, settled)
        if not candidates:
            break
        worker, before = candidates[0], colocation.spread(workers, source)
        origin = colocation.host_of(worker, source)
        free = _free_hosts(os_, workers, log) if source == "host" else None
        if free is not None and not free:
            break
        target = min(free) if free else None
        log.info("respread: worker %s (server %s) shares host %s; asking Nova to move it%s",
                 worker.name, worker.server_id, origin, " to %s" % target if target else "")
        try:
            _move(os_, worker.server_id, target, deadline, clock, sleep)
            found = reread()
        except (OpenStackError, TimeoutError) as e:
            return Respread(workers, moves, "respread: live migration of worker %s (server "
                            "%s): %s" % (worker.name, worker.server_id, e))
        workers = found
        now = next((colocation.host_of(w, source) for w in workers
                    if w.server_id == worker.server_id), None)
        moves.append({"worker": worker.name, "server": worker.server_id, "from": origin,
                      "to": now})
        log.info("respread: worker %s (server %s) %s", worker.name, worker.server_id,
                 "moved from %s to %s" % (origin, now) if now != origin
                 else "stays on %s: Nova's scheduler %s" % (origin, "refused %s" % target
                                                            if target else "found no other host"))
        if colocation.spread(workers, source) <= before:
            break               # no free host took it: what is left is Nova's best
    return Respread(workers, moves)


def _free_hosts(os_, workers, log):
    """The compute hosts up, enabled and free of WORKERS (None: Nova does not say, and
    its scheduler chooses)."""
    from tacker_hwaffinity.openstack import OpenStackError
    try:
        hosts = os_.compute_hosts()
    except OpenStackError as e:
        log.info("respread: Nova's compute hosts not read (%s): its scheduler chooses", e)
        return None
    if hosts is None:
        return None
    free = hosts - {w.host for w in workers}
    if not free:
        log.info("respread: every compute host that is up and enabled (%d) has a worker: "
                 "nothing to move to", len(hosts))
    return free


def _move(os_, server_id, host, deadline, clock, sleep):
    """Live-migrate SERVER_ID to HOST (None: the scheduler's choice) and wait until its
    task ends (Nova sets it to 'migrating' before it answers 202). TimeoutError past
    DEADLINE."""
    from tacker_hwaffinity.openstack import OpenStackError
    os_.live_migrate(server_id, host)
    while True:
        server = os_.server(server_id)
        if server.get("status") == "ERROR":
            raise OpenStackError("the server went to ERROR: %s" % (
                (server.get("fault") or {}).get("message") or "no fault given"))
        if server.get(TASK_ATTR) is None:
            return server
        if clock() >= deadline:
            raise TimeoutError("still %s when hwaffinity_param.respread_timeout ran out"
                               % server.get(TASK_ATTR))
        sleep(POLL_S)
