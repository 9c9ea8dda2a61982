"""The ETSI GS NFV-SOL 001 type definitions a VNFD imports.

VNF packages import ``etsi_nfv_sol001_common_types.yaml`` and
``etsi_nfv_sol001_vnfd_types.yaml`` as local files. We do not copy ETSI's
files into this project; the installed ``tacker`` distribution ships them
(v2.6.1, the version Tacker itself validates against), and that is where
``hwaffinity csar build`` and the tests take them from.
"""
import importlib.util
import os

from tacker_hwaffinity import extras
from tacker_hwaffinity.errors import InputError

FILES = ("etsi_nfv_sol001_common_types.yaml", "etsi_nfv_sol001_vnfd_types.yaml")
_IN_TACKER = ("tests", "unit", "vnfm", "infra_drivers", "openstack", "data", "etsi_nfv")


def definitions_dir() -> str:
    """Directory of the installed tacker's copy of FILES, or an InputError."""
    spec = importlib.util.find_spec("tacker")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("the ETSI SOL001 type files come from the installed 'tacker' "
                         "distribution, which is not installed: the tacker extra (%s)"
                         % extras.install_hint("tacker"))
    for base in spec.submodule_search_locations:
        path = os.path.join(base, *_IN_TACKER)
        if all(os.path.isfile(os.path.join(path, f)) for f in FILES):
            return path
    raise InputError("the installed 'tacker' does not ship %s" % " and ".join(FILES))


def paths() -> dict[str, str]:
    """{file name: absolute path} of the ETSI SOL001 type files."""
    base = definitions_dir()
    return {f: os.path.join(base, f) for f in FILES}
