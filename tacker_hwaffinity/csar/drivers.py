"""The installed MgmtDriver files, and where a VNFD wants them in the package.

A VNFD names the driver in its ``VNF`` node: ``interfaces.Vnflcm.<hook>.
implementation: <artifact key>`` and ``artifacts.<artifact key>.file``.
Tacker reads that ``file`` in two ways:

* v1 (``vnflcm_driver._check_mgmt_driver``): relative to the package root,
  e.g. ``Scripts/hwaffinity_mgmt_driver.py``; it must be the installed
  driver module byte for byte (sha256 of its text);
* v2 (``vnflcm_driver_v2._exec_mgmt_driver_script``): relative to
  ``Definitions/``, e.g. ``../Scripts/hwaffinity_mgmt_v2.py``; Tacker runs
  that copy.

The rule we apply, per artifact: a ``file`` whose normalised path starts
with ``..`` cannot be a v1 path (it would leave the package), so it is a v2
path, relative to ``Definitions/``; any other ``file`` is a v1 path,
relative to the package root. The v1 file gets ``tacker_hwaffinity/
mgmt_driver.py``, the v2 file ``tacker_hwaffinity/mgmt_v2.py``.
"""
import dataclasses
import importlib.metadata
import importlib.util
import posixpath

from tacker_hwaffinity.errors import InputError

DRIVER_KEY = "mgmt-drivers-hwaffinity"      # == mgmt_driver.DRIVER_TYPE (a test checks)
ENTRY_POINT_GROUP = "tacker.tacker.mgmt.drivers"
V1, V2 = "v1", "v2"
MODULES = {V1: "tacker_hwaffinity.mgmt_driver", V2: "tacker_hwaffinity.mgmt_v2"}
PYTHON_ARTIFACT = "tosca.artifacts.Implementation.Python"


def installed_file(module):
    """Path of MODULE's source file, found without importing it."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise InputError("its module %s is not installed (no source file found)" % module)
    return spec.origin


def registered():
    """{entry-point name: module} of the group Tacker loads MgmtDrivers from."""
    eps = importlib.metadata.entry_points()
    group = (eps.select(group=ENTRY_POINT_GROUP) if hasattr(eps, "select")
             else eps.get(ENTRY_POINT_GROUP, ()))
    return {ep.name: ep.value.partition(":")[0].strip() for ep in group}


def package_path(file, source=None, field=None):
    """(path in the package, V1 or V2) of an artifact ``file`` (see the module doc)."""
    if not isinstance(file, str) or not file.strip():
        raise InputError("artifact file must be a non-empty path", source=source, field=field)
    if file.startswith("/") or "://" in file or "\\" in file:
        raise InputError("artifact file %r must be a relative path inside the package"
                         % file, source=source, field=field)
    norm = posixpath.normpath(file)
    if norm.split("/")[0] != "..":
        return norm, V1
    in_defs = posixpath.normpath(posixpath.join("Definitions", file))
    if in_defs.split("/")[0] == "..":
        raise InputError("artifact file %r escapes the package (v2 paths are relative to "
                         "Definitions/)" % file, source=source, field=field)
    return in_defs, V2


@dataclasses.dataclass
class Hook:
    """One ``interfaces.Vnflcm.<operation>`` of a node template."""

    vnfd: str               # the YAML file, relative to the package root
    node: str
    operation: str
    key: object             # the artifact key (``implementation`` or its ``primary``)
    dependencies: list
    artifact: object        # the node's artifacts[key], or None

    @property
    def field(self):
        return "topology_template.node_templates.%s.interfaces.Vnflcm.%s.implementation" % (
            self.node, self.operation)


def _mapping(value):
    return value if isinstance(value, dict) else {}


def hooks(vnfd, data):
    """Every Vnflcm hook of every node template of one VNFD file's DATA."""
    out = []
    nodes = _mapping(_mapping(_mapping(data).get("topology_template")).get("node_templates"))
    for name, node in nodes.items():
        node = _mapping(node)
        artifacts = _mapping(node.get("artifacts"))
        for op, value in _mapping(_mapping(node.get("interfaces")).get("Vnflcm")).items():
            impl = value.get("implementation") if isinstance(value, dict) else value
            deps = []
            if isinstance(impl, dict):
                deps = impl.get("dependencies") or []
                deps = deps if isinstance(deps, list) else [deps]
                impl = impl.get("primary")
            if impl is None:
                continue
            out.append(Hook(vnfd, name, op, impl, deps,
                            artifacts.get(impl) if isinstance(impl, str) else None))
    return out


def driver_artifacts(vnfd, data):
    """[(node, artifact ``file``)] of the artifacts keyed DRIVER_KEY in DATA."""
    out = []
    nodes = _mapping(_mapping(_mapping(data).get("topology_template")).get("node_templates"))
    for name, node in nodes.items():
        art = _mapping(_mapping(node).get("artifacts")).get(DRIVER_KEY)
        if art is not None:
            out.append((name, art.get("file") if isinstance(art, dict) else art))
    return out
