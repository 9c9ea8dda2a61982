"""Tacker v1 (``VnflcmMgmtAbstractDriver``) inputs -> a ``lifecycle.Job``.

What the v1 core passes (tacker/vnflcm/vnflcm_driver.py): versioned objects
(``VnfInstance``, ``InstantiateVnfRequest``, ``ScaleVnfRequest``,
``HealVnfRequest``) and kwargs: ``scale_name_list`` (scale-in: the
AutoScalingGroup member names), ``scale_out_id_list`` (their or the new
members' stack ids), ``vnf`` (the vnf dict). The instantiate request's
``additionalParams`` are kept in ``instantiated_vnf_info.additional_params``;
a scale or heal request may add to them (block by block, and the reference
driver's ``master_node_username``/``password`` overrides).
"""
import json
import logging
import typing

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.labeling import params as parameters
from tacker_hwaffinity.mgmt import lifecycle
from tacker_hwaffinity.ssh.redact import Redactor

LOG = logging.getLogger("tacker_hwaffinity.mgmt")
METADATA_KEY = "hwaffinity"
OPENSTACK_TYPES = ("openstack", "ETSINFV.OPENSTACK_KEYSTONE.V_3", "ETSINFV.OPENSTACK_KEYSTONE.v_3")
KUBERNETES_TYPES = ("kubernetes", "ETSINFV.KUBERNETES.V_1")


def on_load() -> None:
    """Loading the driver registers the translator extension and the ``[hwaffinity]``
    options on Tacker's configuration; no network I/O."""
    from oslo_config import cfg

    from tacker_hwaffinity import translator
    from tacker_hwaffinity.mgmt import conf
    translator.register()
    conf.register(cfg.CONF)


def _operator_defaults():
    from oslo_config import cfg

    from tacker_hwaffinity.mgmt import conf
    conf.register(cfg.CONF)
    return conf.defaults(cfg.CONF)


def _get(obj, name, default=None):
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(name, default)
    try:
        if hasattr(obj, "obj_attr_is_set") and not obj.obj_attr_is_set(name):
            return default
        return getattr(obj, name, default)
    except (AttributeError, NotImplementedError):
        return default


def merged_params(hook, vnf_instance, request):
    info = _get(vnf_instance, "instantiated_vnf_info")
    stored = dict(_get(info, "additional_params") or {}) if hook != "instantiate_end" else {}
    given = dict(_get(request, "additional_params") or {})
    merged = dict(stored)
    for key, value in given.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = dict(merged[key], **value)
        else:
            merged[key] = value
    ref = dict(merged.get(parameters.REFERENCE_BLOCK) or {})
    for role in ("master", "worker"):
        node = dict(ref.get(role + "_node") or {})
        for field in ("username", "password"):
            if given.get("%s_node_%s" % (role, field)):
                node[field] = given["%s_node_%s" % (role, field)]
        if node:
            ref[role + "_node"] = node
    if ref:
        merged[parameters.REFERENCE_BLOCK] = ref
    return merged


def _vims(context, vnf_instance, request):
    vims = list(_get(request, "vim_connection_info") or []) or \
        list(_get(vnf_instance, "vim_connection_info") or [])
    access, kubeconfig = None, None
    for vim in vims:
        vtype = _get(vim, "vim_type") or ""
        info = dict(_get(vim, "access_info") or {})
        if vtype in OPENSTACK_TYPES and access is None:
            if not info.get("password"):
                info = _stored_vim(context, vim)
            from tacker_hwaffinity.openstack import access_from_tacker_v1
            access = access_from_tacker_v1(info)
        elif vtype in KUBERNETES_TYPES and kubeconfig is None:
            if not info.get("bearer_token"):
                info = _stored_vim(context, vim)
            if info.get("bearer_token") and info.get("auth_url"):
                from tacker_hwaffinity.mgmt.kubectl_runner import kubeconfig_from_vim
                kubeconfig = kubeconfig_from_vim(info["auth_url"], info["bearer_token"],
                                                 info.get("ssl_ca_cert"))
    return access, kubeconfig


def _stored_vim(context, vim):
    """The VIM's access information from Tacker's database (decrypted)."""
    from tacker.vnflcm import utils as vnflcm_utils
    return dict(vnflcm_utils._get_vim(context, [vim]).get("access_info") or {})


def _package_dir(context, vnf_instance):
    """Where Tacker keeps the VNF package (its database maps the VNFD id to
    the package); read only when an installation needs the script."""
    from tacker.vnflcm import utils as vnflcm_utils
    vnfd_id = _get(vnf_instance, "vnfd_id")
    try:
        return vnflcm_utils._get_vnf_package_path(context, vnfd_id)
    except Exception as e:  # noqa: BLE001 - Tacker's database errors vary by backend
        raise lifecycle.HookFailed("cannot find the VNF package of VNFD %s in Tacker (%s), so "
                                   "the installation script cannot be read"
                                   % (vnfd_id, type(e).__name__)) from None


def job_from_v1(hook, context, vnf_instance, request, kwargs):
    raw = merged_params(hook, vnf_instance, request)
    params = parameters.parse(raw, defaults=_operator_defaults())
    job = lifecycle.Job(hook, params, package_dir=lambda: _package_dir(context, vnf_instance))
    if hook not in lifecycle.ACTIVE:
        return job
    job.access, job.kubeconfig = _vims(context, vnf_instance, request)
    info = _get(vnf_instance, "instantiated_vnf_info")
    job.stack_id = _get(info, "instance_id")
    if hook.startswith("scale_"):
        job.scale_in = (_get(request, "type") or "SCALE_OUT") == "SCALE_IN"
        job.removed_members = list(kwargs.get("scale_name_list") or ())
    if hook.startswith("heal_"):
        vnfc_ids = list(_get(request, "vnfc_instance_id") or ())
        job.full_heal = not vnfc_ids
        by_id = {_get(v, "id"): v for v in _get(info, "vnfc_resource_info") or ()}
        servers = []
        for vid in vnfc_ids:
            vnfc = by_id.get(vid)
            if vnfc is None:
                raise InputError("no VNFC %s in the VNF instance" % vid,
                                 field="vnfcInstanceId")
            servers.append(_get(_get(vnfc, "compute_resource"), "resource_id"))
        job.target_servers = servers
    return job


def hook(name: str, context: typing.Any, vnf_instance: typing.Any, request: typing.Any,
         grant: typing.Any, kwargs: typing.Mapping[str, typing.Any]) -> None:
    """Run hook NAME; raise Tacker's MgmtDriverOtherError with a one-line,
    secret-free reason on failure."""
    redact = Redactor()
    try:
        job = job_from_v1(name, context, vnf_instance, request, kwargs)
        redact = lifecycle.redactor(job)
        report = lifecycle.run(job, LOG)
    except Exception as e:  # noqa: BLE001 - every failure becomes Tacker's error type
        from tacker.common import exceptions
        reason = redact(lifecycle.reason(e))
        LOG.error("%s failed: %s", name, reason)
        raise exceptions.MgmtDriverOtherError(error_message="%s: %s" % (name, reason)) \
            from None
    if report:
        meta = dict(_get(vnf_instance, "vnf_metadata") or {})
        meta[METADATA_KEY] = json.dumps(report, sort_keys=True)
        vnf_instance.vnf_metadata = meta
    return None
