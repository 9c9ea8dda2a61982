"""Tacker v2 (script) inputs -> a ``lifecycle.Job``, and the script protocol.

``script_dict`` (tacker/sol_refactored/conductor/vnflcm_driver_v2.py):
``operation`` (e.g. ``scale_start``), ``request`` (``additionalParams``,
``type``, ``vnfcInstanceId``...), ``vnf_instance`` (``vimConnectionInfo``,
``instantiatedVnfInfo.vnfcResourceInfo[]`` with ``vduId``,
``computeResource.resourceId`` and ``metadata.stack_id``, and ``vnfcInfo[]``, whose
``id`` a heal request names and whose ``vnfcResourceInfoId`` points at the server),
``grant_request`` (``removeResources[]`` of type COMPUTE on scale-in),
``tmp_csar_dir`` (the unpacked VNF package: the installation script).
Workers are the VNFCs of ``worker_node.vdu_id`` (and
``hwaffinity_param.worker_vdus``); v2 does not keep the instantiate
parameters, so every request carries them (as with Tacker's own v2 driver).
"""
import copy
import pickle
import typing

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.labeling import params as parameters
from tacker_hwaffinity.mgmt import lifecycle
from tacker_hwaffinity.ssh.redact import Redactor

OPENSTACK = "ETSINFV.OPENSTACK_KEYSTONE.V_3"
KUBERNETES = "ETSINFV.KUBERNETES.V_1"
METADATA_KEY = "hwaffinity"


def _vnfcs(inst):
    return ((inst.get("instantiatedVnfInfo") or {}).get("vnfcResourceInfo")) or []


def _server(vnfc):
    return (vnfc.get("computeResource") or {}).get("resourceId")


def job_from_v2(script):
    hook = script.get("operation")
    req, inst = script.get("request") or {}, script.get("vnf_instance") or {}
    from tacker_hwaffinity.mgmt import conf
    tacker_conf = conf.load_tacker_conf()
    params = parameters.parse(req.get("additionalParams") or {}, where="request.additionalParams",
                              defaults=conf.defaults(tacker_conf) if tacker_conf else None)
    job = lifecycle.Job(hook, params, package_dir=script.get("tmp_csar_dir"))
    if hook not in lifecycle.ACTIVE:
        return job
    for vim in (inst.get("vimConnectionInfo") or {}).values():
        vtype = (vim or {}).get("vimType", "").upper()
        if vtype == OPENSTACK.upper() and job.access is None:
            from tacker_hwaffinity.openstack import access_from_tacker_v2
            job.access = access_from_tacker_v2(vim)
        elif vtype == KUBERNETES.upper() and job.kubeconfig is None:
            from tacker_hwaffinity.mgmt.kubectl_runner import kubeconfig_from_vim
            iface, acc = vim.get("interfaceInfo") or {}, vim.get("accessInfo") or {}
            if iface.get("endpoint") and acc.get("bearer_token"):
                job.kubeconfig = kubeconfig_from_vim(iface["endpoint"], acc["bearer_token"],
                                                     iface.get("ssl_ca_cert"))
    wvdus = set(params["hwaffinity"].worker_vdus)
    if params["worker"].get("vdu_id"):
        wvdus.add(params["worker"]["vdu_id"])
    if not wvdus:
        raise InputError("name the worker VDU: k8s_cluster_installation_param.worker_node."
                         "vdu_id", field="request.additionalParams")
    vnfcs = _vnfcs(inst)
    job.worker_servers = [_server(v) for v in vnfcs if v.get("vduId") in wvdus and _server(v)]
    mvdu = params["master"].get("vdu_id")
    # the VNF's top stack (Tacker v2 keeps it there): the VIP port of cluster_cp_name
    job.stack_id = ((inst.get("instantiatedVnfInfo") or {}).get("metadata") or {}).get(
        "stack_id")
    job.master_vnfcs = [(_server(v), (v.get("metadata") or {}).get("stack_id"))
                        for v in vnfcs if mvdu and v.get("vduId") == mvdu and _server(v)]
    if hook.startswith("scale_"):
        job.scale_in = req.get("type") == "SCALE_IN"
        removed = (script.get("grant_request") or {}).get("removeResources") or []
        job.target_servers = [(r.get("resource") or {}).get("resourceId") for r in removed
                              if r.get("type") == "COMPUTE"]
    if hook.startswith("heal_"):
        ids = list(req.get("vnfcInstanceId") or ())
        job.full_heal = not ids
        healed = _healed_vnfcs(hook, ids, inst)
        job.target_servers = [_server(v) for v in healed.values()]
        if hook == "heal_start" and healed:  # heal_end finds them through these stacks
            job.record = {"healedVnfcStacks": {
                vid: (v.get("metadata") or {}).get("stack_id") for vid, v in healed.items()}}
    return job


def _healed_vnfcs(hook, ids, inst):
    """{VNFC id: its vnfcResourceInfo} for a heal's vnfcInstanceId IDS. They are
    VnfcInfo ids (SOL003), each naming a vnfcResourceInfo. Tacker names both after the
    server, which the heal replaces: heal_end finds a healed VNFC through the stack
    holding its server (``metadata.stack_id``, kept by the heal), as heal_start
    recorded it in the instance's metadata."""
    infos = {i.get("id"): i.get("vnfcResourceInfoId") for i in
             (inst.get("instantiatedVnfInfo") or {}).get("vnfcInfo") or ()}
    by_id = {v.get("id"): v for v in _vnfcs(inst)}
    prior = (inst.get("metadata") or {}).get(METADATA_KEY) or {}
    stacks = prior.get("healedVnfcStacks") or {} if prior.get("hook") == "heal_start" else {}
    out = {}
    for vid in ids:
        vnfc = by_id.get(infos.get(vid))
        if vnfc is None and hook == "heal_end" and stacks.get(vid):
            vnfc = next((v for v in by_id.values()
                         if (v.get("metadata") or {}).get("stack_id") == stacks[vid]), None)
        if vnfc is None:
            raise InputError("no VNFC %s in the VNF instance's vnfcInfo%s" % (
                vid, " (nor a server in the stack heal_start recorded for it)"
                if hook == "heal_end" else ""), field="request.vnfcInstanceId")
        out[vid] = vnfc
    return out


def main(stdin: typing.BinaryIO, stdout: typing.BinaryIO, stderr: typing.TextIO) -> int:
    """The script protocol; returns the exit status."""
    redact, script = Redactor(), None
    try:
        script = pickle.load(stdin)
        if not isinstance(script, dict) or not script.get("operation"):
            raise InputError("stdin is not Tacker's pickled script dict (with 'operation')")
        job = job_from_v2(script)
        redact = lifecycle.redactor(job)
        report = lifecycle.run(job)
    except Exception as e:  # noqa: BLE001 - one line on stderr, never a traceback
        op = script.get("operation") if isinstance(script, dict) else None
        stderr.write("%s: %s\n" % (op or "mgmt-drivers-hwaffinity",
                                   " ".join(redact(lifecycle.reason(e)).split())))
        stderr.flush()
        return 1
    out = {}
    if report:
        inst = copy.deepcopy(script.get("vnf_instance") or {})
        inst["metadata"] = dict(inst.get("metadata") or {}, **{METADATA_KEY: report})
        out["vnf_instance"] = inst
    stdout.write(pickle.dumps(out))
    stdout.flush()
    return 0
