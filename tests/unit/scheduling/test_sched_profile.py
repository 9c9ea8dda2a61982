"""KubeSchedulerConfiguration: plugin sets, weights, args, strict fields."""
import pytest

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling.profile import Profile

from .helpers import config


def test_defaults():
    p = Profile()
    assert p.filters == ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
                         "NodeResourcesFit", "InterPodAffinity"]
    assert p.scores == [("NodeAffinity", 2), ("InterPodAffinity", 2)]
    assert (p.hard_weight, p.ignore_existing_preferred) == (1, False)


def test_star_disables_every_default_at_one_point():
    p = Profile(config(plugins={"filter": {"disabled": [{"name": "*"}]}}))
    assert p.filters == [] and len(p.scores) == 2


def test_star_then_enable_keeps_only_the_enabled():
    p = Profile(config(plugins={"filter": {"disabled": [{"name": "*"}],
                                           "enabled": [{"name": "InterPodAffinity"}]},
                                "score": {"disabled": [{"name": "*"}],
                                          "enabled": [{"name": "InterPodAffinity", "weight": 5}]}}))
    assert p.filters == ["InterPodAffinity"] and p.scores == [("InterPodAffinity", 5)]


def test_multipoint_disable_and_reweight():
    p = Profile(config(plugins={"multiPoint": {
        "disabled": [{"name": "NodeName"}],
        "enabled": [{"name": "InterPodAffinity", "weight": 9}]}}))
    assert "NodeName" not in p.filters
    assert p.scores == [("NodeAffinity", 2), ("InterPodAffinity", 9)]


def test_specific_enable_overrides_multipoint_and_comes_first():
    p = Profile(config(plugins={"filter": {"enabled": [{"name": "InterPodAffinity"}]},
                                "score": {"enabled": [{"name": "InterPodAffinity"}]}}))
    assert p.filters[0] == "InterPodAffinity"
    assert p.scores == [("InterPodAffinity", 1), ("NodeAffinity", 2)]  # weight 0 means 1


def test_not_modelled_plugins_are_noted_when_enabled_explicitly():
    p = Profile(config(plugins={"score": {"enabled": [{"name": "ImageLocality", "weight": 3}]}}))
    assert any("ImageLocality" in n for n in p.notes)
    assert Profile().notes == []


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
])
def test_bad_configuration_names_the_field(raw, field):
    with pytest.raises(InputError) as e:
        Profile(raw, source="sched.yaml")
    assert field in e.value.field
    assert e.value.source == "sched.yaml"
