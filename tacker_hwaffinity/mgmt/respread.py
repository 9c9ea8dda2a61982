"""``on_colocation: respread``: move workers that share a compute host apart, through Nova.

After instantiate, scale-out or heal, the workers that share a host
(``labeling.colocation.movers``) are live-migrated one at a time with no destination
named, so Nova's scheduler places each against the group's other members, all placed by
then: the creation race of a soft anti-affinity group converges without the operator.
The live migration keeps the server (its id, its node, what Tacker recorded of it).

Bounded: at most one move per worker, all within ``respread_timeout`` seconds, and it
stops at the first move that did not add a host (Nova put the worker on another
member's host, or found no host: the group has more members than free hosts, and what
is left is Nova's best, reported as a warning). Before each move it asks Nova which
compute hosts are up and enabled (``os-hypervisors``): with none free of workers, it
moves nothing, since the move could only put the worker, and its pods, on another
worker's host. (When Nova does not say, as for a non-admin user, the move decides.)
Only workers not settled yet move (new ones, and healed ones in heal_end): a settled
worker's node may carry pods, which its move could put on another worker's host; a
colocation of settled workers is left to the warning (and to the controller).
No host is named: the scheduler weighs the group. (Naming the free host was tried; in two
loaded story runs the heal after such a move then put its new server on another worker's
host, which six runs with the scheduler's choice never did.)
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


def candidates(workers: typing.Sequence[Worker], source: str,
               settled: typing.Collection[str]) -> typing.List[Worker]:
    """The workers respread may move now, best first: ``colocation.movers`` that are not
    SETTLED (a settled worker may carry pods: moving it could put them on another
    worker's host, as Nova's scheduler view lags live migrations)."""
    return [w for w in colocation.movers(workers, source, settled)
            if w.server_id not in settled]


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
        movable = candidates(workers, source, settled)
        if not movable:
            break
        worker, before = movable[0], colocation.spread(workers, source)
        origin = colocation.host_of(worker, source)
        if source == "host" and not _free_host(os_, workers, log):
            break
        log.info("respread: worker %s (server %s) shares host %s; asking Nova to move it",
                 worker.name, worker.server_id, origin)
        try:
            _move(os_, worker.server_id, deadline, clock, sleep)
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
                 else "stays on %s: Nova's scheduler found no other host" % origin)
        if colocation.spread(workers, source) <= before:
            break               # no free host took it: what is left is Nova's best
    return Respread(workers, moves)


def _free_host(os_, workers, log):
    """Is a compute host up, enabled and free of WORKERS, or might one be (Nova does not
    say)? A move needs one: Nova's scheduler would put the worker on another's host."""
    from tacker_hwaffinity.openstack import OpenStackError
    try:
        hosts = os_.compute_hosts()
    except OpenStackError as e:
        log.info("respread: Nova's compute hosts not read (%s): the move decides", e)
        return True
    if hosts is None:
        return True
    if hosts - {w.host for w in workers}:
        return True
    log.info("respread: every compute host that is up and enabled (%d) has a worker: "
             "nothing to move to", len(hosts))
    return False


def _move(os_, server_id, deadline, clock, sleep):
    """Live-migrate SERVER_ID and wait until its task ends (Nova sets it to 'migrating'
    before it answers 202). TimeoutError past DEADLINE."""
    from tacker_hwaffinity.openstack import OpenStackError
    os_.live_migrate(server_id)
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
