"""KubeSchedulerConfiguration: plugin sets, weights, args, strict fields."""
import pytest

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling.profile import Profile

from .helpers import config


DEFAULT_SCORES = [("TaintToleration", 3), ("NodeAffinity", 2), ("NodeResourcesFit", 1),
                  ("PodTopologySpread", 2), ("InterPodAffinity", 2),
                  ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1)]


def test_defaults():
    p = Profile()
    assert p.filters == ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
                         "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity"]
    assert p.scores == DEFAULT_SCORES  # kube-scheduler's v1 default weights
    assert (p.hard_weight, p.ignore_existing_preferred) == (1, False)
    assert p.spread_system_defaulted and p.preemption


def test_star_disables_every_default_at_one_point():
    p = Profile(config(plugins={"filter": {"disabled": [{"name": "*"}]}}))
    assert p.filters == [] and p.scores == DEFAULT_SCORES


def test_star_then_enable_keeps_only_the_enabled():
    p = Profile(config(plugins={"filter": {"disabled": [{"name": "*"}],
                                           "enabled": [{"name": "InterPodAffinity"}]},
                                "score": {"disabled": [{"name": "*"}],
                                          "enabled": [{"name": "InterPodAffinity", "weight": 5}]}}))
    assert p.filters == ["InterPodAffinity"] and p.scores == [("InterPodAffinity", 5)]


def test_multipoint_disable_and_reweight():
    p = Profile(config(plugins={"multiPoint": {
        "disabled": [{"name": "NodeName"}, {"name": "DefaultPreemption"}],
        "enabled": [{"name": "InterPodAffinity", "weight": 9}]}}))
    assert "NodeName" not in p.filters and not p.preemption
    assert dict(p.scores)["InterPodAffinity"] == 9


def test_specific_enable_overrides_multipoint_and_comes_first():
    p = Profile(config(plugins={"filter": {"enabled": [{"name": "InterPodAffinity"}]},
                                "score": {"enabled": [{"name": "InterPodAffinity"}]}}))
    assert p.filters[0] == "InterPodAffinity"
    assert p.scores[0] == ("InterPodAffinity", 1)  # weight 0 means 1
    assert p.scores[1:] == [s for s in DEFAULT_SCORES if s[0] != "InterPodAffinity"]


def test_spread_args_list_defaulting_and_system_conflict():
    p = Profile(config(plugin_config=[{"name": "PodTopologySpread", "args": {
        "defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": "CIS-node", "whenUnsatisfiable": "DoNotSchedule"}]}}]))
    assert not p.spread_system_defaulted
    assert [c.topology_key for c in p.spread_defaults] == ["CIS-node"]
    with pytest.raises(InputError) as e:  # v1 defaults defaultingType to System
        Profile(config(plugin_config=[{"name": "PodTopologySpread", "args": {
            "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                    "whenUnsatisfiable": "ScheduleAnyway"}]}}]))
    assert "must be empty" in str(e.value) and "defaultConstraints" in e.value.field


def test_fit_args_strategies():
    p = Profile(config(plugin_config=[{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
        "type": "RequestedToCapacityRatio", "resources": [{"name": "intel.com/foo", "weight": 3}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0},
                                               {"utilization": 100, "score": 10}]}}}}]))
    assert p.fit["strategy"] == "RequestedToCapacityRatio"
    assert p.fit["resources"] == (("intel.com/foo", 3),)
    assert p.fit["shape"] == ((0, 0), (100, 10))
    p.framework()


@pytest.mark.parametrize("raw,field", [
    ({"apiVersion": "kubescheduler.config.k8s.io/v1beta1", "kind": "KubeSchedulerConfiguration"},
     "apiVersion"),
    (dict(config(), extra=1), "extra"),
    (config(plugins={"filter": {"enabled": [{"name": "NoSuchPlugin"}]}}),
     "profiles[0].plugins.filter.enabled[0].name"),
    (config(plugins={"fliter": {}}), "profiles[0].plugins.fliter"),
    (config(plugin_config=[{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 101}}]),
     "hardPodAffinityWeight"),
    (config(plugin_config=[{"name": "InterPodAffinity", "args": {"hardPodAffinityWieght": 1}}]),
     "hardPodAffinityWieght"),
    (config(plugin_config=[{"name": "InterPodAffinity",
                            "args": {"ignorePreferredTermsOfExistingPods": "yes"}}]),
     "ignorePreferredTermsOfExistingPods"),
    (config(plugin_config=[{"name": "PodTopologySpread", "args": {"defaultingType": "Lsit"}}]),
     "defaultingType"),
    (config(plugin_config=[{"name": "PodTopologySpread", "args": {
        "defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {}}]}}]), "defaultConstraints[0].labelSelector"),
    (config(plugin_config=[{"name": "PodTopologySpread", "args": {
        "defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}}]),
     "defaultConstraints[0].maxSkew"),
    (config(plugin_config=[{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
        "type": "LeastAllocatd"}}}]), "scoringStrategy.type"),
    (config(plugin_config=[{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
        "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 101}]}}}]),
     "scoringStrategy.resources[0].weight"),
    (config(plugin_config=[{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
        "type": "RequestedToCapacityRatio"}}}]), "requestedToCapacityRatio.shape"),
    (config(plugin_config=[{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
        "type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
            {"utilization": 50, "score": 1}, {"utilization": 40, "score": 2}]}}}}]),
     "shape[1].utilization"),
    (config(plugin_config=[{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
        "type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
            {"utilization": 50, "score": 11}]}}}}]), "shape[0].score"),
    (config(plugin_config=[{"name": "NodeResourcesBalancedAllocation",
                            "args": {"resources": [{"name": "cpu"}, {"name": "cpu"}]}}]),
     "resources[1].name"),
])
def test_bad_configuration_names_the_field(raw, field):
    with pytest.raises(InputError) as e:
        Profile(raw, source="sched.yaml")
    assert field in e.value.field
    assert e.value.source == "sched.yaml"


def test_extender_managed_resources_ignored_by_the_scheduler_replace_fit_ignored():
    """kube-scheduler sets every profile's NodeResourcesFit ignoredResources to the
    extenders' managedResources with ignoredByScheduler (their list wins)."""
    raw = config(plugin_config=[{"name": "NodeResourcesFit",
                                 "args": {"ignoredResources": ["example.com/a"]}}])
    raw["extenders"] = [{"urlPrefix": "https://x", "managedResources": [
        {"name": "hwaffinity.io/extender", "ignoredByScheduler": True},
        {"name": "example.com/counted"}]}]
    assert Profile(raw).fit["ignored"] == ("hwaffinity.io/extender",)
    raw["extenders"][0]["managedResources"][0]["ignoredByScheduler"] = False
    assert Profile(raw).fit["ignored"] == ("example.com/a",)


@pytest.mark.parametrize("managed, field", [
    ("x", "extenders[0].managedResources"),
    ([{"name": 3}], "extenders[0].managedResources[0].name"),
    ([{"name": "a/b", "ignoredByScheduler": "yes"}],
     "extenders[0].managedResources[0].ignoredByScheduler"),
    ([{"name": "a/b", "ignored": True}], "extenders[0].managedResources[0].ignored")])
def test_bad_managed_resources_name_the_field(managed, field):
    raw = config()
    raw["extenders"] = [{"urlPrefix": "https://x", "managedResources": managed}]
    with pytest.raises(InputError) as e:
        Profile(raw)
    assert e.value.field == field
