"""VNF-A (csar/k8s-cluster): the VNFD, the BaseHOTs and the sample requests
agree with each other and with what Tacker 16.0.0 reads from them.

Tacker's own code does the reading: package upload processing
(``csar_utils.load_csar_data``, tosca-parser included), the v2 VNFD reader
(``sol_refactored.common.vnfd_utils.Vnfd``), the v1 scale-group computation
(``tosca.utils.get_scale_group``), the v2 BaseHOT parameter scan
(``common_script_utils.init_nfv_dict``) and the v1/v2 API request schemas.
"""
import copy
import json
import os
import shutil

import pytest

from tacker_hwaffinity.labeling import params as hwparams

from . import pkgtools
from .pkgtools import K8S_CLUSTER, SAMPLES, load_yaml

DRIVER_KEY = "mgmt-drivers-hwaffinity"
HOOKS = {"instantiate_end", "scale_start", "scale_end", "heal_start", "heal_end", "terminate_end"}
FLAVOURS = {"podaffinity": "v1", "podaffinity_tosca": "v1", "podaffinity_v2": "v2"}
ARTIFACT_FILE = {"v1": "Scripts/hwaffinity_mgmt_driver.py",       # from the package root
                 "v2": "../Scripts/hwaffinity_mgmt_v2.py"}        # from Definitions/
BASEHOT = {"podaffinity": "BaseHOT/podaffinity", "podaffinity_v2": "BaseHOT/podaffinity_v2"}
SAMPLE_DIR = os.path.join(SAMPLES, "k8s-cluster")
RULES = {"srvgroup_master": "masterNode", "srvgroup_worker": "workerNode"}


def flavour(flavour_id):
    return load_yaml(pkgtools.flavour_files(K8S_CLUSTER)[flavour_id])


def sample(api, name):
    with open(os.path.join(SAMPLE_DIR, api, name)) as f:
        return json.load(f)


def samples(api):
    return sorted(os.listdir(os.path.join(SAMPLE_DIR, api)))


def basehot(flavour_id):
    """(top template, {nested file name: template}) of a BaseHOT flavour."""
    folder = os.path.join(K8S_CLUSTER, BASEHOT[flavour_id])
    tops = [f for f in os.listdir(folder) if f.endswith(".yaml")]
    # Tacker v1 takes the last YAML file listed, v2 the first: only one may exist
    assert len(tops) == 1, tops
    nested_dir = os.path.join(folder, "nested")
    nested = {f: load_yaml(os.path.join(nested_dir, f)) for f in sorted(os.listdir(nested_dir))}
    return load_yaml(os.path.join(folder, tops[0])), nested


def aspects(fl):
    pol = pkgtools.policies(fl)
    return pol["scaling_aspects"]["properties"]["aspects"]


def vdu_deltas(fl):
    """{aspect: (vdu, instances per step)} from VduScalingAspectDeltas."""
    out = {}
    for p in pkgtools.policies(fl).values():
        if p["type"] == "tosca.policies.nfv.VduScalingAspectDeltas":
            (delta,) = p["properties"]["deltas"].values()
            (vdu,) = p["targets"]
            out[p["properties"]["aspect"]] = (vdu, delta["number_of_instances"])
    return out


# --------------------------------------------------------------------------
# Tacker onboards the package


def test_tacker_onboards_every_flavour(k8s_onboarded):
    vnf_data, flavours, artifacts = k8s_onboarded
    assert vnf_data["descriptor_id"] == "ec06b0a2-339c-4fef-b90e-c9df4170df61"
    assert vnf_data["provider"] == "tacker-hwaffinity"
    assert sorted(f["flavour_id"] for f in flavours) == sorted(FLAVOURS)
    for f in flavours:
        nodes = f["tpl_dict"]["topology_template"]["node_templates"]
        assert {"masterNode", "workerNode", "masterNode_CP1", "workerNode_CP2"} == set(nodes)
        assert f["instantiation_levels"]["default_level"] == "instantiation_level_1"


