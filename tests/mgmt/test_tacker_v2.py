"""The v2 script run by Tacker's own v2 conductor code (pickled dict on
stdin, pickled dict on stdout, one-line reason on stderr)."""
import io
import pickle

import pytest

from mgmt import tacker_v2_conductor as conductor
from tacker_hwaffinity.mgmt import tacker_v2

SECRET = "v2-Secr3t-Passw0rd"


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    return conductor.make_package(str(tmp_path_factory.mktemp("v2pkg") / "pkg"))


def _inst(o, vnfcs=()):
    return o.VnfInstanceV2.from_dict({
        "id": "8d8a9f0e-0000-4000-8000-000000000001", "vnfdId": "vnfd-test",
        "vnfProvider": "p", "vnfProductName": "k8s", "vnfSoftwareVersion": "1",
        "vnfdVersion": "1", "instantiationState": "INSTANTIATED",
        "vimConnectionInfo": {"vim1": {
            "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
            "interfaceInfo": {"endpoint": "http://127.0.0.1:9/v3"},
            "accessInfo": {"username": "u", "password": SECRET, "project": "p",
                           "projectDomain": "Default", "userDomain": "Default"}}},
        "instantiatedVnfInfo": {"flavourId": "simple", "vnfState": "STARTED",
                                "vnfcResourceInfo": list(vnfcs)}})


def _params(**hw):
    return {"k8s_cluster_installation_param": {
        "master_node": {"vdu_id": "masterNode", "username": "ubuntu", "password": SECRET},
        "worker_node": {"vdu_id": "workerNode"}},
        "hwaffinity_param": dict({"openstack": {"retries": 0, "timeout": 2}}, **hw)}


def test_an_operation_without_label_work_exits_zero(package):
    o = conductor.objects()
    inst = _inst(o)
    req = o.InstantiateVnfRequest.from_dict({"flavourId": "simple",
                                             "additionalParams": _params()})
    conductor.execute(package, "instantiate_start", req, inst)
    assert not inst.obj_attr_is_set("metadata")


def test_a_bad_parameter_fails_with_one_line_naming_the_field(package):
    from tacker.sol_refactored.common import exceptions as sol_ex
    o = conductor.objects()
    req = o.InstantiateVnfRequest.from_dict({"flavourId": "simple", "additionalParams": _params(
        on_colocation="explode")})
    with pytest.raises(sol_ex.MgmtDriverExecutionFailed) as e:
        conductor.execute(package, "instantiate_end", req, _inst(o))
    detail = str(e.value.detail) if hasattr(e.value, "detail") else str(e.value)
    assert "instantiate_end: field request.additionalParams.hwaffinity_param.on_colocation: " \
           "must be one of warn, fail" in detail
    assert "Traceback" not in detail


def test_an_unreachable_vim_fails_without_leaking_secrets(package):
    from tacker.sol_refactored.common import exceptions as sol_ex
    o = conductor.objects()
    vnfcs = [{"id": "c1", "vduId": "workerNode", "computeResource": {
        "resourceId": "srv-1", "vimLevelResourceType": "OS::Nova::Server"}}]
    req = o.InstantiateVnfRequest.from_dict({"flavourId": "simple",
                                             "additionalParams": _params()})
    with pytest.raises(sol_ex.MgmtDriverExecutionFailed) as e:
        conductor.execute(package, "instantiate_end", req, _inst(o, vnfcs))
    detail = str(e.value.detail) if hasattr(e.value, "detail") else str(e.value)
    assert "instantiate_end:" in detail and SECRET not in detail
    assert detail.count("\n") <= 1


