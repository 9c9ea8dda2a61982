"""heat-translator classes for the SOL001 AntiAffinityRule and AffinityRule.

They replace heat-translator's own classes in its type map. They only hold
the policy until :mod:`extension` runs, after every node and policy has been
translated; doing the work in ``handle_properties`` (as heat-translator's own
classes do) would depend on whether the ScalingAspects policy comes before or
after the rule.
"""
from translator.hot.syntax.hot_resource import HotResource

from tacker_hwaffinity.translator import names


class AffinityRulePlaceholder(HotResource):
    """Stands for one rule policy in heat-translator's resource list."""

    toscatype: str | None = None

    def __init__(self, policy, csar_dir=None, hot_template_parameters=None):
        # The type must be OS::Nova::ServerGroup: heat-translator deletes
        # resources without a type before our step sees the list.
        super().__init__(policy, name=policy.name, type=names.SERVER_GROUP,
                         csar_dir=csar_dir)
        self.policy = policy

    def handle_properties(self, resources=None):
        """Nothing to do yet; see tacker_hwaffinity.translator.extension."""


class AntiAffinityRulePlaceholder(AffinityRulePlaceholder):
    toscatype = names.ANTI_AFFINITY_RULE


class AffinityRuleOnlyPlaceholder(AffinityRulePlaceholder):
    toscatype = names.AFFINITY_RULE


CLASSES = (AntiAffinityRulePlaceholder, AffinityRuleOnlyPlaceholder)
BY_KIND = {"anti": AntiAffinityRulePlaceholder, "affinity": AffinityRuleOnlyPlaceholder}