def test_tacker_refuses_the_package_without_the_v2_driver_script(k8s_package, tmp_path):
    """Negative control: tosca-parser's CSAR check sees the artifact files, so
    the package must ship the drivers (csar build adds them)."""
    from tacker.common import exceptions
    from .conftest import onboard
    broken = shutil.copytree(k8s_package, str(tmp_path / "pkg"))
    os.remove(os.path.join(broken, "Scripts", "hwaffinity_mgmt_v2.py"))
    zip_path = pkgtools.zip_package(broken, str(tmp_path / "broken.zip"))
    os.mkdir(tmp_path / "tacker")
    with pytest.raises(exceptions.InvalidCSAR):
        onboard(zip_path, str(tmp_path / "tacker"))


def test_built_package_has_hash_blocks_tacker_accepts(k8s_onboarded, k8s_package):
    """Every file outside Definitions/ and TOSCA-Metadata/ is an artifact whose
    hash Tacker checked at upload (Scripts and UserData included)."""
    _, _, artifacts = k8s_onboarded
    sources = {a["Source"] for a in artifacts}
    assert {"Scripts/install_k8s.sh", "Scripts/hwaffinity_mgmt_driver.py",
            "Scripts/hwaffinity_mgmt_v2.py",
            "UserData/hwaffinity_k8s_cluster_user_data.py"} <= sources
    assert all(a["Algorithm"].lower() == "sha-256" for a in artifacts)


def test_source_ships_neither_the_driver_copies_nor_the_etsi_types():
    """csar build adds them; a stale committed copy would break Tacker's hash check."""
    for name in pkgtools.DRIVER_FILES:
        assert not os.path.exists(os.path.join(K8S_CLUSTER, name)), name
    for name in os.listdir(os.path.join(K8S_CLUSTER, "Definitions")):
        assert not name.startswith("etsi_nfv_sol001"), name


def test_tosca_meta_has_the_entry_block_only():
    text = open(os.path.join(K8S_CLUSTER, "TOSCA-Metadata", "TOSCA.meta")).read()
    assert "\n\n" not in text.strip(), "hash blocks are written by csar build"
    entry = dict(line.split(": ", 1) for line in text.strip().splitlines())
    assert entry["Entry-Definitions"] == "Definitions/hwaffinity_k8s_cluster_top.vnfd.yaml"
    assert os.path.isfile(os.path.join(K8S_CLUSTER, entry["Entry-Definitions"]))


# --------------------------------------------------------------------------
# The VNFD


@pytest.mark.parametrize("flavour_id", sorted(FLAVOURS))
def test_lcm_hooks_call_the_hwaffinity_driver(flavour_id, k8s_package):
    vnf = flavour(flavour_id)["topology_template"]["node_templates"]["VNF"]
    hooks = vnf["interfaces"]["Vnflcm"]
    assert set(hooks) == HOOKS
    for hook, value in hooks.items():
        assert value == {"implementation": DRIVER_KEY}, hook
    (key,) = vnf["artifacts"]
    assert key == DRIVER_KEY
    artifact = vnf["artifacts"][key]
    assert artifact["type"] == "tosca.artifacts.Implementation.Python"
    api = FLAVOURS[flavour_id]
    assert artifact["file"] == ARTIFACT_FILE[api]
    base = k8s_package if api == "v1" else os.path.join(k8s_package, "Definitions")
    assert os.path.isfile(os.path.normpath(os.path.join(base, artifact["file"])))


@pytest.mark.parametrize("flavour_id", [f for f, api in sorted(FLAVOURS.items()) if api == "v1"])
def test_tacker_v1_accepts_the_packaged_driver(flavour_id, k8s_package, tmp_path):
    """VnfLcmDriver._check_mgmt_driver, as Tacker v1 runs it before each hook:
    the package's copy must hash like the installed module; a changed copy
    is refused (negative control)."""
    from tacker.common import exceptions
    from tacker.vnflcm import vnflcm_driver
    import tacker_hwaffinity.mgmt_driver as installed
    lcm = vnflcm_driver.VnfLcmDriver.__new__(vnflcm_driver.VnfLcmDriver)
    lcm._mgmt_driver_hash = {DRIVER_KEY: lcm._get_file_hash(installed.__file__)}
    assert installed.DRIVER_TYPE == DRIVER_KEY
    artifacts = flavour(flavour_id)["topology_template"]["node_templates"]["VNF"]["artifacts"]
    assert lcm._check_mgmt_driver(DRIVER_KEY, artifacts, k8s_package) == DRIVER_KEY
    changed = shutil.copytree(k8s_package, str(tmp_path / "pkg"))
    with open(os.path.join(changed, ARTIFACT_FILE["v1"]), "a") as f:
        f.write("# edited\n")
    with pytest.raises(exceptions.MgmtDriverHashMatchFailure):
        lcm._check_mgmt_driver(DRIVER_KEY, artifacts, changed)


