"""The step that runs after heat-translator translated every node and policy.

At that point the ScalingAspects have moved their servers into nested
templates (whatever the order of the policies was), so this step sees the
final layout: servers at the top level and servers inside AutoScalingGroups.
It replaces the placeholder resources of our policy classes by

* an ``OS::Nova::ServerGroup`` per ``nfvi_node`` rule (at the end of the
  resources, in policy-name order), and
* a parameter per ``zone`` rule,

and wires every member server. The input VNFD decides everything; the order
of its policies does not.
"""
from translator.hot.syntax.hot_parameter import HotParameter
from translator.hot.syntax.hot_resource import HotResource

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.translator import names
from tacker_hwaffinity.translator import nested as nested_mod
from tacker_hwaffinity.translator import rules as rules_mod
from tacker_hwaffinity.translator import servergroups
from tacker_hwaffinity.translator import zones
from tacker_hwaffinity.translator.resources import AffinityRulePlaceholder


class _Servers:
    """Where each VDU's OS::Nova::Server ended up."""

    def __init__(self, resources, nested):
        self._top = {r.name: r for r in resources if r.type == names.SERVER}
        self._nested = nested

    def find(self, rule, vdu):
        """(mutable server properties, nested file name or None)."""
        res = self._top.get(vdu)
        if res is not None:
            if not isinstance(res.properties, dict):
                res.properties = {}
            return res.properties, None
        file_name = self._nested.locate(vdu)
        if file_name is not None:
            return self._nested.server_properties(file_name, vdu), file_name
        raise InputError("VDU %s produced no OS::Nova::Server in the translation" % vdu,
                         obj='policy "%s"' % rule.name, field="targets")


def _check_names(rules, resources, parameters):
    taken = {r.name: r for r in resources if not isinstance(r, AffinityRulePlaceholder)}
    params = {p.name for p in parameters}
    for rule in rules:
        if rule.scope == names.SCOPE_NODE and rule.name in taken:
            raise InputError("the server group would be named %s, which is already a "
                             "resource of the template (made from %s); rename the policy"
                             % (rule.name, taken[rule.name].nodetemplate.name),
                             obj='policy "%s"' % rule.name, field="name")
        if rule.scope == names.SCOPE_ZONE:
            param = names.zones_parameter(rule.name, rule.anti)
            if param in params:
                raise InputError("the template already has a parameter %s; rename the "
                                 "policy" % param, obj='policy "%s"' % rule.name,
                                 field="name")


def apply(node_translator, resources, kinds=None):
    """Complete ``resources`` (heat-translator's final list) for our rules.

    ``kinds`` is :func:`rules.rule_kinds` of the template's policies, if known.
    """
    rules = rules_mod.collect(node_translator.tosca, kinds)
    placeholders = [r for r in resources if isinstance(r, AffinityRulePlaceholder)]
    if not rules and not placeholders:
        return resources
    parameters = node_translator.hot_template.parameters
    _check_names(rules, resources, parameters)
    nested = nested_mod.NestedTemplates(resources)
    servers = _Servers(resources, nested)
    groups = []
    for rule in rules:
        if rule.scope == names.SCOPE_NODE:
            servergroups.wire(rule, servers, nested)
            policy = next((p.policy for p in placeholders if p.policy.name == rule.name),
                          None)
            groups.append(HotResource(policy, name=rule.name, type=names.SERVER_GROUP,
                                      properties=servergroups.properties(rule)))
        else:
            zones.wire(rule, servers, nested)
            name, ptype, description, default, constraints = zones.parameter(rule)
            parameters.append(HotParameter(name, ptype, description=description,
                                           default=default, constraints=constraints))
    nested.flush()
    kept = [r for r in resources if not isinstance(r, AffinityRulePlaceholder)]
    resources[:] = kept + groups
    return resources
