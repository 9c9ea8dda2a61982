"""Which servers are workers (or masters), read from what Heat and Nova return.

Pure functions over the JSON the APIs return (dicts), so the same code
serves the real clients, the tests and the benchmark:

* ``members(resources, aspect_id)``: Heat ``GET /stacks/{id}/resources
  ?nested_depth=2`` lists the top stack (depth 0), the AutoScalingGroup's
  nested stack (depth 1: one resource per member, ``parent_resource`` = the
  aspect id, ``physical_resource_id`` = the member's nested stack) and the
  members' resources (depth 2, linked to their stack by ``links[rel=stack]``).
  One call covers every member of every group.
* ``vdu_servers(resources, names)``: ``OS::Nova::Server`` resources of the
  top stack (VDUs that are not scaled).
* ``workers(servers, refs)``: Nova ``GET /servers/detail`` entries for the
  referenced server ids, as ``plan.Worker`` with addresses, host, hostId, AZ.
"""
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tacker_hwaffinity.labeling.plan import Worker

SERVER = "OS::Nova::Server"
HOST_ATTR = "OS-EXT-SRV-ATTR:host"
AZ_ATTR = "OS-EXT-AZ:availability_zone"


class ServerRef:
    """A server found in the stack: where it sits (member or VDU) and its id."""

    __slots__ = ("server_id", "member", "member_stack", "resource")

    def __init__(self, server_id: str, member: str, member_stack: str | None,
                 resource: str):
        self.server_id, self.member = server_id, member
        self.member_stack, self.resource = member_stack, resource

    def __repr__(self) -> str:
        return "ServerRef(%s, member=%s)" % (self.server_id, self.member)


def stack_id_of(resource):
    """The id of the stack a resource belongs to (from its 'stack' link)."""
    for link in resource.get("links") or ():
        if link.get("rel") == "stack":
            return link.get("href", "").rstrip("/").rsplit("/", 1)[-1]
    return None


def members(resources: Sequence[Mapping[str, Any]], aspect_id: str) -> list[ServerRef] | str:
    """ServerRefs of every member of the AutoScalingGroup named ASPECT_ID,
    sorted by member name. An error string instead when the group is absent."""
    group = [r for r in resources if r.get("resource_name") == aspect_id
             and not r.get("parent_resource")]
    if not group:
        return "the stack has no resource %r (the aspect's AutoScalingGroup)" % aspect_id
    group_stack = group[0].get("physical_resource_id")
    member_by_stack = {}
    for r in resources:
        if r.get("parent_resource") == aspect_id and stack_id_of(r) == group_stack:
            member_by_stack[r.get("physical_resource_id")] = r
    refs = []
    for r in resources:
        if r.get("resource_type") != SERVER or not r.get("physical_resource_id"):
            continue
        member = member_by_stack.get(stack_id_of(r))
        if member is not None:
            refs.append(ServerRef(r["physical_resource_id"], member["resource_name"],
                                  member["physical_resource_id"], r["resource_name"]))
        elif r.get("resource_type") == SERVER and stack_id_of(r) == group_stack:
            # a group whose member template is the server itself (no nested member)
            refs.append(ServerRef(r["physical_resource_id"], r["resource_name"], None,
                                  r["resource_name"]))
    return sorted(refs, key=lambda ref: (ref.member, ref.resource))


def vdu_servers(resources: Iterable[Mapping[str, Any]], names: Iterable[str]
                ) -> tuple[list[ServerRef], list[str]]:
    """ServerRefs of the top-stack servers named NAMES; (refs, missing names)."""
    top = {r.get("resource_name"): r for r in resources
           if not r.get("parent_resource") and r.get("resource_type") == SERVER}
    refs, missing = [], []
    for name in names:
        r = top.get(name)
        if r is None or not r.get("physical_resource_id"):
            missing.append(name)
        else:
            refs.append(ServerRef(r["physical_resource_id"], name, None, name))
    return refs, missing


def addresses(server: Mapping[str, Any]) -> list[str]:
    """Every address of a Nova server (fixed first, then floating), unique."""
    fixed: list[str] = []
    floating: list[str] = []
    for entries in (server.get("addresses") or {}).values():
        for a in entries or ():
            addr = a.get("addr")
            if addr:
                (floating if a.get("OS-EXT-IPS:type") == "floating" else fixed).append(addr)
    seen, out = set(), []
    for addr in fixed + floating:
        if addr not in seen:
            seen.add(addr)
            out.append(addr)
    return out


def workers(servers: Iterable[Mapping[str, Any]], refs: Iterable[ServerRef]
            ) -> tuple[list[Worker], list[ServerRef]]:
    """(Workers for REFS found in SERVERS, refs whose server Nova does not list)."""
    by_id = {s.get("id"): s for s in servers}
    found, missing = [], []
    for ref in refs:
        s = by_id.get(ref.server_id)
        if s is None:
            missing.append(ref)
            continue
        found.append(Worker(s.get("name") or ref.member, s["id"], addresses(s),
                            host=s.get(HOST_ATTR), host_id=s.get("hostId"),
                            zone=s.get(AZ_ATTR)))
    return found, missing
