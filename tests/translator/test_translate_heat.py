"""Every golden output passes the real Heat engine's full stack validation.

Uses the harness's offline validator (tests/openstack/heat_validate.py, run
in the venv of tools/openstack-venv.sh; see doc/openstack-harness.md): what
``stack create`` validates, nested templates and ASG members included. The
look-ups that need a live cloud are stubbed to "exists" there: Glance
images, Nova flavors, keypairs, servers and microversions, Neutron networks,
ports, subnets, routers, QoS policies and providers, Cinder volumes and
volume types, Keystone projects. A name that no cloud has passes here.

Before validation each bundle gets what Tacker's v1 path adds after
heat-translator and before ``stack create`` (none of it touches server
groups, hints or zones):

* ``post_process_heat_template``: parameter ``vnfm_info`` becomes
  ``comma_delimited_list`` (heat-translator writes the invalid ``list``);
* ``post_process_heat_template_for_scaling``: ``desired_capacity`` from the
  instantiation level instead of the ``DESIRED_CAPACITY`` placeholder (here:
  ``min_size``);
* images and external networks from the package, grant and request (here:
  ``cirros`` and ``net0`` where heat-translator left a placeholder).

Zone parameters without a default get values, as a stack create would.
"""
import os
import pathlib
import sys

import pytest
import yaml

from tacker_hwaffinity import translator
from translate_helpers import CASES, EXPECTED, translate_file, write_vnfd

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "openstack"))
import osharness

pytestmark = pytest.mark.openstack

ZONES = {"zone_scope": {"zone_spread_zones": "az-1,az-2,az-3"},
         "overlapping_groups": {"zones_cd_zones": "az-1,az-2"}}


def _bundle(files, parameters=None):
    data = {name: osharness.tacker_post_process(yaml.safe_load(text))
            for name, text in files.items()}
    bundle = {"template": data.pop("main.yaml"), "files": data}
    if parameters:
        bundle["parameters"] = parameters
    return bundle


def _golden(case):
    folder = os.path.join(EXPECTED, case)
    return {n: open(os.path.join(folder, n)).read() for n in os.listdir(folder)}


GOLDEN = sorted(os.listdir(EXPECTED))


def _stock_aa_first():
    """heat-translator alone, rule listed before ScalingAspects: the nested
    server points at a server group of the parent stack (the bug we fix)."""
    data = yaml.safe_load(open(os.path.join(CASES, "pg_scaled_aa_last.yaml")))
    data["imports"] = [os.path.normpath(os.path.join(CASES, i)) for i in data["imports"]]
    policies = data["topology_template"]["policies"]
    data["topology_template"]["policies"] = policies[-1:] + policies[:-1]
    data["topology_template"]["policies"][0]["anti_affinity"]["targets"] = ["VDU1", "VDU2"]
    return data


@pytest.fixture(scope="module")
def results():
    python = osharness.python_or_skip()
    bundles = {case: _bundle(_golden(case), ZONES.get(case)) for case in GOLDEN}
    # Negative controls: the validator must catch what we guard against.
    zone = _golden("zone_scope")
    bundles["control_too_few_zones"] = _bundle(zone, {"zone_spread_zones": "az-1,az-2"})
    broken = _golden("pg_scaled_aa_last")
    broken["VDU1_scale.hot.yaml"] = broken["VDU1_scale.hot.yaml"].replace(
        "  anti_affinity:\n    type: string\n", "")
    bundles["control_undeclared_nested_parameter"] = _bundle(broken)
    path = write_vnfd(_stock_aa_first(), "aa_first.yaml")
    translator.unregister()
    try:
        stock = translate_file(str(path))
    finally:
        translator.register()
    bundles["control_stock_heat_translator"] = _bundle(stock)
    names = list(bundles)
    return dict(zip(names, osharness.validate_heat_many([bundles[n] for n in names],
                                                        python=python)))


@pytest.mark.parametrize("case", GOLDEN)
def test_heat_accepts_translation(case, results):
    assert results[case] == []


def test_heat_enforces_the_zone_count(results):
    (error,) = results["control_too_few_zones"]
    assert "zone_spread_zones" in error and "give at least 3" in error


def test_heat_checks_nested_parameters(results):
    (error,) = results["control_undeclared_nested_parameter"]
    assert "anti_affinity" in error


def test_heat_rejects_stock_heat_translator_output(results):
    """Without the extension the nested server's hint dangles: Heat refuses it."""
    (error,) = results["control_stock_heat_translator"]
    assert "anti_affinity_group" in error