def test_scale_in_targets_come_from_the_grant_request():
    script = {"operation": "scale_start",
              "request": {"type": "SCALE_IN", "additionalParams": _params()},
              "vnf_instance": {"vimConnectionInfo": {}, "instantiatedVnfInfo": {
                  "vnfcResourceInfo": [
                      {"id": "c1", "vduId": "workerNode", "computeResource": {"resourceId": "a"}},
                      {"id": "c2", "vduId": "workerNode", "computeResource": {"resourceId": "b"}},
                      {"id": "m1", "vduId": "masterNode", "computeResource": {"resourceId": "m"},
                       "metadata": {"stack_id": "st/1"}}]}},
              "grant_request": {"removeResources": [
                  {"type": "COMPUTE", "resource": {"resourceId": "b"}},
                  {"type": "LINKPORT", "resource": {"resourceId": "port"}}]}}
    job = tacker_v2.job_from_v2(script)
    assert (job.scale_in, job.target_servers) == (True, ["b"])
    assert job.worker_servers == ["a", "b"] and job.master_vnfcs == [("m", "st/1")]


def test_stdin_that_is_not_a_script_dict_is_refused():
    err = io.StringIO()
    assert tacker_v2.main(io.BytesIO(pickle.dumps(["x"])), io.BytesIO(), err) == 1
    assert "not Tacker's pickled script dict" in err.getvalue()


def test_the_top_stack_and_the_package_come_from_the_script_dict():
    script = {"operation": "instantiate_end", "tmp_csar_dir": "/tmp/csar-x",
              "request": {"additionalParams": _params()},
              "vnf_instance": {"vimConnectionInfo": {}, "instantiatedVnfInfo": {
                  "metadata": {"stack_id": "top-stack-id"}, "vnfcResourceInfo": []}}}
    job = tacker_v2.job_from_v2(script)
    assert (job.stack_id, job.package_dir) == ("top-stack-id", "/tmp/csar-x")


def _heal_script(hook, vnfc_ids, servers, metadata=None):
    """A heal's script dict as Tacker v2 passes it: vnfcInfo ids name vnfcResourceInfo
    entries, both named after the server; each server sits in its own VNFC stack."""
    vnfcs = [{"id": srv, "vduId": "workerNode", "computeResource": {"resourceId": srv},
              "metadata": {"stack_id": stack}} for srv, stack in servers]
    infos = [{"id": "workerNode-" + v["id"], "vduId": "workerNode",
              "vnfcResourceInfoId": v["id"], "vnfcState": "STARTED"} for v in vnfcs]
    inst = {"instantiatedVnfInfo": {"vnfcResourceInfo": vnfcs, "vnfcInfo": infos}}
    if metadata is not None:
        inst["metadata"] = metadata
    return {"operation": hook, "vnf_instance": inst,
            "request": {"vnfcInstanceId": vnfc_ids, "additionalParams": _params()}}


def test_heal_names_vnfc_info_ids_and_heal_end_finds_the_new_server_by_its_stack():
    start = tacker_v2.job_from_v2(_heal_script("heal_start", ["workerNode-old-1"],
                                               [("old-1", "stack-1"), ("srv-2", "stack-2")]))
    assert start.target_servers == ["old-1"]
    report = dict({"hook": "heal_start"}, **start.record)   # what lifecycle.run reports
    assert report["healedVnfcStacks"] == {"workerNode-old-1": "stack-1"}
    # after the heal: a new server in the same stack, new ids; the request is the same
    end = _heal_script("heal_end", ["workerNode-old-1"],
                       [("new-1", "stack-1"), ("srv-2", "stack-2")],
                       metadata={"hwaffinity": report})
    assert tacker_v2.job_from_v2(end).target_servers == ["new-1"]


def test_a_heal_of_an_unknown_vnfc_is_refused_naming_it():
    from tacker_hwaffinity.errors import InputError
    with pytest.raises(InputError, match="no VNFC workerNode-x in the VNF instance's vnfcInfo"):
        tacker_v2.job_from_v2(_heal_script("heal_start", ["workerNode-x"], [("a", "s")]))
    # heal_end without heal_start's record (or a resource id instead of a vnfcInfo id)
    with pytest.raises(InputError, match="nor a server in the stack heal_start recorded"):
        tacker_v2.job_from_v2(_heal_script("heal_end", ["a"], [("a", "s")]))
