"""Every rule we cannot express is an error naming policy, target and field.

The VNFDs are data/errors/base.yaml (VDU1 scaled by VDU1_scale; VDU2, VDU3
not scaled; VDU1_CP1 a VduCp; internalVL1 a VnfVirtualLink; PlacementGroup
pg_ok = [VDU2, VDU3]) plus the groups and policies each case adds. Each case
runs through the library and through ``hwaffinity translate`` (one line on
stderr, exit 2, no traceback).
"""
import os

import pytest

from tacker_hwaffinity.cli.main import main
from tacker_hwaffinity.errors import InputError
from translate_helpers import DATA, absolute_imports, load_yaml, translate_file, write_vnfd

BASE = os.path.join(DATA, "errors", "base.yaml")
AA = "tosca.policies.nfv.AntiAffinityRule"
AF = "tosca.policies.nfv.AffinityRule"
PG = "tosca.groups.nfv.PlacementGroup"


def rule(name, targets, scope="nfvi_node", ptype=AA, metadata=None):
    body = {"type": ptype, "targets": targets, "properties": {"scope": scope}}
    if metadata is not None:
        body["metadata"] = metadata
    return {name: body}


def group(members, gtype=PG, description="members"):
    body = {"type": gtype, "members": members}
    if description is not None:
        body["properties"] = {"description": description}
    return body


# (case id, groups to add, policies to add, inputs to add,
#  fragments the message must contain)
CASES = [
    ("scope_zone_group", {}, [rule("far", ["pg_ok"], scope="zone_group")], {},
     ['policy "far"', "field properties.scope", "zone_group",
      "not expressible in one Heat stack"]),
    ("scope_nfvi_pop", {}, [rule("far", ["VDU2"], scope="nfvi_pop")], {},
     ['policy "far"', "field properties.scope", "nfvi_pop",
      "not expressible in one Heat stack"]),
    ("derived_type_zone_group", {},
     [rule("vendor", ["VDU2"], scope="zone_group", ptype="company.policies.HostAntiAffinity")],
     {}, ['policy "vendor"', "zone_group", "not expressible in one Heat stack"]),
    ("target_is_a_cp", {}, [rule("r", ["VDU2", "VDU1_CP1"])], {},
     ['policy "r"', "field targets", "target VDU1_CP1 is a tosca.nodes.nfv.VduCp"]),
    ("target_is_a_virtual_link", {}, [rule("r", ["internalVL1", "VDU2"])], {},
     ['policy "r"', "field targets", "target internalVL1 is a VnfVirtualLink"]),
    ("member_is_a_cp", {"pg_bad": group(["VDU2", "VDU1_CP1"])}, [rule("r", ["pg_bad"])], {},
     ['policy "r"', "field targets", "target pg_bad: member VDU1_CP1 is a "
      "tosca.nodes.nfv.VduCp"]),
    ("member_is_a_virtual_link", {"pg_bad": group(["VDU2", "internalVL1"])},
     [rule("r", ["pg_bad"])], {},
     ['policy "r"', "target pg_bad: member internalVL1 is a VnfVirtualLink"]),
    ("group_not_a_placement_group", {"plain": group(["VDU2", "VDU3"], "tosca.groups.Root",
                                                    None)},
     [rule("r", ["plain"])], {},
     ['policy "r"', "field targets", "target plain is a tosca.groups.Root"]),
    ("group_and_unknown_name", {}, [rule("r", ["pg_ok", "NoSuchVdu"])], {},
     ['policy "r"', "field targets", "'NoSuchVdu' is neither a group nor a node"]),
    ("group_without_description", {"pg_nodesc": group(["VDU2", "VDU3"], description=None)},
     [rule("r", ["pg_nodesc"])], {},
     ['group "pg_nodesc"', "field properties.description", 'policy "r"']),
    ("zone_anti_scaled_member", {}, [rule("z", ["VDU1", "VDU2"], scope="zone")], {},
     ['policy "z"', "field properties.scope", "VDU VDU1 is scaled by AutoScalingGroup "
      "VDU1_scale"]),
    ("zone_anti_too_few_zones", {},
     [rule("z", ["pg_ok"], scope="zone", metadata={"hwaffinity.zones": ["az-1"]})], {},
     ['policy "z"', "field metadata.hwaffinity.zones", "1 zones for 2 members"]),
    ("zone_zones_not_distinct", {},
     [rule("z", ["pg_ok"], scope="zone", metadata={"hwaffinity.zones": "az-1, az-1"})], {},
     ['policy "z"', "field metadata.hwaffinity.zones", "zones must be distinct"]),
    ("zone_affinity_two_zones", {},
     [rule("z", ["pg_ok"], scope="zone", ptype=AF,
           metadata={"hwaffinity.zones": ["az-1", "az-2"]})], {},
     ['policy "z"', "field metadata.hwaffinity.zones", "exactly one zone, got 2"]),
    ("soft_not_boolean", {}, [rule("r", ["pg_ok"], metadata={"hwaffinity.soft": "maybe"})],
     {}, ['policy "r"', "field metadata.hwaffinity.soft", "expected true or false"]),
    ("soft_with_zone", {},
     [rule("r", ["pg_ok"], scope="zone", metadata={"hwaffinity.soft": True})], {},
     ['policy "r"', "field metadata.hwaffinity.soft", "only valid with scope nfvi_node"]),
    ("max_per_host_with_affinity", {},
     [rule("r", ["pg_ok"], ptype=AF, metadata={"hwaffinity.max_server_per_host": 2})], {},
     ['policy "r"', "field metadata.hwaffinity.max_server_per_host",
      "only with the hard anti-affinity"]),
    ("max_per_host_with_soft", {},
     [rule("r", ["pg_ok"], metadata={"hwaffinity.max_server_per_host": 2,
                                     "hwaffinity.soft": "true"})], {},
     ['policy "r"', "max_server_per_host", "only with the hard anti-affinity"]),
    ("max_per_host_zero", {},
     [rule("r", ["pg_ok"], metadata={"hwaffinity.max_server_per_host": 0})], {},
     ['policy "r"', "field metadata.hwaffinity.max_server_per_host", "integer >= 1, got 0"]),
    ("max_per_host_not_a_number", {},
     [rule("r", ["pg_ok"], metadata={"hwaffinity.max_server_per_host": "two"})], {},
     ['policy "r"', "integer >= 1, got 'two'"]),
    ("max_per_host_with_zone", {},
     [rule("r", ["pg_ok"], scope="zone", metadata={"hwaffinity.max_server_per_host": 2})],
     {}, ['policy "r"', "only valid with scope nfvi_node"]),
    ("zones_with_nfvi_node", {},
     [rule("r", ["pg_ok"], metadata={"hwaffinity.zones": ["az-1", "az-2"]})], {},
     ['policy "r"', "field metadata.hwaffinity.zones", "only valid with scope zone"]),
    ("unknown_metadata_key", {},
     [rule("r", ["pg_ok"], metadata={"hwaffinity.max_servers_per_host": 2})], {},
     ['policy "r"', "field metadata.hwaffinity.max_servers_per_host", "unknown key"]),
    ("two_server_groups_for_one_vdu", {},
     [rule("hosts_a", ["pg_ok"]), rule("hosts_b", ["VDU3", "VDU1"], ptype=AF)], {},
     ['policy "hosts_b"', "field targets", "VDU3 is also a member of nfvi_node-scoped "
      "policy hosts_a", "one server group"]),
    ("two_zones_for_one_vdu", {},
     [rule("zones_a", ["VDU2", "VDU3"], scope="zone"),
      rule("zones_b", ["VDU2"], scope="zone", ptype=AF)], {},
     ['policy "zones_b"', "VDU2 is also a member of zone-scoped policy zones_a"]),
    ("no_targets", {}, [{"r": {"type": AA, "properties": {"scope": "nfvi_node"}}}], {},
     ['policy "r"', "field targets", "no targets"]),
    ("policy_named_like_a_resource", {}, [rule("VDU2_flavor", ["pg_ok"])], {},
     ['policy "VDU2_flavor"', "field name", "already a resource of the template (made from VDU2)"]),
    ("policy_name_needs_quotes", {}, [rule("yes", ["pg_ok"])], {},
     ['policy "yes"', "field name", "plain YAML string"]),
    ("policy_name_is_a_nested_parameter", {}, [rule("vdu1_flavor_id", ["VDU1", "VDU2"])], {},
     ['policy "vdu1_flavor_id"', "field name", "VDU1_scale.hot.yaml already has a parameter "
      "vdu1_flavor_id"]),
    ("zone_parameter_is_an_input", {}, [rule("z", ["pg_ok"], scope="zone")],
     {"z_zones": {"type": "string", "default": "x"}},
     ['policy "z"', "field name", "already has a parameter z_zones"]),
    ("scope_outside_sol001", {}, [rule("r", ["pg_ok"], scope="network_link_and_node")], {},
     ["tosca-parser rejected the VNFD", "network_link_and_node"]),
]


