"""Tacker's own package checks, called offline: no database, queue or context.

* Upload (``POST /vnfpkgm/v1/vnf_packages/{id}/package_content``): the
  conductor calls ``csar_utils.load_csar_data(context, package_uuid,
  zip_path)``: extraction with the disk-space check, toscaparser over the
  zip (TOSCA.meta, Entry-Definitions, imports, artifact references), VNF
  properties, flavours, instantiation levels, ``sw_image_data``, and every
  TOSCA.meta hash. We call it as is, with its URL openers refusing
  (``translator.loader.offline``). It does not use its context; its
  extraction directory (``[vnf_package] vnf_package_csar_path``) is pointed
  at a temporary directory. What the conductor does next
  (``_onboard_vnf_package``) only writes database rows and is not called.
* One TOSCA.meta block: ``csar_utils._convert_artifacts`` (which runs
  ``_validate_hash`` and ``_validate_artifact_path_is_safe``) on that block
  alone, so that every bad block is reported, not only the first.
* v1 MgmtDriver: ``VnfLcmDriver._check_mgmt_driver`` (registration, then
  sha256 of the package's file against the installed module, both read as
  text by ``_get_file_hash``). ``VnfLcmDriver.__init__`` loads the service
  plugins (a database), so the instance is made without it and given the
  ``_mgmt_driver_hash`` table ``_init_mgmt_driver_hash`` would build.
"""
import contextlib
import importlib
import logging
import tempfile
import types
import uuid
import warnings
import zipfile

from tacker_hwaffinity import extras
from tacker_hwaffinity.errors import InputError

_LOGGERS = ("tacker", "tosca", "oslo_utils", "oslo_config", "stevedore")


@contextlib.contextmanager
def silent():
    """Tacker and its libraries log every error they raise (and Tacker 16 fails
    to format one of its messages); the problem we report says it once. Their
    loggers are switched off for the call and restored after."""
    saved = {}
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        saved[name] = logger.level
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


def _import(name):
    try:
        with warnings.catch_warnings(), silent():
            warnings.simplefilter("ignore")      # eventlet's deprecation warning
            return importlib.import_module(name)
    except ImportError as e:
        raise InputError("needs the installed tacker, the tacker extra (%s): %s"
                         % (extras.install_hint("tacker"), e))


@contextlib.contextmanager
def _workdir(path):
    """Tacker's extraction directory and toscaparser's temporary copies under PATH.

    toscaparser extracts a zip to ``tempfile.gettempdir()`` and never removes
    it; pointing ``tempfile.tempdir`` at PATH for the call keeps that inside
    our own temporary directory.
    """
    from tacker_hwaffinity.translator import loader
    conf = _import("tacker.conf").CONF
    conf.set_override("vnf_package_csar_path", path, group="vnf_package")
    saved, tempfile.tempdir = tempfile.tempdir, path
    try:
        with silent(), loader.offline():
            yield
    finally:
        tempfile.tempdir = saved
        conf.clear_override("vnf_package_csar_path", group="vnf_package")


def upload(zip_path, workdir):
    """Tacker's error message for this package at upload, or None when accepted."""
    csar_utils = _import("tacker.common.csar_utils")
    exceptions = _import("tacker.common.exceptions")
    with _workdir(workdir):
        try:
            csar_utils.load_csar_data(None, str(uuid.uuid4()), zip_path)
        except exceptions.InvalidCSAR as e:
            return str(e)
        except exceptions.InvalidZipFile as e:
            return str(e)
        except Exception as e:  # noqa: BLE001 - Tacker's 500 at upload, as its message
            return "%s: %s" % (type(e).__name__, e)
    return None


def artifact_block(block_text, zip_path, root):
    """Tacker's error for one TOSCA.meta block (bytes), or None when it passes."""
    csar_utils = _import("tacker.common.csar_utils")
    exceptions = _import("tacker.common.exceptions")
    from tacker_hwaffinity.translator import loader
    with zipfile.ZipFile(zip_path) as z, silent(), loader.offline():
        # _convert_artifacts reads .zfile and .path of toscaparser's CSAR object.
        csar = types.SimpleNamespace(zfile=z, path=zip_path)
        try:
            csar_utils._convert_artifacts([], block_text, csar, root)
        except exceptions.InvalidCSAR as e:
            return str(e)
        except Exception as e:  # noqa: BLE001 - Tacker's other failures, as its message
            return "%s: %s" % (type(e).__name__, e)
    return None


def mgmt_driver(key, artifacts, package_dir, installed):
    """Tacker v1's error for hook artifact KEY, or None.

    INSTALLED: {registered driver name: its module file}, the drivers Tacker
    would be configured with (``[tacker] vnflcm_mgmt_driver``).
    """
    driver = _import("tacker.vnflcm.vnflcm_driver")
    exceptions = _import("tacker.common.exceptions")
    lcm = driver.VnfLcmDriver.__new__(driver.VnfLcmDriver)
    lcm._mgmt_driver_hash = {name: lcm._get_file_hash(path) for name, path in installed.items()}
    with silent():
        try:
            lcm._check_mgmt_driver(key, artifacts, package_dir)
        except (exceptions.MgmtDriverInconsistent, exceptions.MgmtDriverHashMatchFailure) as e:
            return str(e)
        except (OSError, UnicodeDecodeError) as e:
            return "%s: %s" % (type(e).__name__, e)
    return None
