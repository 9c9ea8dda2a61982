"""Keystone password credentials from the places operators keep them.

Every source is normalised to one dict: ``auth_url, username, password,
project_name, user_domain_name, project_domain_name, region_name, verify``
(``verify``: True, False, or a CA bundle path). Messages name the missing
field, never a value.
"""
import os
import typing

import yaml

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.redaction import yaml_error

REQUIRED = ("auth_url", "username", "password", "project_name")
CLOUDS_YAML = ("clouds.yaml", "~/.config/openstack/clouds.yaml", "/etc/openstack/clouds.yaml")


def _bool(value, default=True):
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() not in ("false", "0", "no", "off")


def _checked(access, where):
    for name in REQUIRED:
        if not access.get(name):
            raise InputError("the OpenStack credentials lack %s" % name, source=where)
    access.setdefault("user_domain_name", "Default")
    access.setdefault("project_domain_name", "Default")
    for k in ("user_domain_name", "project_domain_name"):
        access[k] = access[k] or "Default"
    return access


def access_from_tacker_v1(access_info, where="vim_connection_info.access_info"):
    """Tacker v1 VIM ``access_info`` (as ``vnflcm_utils._get_vim`` returns it)."""
    a = dict(access_info or {})
    verify = _bool(a.get("cert_verify"), True)
    return _checked({"auth_url": a.get("auth_url"), "username": a.get("username"),
                     "password": a.get("password"), "project_name": a.get("project_name"),
                     "user_domain_name": a.get("user_domain_name"),
                     "project_domain_name": a.get("project_domain_name"),
                     "region_name": a.get("region") or a.get("region_name"),
                     "verify": verify}, where)


def access_from_tacker_v2(vim, where="vimConnectionInfo"):
    """Tacker v2 ``VimConnectionInfo`` dict (``interfaceInfo`` + ``accessInfo``)."""
    iface, acc = vim.get("interfaceInfo") or {}, vim.get("accessInfo") or {}
    verify = not _bool(iface.get("skipCertificateVerification"), False)
    return _checked({"auth_url": iface.get("endpoint"), "username": acc.get("username"),
                     "password": acc.get("password"), "project_name": acc.get("project"),
                     "user_domain_name": acc.get("userDomain"),
                     "project_domain_name": acc.get("projectDomain"),
                     "region_name": acc.get("region"), "verify": verify}, where)


def _from_clouds_yaml(name, env):
    paths = [env["OS_CLIENT_CONFIG_FILE"]] if env.get("OS_CLIENT_CONFIG_FILE") else CLOUDS_YAML
    for path in paths:
        path = os.path.expanduser(path)
        if not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                doc = yaml.safe_load(f) or {}
        except OSError as e:
            raise InputError("cannot read: %s" % (e.strerror or type(e).__name__), source=path)
        except yaml.YAMLError as e:
            raise InputError("not valid YAML (%s; its text is not shown: it holds "
                             "credentials)" % yaml_error(e), source=path) from None
        cloud = (doc.get("clouds") or {}).get(name)
        if cloud is None:
            continue
        auth = cloud.get("auth") or {}
        verify = _bool(cloud.get("verify"), True)
        if verify and cloud.get("cacert"):
            verify = os.path.expanduser(cloud["cacert"])
        return _checked({k: auth.get(k) for k in
                         ("auth_url", "username", "password", "project_name",
                          "user_domain_name", "project_domain_name")}
                        | {"region_name": cloud.get("region_name"), "verify": verify},
                        "%s: clouds.%s" % (path, name))
    raise InputError("no clouds.yaml defines cloud %r (looked in %s)"
                     % (name, ", ".join(paths)), field="--os-cloud")


def access_from_environment(cloud=None, env=None):
    """clouds.yaml (CLOUD or $OS_CLOUD) or the OS_* variables."""
    env = os.environ if env is None else env
    cloud = cloud or env.get("OS_CLOUD")
    if cloud:
        return _from_clouds_yaml(cloud, env)
    verify = not _bool(env.get("OS_INSECURE"), False)
    if verify and env.get("OS_CACERT"):
        verify = env["OS_CACERT"]
    access = {"auth_url": env.get("OS_AUTH_URL"), "username": env.get("OS_USERNAME"),
              "password": env.get("OS_PASSWORD"),
              "project_name": env.get("OS_PROJECT_NAME") or env.get("OS_TENANT_NAME"),
              "user_domain_name": env.get("OS_USER_DOMAIN_NAME"),
              "project_domain_name": env.get("OS_PROJECT_DOMAIN_NAME"),
              "region_name": env.get("OS_REGION_NAME"), "verify": verify}
    if not access["auth_url"]:
        raise InputError("no OpenStack credentials: set OS_CLOUD (clouds.yaml) or the OS_* "
                         "variables (OS_AUTH_URL, OS_USERNAME, OS_PASSWORD, OS_PROJECT_NAME)")
    return _checked(access, "OS_* environment variables")


def session(access: typing.Mapping[str, typing.Any], timeout: float = 30.0) -> typing.Any:
    """A keystoneauth1 Session for ACCESS (password auth, Identity v3), on its
    own requests.Session (so the caller can count the HTTP requests)."""
    import requests
    from keystoneauth1 import session as ks_session
    from keystoneauth1.identity import v3
    auth = v3.Password(auth_url=access["auth_url"], username=access["username"],
                       password=access["password"], project_name=access["project_name"],
                       user_domain_name=access["user_domain_name"],
                       project_domain_name=access["project_domain_name"])
    return ks_session.Session(auth=auth, verify=access.get("verify", True), timeout=timeout,
                              session=requests.Session())
