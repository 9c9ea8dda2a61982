"""The stack parameters and templates Tacker makes from VNF-A (see
vnfa_stacks.py for how each is made with Tacker's own code), checked for
what Heat's validation does not see: every ``nfv`` value the BaseHOT reads
is there, and every server is pinned to its anti-affinity server group.
The real Heat engine's validation of the same stacks (with the cloud
look-ups stubbed, see its docstring): test_vnf_a_heat.py."""
import copy

import pytest

from . import vnfa_stacks as st

FLAVOR = {"masterNode": "m1.medium", "workerNode": "m1.large"}
IMAGE = "ubuntu-24.04-server-cloudimg-amd64"
NET = "a9d7820b-13ac-47e5-a75c-ff127484169e"


# --------------------------------------------------------------------------
# v1 BaseHOT + our UserData class


def test_user_data_gives_everything_the_basehot_reads(k8s_package):
    body = st.sample(st.V1_SAMPLE)
    params, hot = st.v1_parameters(k8s_package, body)
    paths = st.nfv_paths(hot["heat_template"])
    assert paths, "the BaseHOT reads the nfv parameter"
    for path in paths:
        assert st.lookup(params["nfv"], path), path
    for vdu, flavor in FLAVOR.items():
        assert params["nfv"]["VDU"][vdu] == {"flavor": flavor, "image": IMAGE}
    for cp in ("masterNode_CP1", "workerNode_CP2"):
        assert params["nfv"]["CP"][cp]["network"] == NET
    # additionalParams.keypair reaches the BaseHOT parameter of that name
    assert params["keypair"] == "k8s-nodes"
    # Tacker's own desired capacities: the default instantiation level
    assert params["master_instance_desired_capacity"] == 3
    assert params["worker_instance_desired_capacity"] == 3
    assert set(params) == {"nfv", "keypair", "master_instance_desired_capacity",
                           "worker_instance_desired_capacity"}


def test_user_data_prefers_the_image_tacker_registered(k8s_package):
    """An image uploaded from the package (or granted) wins over the name."""
    from tacker import objects
    body = st.sample(st.V1_SAMPLE)
    grant_info = {"workerNode": [objects.VnfResource(resource_identifier="glance-image-id")]}
    params, _ = st.v1_parameters(k8s_package, body, grant_info=grant_info)
    assert params["nfv"]["VDU"]["workerNode"]["image"] == "glance-image-id"
    assert params["nfv"]["VDU"]["masterNode"]["image"] == IMAGE


def test_user_data_names_an_unconnected_cp(k8s_package):
    from tacker.extensions import vnfm
    body = st.sample(st.V1_SAMPLE)
    body["extVirtualLinks"] = [vl for vl in body["extVirtualLinks"]
                               if vl["extCps"][0]["cpdId"] != "workerNode_CP2"]
    with pytest.raises(vnfm.LCMUserDataFailed, match="workerNode_CP2"):
        st.v1_parameters(k8s_package, body)


def test_user_data_names_a_vdu_without_flavor(k8s_package, monkeypatch):
    from tacker.extensions import vnfm
    body = st.sample(st.V1_SAMPLE)
    vnfd = st.flavour_vnfd(k8s_package, "podaffinity")
    caps = vnfd["topology_template"]["node_templates"]["masterNode"]["capabilities"]
    del caps["virtual_compute"]["properties"]["requested_additional_capabilities"]
    request = st.v1_request(body)
    klass = st.user_data_class(k8s_package, body["additionalParams"]["lcm-operation-user-data"],
                               body["additionalParams"]["lcm-operation-user-data-class"])
    with pytest.raises(vnfm.LCMUserDataFailed, match="VDU masterNode has no flavor"):
        klass.instantiate(st.base_hot_dict(k8s_package, "podaffinity"), vnfd, request, None)


def test_without_keypair_the_basehot_default_applies(k8s_package):
    body = st.sample(st.V1_SAMPLE)
    del body["additionalParams"]["keypair"]
    params, hot = st.v1_parameters(k8s_package, body)
    assert "keypair" not in params
    assert hot["heat_template"]["parameters"]["keypair"]["default"] == ""


