"""Which worker VMs have settled on another compute host since they were last seen.

Fed with Nova's server states (``openstack.servers.ServerPoll``): a server in the
middle of a move (MIGRATING, RESIZE, VERIFY_RESIZE, REVERT_RESIZE, REBUILD, or any
task in progress) is waiting and is not labelled twice; one that is ACTIVE or SHUTOFF
on a host (or hostId, for a VIM user who cannot see hosts) other than the one last
seen has moved; so has one first seen in the middle of a move (or while building)
once it settles (``Move.old`` None: a controller that started, or took over, during a
live migration labelled it, if at all, with the host it was leaving); a DELETED one is
forgotten. Pure: no I/O.
"""
MOVING = ("MIGRATING", "RESIZE", "VERIFY_RESIZE", "REVERT_RESIZE", "REBUILD", "BUILD")
SETTLED = ("ACTIVE", "SHUTOFF", "PAUSED", "SUSPENDED")


class Move:
    __slots__ = ("server_id", "name", "old", "new")

    def __init__(self, server_id, name, old, new):
        self.server_id, self.name, self.old, self.new = server_id, name, old, new


class HostTracker:
    """SOURCE: "host" or "hostId" (labeling.plan.choose_source's answer)."""

    def __init__(self, source="host"):
        self.source = source
        self.where = {}          # server id -> last settled host (or hostId)
        self.waiting = set()     # server ids in the middle of a move

    def _place_of(self, state):
        return state.host if self.source == "host" else state.host_id

    def update(self, states):
        """[Move] for the servers in STATES that settled somewhere new."""
        moves = []
        for s in states:
            if s.status == "DELETED":
                self.where.pop(s.id, None)
                self.waiting.discard(s.id)
                continue
            if s.status in MOVING or s.task_state:
                self.waiting.add(s.id)
                continue
            if s.status not in SETTLED:
                continue
            was_waiting = s.id in self.waiting
            self.waiting.discard(s.id)
            place = self._place_of(s)
            if not place:
                continue
            old = self.where.get(s.id)
            self.where[s.id] = place
            if old != place and (old is not None or was_waiting):
                moves.append(Move(s.id, s.name, old, place))
        return moves
