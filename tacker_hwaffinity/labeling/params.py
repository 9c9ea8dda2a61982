"""The driver's parameters: our ``hwaffinity_param`` block and the reference
driver's ``k8s_cluster_installation_param`` (read so existing packages switch
drivers without edits). Validated before anything changes; an error names the
field. One declarative spec gives both the validator and the JSON schema; the
validated ``hwaffinity_param`` block is handed out as :class:`HwParams`.
"""
import dataclasses
import re
import typing

from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects.validation import qualified_name_error

BLOCK = "hwaffinity_param"
REFERENCE_BLOCK = "k8s_cluster_installation_param"
HOST_SOURCES = ("auto", "host", "hostId")
ON_COLOCATION = ("warn", "fail", "respread")


class F:
    """One field: JSON type, default, description, and extra checks."""

    def __init__(self, type_, default=None, doc="", enum=None, minimum=None, maximum=None,
                 items=None, fields=None, secret=False, check=None):
        self.type, self.default, self.doc, self.enum = type_, default, doc, enum
        self.minimum, self.maximum, self.items, self.fields = minimum, maximum, items, fields
        self.secret, self.check = secret, check


def _label_key(value):
    return qualified_name_error(value)


def _matches(pattern, what):
    regex = re.compile(pattern)
    return lambda value: None if regex.fullmatch(value) else "expected " + what


_minor = _matches(r"1\.(3[1-9]|[4-9][0-9])", "a Kubernetes minor version 1.31 or later, "
                                                  "such as 1.35")
_cidr = _matches(r"[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}", "an IPv4 CIDR such as 10.244.0.0/16")
_flannel = _matches(r"v[0-9]+\.[0-9]+\.[0-9]+", "a flannel release such as v0.26.1")
_duration = _matches(r"[0-9]+[hm]", "a duration such as 2h or 90m")
_endpoint = _matches(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?",
                     "HOST or HOST:PORT (IPv4 address or DNS name)")


def _relative_path(value):
    parts = value.split("/")
    if value.startswith("/") or ".." in parts or not value.strip("/"):
        return "expected a relative path inside the VNF package"
    return None