def _vnfd(groups, policies, inputs):
    data = absolute_imports(load_yaml(BASE), os.path.dirname(BASE))
    topo = data["topology_template"]
    topo["groups"].update(groups)
    topo["policies"].extend(policies)
    if inputs:
        topo.setdefault("inputs", {}).update(inputs)
    return write_vnfd(data, "bad_vnfd.yaml")


@pytest.mark.parametrize("case,groups,policies,inputs,fragments", CASES,
                         ids=[c[0] for c in CASES])
def test_error_names_policy_target_and_field(case, groups, policies, inputs, fragments):
    path = _vnfd(groups, policies, inputs)
    with pytest.raises(InputError) as info:
        translate_file(path)
    message = str(info.value)
    assert message.startswith(path + ": "), message
    for fragment in fragments:
        assert fragment in message, message


@pytest.mark.parametrize("case,groups,policies,inputs,fragments", CASES[:6] + CASES[-4:],
                         ids=[c[0] for c in CASES[:6] + CASES[-4:]])
def test_cli_prints_one_line_and_exits_2(case, groups, policies, inputs, fragments,
                                         tmp_path, capsys):
    path = _vnfd(groups, policies, inputs)
    status = main(["translate", path, "--output-dir", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("hwaffinity translate: error: %s: " % path)
    for fragment in fragments:
        assert fragment in err
    assert not (tmp_path / "out").exists(), "nothing is written on error"


def test_base_vnfd_translates():
    """The error cases fail because of what they add, not because of the base."""
    files = translate_file(_vnfd({}, [], {}))
    assert "VDU1_scale.hot.yaml" in files