# --------------------------------------------------------------------------
# v2 BaseHOT + Tacker's DefaultUserData


def test_v2_default_user_data_gives_everything_the_basehot_reads(k8s_package):
    body = st.sample(st.V2_SAMPLE)
    fields = st.v2_fields(k8s_package, body)
    nfv = fields["parameters"]["nfv"]
    top = st.yaml.safe_load(fields["template"])
    for path in st.nfv_paths(top):
        assert st.lookup(nfv, path), path
    for vdu, flavor in FLAVOR.items():
        assert nfv["VDU"][vdu]["computeFlavourId"] == flavor
        assert nfv["VDU"][vdu]["vcImageId"] == IMAGE
        assert nfv["VDU"][vdu]["desired_capacity"] == 3
        assert nfv["VDU"][vdu]["keypair"] == "k8s-nodes"
    for cp in ("masterNode_CP1", "workerNode_CP2"):
        assert nfv["CP"][cp]["network"] == NET
    assert set(fields["files"]) == {"masterNode.yaml", "workerNode.yaml"}


def test_v2_instantiation_level_2_sizes_the_groups(k8s_package):
    body = copy.deepcopy(st.sample(st.V2_SAMPLE))
    body["instantiationLevelId"] = "instantiation_level_2"
    nfv = st.v2_fields(k8s_package, body)["parameters"]["nfv"]
    assert nfv["VDU"]["masterNode"]["desired_capacity"] == 5
    assert nfv["VDU"]["workerNode"]["desired_capacity"] == 6


# --------------------------------------------------------------------------
# v1 TOSCA: heat-translator with the tacker-hwaffinity extension


def _servers(bundle):
    """{server resource: (template name, resource)} over main and nested templates."""
    out = {}
    for name, tpl in [("main.yaml", bundle["template"])] + sorted(bundle["files"].items()):
        for res_name, res in tpl["resources"].items():
            if res["type"] == "OS::Nova::Server":
                out[res_name] = (name, res)
    return out


def test_translation_pins_every_node_to_its_server_group(k8s_package):
    bundle = st.tosca_bundle(k8s_package)
    main = bundle["template"]
    groups = {n: r for n, r in main["resources"].items() if r["type"] == "OS::Nova::ServerGroup"}
    assert set(groups) == {"srvgroup_master", "srvgroup_worker"}
    for g in groups.values():
        assert g["properties"]["policies"] == ["anti-affinity"]
    servers = _servers(bundle)
    assert set(servers) == {"masterNode", "workerNode"}
    # the single master stays at the top: a direct reference
    where, master = servers["masterNode"]
    assert where == "main.yaml"
    assert master["properties"]["scheduler_hints"] == {
        "group": {"get_resource": "srvgroup_master"}}
    # the workers are ASG members: the group id is passed down by parameter
    where, worker = servers["workerNode"]
    assert where == "worker_instance.hot.yaml"
    assert worker["properties"]["scheduler_hints"] == {"group": {"get_param": "srvgroup_worker"}}
    assert bundle["files"][where]["parameters"]["srvgroup_worker"] == {"type": "string"}
    asg = main["resources"]["worker_instance"]
    assert asg["type"] == "OS::Heat::AutoScalingGroup"
    assert asg["properties"]["resource"]["properties"]["srvgroup_worker"] == {
        "get_resource": "srvgroup_worker"}
    assert (asg["properties"]["min_size"], asg["properties"]["max_size"]) == (3, 6)


def test_without_the_extension_the_rules_are_lost(k8s_package):
    """Negative control: heat-translator alone drops PlacementGroup targets,
    so the same flavour gives no server group at all."""
    from tacker_hwaffinity import translator
    translator.unregister()
    st.translated.unregistered = True
    try:
        files = st.translated(k8s_package)
    finally:
        st.translated.unregistered = False
        translator.register()
    main = st.yaml.safe_load(files["main.yaml"])
    assert not [r for r in main["resources"].values() if r["type"] == "OS::Nova::ServerGroup"]
