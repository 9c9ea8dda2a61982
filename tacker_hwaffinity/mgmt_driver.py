"""Tacker v1 MgmtDriver entry point: ``mgmt-drivers-hwaffinity``.

Tacker hashes THIS file and compares it with the copy shipped in the VNF
package (``Scripts/hwaffinity_mgmt_driver.py``), so it stays thin and stable:
every hook hands its arguments to ``tacker_hwaffinity.mgmt.tacker_v1``, where
the logic lives. Loading the class does no network I/O; it only registers the
heat-translator extension (idempotent) so Tacker's own TOSCA translation
produces the server groups.
"""
from tacker.vnfm.mgmt_drivers import vnflcm_abstract_driver

from tacker_hwaffinity.mgmt import tacker_v1

DRIVER_TYPE = "mgmt-drivers-hwaffinity"


class HwAffinityMgmtDriver(vnflcm_abstract_driver.VnflcmMgmtAbstractDriver):
    """Labels Kubernetes workers with their physical compute host."""

    def __init__(self):
        tacker_v1.on_load()

    def get_type(self):
        return DRIVER_TYPE

    def get_name(self):
        return DRIVER_TYPE

    def get_description(self):
        return "Kubernetes node labels naming each worker VM's compute host (tacker-hwaffinity)"

    def instantiate_start(self, context, vnf_instance, instantiate_vnf_request,
                          grant, grant_request, **kwargs):
        return tacker_v1.hook("instantiate_start", context, vnf_instance,
                              instantiate_vnf_request, grant, kwargs)

    def instantiate_end(self, context, vnf_instance, instantiate_vnf_request,
                        grant, grant_request, **kwargs):
        return tacker_v1.hook("instantiate_end", context, vnf_instance,
                              instantiate_vnf_request, grant, kwargs)

    def terminate_start(self, context, vnf_instance, terminate_vnf_request,
                        grant, grant_request, **kwargs):
        return tacker_v1.hook("terminate_start", context, vnf_instance,
                              terminate_vnf_request, grant, kwargs)

    def terminate_end(self, context, vnf_instance, terminate_vnf_request,
                      grant, grant_request, **kwargs):
        return tacker_v1.hook("terminate_end", context, vnf_instance,
                              terminate_vnf_request, grant, kwargs)

    def scale_start(self, context, vnf_instance, scale_vnf_request,
                    grant, grant_request, **kwargs):
        return tacker_v1.hook("scale_start", context, vnf_instance,
                              scale_vnf_request, grant, kwargs)

    def scale_end(self, context, vnf_instance, scale_vnf_request,
                  grant, grant_request, **kwargs):
        return tacker_v1.hook("scale_end", context, vnf_instance,
                              scale_vnf_request, grant, kwargs)

    def heal_start(self, context, vnf_instance, heal_vnf_request,
                   grant, grant_request, **kwargs):
        return tacker_v1.hook("heal_start", context, vnf_instance,
                              heal_vnf_request, grant, kwargs)

    def heal_end(self, context, vnf_instance, heal_vnf_request,
                 grant, grant_request, **kwargs):
        return tacker_v1.hook("heal_end", context, vnf_instance,
                              heal_vnf_request, grant, kwargs)

    def change_external_connectivity_start(self, context, vnf_instance, change_ext_conn_request,
                                           grant, grant_request, **kwargs):
        return tacker_v1.hook("change_external_connectivity_start", context, vnf_instance,
                              change_ext_conn_request, grant, kwargs)

    def change_external_connectivity_end(self, context, vnf_instance, change_ext_conn_request,
                                         grant, grant_request, **kwargs):
        return tacker_v1.hook("change_external_connectivity_end", context, vnf_instance,
                              change_ext_conn_request, grant, kwargs)

    def modify_information_start(self, context, vnf_instance, modify_vnf_request, **kwargs):
        return tacker_v1.hook("modify_information_start", context, vnf_instance,
                              modify_vnf_request, None, kwargs)

    def modify_information_end(self, context, vnf_instance, modify_vnf_request, **kwargs):
        return tacker_v1.hook("modify_information_end", context, vnf_instance,
                              modify_vnf_request, None, kwargs)
