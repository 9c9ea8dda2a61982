"""The v1 driver as Tacker loads and calls it: entry point through Tacker's
DriverManager, Tacker's own hash check of the shipped module, and the hooks
called with real Tacker objects and the kwargs the v1 core passes."""
import inspect
import logging
import shutil
import socket

import pytest

from mgmt import tacker_objects
from mgmt.tacker_objects import DRIVER
from tacker_hwaffinity import mgmt_driver

HOOKS = ("instantiate_start", "instantiate_end", "terminate_start", "terminate_end",
         "scale_start", "scale_end", "heal_start", "heal_end",
         "change_external_connectivity_start", "change_external_connectivity_end",
         "modify_information_start", "modify_information_end")


@pytest.fixture(scope="module")
def manager():
    return tacker_objects.driver_manager()


def test_tacker_loads_the_driver_by_its_entry_point(manager):
    from tacker.vnfm.mgmt_drivers.vnflcm_abstract_driver import VnflcmMgmtAbstractDriver
    driver = manager[DRIVER]
    assert isinstance(driver, VnflcmMgmtAbstractDriver)
    assert driver.get_type() == driver.get_name() == DRIVER
    assert not VnflcmMgmtAbstractDriver.__abstractmethods__ - set(
        n for n in dir(type(driver)) if n in VnflcmMgmtAbstractDriver.__abstractmethods__
        and not getattr(getattr(type(driver), n), "__isabstractmethod__", False))
    assert len(VnflcmMgmtAbstractDriver.__abstractmethods__) == 15


def test_loading_does_no_network_io(monkeypatch):
    def refuse(*a, **kw):
        raise AssertionError("network I/O while loading the driver")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    tacker_objects.driver_manager()[DRIVER].get_type()


def test_loading_registers_the_translator_extension():
    """Isolated from whatever registered the extension earlier in the run
    (csar and translator tests do): start unregistered, load the driver
    through Tacker's manager, and restore the state found afterwards."""
    from tacker_hwaffinity.translator import registration
    was_registered = registration.is_registered()
    registration.unregister()
    try:
        assert not registration.is_registered()
        tacker_objects.driver_manager()[DRIVER].get_type()
        assert registration.is_registered()
    finally:
        if not was_registered:
            registration.unregister()


def _lcm_driver(manager):
    """Tacker's VnfLcmDriver hash machinery, without its database plugins."""
    from oslo_config import cfg
    from tacker.vnflcm import vnflcm_driver
    cfg.CONF.set_override("vnflcm_mgmt_driver", ["vnflcm_noop", DRIVER], "tacker")
    drv = object.__new__(vnflcm_driver.VnfLcmDriver)
    drv._mgmt_manager = manager
    drv._mgmt_driver_hash = drv._init_mgmt_driver_hash()
    return drv


def test_tacker_hash_check_accepts_the_shipped_module(manager, tmp_path):
    drv = _lcm_driver(manager)
    (tmp_path / "Scripts").mkdir()
    shutil.copyfile(inspect.getfile(mgmt_driver),
                    tmp_path / "Scripts" / "hwaffinity_mgmt_driver.py")
    artifacts = {DRIVER: {"file": "Scripts/hwaffinity_mgmt_driver.py",
                          "type": "tosca.artifacts.Implementation.Python"}}
    assert drv._check_mgmt_driver(DRIVER, artifacts, str(tmp_path)) == DRIVER
    # the hashed file is the thin module, and it is the one the class lives in
    assert inspect.getfile(type(manager[DRIVER])) == inspect.getfile(mgmt_driver)


def test_tacker_hash_check_refuses_a_changed_copy(manager, tmp_path):
    from tacker.common import exceptions
    drv = _lcm_driver(manager)
    (tmp_path / "Scripts").mkdir()
    text = open(inspect.getfile(mgmt_driver)).read() + "\n# changed\n"
    (tmp_path / "Scripts" / "hwaffinity_mgmt_driver.py").write_text(text)
    artifacts = {DRIVER: {"file": "Scripts/hwaffinity_mgmt_driver.py"}}
    with pytest.raises(exceptions.MgmtDriverHashMatchFailure):
        drv._check_mgmt_driver(DRIVER, artifacts, str(tmp_path))


@pytest.mark.parametrize("hook", ["instantiate_start", "terminate_start", "terminate_end",
                                  "change_external_connectivity_start",
                                  "change_external_connectivity_end",
                                  "modify_information_start", "modify_information_end"])
