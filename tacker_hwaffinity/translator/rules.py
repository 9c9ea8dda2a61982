"""Collect and validate the (Anti)AffinityRule policies of a parsed VNFD.

tosca-parser accepts several things we cannot translate: targets and
PlacementGroup members of the wrong type, a group target mixed with names
that exist nowhere, a PlacementGroup without its required ``description``,
and policy types derived from the SOL001 ones. Everything is checked here,
from the TOSCA model alone, so the outcome does not depend on the order of
the policies or on what heat-translator did with the servers.

Errors are :class:`InputError` with ``obj='policy "NAME"'`` and the field.
"""
import dataclasses
import re
from collections.abc import Mapping
from typing import Any

import yaml

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.translator import names


@dataclasses.dataclass(frozen=True)
class PlacementRule:
    """One translatable rule: a policy resolved to its member VDUs."""

    name: str
    policy_type: str
    anti: bool
    scope: str
    members: tuple          # VDU node names, first-seen order, no duplicates
    soft: bool = False
    max_server_per_host: int | None = None
    zones: tuple | None = None      # default zones (metadata), scope zone only

    @property
    def nova_policy(self):
        base = "anti-affinity" if self.anti else "affinity"
        return "soft-" + base if self.soft else base

    @property
    def kind(self):
        return "AntiAffinityRule" if self.anti else "AffinityRule"


_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}


def _err(policy, message, field):
    return InputError(message, obj='policy "%s"' % policy, field=field)


def plain_yaml(text):
    """True if ``text`` survives heat-translator's YAML output unchanged.

    heat-translator deletes every single quote from the dumped main template,
    so a string that YAML must quote (``yes``, ``1.0``, ``a: b``) comes back
    as another value or breaks the file. Names we write must not need quotes.
    """
    if not isinstance(text, str) or not text:
        return False
    if _PLAIN_NAME.match(text) and text.lower() not in _YAML_WORDS:
        return True         # the usual identifier: no need to ask the emitter
    dumped = yaml.safe_dump(text, default_flow_style=True)
    try:
        return yaml.safe_load(dumped.replace("'", "")) == text
    except yaml.YAMLError:
        return False


def rule_kind(policy):
    """'anti', 'affinity' or None for a tosca-parser Policy."""
    ptype = policy.type_definition
    if ptype is None:
        return None
    if ptype.is_derived_from(names.ANTI_AFFINITY_RULE):
        return "anti"
    if ptype.is_derived_from(names.AFFINITY_RULE):
        return "affinity"
    return None


def rule_kinds(policies):
    """{policy type name: 'anti' | 'affinity' | None}, one derivation walk per type."""
    kinds = {}
    for policy in policies or []:
        if policy.type not in kinds:
            kinds[policy.type] = rule_kind(policy)
    return kinds


class _Derivation:
    """is_derived_from, asked once per (type, base): tosca-parser rebuilds the
    parent type objects on every call."""

    def __init__(self):
        self._known = {}

    def __call__(self, entity, base):
        key = (entity.type, base)
        if key not in self._known:
            self._known[key] = entity.is_derived_from(base)
        return self._known[key]


def collect(tosca: Any, kinds: Mapping[str, str | None] | None = None
            ) -> list[PlacementRule]:
    """All (Anti)AffinityRule policies of ``tosca`` as validated PlacementRules.

    ``kinds`` is :func:`rule_kinds` of the policies when the caller has it.
    Raises InputError for the first problem, checking policies in name order
    so the reported problem does not depend on how the VNFD lists them.
    """
    topo = tosca.topology_template
    policies = topo.policies or []
    if kinds is None:
        kinds = rule_kinds(policies)
    found = [p for p in policies if kinds.get(p.type)]
    if not found:
        return []
    groups = {g.name: g for g in (topo.groups or [])}
    nodes = {n.name: n for n in (tosca.nodetemplates or [])}
    derived = _Derivation()
    rules = [_build(policy, kinds[policy.type] == "anti", groups, nodes, derived)
             for policy in sorted(found, key=lambda p: p.name)]
    check_overlaps(rules)
    return rules


def _build(policy, anti, groups, nodes, derived):
    name = policy.name
    if not plain_yaml(name):
        raise _err(name, "the policy name is used as a Heat resource name and must be "
                         "a plain YAML string (heat-translator strips quotes from its "
                         "output); rename the policy", "name")
    props = policy.properties if isinstance(policy.properties, dict) else {}
    scope = props.get("scope")
    if scope in names.SCOPES_NOT_IN_ONE_STACK:
        raise _err(name, "scope %s is not expressible in one Heat stack (Nova server "
                         "groups act on hosts, availability zones on one region); "
                         "use nfvi_node or zone" % scope, "properties.scope")
    if scope not in (names.SCOPE_NODE, names.SCOPE_ZONE):
        raise _err(name, "scope %r is not supported; expected nfvi_node or zone"
                   % (scope,), "properties.scope")
    members = _members(name, policy.targets, groups, nodes, derived)
    soft, max_per_host, zones = _metadata(name, policy.entity_tpl.get("metadata"),
                                          anti, scope, len(members))
    return PlacementRule(name=name, policy_type=policy.type, anti=anti, scope=scope,
                         members=tuple(members), soft=soft,
                         max_server_per_host=max_per_host, zones=zones)