def test_v2_finds_the_driver_script_for_every_hook(k8s_v2_vnfd, k8s_package):
    for hook in sorted(HOOKS):
        # Tacker runs <package>/Definitions/<file> (vnflcm_driver_v2)
        path = os.path.join(k8s_package, "Definitions",
                            k8s_v2_vnfd.get_interface_script("podaffinity_v2", hook))
        assert os.path.samefile(path, os.path.join(k8s_package, "Scripts",
                                                   "hwaffinity_mgmt_v2.py")), hook


@pytest.mark.parametrize("flavour_id", sorted(FLAVOURS))
def test_anti_affinity_rules_over_placement_groups(flavour_id, k8s_v2_vnfd):
    fl = flavour(flavour_id)
    groups = fl["topology_template"]["groups"]
    rules = {name: p for name, p in pkgtools.policies(fl).items()
             if p["type"] == "tosca.policies.nfv.AntiAffinityRule"}
    assert set(rules) == set(RULES)
    for name, vdu in RULES.items():
        (target,) = rules[name]["targets"]
        assert rules[name]["properties"] == {"scope": "nfvi_node"}
        assert groups[target]["type"] == "tosca.groups.nfv.PlacementGroup"
        assert groups[target]["members"] == [vdu]
        assert groups[target]["properties"]["description"]
    # what Tacker v2 reads (grants, AZ retry)
    assert sorted(k8s_v2_vnfd.get_anti_affinity_targets(flavour_id)) == [
        (["masterNode"], "nfvi_node"), (["workerNode"], "nfvi_node")]


def _without_vnf_and_description(fl):
    fl = copy.deepcopy(fl)
    del fl["topology_template"]["node_templates"]["VNF"]
    del fl["topology_template"]["substitution_mappings"]["properties"]
    del fl["description"]
    return fl


def test_v1_and_v2_flavours_describe_the_same_cluster():
    assert _without_vnf_and_description(flavour("podaffinity")) == \
        _without_vnf_and_description(flavour("podaffinity_v2"))


def test_tosca_flavour_differs_only_in_its_single_master_and_carried_image():
    full, tosca = flavour("podaffinity"), flavour("podaffinity_tosca")
    nodes_full = full["topology_template"]["node_templates"]
    nodes_tosca = tosca["topology_template"]["node_templates"]
    # and in the image its VDUs boot from, which the package carries (the BaseHOT
    # flavours name the one Glance has)
    image = {"sw_image": {"type": "tosca.artifacts.nfv.SwImage",
                          "file": "../Files/images/ubuntu-24.04-server-cloudimg-amd64.img"}}
    for vdu in ("masterNode", "workerNode"):
        assert nodes_tosca[vdu].pop("artifacts") == image
        assert "artifacts" not in nodes_full[vdu]
        # Tacker uploads it under sw_image_data.name: a name the BaseHOT flavours look up
        # would then match two images while a TOSCA instance lives, and Heat refuses that
        sw_tosca = nodes_tosca[vdu]["properties"]["sw_image_data"]
        sw_full = nodes_full[vdu]["properties"]["sw_image_data"]
        assert sw_tosca.pop("name") == sw_full.pop("name") + "-podaffinity_tosca"
    assert nodes_tosca["workerNode"] == nodes_full["workerNode"]
    assert nodes_tosca["masterNode"]["properties"]["vdu_profile"] == {
        "min_number_of_instances": 1, "max_number_of_instances": 1}
    assert set(aspects(tosca)) == {"worker_instance"}
    assert aspects(tosca)["worker_instance"] == aspects(full)["worker_instance"]


