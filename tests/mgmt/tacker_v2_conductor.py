"""Run our v2 script exactly as Tacker's v2 conductor does.

A minimal VNF package whose deployment flavour maps the Vnflcm operations to
the artifact ``mgmt-drivers-hwaffinity`` (``../Scripts/hwaffinity_mgmt_v2.py``,
a copy of the installed script), loaded by Tacker's own ``Vnfd``; then
``VnfLcmDriverV2._exec_mgmt_driver_script`` (Tacker's code) pickles the
request and instance objects into the script and reads its answer.
"""
import inspect
import os
import shutil

import yaml

from tacker_hwaffinity import mgmt_v2

OPERATIONS = ("instantiate_start", "instantiate_end", "scale_start", "scale_end",
              "heal_start", "heal_end", "terminate_start", "terminate_end")


def make_package(root):
    os.makedirs(os.path.join(root, "TOSCA-Metadata"))
    os.makedirs(os.path.join(root, "Definitions"))
    os.makedirs(os.path.join(root, "Scripts"))
    with open(os.path.join(root, "TOSCA-Metadata", "TOSCA.meta"), "w") as f:
        f.write("TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: tests\n"
                "Entry-Definitions: Definitions/df.yaml\n")
    shutil.copyfile(inspect.getfile(mgmt_v2), os.path.join(root, "Scripts",
                                                           "hwaffinity_mgmt_v2.py"))
    df = {"tosca_definitions_version": "tosca_simple_yaml_1_2",
          "topology_template": {
              "substitution_mappings": {"node_type": "company.provider.VNF",
                                        "properties": {"flavour_id": "simple"}},
              "node_templates": {"VNF": {
                  "type": "company.provider.VNF",
                  "interfaces": {"Vnflcm": {op: {"implementation": "mgmt-drivers-hwaffinity"}
                                            for op in OPERATIONS}},
                  "artifacts": {"mgmt-drivers-hwaffinity": {
                      "description": "tacker-hwaffinity v2 script",
                      "type": "tosca.artifacts.Implementation.Python",
                      "file": "../Scripts/hwaffinity_mgmt_v2.py"}}}}}}
    with open(os.path.join(root, "Definitions", "df.yaml"), "w") as f:
        yaml.safe_dump(df, f)
    return root


def objects():
    from tacker.sol_refactored import objects as sol_objects
    sol_objects.register_all()
    return sol_objects


def execute(package, operation, req, inst, grant_req=None):
    """Tacker's ``_exec_mgmt_driver_script``; returns the (updated) instance.
    Raises Tacker's MgmtDriverExecutionFailed when the script exits non-zero."""
    from tacker.sol_refactored.common import vnfd_utils
    from tacker.sol_refactored.conductor import vnflcm_driver_v2
    vnfd = vnfd_utils.Vnfd("vnfd-test")
    vnfd.init_from_csar_dir(package)
    driver = object.__new__(vnflcm_driver_v2.VnfLcmDriverV2)
    driver._exec_mgmt_driver_script(operation, "simple", req, inst, grant_req, None, vnfd, {})
    return inst
