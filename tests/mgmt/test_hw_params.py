"""The ``hwaffinity_param`` block, once validated, is a frozen record (``labeling.params.
HwParams``) with a typed field for each field of the declarative spec that validates it,
read by attribute by the MgmtDriver, the controller and ``hwaffinity relabel``."""
import dataclasses

import pytest

from tacker_hwaffinity.labeling import params


def names(cls):
    return {f.name for f in dataclasses.fields(cls)}


def test_every_field_of_the_spec_is_a_field_of_the_record():
    assert names(params.HwParams) == set(params.SPEC)
    assert names(params.OpenStackParams) == set(params.SPEC["openstack"].fields)
    assert names(params.DrainParams) == set(params.SPEC["drain"].fields)


def test_the_built_in_defaults_are_the_specs():
    hw = params.parse({})["hwaffinity"]
    assert (hw.label_keys, hw.zone_label_key, hw.host_source, hw.on_colocation,
            hw.kubeconfig, hw.join_timeout, hw.worker_vdus) == (
        ("CIS-node",), None, "auto", "warn", None, 0, ())
    assert hw.openstack == params.OpenStackParams(timeout=30, retries=2)
    assert hw.drain == params.DrainParams(timeout=300, delete_emptydir_data=True, force=False)
    assert (hw.ssh["port"], hw.ssh["retries"], hw.install["enabled"]) == (22, 3, False)


def test_the_record_is_built_once_and_cannot_be_changed():
    hw = params.parse({"hwaffinity_param": {"label_keys": ["a", "b"],
                                            "worker_vdus": ["w1"]}})["hwaffinity"]
    assert hw.label_keys == ("a", "b") and hw.worker_vdus == ("w1",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        hw.host_source = "host"
    with pytest.raises(dataclasses.FrozenInstanceError):
        hw.drain.force = True
    assert dataclasses.replace(hw, host_source="hostId").host_source == "hostId"


def test_every_secret_of_the_record_and_the_reference_block_is_found():
    parsed = params.parse({
        "hwaffinity_param": {"kubeconfig": "apiVersion: v1 # kc-secret",
                             "ssh": {"password": "ssh-pw", "private_key": "PEM-key",
                                     "jump_host": {"host": "j", "password": "jump-pw"}}},
        "k8s_cluster_installation_param": {"master_node": {"password": "m-pw"}}})
    assert sorted(params.secrets(parsed)) == sorted(
        ["apiVersion: v1 # kc-secret", "ssh-pw", "PEM-key", "jump-pw", "m-pw"])