def test_other_hooks_do_nothing_and_say_so(manager, hook, caplog):
    caplog.set_level(logging.INFO)
    access = {"auth_url": "http://127.0.0.1:9/v3", "username": "u", "password": "pw",
              "project_name": "p"}
    vim = tacker_objects.vim(access)
    inst = tacker_objects.instance(vim, "stack", {})
    kwargs = {"context": tacker_objects.admin_context(), "vnf_instance": inst}
    if hook.startswith("modify_information"):
        kwargs["modify_vnf_request"] = None
    else:
        name = {"instantiate": "instantiate_vnf_request", "terminate": "terminate_vnf_request",
                "change": "change_ext_conn_request"}[hook.split("_")[0]]
        kwargs.update({name: None, "grant": None, "grant_request": None})
    assert manager.invoke(DRIVER, hook, **kwargs) is None
    assert "%s: nothing to do for node labels" % hook in caplog.text
    assert inst.vnf_metadata == {}


def test_a_bad_parameter_fails_naming_the_field_before_any_call(manager, monkeypatch):
    from tacker.common import exceptions

    def refuse(*a, **kw):
        raise AssertionError("network I/O despite invalid parameters")
    monkeypatch.setattr(socket, "create_connection", refuse)
    access = {"auth_url": "http://127.0.0.1:9/v3", "username": "u", "password": "pw",
              "project_name": "p"}
    vim = tacker_objects.vim(access)
    params = {"hwaffinity_param": {"ssh": {"port": 0}}}
    with pytest.raises(exceptions.MgmtDriverOtherError) as e:
        manager.invoke(DRIVER, "instantiate_end", context=tacker_objects.admin_context(),
                       vnf_instance=tacker_objects.instance(vim, "stack", {}),
                       instantiate_vnf_request=tacker_objects.instantiate_request(vim, params),
                       grant=None, grant_request=None, vnf={})
    assert "instantiate_end: field additionalParams.hwaffinity_param.ssh.port: must be at " \
           "least 1" in str(e.value)


def test_an_unreachable_vim_fails_without_leaking_the_password(manager):
    from tacker.common import exceptions
    secret = "s3cr3t-Passw0rd-xyz"
    access = {"auth_url": "http://127.0.0.1:9/v3", "username": "u", "password": secret,
              "project_name": "p"}
    vim = tacker_objects.vim(access)
    params = {"k8s_cluster_installation_param": {
        "worker_node": {"aspect_id": "worker_instance"},
        "master_node": {"aspect_id": "master_instance", "username": "ubuntu",
                        "password": secret}},
        "hwaffinity_param": {"openstack": {"retries": 0, "timeout": 2}}}
    with pytest.raises(exceptions.MgmtDriverOtherError) as e:
        manager.invoke(DRIVER, "instantiate_end", context=tacker_objects.admin_context(),
                       vnf_instance=tacker_objects.instance(vim, "stack", {}),
                       instantiate_vnf_request=tacker_objects.instantiate_request(vim, params),
                       grant=None, grant_request=None, vnf={})
    assert "Heat" in str(e.value) or "Keystone" in str(e.value) or "no answer" in str(e.value)
    assert secret not in str(e.value)


def test_scale_and_heal_requests_become_jobs(manager):
    from tacker_hwaffinity.mgmt import tacker_v1
    access = {"auth_url": "http://127.0.0.1:9/v3", "username": "u", "password": "pw",
              "project_name": "p"}
    vim = tacker_objects.vim(access)
    stored = {"k8s_cluster_installation_param": {
        "worker_node": {"aspect_id": "worker_instance", "username": "ubuntu",
                        "password": "old"}}}
    vnfcs = [tacker_objects.vnfc("srv-a"), tacker_objects.vnfc("srv-b")]
    inst = tacker_objects.instance(vim, "stack-9", stored, vnfcs)
    ctx = tacker_objects.admin_context()
    job = tacker_v1.job_from_v1("scale_start", ctx, inst, tacker_objects.scale_request(
        "SCALE_IN", additional_params={"worker_node_password": "new"}),
        {"scale_name_list": ["m1"], "scale_out_id_list": ["s1"]})
    assert (job.stack_id, job.scale_in, job.removed_members) == ("stack-9", True, ["m1"])
    assert job.params["worker"]["password"] == "new"
    assert job.access["password"] == "pw"
    job = tacker_v1.job_from_v1("heal_end", ctx, inst,
                                tacker_objects.heal_request([vnfcs[1].id]), {})
    assert (job.full_heal, job.target_servers) == (False, ["srv-b"])
    job = tacker_v1.job_from_v1("heal_start", ctx, inst, tacker_objects.heal_request([]), {})
    assert job.full_heal
