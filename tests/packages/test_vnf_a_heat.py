"""VNF-A's three ways to a Heat stack pass the real Heat engine's full stack
validation (tests/openstack/heat_validate.py: what ``stack create``
validates, nested templates and ASG members included; look-ups that need a
live cloud are stubbed to "exists": Glance images, Nova flavors, keypairs,
servers and microversions, Neutron networks, ports, subnets, routers, QoS
policies and providers, Cinder volumes and volume types, Keystone
projects), with the parameters Tacker itself computes (vnfa_stacks.py):

* ``podaffinity``: BaseHOT + our UserData class (Tacker v1);
* ``podaffinity_v2``: BaseHOT + Tacker's DefaultUserData (Tacker v2);
* ``podaffinity_tosca``: heat-translator with the tacker-hwaffinity extension.

Negative controls show the validator sees the server-group wiring.
"""
import copy
import pathlib
import sys

import pytest
import yaml

from . import vnfa_stacks as st

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "openstack"))
import osharness

pytestmark = pytest.mark.openstack


def _v2_level_2(package):
    body = copy.deepcopy(st.sample(st.V2_SAMPLE))
    body["instantiationLevelId"] = "instantiation_level_2"
    return st.v2_bundle(package, body)


def _v2_worker_policy(package, policy):
    """The v2 sample with nfv.VDU.workerNode.server_group_policy POLICY (None: the key
    left out, as a request without it: Tacker's DefaultUserData then sends it null)."""
    body = copy.deepcopy(st.sample(st.V2_SAMPLE))
    worker = body["additionalParams"]["nfv"]["VDU"]["workerNode"]
    if policy is None:
        del worker["server_group_policy"]
    else:
        worker["server_group_policy"] = policy
    return st.v2_bundle(package, body)


def _v1_without_keypair(package):
    body = copy.deepcopy(st.sample(st.V1_SAMPLE))
    del body["additionalParams"]["keypair"]
    return st.v1_bundle(package, body)


def _control_undeclared_group_parameter(package):
    bundle = st.v1_bundle(package, st.sample(st.V1_SAMPLE))
    worker = copy.deepcopy(bundle["files"]["podaffinity_nested_worker.yaml"])
    del worker["parameters"]["srvgroup_worker"]
    bundle["files"]["podaffinity_nested_worker.yaml"] = worker
    return bundle


def _control_unknown_group(package):
    bundle = st.v2_bundle(package, st.sample(st.V2_SAMPLE))
    top = yaml.safe_load(bundle["template"])
    props = top["resources"]["workerNode"]["properties"]["resource"]["properties"]
    props["srvgroup_worker"] = {"get_resource": "srvgroup_workers"}
    bundle["template"] = top
    return bundle


@pytest.fixture(scope="module")
def results(k8s_package):
    python = osharness.python_or_skip()
    bundles = {
        "podaffinity": st.v1_bundle(k8s_package, st.sample(st.V1_SAMPLE)),
        "podaffinity without keypair": _v1_without_keypair(k8s_package),
        "podaffinity_v2": st.v2_bundle(k8s_package, st.sample(st.V2_SAMPLE)),
        "podaffinity_v2 level 2": _v2_level_2(k8s_package),
        "podaffinity_v2 without worker policy": _v2_worker_policy(k8s_package, None),
        "podaffinity_v2 soft workers": _v2_worker_policy(k8s_package, "soft-anti-affinity"),
        "podaffinity_v2 unknown worker policy": _v2_worker_policy(k8s_package,
                                                                  "soft-antiaffinity"),
        "podaffinity_tosca": st.tosca_bundle(k8s_package),
        "control undeclared group parameter": _control_undeclared_group_parameter(k8s_package),
        "control unknown group": _control_unknown_group(k8s_package),
    }
    names = list(bundles)
    return dict(zip(names, osharness.heat_results_many([bundles[n] for n in names],
                                                       python=python)))


@pytest.mark.parametrize("case", ["podaffinity", "podaffinity without keypair",
                                  "podaffinity_v2", "podaffinity_v2 level 2",
                                  "podaffinity_v2 without worker policy",
                                  "podaffinity_v2 soft workers", "podaffinity_tosca"])
def test_heat_accepts_the_stack(case, results):
    assert results[case]["errors"] == []


@pytest.mark.parametrize("case, workers", [
    ("podaffinity", "anti-affinity"), ("podaffinity_v2", "anti-affinity"),
    ("podaffinity_v2 without worker policy", "anti-affinity"),
    ("podaffinity_v2 soft workers", "soft-anti-affinity")])
def test_the_workers_group_policy(case, workers, results):
    """The v2 flavour's workers' group takes nfv.VDU.workerNode.server_group_policy,
    anti-affinity when the request leaves it out; the masters' is always anti-affinity."""
    assert results[case]["server_groups"] == {"srvgroup_master": ["anti-affinity"],
                                              "srvgroup_worker": [workers]}


def test_heat_names_an_unknown_worker_policy(results):
    (error,) = results["podaffinity_v2 unknown worker policy"]["errors"]
    assert "srvgroup_worker" in error and '["soft-antiaffinity"] is not an allowed value' \
        in error, error


def test_heat_checks_the_nested_group_parameter(results):
    (error,) = results["control undeclared group parameter"]["errors"]
    assert "srvgroup_worker" in error


def test_heat_checks_the_group_reference(results):
    (error,) = results["control unknown group"]["errors"]
    assert "srvgroup_workers" in error