def _members(policy, targets, groups, nodes, derived):
    if not targets:
        raise _err(policy, "no targets; list VDUs or PlacementGroups of VDUs", "targets")
    if not isinstance(targets, list):
        raise _err(policy, "targets must be a list of names", "targets")
    members = []
    for target in targets:
        if target in groups:            # groups win over nodes, as in tosca-parser
            members.extend(_group_members(policy, groups[target], nodes, derived))
        elif target in nodes:
            members.append(_check_vdu(policy, nodes[target], "target %s" % target, derived))
        else:
            raise _err(policy, "target %r is neither a group nor a node template"
                       % (target,), "targets")
    unique = list(dict.fromkeys(members))
    return unique


def _group_members(policy, group, nodes, derived):
    where = "target %s" % group.name
    if not derived(group, names.PLACEMENT_GROUP):
        raise _err(policy, "%s is a %s; group targets must be %s"
                   % (where, group.type, names.PLACEMENT_GROUP), "targets")
    description = (group.entity_tpl.get("properties") or {}).get("description")
    if not isinstance(description, str):
        raise InputError("PlacementGroup property description is required by SOL001 "
                         "(used by %s)" % ('policy "%s"' % policy),
                         obj='group "%s"' % group.name, field="properties.description")
    members = group.members or []
    if not members:
        raise _err(policy, "%s has no members" % where, "targets")
    result = []
    for member in members:
        node = nodes.get(member)
        if node is None:
            raise _err(policy, "%s: member %r is not a node template" % (where, member),
                       "targets")
        result.append(_check_vdu(policy, node, "%s: member %s" % (where, member), derived))
    return result


def _check_vdu(policy, node, where, derived):
    if derived(node, names.VDU_COMPUTE):
        return node.name
    if derived(node, names.VIRTUAL_LINK):
        raise _err(policy, "%s is a VnfVirtualLink; affinity between virtual links has no "
                           "Heat/Nova equivalent, only Vdu.Compute members can be translated"
                   % where, "targets")
    raise _err(policy, "%s is a %s; targets and PlacementGroup members must be %s"
               % (where, node.type, names.VDU_COMPUTE), "targets")


def _truth(policy, key, value):
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise _err(policy, "expected true or false, got %r" % (value,), "metadata." + key)


def _positive_int(policy, key, value):
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _err(policy, "expected an integer >= 1, got %r" % (value,), "metadata." + key)
    return value


def _zone_list(policy, key, value):
    if isinstance(value, str):
        value = [z.strip() for z in value.split(",")]
    if not isinstance(value, list) or not value:
        raise _err(policy, "expected a list of availability zone names", "metadata." + key)
    for zone in value:
        if not plain_yaml(zone) or zone != zone.strip():
            raise _err(policy, "zone %r is not a plain name" % (zone,), "metadata." + key)
    if len(set(value)) != len(value):
        raise _err(policy, "zones must be distinct, got %s" % ", ".join(value),
                   "metadata." + key)
    return tuple(value)


def _metadata(policy, meta, anti, scope, n_members):
    """(soft, max_server_per_host, zones) from the policy metadata."""
    meta = meta if isinstance(meta, dict) else {}
    for key in meta:
        if isinstance(key, str) and key.startswith(names.META_PREFIX) \
                and key not in names.META_KEYS:
            raise _err(policy, "unknown key; known keys are %s" % ", ".join(names.META_KEYS),
                       "metadata." + key)
    soft = _truth(policy, names.META_SOFT, meta[names.META_SOFT]) \
        if names.META_SOFT in meta else False
    max_per_host = _positive_int(policy, names.META_MAX_PER_HOST,
                                 meta[names.META_MAX_PER_HOST]) \
        if names.META_MAX_PER_HOST in meta else None
    zones = _zone_list(policy, names.META_ZONES, meta[names.META_ZONES]) \
        if names.META_ZONES in meta else None
    if scope != names.SCOPE_NODE:
        for key, value in ((names.META_SOFT, soft), (names.META_MAX_PER_HOST, max_per_host)):
            if value:
                raise _err(policy, "only valid with scope nfvi_node (Nova server groups)",
                           "metadata." + key)
    if max_per_host is not None:
        if not anti or soft:
            raise _err(policy, "Nova accepts max_server_per_host only with the hard "
                               "anti-affinity policy", "metadata." + names.META_MAX_PER_HOST)
    if zones is not None:
        if scope != names.SCOPE_ZONE:
            raise _err(policy, "only valid with scope zone", "metadata." + names.META_ZONES)
        if anti and len(zones) < n_members:
            raise _err(policy, "%d zones for %d members; anti-affinity over zones needs one "
                               "distinct zone per member" % (len(zones), n_members),
                       "metadata." + names.META_ZONES)
        if not anti and len(zones) != 1:
            raise _err(policy, "affinity over zones needs exactly one zone, got %d"
                       % len(zones), "metadata." + names.META_ZONES)
    return soft, max_per_host, zones


def check_overlaps(rules):
    """A server can join one Nova server group and have one availability zone.

    Two nfvi_node rules (or two zone rules) over the same VDU cannot both be
    expressed; say so instead of letting one win.
    """
    for scope, what in ((names.SCOPE_NODE, "a Nova server joins at most one server group"),
                        (names.SCOPE_ZONE, "a Nova server has one availability zone")):
        owner = {}
        for rule in rules:
            if rule.scope != scope:
                continue
            for vdu in rule.members:
                if vdu in owner:
                    raise _err(rule.name, "VDU %s is also a member of %s-scoped policy %s; %s"
                               % (vdu, scope, owner[vdu], what), "targets")
                owner[vdu] = rule.name
