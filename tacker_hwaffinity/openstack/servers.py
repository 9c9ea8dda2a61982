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
poll never does. The same holds for a project member: Nova applies
``changes-since`` (and shows deleted servers) to anyone, within the servers
the identity may list.

Which servers: ``all_tenants=1`` covers every project, and Nova's default
policy (``os_compute_api:servers:detail:get_all_tenants``) gives it to admin
only: anyone else gets HTTP 403. Without it, Nova lists the servers of the
token's project. ``scope`` says which: ``ALL`` (always all projects),
``PROJECT`` (always the project's own), or ``AUTO``: all projects as long
as Nova allows it; the first 403 to ``all_tenants`` switches the poll to the
project's own servers for good, at once (the same poll asks again), so a
member identity costs one refused request, never a failed poll or a loop.
Nova's answer decides, not the token's roles: the policy is the cloud's to
change (a custom role may list every project, an ``admin`` may be refused).
Only admin sees ``OS-EXT-SRV-ATTR:host`` (another policy,
``os_compute_api:os-extended-server-attributes``): ``host`` is None
otherwise, and ``host_id`` is Nova's per-project hash of the host that every
member sees (``labeling.plan.choose_source`` picks between them).
"""
import datetime
import logging
import typing
import urllib.parse

from tacker_hwaffinity.labeling.inventory import addresses

from .api import OpenStack, OpenStackError

PAGE = 1000  # Nova's default [api]max_limit
ALL, PROJECT, AUTO = "all-projects", "project", "auto"   # ServerPoll scopes
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
    def from_nova(cls, server: typing.Mapping[str, typing.Any]) -> "ServerState":
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

    ``scope``: ``ALL``, ``PROJECT`` or ``AUTO`` (see the module's docstring;
    ``all_tenants`` True/False is the older spelling of ALL/PROJECT). With
    AUTO, ``all_tenants`` is None until Nova answered, then True or False;
    ``refused`` keeps Nova's 403 message, and ``log`` (a logger) says the
    decision once, at INFO.

    After a poll: ``since`` is the watermark (newest ``updated`` seen, a
    naive UTC datetime) and ``pages`` the number of pages it read. A
    failed poll (OpenStackError) changes nothing: the next one asks again.
    """

    def __init__(self, openstack: OpenStack, all_tenants: typing.Optional[bool] = None,
                 limit: int = PAGE, overlap: float = 0, scope: typing.Optional[str] = None,
                 log: typing.Optional[logging.Logger] = None) -> None:
        if scope is None:
            scope = AUTO if all_tenants is None else ALL if all_tenants else PROJECT
        if scope not in (ALL, PROJECT, AUTO):
            raise ValueError("scope must be %s, %s or %s, not %r" % (ALL, PROJECT, AUTO, scope))
        self.openstack, self.scope, self.log = openstack, scope, log
        self.all_tenants = {ALL: True, PROJECT: False, AUTO: None}[scope]
        self.limit, self.overlap = int(limit), int(overlap)
        self.refused = None  # Nova's 403 message to all_tenants (AUTO only)
        self.since = None   # newest ``updated`` seen (a datetime), None before a poll
        self.pages = 0      # pages the last poll read (a refused all_tenants not counted)
        # server id -> state returned, for ``updated`` >= the query time
        self._recent: typing.Dict[str, ServerState] = {}

    def describe(self, project: typing.Optional[str] = None) -> str:
        """Which servers the polls list, for a log line (PROJECT: the credentials')."""
        own = "project %s's" % project if project else "the credentials' project's"
        if self.all_tenants:
            return "every project's servers (all_tenants=1)"
        if self.all_tenants is False:
            return own + " servers only" + (
                " (Nova refuses all_tenants to these credentials)" if self.refused else "")
        return ("every project's servers if Nova allows all_tenants to these credentials, "
                "else %s only, decided at the first poll" % own)

    def poll(self) -> typing.List[ServerState]:
        """The servers changed since the last poll (all of them the first
        time), each once, oldest ``updated`` first, as ServerState."""
        query_since = None
        if self.since is not None:
            query_since = self.since - datetime.timedelta(seconds=self.overlap)
        # a server changed between two pages may come twice: keep the newer
        latest: typing.Dict[str, ServerState] = {}
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
        if self.all_tenants is not False:
            query["all_tenants"] = 1
        servers, markers, self.pages = [], set(), 0
        while True:
            try:
                body = self.openstack.get_json("compute", "Nova", "/servers/detail?"
                                           + urllib.parse.urlencode(query))
            except OpenStackError as e:
                if self.all_tenants is not None or e.status != 403:
                    raise
                self._decide(False, str(e))
                del query["all_tenants"]
                continue
            self.pages += 1
            if self.all_tenants is None:
                self._decide(True)
            servers.extend(body.get("servers") or [])
            marker = _next_marker(body)
            if marker is None:
                return servers
            if marker in markers:
                raise OpenStackError("Nova GET /servers/detail: the next link repeats "
                                     "marker %s" % marker)
            markers.add(marker)
            query["marker"] = marker

    def _decide(self, all_tenants, refusal=None):
        """AUTO's answer from Nova: all projects, or (REFUSAL: its 403) the project's."""
        self.all_tenants, self.refused = all_tenants, refusal
        if self.log is not None:
            if refusal:
                self.log.info("Nova refuses all_tenants to these credentials (%s): polling "
                              "the servers of their project only", refusal)
            else:
                self.log.info("Nova allows all_tenants to these credentials: polling every "
                              "project's servers")


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