@pytest.mark.parametrize("flavour_id", sorted(FLAVOURS))
def test_scaling_stays_within_the_vdu_profiles(flavour_id):
    fl = flavour(flavour_id)
    nodes = fl["topology_template"]["node_templates"]
    pol = pkgtools.policies(fl)
    for aspect, (vdu, per_step) in vdu_deltas(fl).items():
        profile = nodes[vdu]["properties"]["vdu_profile"]
        initial = pol["%s_initial_delta" % vdu]["properties"]["initial_delta"]
        top = initial["number_of_instances"] + per_step * aspects(fl)[aspect]["max_scale_level"]
        assert initial["number_of_instances"] == profile["min_number_of_instances"]
        assert top == profile["max_number_of_instances"], aspect
    # control-plane scaling keeps an odd etcd member count
    if "master_instance" in vdu_deltas(fl):
        assert vdu_deltas(fl)["master_instance"][1] % 2 == 0


# --------------------------------------------------------------------------
# The BaseHOTs


def _nested_servers(nested):
    return {name: (f, res) for f, tpl in nested.items()
            for name, res in tpl["resources"].items() if res["type"] == "OS::Nova::Server"}


@pytest.mark.parametrize("flavour_id", sorted(BASEHOT))
def test_basehot_server_groups_are_named_after_the_rules(flavour_id):
    """The same wiring as the translator's output for podaffinity_tosca: one
    OS::Nova::ServerGroup per AntiAffinityRule, named after it, passed to the
    nested template as a parameter of that name, used as scheduler hint."""
    top, nested = basehot(flavour_id)
    groups = {n: r for n, r in top["resources"].items() if r["type"] == "OS::Nova::ServerGroup"}
    assert set(groups) == set(RULES)
    for name, g in groups.items():
        if (flavour_id, name) != ("podaffinity_v2", "srvgroup_worker"):
            assert g["properties"] == {"policies": ["anti-affinity"]}
        # (v2's workers: the request may choose; test_vnf_a_heat.py resolves it)
    servers = _nested_servers(nested)
    assert set(servers) == set(RULES.values())
    for rule, vdu in RULES.items():
        nested_file, server = servers[vdu]
        assert server["properties"]["scheduler_hints"] == {"group": {"get_param": rule}}
        assert nested[nested_file]["parameters"][rule]["type"] == "string"
        (asg,) = [r for r in top["resources"].values()
                  if r["type"] == "OS::Heat::AutoScalingGroup"
                  and r["properties"]["resource"]["type"] == nested_file]
        assert asg["properties"]["resource"]["properties"][rule] == {"get_resource": rule}


def test_v1_basehot_groups_are_the_aspects_and_match_tacker_scale_groups():
    fl = flavour("podaffinity")
    top, nested = basehot("podaffinity")
    nodes = fl["topology_template"]["node_templates"]
    asgs = {n: r for n, r in top["resources"].items() if r["type"] == "OS::Heat::AutoScalingGroup"}
    assert set(asgs) == set(aspects(fl)), "Tacker v1 finds the ASG by the aspect id"
    # Tacker v1's own computation of the groups (UserData path, instantiate)
    from tacker.tosca import utils as tosca_utils
    vnf = {"attributes": {"scaling_group_names": json.dumps({n: n for n in asgs})}}
    groups = tosca_utils.get_scale_group(vnf, fl, None)["scaleGroupDict"]
    for name, asg in asgs.items():
        vdu, per_step = vdu_deltas(fl)[name]
        profile = nodes[vdu]["properties"]["vdu_profile"]
        props = asg["properties"]
        assert props["min_size"] == profile["min_number_of_instances"]
        assert props["max_size"] == profile["max_number_of_instances"]
        param = "%s_desired_capacity" % name
        assert props["desired_capacity"] == {"get_param": param}
        assert top["parameters"][param]["default"] == groups[name]["default"]
        assert groups[name]["vdu"] == [vdu]
        # Tacker v1 scales by signalling <aspect>_scale_out / _scale_in
        for action, sign in (("out", 1), ("in", -1)):
            policy = top["resources"]["%s_scale_%s" % (name, action)]
            assert policy["type"] == "OS::Heat::ScalingPolicy"
            assert policy["properties"] == {"scaling_adjustment": sign * per_step,
                                            "auto_scaling_group_id": {"get_resource": name},
                                            "adjustment_type": "change_in_capacity"}
        server_file, _ = _nested_servers(nested)[vdu]
        assert asg["properties"]["resource"]["type"] == server_file


