"""Test packages: the sources under tests/csar/data, built zips, and tampering."""
import os
import shutil
import uuid
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
VNF_A = os.path.join(DATA, "vnf_a")
CNF = os.path.join(DATA, "cnf")
CLUSTER = os.path.join(DATA, "cluster.yaml")
CLUSTER_TWO_HOSTS = os.path.join(DATA, "cluster_two_hosts.yaml")
CLUSTER_UNLABELED = os.path.join(DATA, "cluster_unlabeled.yaml")
REPO = os.path.dirname(os.path.dirname(HERE))
META = "TOSCA-Metadata/TOSCA.meta"
DRIVER_FILE = "Scripts/hwaffinity_mgmt_driver.py"


def copy_source(src, dest):
    """A writable copy of a package source directory."""
    shutil.copytree(src, dest)
    return str(dest)


def members(path):
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def rewrite(path, target, replace=None, drop=(), add=None):
    """Copy zip PATH to TARGET with members replaced ({name: bytes}), dropped or added."""
    replace, add = dict(replace or {}), dict(add or {})
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(target, "w") as dst:
        for info in src.infolist():
            if info.filename in drop:
                continue
            data = replace.pop(info.filename, None)
            dst.writestr(info, src.read(info) if data is None else data)
        for name, data in list(replace.items()) + list(add.items()):
            dst.writestr(name, data)
    return str(target)


def meta_text(path):
    return members(path)[META].decode("utf-8")


def set_meta(path, target, text):
    return rewrite(path, target, replace={META: text.encode("utf-8")})


def tacker_upload(path, tmp_path):
    """Tacker's upload processing, called directly (not through our wrapper)."""
    from tacker.common import csar_utils
    import tacker.conf
    from tacker_hwaffinity.csar import tacker_checks
    conf = tacker.conf.CONF
    conf.set_override("vnf_package_csar_path", str(tmp_path), group="vnf_package")
    try:
        # Tacker 16 fails to format one of its own log messages (tosca/utils.py
        # path_sol001_def); pytest's log capture would turn that into an error.
        with tacker_checks.silent():
            return csar_utils.load_csar_data(None, str(uuid.uuid4()), path)
    finally:
        conf.clear_override("vnf_package_csar_path", group="vnf_package")
