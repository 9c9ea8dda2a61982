"""Offline HOT validation with the real Heat engine (heat_validate.py).

Look-ups that need a live cloud are stubbed to "exists" there: Glance
images, Nova flavors, keypairs, servers and microversions, Neutron networks,
ports, subnets, routers, QoS policies and providers, Cinder volumes and
volume types, Keystone projects."""

import pytest
import yaml

import osharness

pytestmark = pytest.mark.openstack

MAIN = osharness.template("asg_anti_affinity.yaml")
WORKER = osharness.template("worker.yaml")
PARAMS = {"image": "cirros"}

CASES = {
    "good": {"template": MAIN, "files": {"worker.yaml": WORKER}, "parameters": PARAMS},
    "bad_policy": {"template": MAIN.replace("[anti-affinity]", "[anti_affinity]"),
                   "files": {"worker.yaml": WORKER}, "parameters": PARAMS},
    "unknown_nested_property": {
        "template": MAIN, "parameters": PARAMS,
        "files": {"worker.yaml": WORKER.replace("scheduler_hints:", "scheduler_hint:")}},
    "missing_nested_file": {"template": MAIN, "files": {}, "parameters": PARAMS},
    "missing_parameter": {"template": MAIN, "files": {"worker.yaml": WORKER}},
    "unknown_type": {"template": "heat_template_version: 2016-10-14\n"
                                 "resources:\n  x: {type: 'OS::Nova::Nope'}\n"},
    "bad_yaml": {"template": "heat_template_version: [2016-10-14\n"},
}


@pytest.fixture(scope="module")
def results(heat_validator):
    """All cases in one Heat process."""
    names = list(CASES)
    return dict(zip(names, heat_validator.many([CASES[n] for n in names])))


def test_accepts_the_good_template(results):
    assert results["good"] == []


def test_rejects_bad_policy_value(results):
    (error,) = results["bad_policy"]
    assert "resources.srvgroup.properties.policies" in error
    assert '["anti_affinity"] is not an allowed value' in error


def test_rejects_unknown_property_in_nested_template(results):
    (error,) = results["unknown_nested_property"]
    assert "<worker.yaml>.resources.worker.properties" in error
    assert "Unknown Property scheduler_hint" in error


def test_rejects_missing_nested_file(results):
    (error,) = results["missing_nested_file"]
    assert 'Could not fetch remote template "worker.yaml"' in error


def test_rejects_other_mistakes(results):
    assert "image" in results["missing_parameter"][0]
    assert "OS::Nova::Nope" in results["unknown_type"][0]
    assert "Error parsing template" in results["bad_yaml"][0]


def test_single_call_with_dict_templates(heat_validator):
    """Templates and files may be dicts (as a translator produces them)."""
    errors = heat_validator(yaml.safe_load(MAIN), files={"worker.yaml": yaml.safe_load(WORKER)},
                            parameters=PARAMS)
    assert errors == []