@pytest.mark.parametrize("flavour_id", sorted(BASEHOT))
def test_basehot_resource_names_are_the_vnfd_names(flavour_id):
    """Tacker maps Heat resources to VDUs and CPs by resource name."""
    fl = flavour(flavour_id)
    nodes = fl["topology_template"]["node_templates"]
    _, nested = basehot(flavour_id)
    for tpl in nested.values():
        for name, res in tpl["resources"].items():
            expected = {"OS::Nova::Server": "tosca.nodes.nfv.Vdu.Compute",
                        "OS::Neutron::Port": "tosca.nodes.nfv.VduCp"}[res["type"]]
            assert nodes[name]["type"] == expected, name
            if res["type"] == "OS::Neutron::Port":
                binding = nodes[name]["requirements"][0]["virtual_binding"]
                server = [n for n, r in tpl["resources"].items()
                          if r["type"] == "OS::Nova::Server"]
                assert server == [binding]


def test_v2_basehot_as_tacker_v2_reads_it(k8s_v2_vnfd):
    from tacker.sol_refactored.common import common_script_utils
    fl = flavour("podaffinity_v2")
    nodes = fl["topology_template"]["node_templates"]
    hot = k8s_v2_vnfd.get_base_hot("podaffinity_v2")
    nfv = common_script_utils.init_nfv_dict(hot["template"])
    assert set(nfv["VDU"]) == {"masterNode", "workerNode"}
    for vdu in nfv["VDU"].values():
        assert {"computeFlavourId", "vcImageId", "desired_capacity"} <= set(vdu)
    assert set(nfv["CP"]) == {"masterNode_CP1", "workerNode_CP2"}
    for vdu in ("masterNode", "workerNode"):
        asg = hot["template"]["resources"][vdu]
        assert asg["type"] == "OS::Heat::AutoScalingGroup"
        profile = nodes[vdu]["properties"]["vdu_profile"]
        assert asg["properties"]["min_size"] == profile["min_number_of_instances"]
        assert asg["properties"]["max_size"] == profile["max_number_of_instances"]
        assert k8s_v2_vnfd.get_compute_flavor("podaffinity_v2", vdu)
    assert set(hot["files"]) == {"masterNode.yaml", "workerNode.yaml"}
    assert k8s_v2_vnfd.get_sw_image("podaffinity_v2") == {
        "masterNode": "ubuntu-24.04-server-cloudimg-amd64",
        "workerNode": "ubuntu-24.04-server-cloudimg-amd64"}


# --------------------------------------------------------------------------
# The sample requests


SCHEMAS_V1 = {"instantiate": "instantiate", "scale": "scale", "heal": "heal"}
SCHEMAS_V2 = {"instantiate": "InstantiateVnfRequest_V200", "scale": "ScaleVnfRequest_V200",
              "heal": "HealVnfRequest_V200"}


def _kind(name):
    return name.split("_", 1)[0]


@pytest.mark.parametrize("name", samples("v1"))
def test_v1_sample_passes_the_tacker_v1_api_schema(name):
    from tacker.api.schemas import vnf_lcm
    from tacker.api.validation import validators
    schema = getattr(vnf_lcm, SCHEMAS_V1[_kind(name)])
    validators._SchemaValidator(schema).validate(sample("v1", name))


@pytest.mark.parametrize("name", samples("v2"))
def test_v2_sample_passes_the_tacker_v2_api_schema(name):
    from tacker.sol_refactored.api.schemas import vnflcm_v2
    from tacker.sol_refactored.api import validator
    schema = getattr(vnflcm_v2, SCHEMAS_V2[_kind(name)])
    validator.SolSchemaValidator(schema).validate(sample("v2", name))


def test_schema_check_can_fail():
    from tacker.api.schemas import vnf_lcm
    from tacker.api.validation import validators
    from tacker.common import exceptions
    bad = sample("v1", "scale_out_workers.json")
    bad["type"] = "SCALE_UP"
    with pytest.raises(exceptions.ValidationError):
        validators._SchemaValidator(vnf_lcm.scale).validate(bad)


