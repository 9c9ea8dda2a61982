"""Operator-wide defaults in ``tacker.conf``: the ``[hwaffinity]`` group.

Precedence, highest first: a VNF's ``hwaffinity_param`` (in the LCM request's
``additionalParams``), then ``[hwaffinity]`` in ``tacker.conf``, then the built-in
defaults (``labeling.params.SPEC``). Each option is made from the parameter it
sets (type, bounds, choices, default, help), so the two cannot drift apart.

* Tacker v1: the conductor has parsed ``tacker.conf`` into ``oslo_config.cfg.CONF``;
  loading the driver registers the group there (``register``).
* Tacker v2: the conductor runs our script as a child process, which reads the same
  ``tacker.conf`` (``--config-file`` paths in ``TACKER_CONFIG_FILES``, else
  oslo.config's search for project ``tacker``: ``~/.tacker/``, ``/etc/tacker/``...).

``oslo-config-generator --namespace tacker_hwaffinity`` writes the sample
(``etc/tacker-hwaffinity.conf.sample``) through the ``oslo.config.opts`` entry point
``list_opts``.
"""
import os

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.labeling import params as parameters

GROUP = "hwaffinity"
# option name -> the hwaffinity_param field it gives the default of
OPTIONS = (
    ("label_keys", ("label_keys",)),
    ("zone_label_key", ("zone_label_key",)),
    ("host_source", ("host_source",)),
    ("on_colocation", ("on_colocation",)),
    ("respread_timeout", ("respread_timeout",)),
    ("join_timeout", ("join_timeout",)),
    ("openstack_timeout", ("openstack", "timeout")),
    ("openstack_retries", ("openstack", "retries")),
    ("ssh_connect_timeout", ("ssh", "connect_timeout")),
    ("ssh_command_timeout", ("ssh", "command_timeout")),
    ("ssh_retries", ("ssh", "retries")),
    ("ssh_insecure_ignore_host_key", ("ssh", "insecure_ignore_host_key")),
    ("drain_timeout", ("drain", "timeout")),
)
_HELP = {
    "ssh_insecure_ignore_host_key": "Accept any SSH host key for every VNF that does not say "
                                    "otherwise. Leave False: host keys are verified by "
                                    "default, and a VNF opts out in its own hwaffinity_param.",
}


def _field(path):
    spec = parameters.SPEC[path[0]]
    for name in path[1:]:
        spec = spec.fields[name]
    return spec


def _opt(name, path):
    from oslo_config import cfg
    f = _field(path)
    text = _HELP.get(name) or "Default of hwaffinity_param.%s: %s" % (
        ".".join(path), f.doc or name.replace("_", " "))
    bounds = {k: v for k, v in (("min", f.minimum), ("max", f.maximum)) if v is not None}
    if f.type == "array":
        return cfg.ListOpt(name, default=list(f.default or []), help=text)
    if f.type == "boolean":
        return cfg.BoolOpt(name, default=f.default, help=text)
    if f.type == "integer":
        return cfg.IntOpt(name, default=f.default, help=text, **bounds)
    if f.type == "number":
        return cfg.FloatOpt(name, default=f.default, help=text, **bounds)
    return cfg.StrOpt(name, default=f.default, choices=f.enum, help=text)


def opts():
    return [_opt(name, path) for name, path in OPTIONS]


def list_opts():
    """The ``oslo.config.opts`` entry point: [(group, options)]."""
    return [(GROUP, opts())]


def register(conf):
    """Register the group on CONF (idempotent: an equal option registers once)."""
    conf.register_opts(opts(), group=GROUP)


def defaults(conf):
    """The ``hwaffinity_param`` defaults CONF sets (a nested dict), each validated as
    the parameter is, errors naming ``[hwaffinity] option``."""
    group = getattr(conf, GROUP)
    out = {}
    for name, path in OPTIONS:
        value = getattr(group, name)
        if value is None:
            continue
        if isinstance(value, list):
            value = list(value)
        parameters.validate_field(_field(path), value, "tacker.conf [%s] %s" % (GROUP, name))
        node = out
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return out


def load_tacker_conf(environ=os.environ):
    """``tacker.conf`` read the way the v2 conductor's child process can: the files in
    TACKER_CONFIG_FILES (``:``-separated), else oslo.config's search for ``tacker``.
    None when there is no such file (then only the built-in defaults apply)."""
    from oslo_config import cfg
    files = [f for f in (environ.get("TACKER_CONFIG_FILES") or "").split(":") if f]
    if not files:
        files = cfg.find_config_files(project="tacker")
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        raise InputError("no such file: %s" % ", ".join(missing), field="TACKER_CONFIG_FILES")
    if not files:
        return None
    conf = cfg.ConfigOpts()
    register(conf)
    try:
        conf(args=[], project="tacker", default_config_files=files, default_config_dirs=[])
    except cfg.ConfigFileParseError as e:
        raise InputError(_unparsable(e), source=e.config_file) from None
    except cfg.Error as e:
        raise InputError("tacker.conf: %s" % e) from None
    return conf


def _unparsable(e):
    """Where oslo.config's parse error E is, without the line it quotes: tacker.conf
    holds passwords (the database URL, keystone_authtoken)."""
    from oslo_config import iniparser
    cause = e.__context__
    where = " at line %d (%s)" % (cause.lineno, cause.msg) \
        if isinstance(cause, iniparser.ParseError) else ""
    return "tacker.conf cannot be parsed%s; the line is not shown, it may hold a secret" % where
