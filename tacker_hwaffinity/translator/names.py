"""Type names, metadata keys and the names we give to generated things."""

ANTI_AFFINITY_RULE = "tosca.policies.nfv.AntiAffinityRule"
AFFINITY_RULE = "tosca.policies.nfv.AffinityRule"
RULE_TYPES = (ANTI_AFFINITY_RULE, AFFINITY_RULE)

PLACEMENT_GROUP = "tosca.groups.nfv.PlacementGroup"
VDU_COMPUTE = "tosca.nodes.nfv.Vdu.Compute"
VIRTUAL_LINK = "tosca.nodes.nfv.VnfVirtualLink"
SCALING_ASPECTS = "tosca.policies.nfv.ScalingAspects"

SERVER = "OS::Nova::Server"
SERVER_GROUP = "OS::Nova::ServerGroup"
AUTOSCALING_GROUP = "OS::Heat::AutoScalingGroup"

# Scopes of SOL001 v2.6.1/v2.7.1 AffinityRule and AntiAffinityRule.
SCOPE_NODE = "nfvi_node"
SCOPE_ZONE = "zone"
SCOPES_NOT_IN_ONE_STACK = ("zone_group", "nfvi_pop")

# Policy metadata keys we read. Any other key under this prefix is an error
# (a typo must not silently turn a rule into something weaker).
META_PREFIX = "hwaffinity."
META_SOFT = META_PREFIX + "soft"
META_MAX_PER_HOST = META_PREFIX + "max_server_per_host"
META_ZONES = META_PREFIX + "zones"
META_KEYS = (META_SOFT, META_MAX_PER_HOST, META_ZONES)


def zones_parameter(policy_name: str, anti: bool) -> str:
    """Name of the Heat parameter that carries the zone(s) of a zone rule."""
    return policy_name + ("_zones" if anti else "_zone")