def _instantiate_samples():
    return [("v1", n) for n in samples("v1") if n.startswith("instantiate")] + \
        [("v2", n) for n in samples("v2") if n.startswith("instantiate")]


@pytest.mark.parametrize("api,name", _instantiate_samples())
def test_instantiate_sample_matches_the_package(api, name, k8s_package):
    req = sample(api, name)
    flavour_id = req["flavourId"]
    assert FLAVOURS[flavour_id] == api
    fl = flavour(flavour_id)
    nodes = fl["topology_template"]["node_templates"]
    levels = pkgtools.policies(fl)["instantiation_levels"]["properties"]["levels"]
    assert req["instantiationLevelId"] in levels
    # every external CP of the VNFD is connected, and nothing else
    external = {cp for cp, _ in fl["topology_template"]["substitution_mappings"]
                ["requirements"].values()}
    cpds = {cp["cpdId"] for vl in req["extVirtualLinks"] for cp in vl["extCps"]}
    assert cpds == external
    ap = req["additionalParams"]
    # both driver blocks; ours is valid for the driver's strict parser
    parsed = hwparams.parse(ap)
    assert parsed["hwaffinity"].label_keys == ("CIS-node",)
    install = ap["k8s_cluster_installation_param"]
    assert os.path.isfile(os.path.join(k8s_package, install["script_path"]))
    top = basehot(flavour_id)[0] if flavour_id in BASEHOT else None
    for role, vdu in (("master_node", "masterNode"), ("worker_node", "workerNode")):
        node = install[role]
        for key in ("ssh_cp_name", "nic_cp_name"):
            cp = nodes[node[key]]
            assert cp["type"] == "tosca.nodes.nfv.VduCp"
            assert cp["requirements"][0]["virtual_binding"] == vdu
        if api == "v2":
            assert node["vdu_id"] == vdu and "aspect_id" not in node
        elif vdu_deltas(fl).get("%s_instance" % vdu[:-4]):
            aspect = "%s_instance" % vdu[:-4]
            assert node["aspect_id"] == aspect
            assert aspect in aspects(fl)
            if top is not None:
                assert top["resources"][aspect]["type"] == "OS::Heat::AutoScalingGroup"
        else:
            assert "aspect_id" not in node, "a VDU without aspect is not an ASG"
    if top is not None:
        assert top["resources"][install["master_node"]["cluster_cp_name"]]["type"] == \
            "OS::Neutron::Port"
    else:
        assert "cluster_cp_name" not in install["master_node"]


def test_v1_user_data_sample_names_the_package_class(k8s_package):
    ap = sample("v1", "instantiate_podaffinity.json")["additionalParams"]
    path = os.path.join(k8s_package, ap["lcm-operation-user-data"])
    assert os.path.isfile(path)
    assert "class %s(" % ap["lcm-operation-user-data-class"] in open(path).read()
    assert "lcm-operation-user-data" not in \
        sample("v1", "instantiate_podaffinity_tosca.json")["additionalParams"], \
        "without UserData Tacker v1 takes the TOSCA (heat-translator) path"


@pytest.mark.parametrize("api,name", [(a, n) for a in ("v1", "v2") for n in samples(a)
                                      if n.startswith("scale")])
def test_scale_sample_names_an_aspect(api, name, k8s_v2_vnfd):
    req = sample(api, name)
    flavour_id = "podaffinity" if api == "v1" else "podaffinity_v2"
    assert req["aspectId"] in aspects(flavour(flavour_id))
    vdus = k8s_v2_vnfd.get_scale_vdu_and_num(flavour_id, req["aspectId"])
    assert set(vdus) == {"masterNode" if "master" in req["aspectId"] else "workerNode"}
    if api == "v2":
        hwparams.parse(req["additionalParams"])


def test_v2_heal_sample_names_a_worker_vnfc():
    (vnfc,) = sample("v2", "heal_worker.json")["vnfcInstanceId"]
    assert vnfc.startswith("workerNode-"), "v2 VNFC ids are <vduId>-<resource id>"
