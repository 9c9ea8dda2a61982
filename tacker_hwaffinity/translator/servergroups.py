"""Scope ``nfvi_node``: one OS::Nova::ServerGroup per rule, hints on members.

The resource is named exactly after the policy: Tacker v1 matches server
groups to ``placement_constraint.server_group_name`` (the policy name) by the
name in ``scheduler_hints.group`` (``get_resource`` at the top level,
``get_param`` in a nested template), so the nested parameter carries the
policy name too. The ``name`` property is left out: Heat then gives every
stack its own ``<stack>-<policy>-<suffix>`` group name, so two VNF instances
in one project never share a visible name.
"""
from tacker_hwaffinity.errors import InputError


def properties(rule):
    """Heat properties of the rule's OS::Nova::ServerGroup (real data)."""
    props = {"policies": [rule.nova_policy]}
    if rule.max_server_per_host is not None:
        props["rules"] = {"max_server_per_host": rule.max_server_per_host}
    return props


def _set_group(rule, vdu, server_props, value):
    hints = server_props.get("scheduler_hints")
    if hints is None:
        hints = server_props["scheduler_hints"] = {}
    if not isinstance(hints, dict):
        raise InputError("server %s has scheduler_hints that are not a mapping (%r)"
                         % (vdu, hints), obj='policy "%s"' % rule.name, field="targets")
    if "group" in hints and hints["group"] != value:
        raise InputError("server %s already has a server group hint (%r)"
                         % (vdu, hints["group"]), obj='policy "%s"' % rule.name,
                         field="targets")
    hints["group"] = value


def wire(rule, servers, nested):
    """Point every member server of ``rule`` at the rule's server group."""
    for vdu in rule.members:
        server_props, file_name = servers.find(rule, vdu)
        if file_name is None:
            _set_group(rule, vdu, server_props, {"get_resource": rule.name})
        else:
            nested.pass_down(file_name, rule.name, {"get_resource": rule.name},
                             "string", rule.name)
            _set_group(rule, vdu, server_props, {"get_param": rule.name})