_HOST_KEY_FIELDS = {
    "known_hosts": F("string", doc="known_hosts lines for the target (OpenSSH format)"),
    "host_key_fingerprints": F("array", items=F("string"), default=[],
                               doc="accepted host key fingerprints, 'SHA256:...' as "
                                   "ssh-keygen -lf prints them"),
}
_AUTH_FIELDS = {
    "username": F("string", doc="login user (default: the reference block's master user)"),
    "password": F("string", secret=True, doc="password (prefer private_key)"),
    "private_key": F("string", secret=True, doc="private key, PEM/OpenSSH text"),
    "private_key_passphrase": F("string", secret=True, doc="passphrase of private_key"),
}
SPEC = {
    "label_keys": F("array", items=F("string", check=_label_key), default=[DEFAULT_HOST_LABEL],
                    doc="node label keys set to the worker's compute host"),
    "zone_label_key": F("string", check=_label_key,
                        doc="node label key set to the worker's availability zone, e.g. "
                            "topology.kubernetes.io/zone (unset: no zone label)"),
    "host_source": F("string", default="auto", enum=HOST_SOURCES,
                     doc="auto: OS-EXT-SRV-ATTR:host when the VIM user may see it, else "
                         "hostId; host or hostId: forced"),
    "on_colocation": F("string", default="warn", enum=ON_COLOCATION,
                       doc="two workers on one compute host: warn, fail the operation, or "
                           "respread: live-migrate all but one, Nova's scheduler choosing "
                           "the host, then warn of what is left (doc/mgmt-driver.md)"),
    "respread_timeout": F("number", default=300, minimum=1, maximum=3600,
                          doc="seconds the moves of on_colocation respread may take in all"),
    "kubeconfig": F("string", secret=True,
                    doc="reach the cluster through this kubeconfig (YAML or JSON text; kubectl "
                        "runs where the driver runs) instead of SSH"),
    "join_timeout": F("number", default=0, minimum=0, maximum=3600,
                      doc="seconds to wait for workers without a Kubernetes node to join "
                          "(kubelets that register on their own, e.g. from user data) "
                          "before labelling; 0: fail at once"),
    "worker_vdus": F("array", items=F("string"), default=[],
                     doc="OS::Nova::Server resources of the top stack that are workers too "
                         "(VDUs that are not scaled; v1)"),
    "openstack": F("object", default={}, fields={
        "timeout": F("number", default=30, minimum=0.1, maximum=600,
                     doc="seconds per Heat/Nova request"),
        "retries": F("integer", default=2, minimum=0, maximum=10,
                     doc="retries of a Heat/Nova read after a 5xx answer or no answer"),
    }),
    "ssh": F("object", fields=dict(_AUTH_FIELDS, **_HOST_KEY_FIELDS, **{
        "host": F("string", doc="SSH target (default: the first master's ssh_cp address)"),
        "port": F("integer", default=22, minimum=1, maximum=65535),
        "insecure_ignore_host_key": F("boolean", default=False,
                                      doc="accept any host key (explicit opt-out; logged)"),
        "jump_host": F("object", fields=dict(_AUTH_FIELDS, **_HOST_KEY_FIELDS, **{
            "host": F("string"), "port": F("integer", default=22, minimum=1, maximum=65535)})),
        "connect_timeout": F("number", default=10, minimum=0.1, maximum=600,
                             doc="seconds to wait for the SSH connection and login"),
        "command_timeout": F("number", default=120, minimum=0.1, maximum=7200,
                             doc="seconds one remote command (kubectl) may take"),
        "retries": F("integer", default=3, minimum=0, maximum=20,
                     doc="retries of an SSH connection that failed or dropped"),
        "kubectl": F("string", default="kubectl", doc="kubectl program on the master"),
        "kubeconfig_path": F("string", doc="kubeconfig file on the master (default: kubectl's "
                                           "own, ~/.kube/config of the SSH user)"),
    }), default={}),
    "install": F("object", default={}, fields={
        "enabled": F("boolean", default=False,
                     doc="install Kubernetes on the VMs with the package's script (kubeadm "
                         "init on the first master, join on the others); labelling never "
                         "depends on it"),
        "dry_run": F("boolean", default=False,
                     doc="only run the script with --dry-run on every node (arguments, "
                         "state, SSH, sudo): nothing is installed"),
        "script": F("string", check=_relative_path,
                    doc="the script's path inside the VNF package (default: "
                        "k8s_cluster_installation_param.script_path, else "
                        "Scripts/install_k8s.sh)"),
        "network": F("string", doc="Nova network whose fixed address is each node's "
                                   "Kubernetes address (default: the first fixed address); "
                                   "SSH goes to its floating address when there is one"),
        "control_plane_endpoint": F("string", check=_endpoint,
                                    doc="HOST[:PORT] of the API server (default: the "
                                        "master_node.cluster_cp_name port's address, held as "
                                        "a VIP, else the first master's address)"),
        "kubernetes_minor": F("string", default="1.35", check=_minor,
                              doc="pkgs.k8s.io minor version to pin"),
        "pod_cidr": F("string", check=_cidr,
                      doc="default: master_node.pod_cidr, else the script's 10.244.0.0/16"),
        "service_cidr": F("string", check=_cidr,
                          doc="default: master_node.cluster_cidr, else the script's "
                              "10.96.0.0/12"),
        "flannel_version": F("string", check=_flannel, doc="default: the script's"),
        "token_ttl": F("string", check=_duration,
                       doc="bootstrap token lifetime, e.g. 2h (default: the script's)"),
        "sudo": F("boolean", default=True, doc="run the script with sudo -n (false: the SSH "
                                               "user is root)"),
        "timeout": F("number", default=1800, minimum=1, maximum=86400,
                     doc="seconds the script may take on one node"),
        "parallel": F("integer", default=8, minimum=1, maximum=64,
                      doc="workers installed at the same time"),
    }),
    "drain": F("object", default={}, fields={
        "timeout": F("integer", default=300, minimum=1, maximum=86400,
                     doc="seconds kubectl drain may take (PodDisruptionBudgets honoured)"),
        "delete_emptydir_data": F("boolean", default=True),
        "force": F("boolean", default=False, doc="also evict pods without a controller"),
    }),
}
_NODE_FIELDS = {"aspect_id": F("string"), "vdu_id": F("string"), "ssh_cp_name": F("string"),
                "nic_cp_name": F("string"), "cluster_cp_name": F("string"),
                "pod_cidr": F("string", check=_cidr), "cluster_cidr": F("string", check=_cidr),
                "username": F("string"), "password": F("string", secret=True)}


