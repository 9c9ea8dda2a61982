# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""UserData of flavour ``podaffinity`` (Tacker v1 API, BaseHOT).

Tacker imports this module from the unpacked package and calls
``HwAffinityClusterUserData.instantiate(base_hot_dict, vnfd_dict,
inst_req_info, grant_info)``; the dict returned becomes the parameters of
the stack made from ``BaseHOT/podaffinity``:

* ``nfv``: ``VDU.<vdu>.flavor`` (the VDU's ``requested_additional_capability_name``),
  ``VDU.<vdu>.image`` (the image Tacker uploaded or the NFVO granted for the
  VDU, else the VNFD's ``sw_image_data.name``, a Glance image name) and
  ``CP.<cp>.network`` (and ``fixed_ips``) of every external CP, from the
  request's ``extVirtualLinks``;
* any other BaseHOT parameter given under the same name in
  ``additionalParams`` (here: ``keypair``).

The ``<aspect>_desired_capacity`` parameters are set by Tacker itself from
the VNFD's instantiation level. Anything the BaseHOT needs and the request
or VNFD does not give is an ``LCMUserDataFailed`` naming it, before Heat
sees the stack. Only Tacker's documented UserData helpers are used.
"""
from tacker.vnfm.lcm_user_data.abstract_user_data import AbstractUserData
import tacker.vnfm.lcm_user_data.utils as UserDataUtil

from tacker.extensions import vnfm


def _fail(reason):
    raise vnfm.LCMUserDataFailed(reason=reason)


def _images(vnfd_dict, grant_info):
    """Per VDU: the image Tacker registered (package image or grant), else
    the VNFD's sw_image_data name."""
    images = UserDataUtil.create_sw_image_dict(vnfd_dict)
    if grant_info:
        images.update(UserDataUtil.create_vdu_image_dict(grant_info))
    return images


def _networks(inst_req_info, param_dict):
    """Per external CP: network and fixed IPs from extVirtualLinks."""
    wanted = sorted(param_dict['nfv']['CP'])
    ext_vls = inst_req_info.ext_virtual_links or []
    networks = UserDataUtil.create_network_dict(inst_req_info, param_dict) \
        if ext_vls else {}
    missing = [cp for cp in wanted if cp not in networks]
    if missing:
        _fail("failed: the BaseHOT connects CP(s) %s to an external network, but "
              "extVirtualLinks of the request has no extCps entry with that "
              "cpdId" % ", ".join(missing))
    return networks


class HwAffinityClusterUserData(AbstractUserData):
    """Stack parameters of BaseHOT/podaffinity."""

    @staticmethod
    def instantiate(base_hot_dict=None, vnfd_dict=None, inst_req_info=None,
                    grant_info=None):
        api_param = UserDataUtil.get_diff_base_hot_param_from_api(
            base_hot_dict, inst_req_info)
        initial_param_dict = \
            UserDataUtil.create_initial_param_server_port_dict(base_hot_dict)
        vdu_flavor_dict = \
            UserDataUtil.create_vdu_flavor_capability_name_dict(vnfd_dict)
        vdu_image_dict = _images(vnfd_dict, grant_info)
        cpd_vl_dict = _networks(inst_req_info, initial_param_dict)
        final_param_dict = UserDataUtil.create_final_param_dict(
            initial_param_dict, vdu_flavor_dict, vdu_image_dict, cpd_vl_dict)

        for vdu, values in sorted(final_param_dict['nfv']['VDU'].items()):
            for key, source in (('flavor', 'requested_additional_capabilities'
                                 '.properties.requested_additional_'
                                 'capability_name'),
                                ('image', 'sw_image_data.name')):
                if not values.get(key):
                    _fail("failed: VDU %s has no %s (VNFD %s)"
                          % (vdu, key, source))

        return {**final_param_dict, **api_param}
