"""Scope ``zone``: availability zones per member, from a Heat parameter.

* AntiAffinityRule: parameter ``<policy>_zones`` (comma_delimited_list, at
  least one zone per member, a ``length`` constraint makes Heat reject fewer);
  member *i* (in target order) gets ``availability_zone: {get_param:
  [<policy>_zones, i]}``. Members inside an AutoScalingGroup cannot be given
  distinct zones (every instance of a group shares one template), so they are
  an error.
* AffinityRule: parameter ``<policy>_zone`` (string); every member gets it,
  scaled ones through a parameter of their nested template.

``hwaffinity.zones`` in the policy metadata becomes the parameter default.
"""
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.translator import names
from tacker_hwaffinity.translator.rules import plain_yaml


def parameter(rule):
    """(name, type, description, default, constraints) of the rule's parameter."""
    param = names.zones_parameter(rule.name, rule.anti)
    # heat-translator strips quotes from the main template: name the members
    # only when none of them would need quoting.
    members = ", ".join(rule.members) if all(map(plain_yaml, rule.members)) else \
        "see the VNFD"
    if rule.anti:
        n = len(rule.members)
        description = ("Distinct availability zones for the members of policy %s, "
                       "one per member in this order - %s" % (rule.name, members))
        constraints = [{"length": {"min": n},
                        "description": "policy %s spreads %d members over distinct zones, "
                                       "give at least %d" % (rule.name, n, n)}]
        default = list(rule.zones) if rule.zones else None
        return param, "comma_delimited_list", description, default, constraints
    description = "Availability zone shared by the members of policy %s - %s" % (
        rule.name, members)
    default = rule.zones[0] if rule.zones else None
    return param, "string", description, default, None


def _set_zone(rule, vdu, server_props, value):
    if server_props.get("availability_zone") not in (None, value):
        raise InputError("server %s already has availability_zone %r"
                         % (vdu, server_props["availability_zone"]),
                         obj='policy "%s"' % rule.name, field="targets")
    server_props["availability_zone"] = value


def wire(rule, servers, nested):
    """Give every member of a zone rule its availability zone."""
    param = names.zones_parameter(rule.name, rule.anti)
    located = [(vdu,) + tuple(servers.find(rule, vdu)) for vdu in rule.members]
    if rule.anti:
        scaled = [(vdu, f) for vdu, _, f in located if f is not None]
        if scaled:
            vdu, file_name = scaled[0]
            raise InputError(
                "VDU %s is scaled by AutoScalingGroup %s; its instances share one nested "
                "template and cannot be spread over distinct availability zones. Use scope "
                "nfvi_node, or drop the ScalingAspect for this VDU"
                % (vdu, nested.asg_name(file_name)),
                obj='policy "%s"' % rule.name, field="properties.scope")
        for index, (vdu, server_props, _) in enumerate(located):
            _set_zone(rule, vdu, server_props, {"get_param": [param, index]})
        return
    for vdu, server_props, file_name in located:
        if file_name is not None:
            nested.pass_down(file_name, param, {"get_param": param}, "string", rule.name)
        _set_zone(rule, vdu, server_props, {"get_param": param})