@dataclasses.dataclass(frozen=True)
class OpenStackParams:
    """``hwaffinity_param.openstack``: seconds per Heat/Nova request, retries of a read."""

    timeout: float
    retries: int


@dataclasses.dataclass(frozen=True)
class DrainParams:
    """``hwaffinity_param.drain``: what ``kubectl drain`` is given."""

    timeout: int
    delete_emptydir_data: bool
    force: bool


@dataclasses.dataclass(frozen=True)
class HwParams:
    """The validated ``hwaffinity_param`` block, defaults filled in (``SPEC`` says what
    each field is). ``ssh`` and ``install`` stay the validated objects their readers
    take as they are (``ssh.SSHSession.from_params``, ``mgmt.install``)."""

    label_keys: typing.Tuple[str, ...]
    zone_label_key: typing.Optional[str]
    host_source: str
    on_colocation: str
    respread_timeout: float
    kubeconfig: typing.Optional[str]
    join_timeout: float
    worker_vdus: typing.Tuple[str, ...]
    openstack: OpenStackParams
    ssh: typing.Mapping[str, typing.Any]
    install: typing.Mapping[str, typing.Any]
    drain: DrainParams

    @classmethod
    def from_block(cls, block: typing.Mapping[str, typing.Any]) -> "HwParams":
        """Of the validated block BLOCK (``_validate_object`` over ``SPEC``)."""
        return cls(label_keys=tuple(block["label_keys"]),
                   zone_label_key=block["zone_label_key"], host_source=block["host_source"],
                   on_colocation=block["on_colocation"],
                   respread_timeout=block["respread_timeout"], kubeconfig=block["kubeconfig"],
                   join_timeout=block["join_timeout"],
                   worker_vdus=tuple(block["worker_vdus"]),
                   openstack=OpenStackParams(**block["openstack"]), ssh=block["ssh"],
                   install=block["install"], drain=DrainParams(**block["drain"]))


# What parse() gives: our block, the reference block's master and worker nodes
# (validated, not strict) and its script_path; read by key, as JSON is.
Parsed = typing.TypedDict("Parsed", {
    "hwaffinity": HwParams, "master": typing.Dict[str, typing.Any],
    "worker": typing.Dict[str, typing.Any], "script_path": typing.Optional[str]})


def _json_type_ok(t, v):
    if t == "string":
        return isinstance(v, str)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "array":
        return isinstance(v, list)
    return isinstance(v, dict)


def _validate(spec, value, path, strict=True):
    if not _json_type_ok(spec.type, value):
        raise InputError("expected %s %s" % ("an" if spec.type[0] in "aeiou" else "a", spec.type),
                         field=path)
    if spec.enum and value not in spec.enum:
        raise InputError("must be one of %s" % ", ".join(spec.enum), field=path)
    if spec.minimum is not None and value < spec.minimum:
        raise InputError("must be at least %s" % spec.minimum, field=path)
    if spec.maximum is not None and value > spec.maximum:
        raise InputError("must be at most %s" % spec.maximum, field=path)
    if spec.check:
        err = spec.check(value)
        if err:
            raise InputError("invalid %r: %s" % (value, err), field=path)
    if spec.type == "array":
        return [_validate(spec.items, v, "%s[%d]" % (path, i)) for i, v in enumerate(value)]
    if spec.type == "object":
        return _validate_object(spec.fields, value, path, strict)
    return value


def validate_field(spec: F, value: typing.Any, path: str) -> typing.Any:
    """VALUE checked against the field SPEC (InputError naming PATH); the clean value."""
    return _validate(spec, value, path)


def _merged(defaults, given):
    """GIVEN over DEFAULTS, objects merged field by field (a given null keeps the default)."""
    out = dict(defaults)
    for k, v in given.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merged(out[k], v)
        elif v is not None or k not in out:
            out[k] = v
    return out


