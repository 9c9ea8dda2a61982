"""Real Tacker v1 objects for the driver tests (tacker 16 from PyPI)."""
import uuid

from tacker import context as tacker_context
from tacker import objects

objects.register_all()

DRIVER = "mgmt-drivers-hwaffinity"


def admin_context():
    return tacker_context.get_admin_context()


def vim(access):
    """An OpenStack VimConnectionInfo carrying the access information inline."""
    return objects.VimConnectionInfo(
        id=str(uuid.uuid4()), vim_id=str(uuid.uuid4()), vim_type="openstack",
        access_info={"auth_url": access["auth_url"], "username": access["username"],
                     "password": access["password"], "project_name": access["project_name"],
                     "user_domain_name": access.get("user_domain_name", "Default"),
                     "project_domain_name": access.get("project_domain_name", "Default"),
                     "cert_verify": "False"})


def vnfc(server_id, vdu="workerNode"):
    return objects.VnfcResourceInfo(
        id=str(uuid.uuid4()), vdu_id=vdu,
        compute_resource=objects.ResourceHandle(resource_id=server_id,
                                                vim_level_resource_type="OS::Nova::Server"))


def instance(vim_info, stack_id, additional_params, vnfcs=()):
    info = objects.InstantiatedVnfInfo(flavour_id="podaffinity", instance_id=stack_id,
                                       additional_params=additional_params,
                                       vnfc_resource_info=list(vnfcs))
    return objects.VnfInstance(id=str(uuid.uuid4()), vnfd_id=str(uuid.uuid4()),
                               instantiation_state="INSTANTIATED",
                               vim_connection_info=[vim_info], instantiated_vnf_info=info,
                               vnf_metadata={})


def instantiate_request(vim_info, additional_params):
    return objects.InstantiateVnfRequest(flavour_id="podaffinity",
                                         additional_params=additional_params,
                                         vim_connection_info=[vim_info])


def scale_request(kind, aspect="worker_instance", additional_params=None):
    return objects.ScaleVnfRequest(type=kind, aspect_id=aspect, number_of_steps=1,
                                   additional_params=additional_params or {})


def heal_request(vnfc_ids, additional_params=None):
    return objects.HealVnfRequest(vnfc_instance_id=list(vnfc_ids),
                                  additional_params=additional_params or {})


def driver_manager():
    """Tacker's own driver manager, loading our driver from its entry point."""
    from tacker.common import driver_manager as dm
    return dm.DriverManager("tacker.tacker.mgmt.drivers", ["vnflcm_noop", DRIVER])
