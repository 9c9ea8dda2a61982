"""Watch Nova servers for moves: one ``GET /servers/detail`` per poll.

``ServerPoll(openstack).poll()`` lists every server the first time, then only
the servers Nova changed since the newest ``updated`` value seen so far
(``changes-since``, which Nova applies as ``updated_at >= t``): a live
migration, an evacuation, a status change or a deletion bumps ``updated``.
So one call answers "what moved" whatever the number of servers, as long as
fewer than a page (``limit``, 1000 by default, which is also Nova's default
``[api]max_limit``) changed between two polls. A full page is never cut
short: Nova then adds a ``servers_links`` "next" link and the poll follows it
(one more call per page; ``pages`` tells how many the last poll made), also
when the cloud's ``max_limit`` is below ``limit``.

Nova's ``updated`` has one-second precision and the filter is inclusive, so
the servers changed in the newest second come back on the next poll: a
server is returned again only if its state (any field of
:class:`ServerState`) differs from what this poll already returned for it.
Comparing the state, not only ``updated``, matters: two changes within one
second share one ``updated`` value (an evacuated server is ACTIVE on the dead
host, then on the new host, within the same second).

With ``changes-since``, Nova also returns deleted servers (status
``DELETED``), once their last change is newer than the watermark; the first
poll never does. ``all_tenants=1`` (admin) covers every project; only admin
sees ``OS-EXT-SRV-ATTR:host`` (``host`` is None otherwise; ``host_id`` is the
per-project hash of the host that everybody sees).
"""
import datetime
import typing
import urllib.parse

from tacker_hwaffinity.labeling.inventory import addresses

from .api import OpenStackError

PAGE = 1000  # Nova's default [api]max_limit
HOST = "OS-EXT-SRV-ATTR:host"
TASK = "OS-EXT-STS:task_state"
_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


class ServerState(typing.NamedTuple):
    """What a poll reports of one server (``updated`` as Nova wrote it)."""

    id: str
    name: str
    status: str
    task_state: typing.Optional[str]
    host: typing.Optional[str]
    host_id: str
    updated: str
    metadata: dict
    addresses: tuple = ()     # fixed, then floating (labeling.inventory.addresses)

    @classmethod
    def from_nova(cls, server):
        return cls(id=server["id"], name=server.get("name") or "",
                   status=server.get("status") or "", task_state=server.get(TASK),
                   host=server.get(HOST), host_id=server.get("hostId") or "",
                   updated=server.get("updated") or "",
                   metadata=dict(server.get("metadata") or {}),
                   addresses=tuple(addresses(server)))


class ServerPoll:
    """Successive ``GET /servers/detail?changes-since=`` reads on OPENSTACK
    (an :class:`~tacker_hwaffinity.openstack.api.OpenStack`).

    ``overlap`` (seconds, default 0) moves the ``changes-since`` watermark
    back, for clouds whose Nova services' clocks disagree: ``updated`` is
    written with the clock of whichever service saved the server.

    After a poll: ``since`` is the watermark (newest ``updated`` seen, a
    naive UTC datetime) and ``pages`` the number of GET calls it made. A
    failed poll (OpenStackError) changes nothing: the next one asks again.
    """

    def __init__(self, openstack, all_tenants=True, limit=PAGE, overlap=0):
        self.openstack = openstack
        self.all_tenants, self.limit, self.overlap = all_tenants, int(limit), int(overlap)
        self.since = None   # newest ``updated`` seen (a datetime), None before a poll
        self.pages = 0      # GET calls the last poll made
        self._recent = {}   # server id -> state returned, for ``updated`` >= the query time

    def poll(self):
        """The servers changed since the last poll (all of them the first
        time), each once, oldest ``updated`` first, as ServerState."""
        query_since = None
        if self.since is not None:
            query_since = self.since - datetime.timedelta(seconds=self.overlap)
        latest = {}   # a server changed between two pages may come twice: keep the newer
        for state in map(ServerState.from_nova, self._list(query_since)):
            if state.id not in latest or state.updated >= latest[state.id].updated:
                latest[state.id] = state
        states = list(latest.values())
        out = [s for s in states if self._recent.get(s.id) != s]
        newest = max((_parse(s.updated) for s in states if s.updated), default=None)
        if newest is not None and (self.since is None or newest > self.since):
            self.since = newest
        if self.since is not None:
            keep_from = self.since - datetime.timedelta(seconds=self.overlap)
            recent = {k: v for k, v in self._recent.items() if _parse(v.updated) >= keep_from}
            recent.update((s.id, s) for s in states if s.updated and _parse(s.updated) >= keep_from)
            self._recent = recent
        return sorted(out, key=lambda s: (s.updated, s.id))

    def _list(self, since):
        """Every server of ``/servers/detail`` with these filters, all pages."""
        query = {"limit": self.limit}
        if since is not None:
            query["changes-since"] = since.strftime(_FORMAT)
        if self.all_tenants:
            query["all_tenants"] = 1
        servers, markers, self.pages = [], set(), 0
        while True:
            body = self.openstack._get("compute", "Nova", "/servers/detail?"
                                       + urllib.parse.urlencode(query))
            self.pages += 1
            servers.extend(body.get("servers") or [])
            marker = _next_marker(body)
            if marker is None:
                return servers
            if marker in markers:
                raise OpenStackError("Nova GET /servers/detail: the next link repeats "
                                     "marker %s" % marker)
            markers.add(marker)
            query["marker"] = marker


def _next_marker(body):
    """The ``marker`` of the "next" link of a Nova list answer, or None."""
    for link in body.get("servers_links") or []:
        if link.get("rel") == "next":
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(link.get("href", "")).query)
            markers = query.get("marker")
            if markers:
                return markers[-1]
    return None


def _parse(value):
    """Nova's ``updated`` (``2026-11-24T00:15:33Z``) as a naive UTC datetime."""
    try:
        return datetime.datetime.strptime(value, _FORMAT)
    except ValueError:   # another ISO 8601 form: offset, fraction
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return parsed.replace(microsecond=0)
