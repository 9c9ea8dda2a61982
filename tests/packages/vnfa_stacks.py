"""The Heat stacks Tacker makes from VNF-A, built with Tacker's own code.

* ``podaffinity`` (v1, BaseHOT): Tacker v1's flavour VNFD
  (``vnflcm.utils._get_flavour_based_vnfd``), the request object
  (``convert_camelcase_to_snakecase`` + ``InstantiateVnfRequest.obj_from_primitive``,
  as the v1 controller does), our UserData class, and the
  ``<aspect>_desired_capacity`` parameters from ``tosca.utils.get_scale_group``
  (as ``infra_drivers/openstack/openstack.py`` does). The BaseHOT dict is
  read like ``vnflcm.utils.get_base_nest_hot_dict`` (which needs a database
  only to find the package directory).
* ``podaffinity_v2`` (v2, BaseHOT): Tacker v2's ``DefaultUserData.instantiate``
  with the v2 sample request and a grant request listing the instances of
  the default instantiation level, as the v2 conductor makes it.
* ``podaffinity_tosca`` (v1, TOSCA): heat-translator with the
  tacker-hwaffinity extension, through the project's loader (Tacker's v1
  loading, offline).
"""
import copy
import importlib
import json
import os
import sys

import yaml

from .pkgtools import SAMPLES, load_yaml

# osharness (the OpenStack harness helpers) lives in tests/openstack
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "openstack"))

V1_SAMPLE = os.path.join(SAMPLES, "k8s-cluster", "v1", "instantiate_podaffinity.json")
V2_SAMPLE = os.path.join(SAMPLES, "k8s-cluster", "v2", "instantiate_podaffinity_v2.json")


def sample(path):
    with open(path) as f:
        return json.load(f)


def v1_request(body):
    """InstantiateVnfRequest the way the v1 API controller builds it."""
    from tacker.common import utils
    from tacker import objects
    objects.register_all()
    return objects.InstantiateVnfRequest.obj_from_primitive(
        utils.convert_camelcase_to_snakecase(copy.deepcopy(body)), context=None)


def base_hot_dict(package, flavour_id):
    """{'heat_template': top, <nested file name>: nested}, as Tacker v1 passes it."""
    folder = os.path.join(package, "BaseHOT", flavour_id)
    top = None
    for name in os.listdir(folder):
        if name.endswith((".yaml", ".yml")):
            top = load_yaml(os.path.join(folder, name))
    nested = {name: load_yaml(os.path.join(folder, "nested", name))
              for name in os.listdir(os.path.join(folder, "nested"))
              if name.endswith((".yaml", ".yml"))}
    return dict(nested, heat_template=top)


def flavour_vnfd(package, flavour_id):
    from tacker.vnflcm import utils as vnflcm_utils
    return vnflcm_utils._get_flavour_based_vnfd(package, flavour_id)


def user_data_class(package, module_path, class_name):
    """Import the UserData class from the package as Tacker v1 does."""
    module = os.path.splitext(module_path.lstrip("./"))[0].replace("/", ".")
    sys.path.append(package)
    try:
        for name in [m for m in sys.modules if m == "UserData" or m.startswith("UserData.")]:
            del sys.modules[name]
        return getattr(importlib.import_module(module), class_name)
    finally:
        sys.path.remove(package)


def v1_parameters(package, body, grant_info=None):
    """Stack parameters of flavour podaffinity: our UserData's, plus Tacker's
    <aspect>_desired_capacity."""
    from tacker.tosca import utils as tosca_utils
    request = v1_request(body)
    ap = body["additionalParams"]
    klass = user_data_class(package, ap["lcm-operation-user-data"],
                            ap["lcm-operation-user-data-class"])
    hot = base_hot_dict(package, request.flavour_id)
    vnfd = flavour_vnfd(package, request.flavour_id)
    params = klass.instantiate(copy.deepcopy(hot), vnfd, request, grant_info)
    top = hot["heat_template"]
    asgs = {n: n for n, r in top["resources"].items() if r["type"] == "OS::Heat::AutoScalingGroup"}
    groups = tosca_utils.get_scale_group({"attributes": {"scaling_group_names": json.dumps(asgs)}},
                                         vnfd, request)
    for name, value in groups["scaleGroupDict"].items():
        if (top.get("parameters") or {}).get(name + "_desired_capacity"):
            params[name + "_desired_capacity"] = value["default"]
    return params, hot


def v1_bundle(package, body):
    params, hot = v1_parameters(package, body)
    files = {k: v for k, v in hot.items() if k != "heat_template"}
    return {"template": hot["heat_template"], "files": files, "parameters": params}


def v2_grant_request(vnfd, flavour_id, level):
    """The COMPUTE resources of an instantiation level, as the v2 conductor
    lists them in the grant request."""
    add = []
    for vdu in sorted(vnfd.get_vdu_nodes(flavour_id)):
        for i in range(vnfd.get_vdu_num(flavour_id, vdu, level)):
            add.append({"id": "%s-%d" % (vdu, i), "type": "COMPUTE", "resourceTemplateId": vdu})
    return {"operation": "INSTANTIATE", "flavourId": flavour_id, "addResources": add}


def v2_fields(package, body):
    """Tacker v2's stack fields from DefaultUserData (template, parameters, files)."""
    from tacker.sol_refactored.common import vnfd_utils
    from tacker.sol_refactored.infra_drivers.openstack import userdata_default
    vnfd = vnfd_utils.Vnfd("vnfd-under-test")
    vnfd.init_from_csar_dir(package)
    grant_req = v2_grant_request(vnfd, body["flavourId"], body["instantiationLevelId"])
    inst = {"id": "inst-under-test", "vnfdId": "vnfd-under-test"}
    return userdata_default.DefaultUserData.instantiate(
        copy.deepcopy(body), inst, grant_req, {}, package)


def v2_bundle(package, body):
    fields = v2_fields(package, body)
    return {"template": fields["template"], "files": fields["files"],
            "parameters": fields["parameters"]}


def translated(package, flavour_id="podaffinity_tosca"):
    """{file name: text} heat-translator (with the extension) makes of a flavour."""
    from tacker_hwaffinity import translator
    from tacker_hwaffinity.translator import loader, run
    run.quiet_libraries()
    if not getattr(translated, "unregistered", False):
        translator.register()       # idempotent; Tacker's driver does it at load
    with loader.open_vnfd(package, flavour_id) as vnfd:
        return run.translate_vnfd(vnfd)


def tosca_bundle(package):
    import osharness
    data = {name: osharness.tacker_post_process(yaml.safe_load(text),
                                                image="ubuntu-24.04-server-cloudimg-amd64")
            for name, text in translated(package).items()}
    return {"template": data.pop("main.yaml"), "files": data}


def nfv_paths(template):
    """Every [nfv, ...] path a template reads with get_param."""
    found = []

    def walk(value):
        if isinstance(value, dict):
            for k, v in value.items():
                if k == "get_param" and isinstance(v, list) and v and v[0] == "nfv":
                    found.append(tuple(v[1:]))
                else:
                    walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
    walk(template.get("resources", {}))
    return sorted(set(found))


def lookup(nfv, path):
    for key in path:
        if not isinstance(nfv, dict) or key not in nfv:
            return None
        nfv = nfv[key]
    return nfv