def _validate_object(fields, value, path, strict=True):
    if strict:
        unknown = sorted(set(value) - set(fields))
        if unknown:
            raise InputError("unknown field %s (expected one of %s)"
                             % (unknown[0], ", ".join(sorted(fields))),
                             field="%s.%s" % (path, unknown[0]))
    out = {}
    for name, spec in fields.items():
        if name in value and value[name] is not None:
            out[name] = _validate(spec, value[name], "%s.%s" % (path, name), strict)
        elif spec.type == "object" and spec.default is not None:
            out[name] = _validate_object(spec.fields, {}, "%s.%s" % (path, name), strict)
        else:
            out[name] = spec.default
    return out


def parse(additional_params: typing.Any, where: str = "additionalParams",
          defaults: typing.Optional[typing.Mapping[str, typing.Any]] = None) -> Parsed:
    """The validated parameters of ADDITIONAL_PARAMS (an InputError names the field
    under WHERE).

    DEFAULTS: operator-wide ``hwaffinity_param`` defaults (``tacker.conf [hwaffinity]``,
    see ``mgmt.conf``), below what the VNF gives and above the built-in ones."""
    if additional_params is None:
        additional_params = {}
    if not isinstance(additional_params, dict):
        raise InputError("expected an object", field=where)
    ours = additional_params.get(BLOCK) or {}
    if not isinstance(ours, dict):
        raise InputError("expected an object", field="%s.%s" % (where, BLOCK))
    if defaults:
        ours = _merged(defaults, ours)
    params = _validate_object(SPEC, ours, "%s.%s" % (where, BLOCK))
    if not params["label_keys"] and not params["zone_label_key"]:
        raise InputError("at least one label key is needed",
                         field="%s.%s.label_keys" % (where, BLOCK))
    ssh = params["ssh"]
    if ssh.get("insecure_ignore_host_key") and (ssh.get("known_hosts")
                                                or ssh.get("host_key_fingerprints")):
        raise InputError("insecure_ignore_host_key contradicts the host keys given",
                         field="%s.%s.ssh.insecure_ignore_host_key" % (where, BLOCK))
    ref = additional_params.get(REFERENCE_BLOCK) or {}
    if not isinstance(ref, dict):
        raise InputError("expected an object", field="%s.%s" % (where, REFERENCE_BLOCK))
    roles = {}
    for role in ("master_node", "worker_node"):
        raw = ref.get(role) or {}
        rpath = "%s.%s.%s" % (where, REFERENCE_BLOCK, role)
        if not isinstance(raw, dict):
            raise InputError("expected an object", field=rpath)
        # the reference block carries installation fields we do not use: not strict
        roles[role] = _validate_object(_NODE_FIELDS, raw, rpath, strict=False)
    script = ref.get("script_path")
    if script is not None:
        script = _validate(F("string", check=_relative_path), script,
                           "%s.%s.script_path" % (where, REFERENCE_BLOCK))
    return Parsed(hwaffinity=HwParams.from_block(params), master=roles["master_node"],
                  worker=roles["worker_node"], script_path=script)


def json_schema():
    """JSON Schema (draft 2020-12) of the ``hwaffinity_param`` block."""
    def conv(spec):
        out = {"type": spec.type}
        if spec.doc:
            out["description"] = spec.doc
        if spec.enum:
            out["enum"] = list(spec.enum)
        if spec.minimum is not None:
            out["minimum"] = spec.minimum
        if spec.maximum is not None:
            out["maximum"] = spec.maximum
        if spec.default is not None and spec.type != "object":
            out["default"] = spec.default
        if spec.secret:
            out["writeOnly"] = True
        if spec.type == "array":
            out["items"] = conv(spec.items)
        if spec.type == "object":
            out["properties"] = {k: conv(v) for k, v in spec.fields.items()}
            out["additionalProperties"] = False
        return out
    schema = conv(F("object", fields=SPEC, doc="tacker-hwaffinity MgmtDriver parameters"))
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = BLOCK
    return schema


def secrets(params: Parsed) -> typing.List[str]:
    """Every secret value in PARAMS, so adapters can keep them out of logs."""
    found = []

    def walk(spec_fields, values):
        for name, spec in spec_fields.items():
            v = values.get(name)
            if v is None:
                continue
            if spec.secret and isinstance(v, str) and v:
                found.append(v)
            elif spec.type == "object":
                walk(spec.fields, v)
    walk(SPEC, dataclasses.asdict(params["hwaffinity"]))
    for role in ("master", "worker"):
        if params[role].get("password"):
            found.append(params[role]["password"])
    return found
