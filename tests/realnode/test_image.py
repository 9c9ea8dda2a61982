"""The in-cluster image, built from the shipped recipe (deploy/Dockerfile) by
tools/build-image.sh with Debian's buildah, runs on a real containerd 1.7.

The archive of the current sources (tests/realnode/hwimage.py) is imported with
``ctr -n k8s.io images import`` into the private containerd of the session, and its
containers are created through the CRI as the kubelet creates them: the image's own
entry point, command and user, nothing overridden but what a test says.
"""
import gzip
import json
import os
import subprocess
import tarfile
import time
import uuid

import pytest

from ci_policy import unavailable

from . import hwimage
from .containerd import NAMESPACE
from .cri import parse_log

pytestmark = pytest.mark.realnode

# Measured (kubernetes 37, numpy 2.4, oslo.messaging 18 on bookworm's python 3.11): one
# layer of 154.0 MiB unpacked (the virtualenv 129, of which numpy 50 and the kubernetes
# client 25; Python, its standard library and the shared libraries 36), 49.3 MiB as gzip
# (what a registry stores). Before deploy/runtime_root.py: 414.5 and 109.8 MiB.
MAX_MIB = 200
MAX_COMPRESSED_MIB = 70
NOBODY = "65534:65534"
IMPORTS = "kubernetes, prometheus_client, keystoneauth1, oslo_messaging, yaml, numpy"
# what the controller does with oslo.messaging before it connects: load the rabbit driver
# through its entry point (kombu and amqp imported), as for a --notifications-url
TRANSPORT = ("from oslo_config import cfg; conf = cfg.ConfigOpts(); conf([]); "
             "print('transport', type(oslo_messaging.get_notification_transport("
             "conf, url='rabbit://u:p@127.0.0.1:1/')._driver).__name__)")


@pytest.fixture(scope="module")
def image():
    info = hwimage.image_info()
    if info is None:
        unavailable("%s (expected %s)" % (hwimage.BUILD_HINT, hwimage.archive_path()))
    return info


@pytest.fixture(scope="module")
def imported(containerd17, image):
    """The image imported into the session's containerd: its ``ctr images ls`` row."""
    containerd17.import_image(image["archive"])
    rows = [line.split() for line in ctr(containerd17, "images", "ls").splitlines()[1:]]
    row = [r for r in rows if r and r[0] == image["reference"]]
    assert row, "%s not among the imported images:\n%s" % (image["reference"], rows)
    return {"ref": row[0][0], "digest": row[0][2]}


def ctr(runtime, *args):
    r = subprocess.run([runtime.ctr, "--address", runtime.cri_socket, "-n", NAMESPACE] +
                       list(args), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, "ctr %s: %s" % (" ".join(args), r.stderr)
    return r.stdout


def run_to_exit(runtime, image_ref, name, command=(), args=(), timeout=120):
    """Run one container of IMAGE_REF in a fresh host-network pod until it exits.

    Returns (exit code, [(stream, text)] of its CRI log). An empty COMMAND keeps the
    image's entry point, empty ARGS its command, as for a pod spec without them."""
    uid = str(uuid.uuid4())
    cri = runtime.cri
    config = cri.sandbox_config(name, "default", uid, cgroup_parent=runtime.cgroup_parent(uid),
                                log_directory=runtime.pod_log_dir("default", name, uid))
    pod = cri.run_pod_config(config)
    try:
        cid = cri.create_container(pod, config, name, image_ref, list(command), list(args),
                                   log_path="%s/0.log" % name)
        cri.start(cid)
        deadline = time.monotonic() + timeout
        while cri.state(cid) != "EXITED":
            assert time.monotonic() < deadline, "%s still runs after %d s" % (name, timeout)
            time.sleep(0.2)
        code = cri.status(cid).get("exit_code", 0)
        with open(os.path.join(config["log_directory"], name, "0.log")) as f:
            return code, parse_log(f.read())
    finally:
        cri.stop_pod(pod)
        cri.remove_pod(pod)


def _member_name(name):
    name = name[2:] if name.startswith("./") else name
    return name.rstrip("/")


def stdout(lines):
    return "\n".join(text for stream, text in lines if stream == "stdout")


def test_archive_imports_with_its_name_and_the_recipes_config(containerd17, image, imported):
    assert imported["digest"] == image["digest"]
    tags = {t for i in containerd17.cri.list_images() for t in i.get("repo_tags", [])}
    assert image["reference"] in tags                       # what a pod spec's image: names
    manifest = json.loads(ctr(containerd17, "content", "get", image["digest"]))
    config = json.loads(ctr(containerd17, "content", "get", manifest["config"]["digest"]))
    assert config["config"]["User"] == NOBODY
    assert config["config"]["Entrypoint"] == ["hwaffinity"]
    assert config["config"]["Cmd"] == ["agent"]
    assert "PATH=/opt/hwaffinity/bin:" in ":".join(config["config"]["Env"])
    assert len(manifest["layers"]) == image["layers"]


def test_container_runs_the_cli_as_nobody_with_every_runtime_import(containerd17, image,
                                                                    imported):
    code, lines = run_to_exit(containerd17, image["reference"], "image-help", args=["--help"])
    out = stdout(lines)
    assert code == 0, lines
    assert out.startswith("usage: hwaffinity"), out
    for command in ("agent", "controller", "webhook"):
        assert command in out

    probe = ("import os, ssl, sys; import %s; print('ids', os.getuid(), os.getgid()); "
             "print('prefix', sys.prefix); print('cafile', os.path.isfile("
             "ssl.get_default_verify_paths().openssl_cafile)); %s" % (IMPORTS, TRANSPORT))
    code, lines = run_to_exit(containerd17, image["reference"], "image-imports",
                              command=["python3", "-c", probe])
    out = stdout(lines)
    assert code == 0, lines
    assert "ids 65534 65534" in out.splitlines(), out
    assert "prefix /opt/hwaffinity" in out.splitlines(), out
    assert "cafile True" in out.splitlines(), out
    assert "transport RabbitDriver" in out.splitlines(), out


def test_image_size_and_contents(image):
    print("\nimage %s: %d bytes (%.1f MiB) unpacked, %.1f MiB compressed, %d layers"
          % (image["reference"], image["size_bytes"], image["size_mib"],
             image["compressed_mib"], image["layers"]))
    assert image["size_mib"] < MAX_MIB
    assert image["compressed_mib"] < MAX_COMPRESSED_MIB
    names = set()
    with tarfile.open(image["archive"]) as archive:
        index = json.load(archive.extractfile("index.json"))
        assert index["manifests"][0]["annotations"]["io.containerd.image.name"] == \
            image["reference"]
        blob = "blobs/%s" % image["digest"].replace(":", "/")
        manifest = json.load(archive.extractfile(blob))
        compressed = size = 0
        for layer in manifest["layers"]:
            compressed += layer["size"]
            member = archive.extractfile("blobs/%s" % layer["digest"].replace(":", "/"))
            with gzip.GzipFile(fileobj=member) as stream:
                with tarfile.open(fileobj=stream, mode="r|") as layer_tar:
                    names.update(_member_name(m.name) for m in layer_tar)
                while stream.read(1 << 20):         # the tar's end padding
                    pass
                size += stream.tell()
    assert (size, compressed) == (image["size_bytes"], image["compressed_bytes"])
    assert "opt/hwaffinity/bin/hwaffinity" in names
    assert not any(n == "src" or n.startswith("src/") for n in names)
    assert not any("/.cache/pip" in "/" + n for n in names)
    compilers = {"usr/bin/gcc", "usr/bin/cc", "usr/bin/x86_64-linux-gnu-gcc-12", "usr/bin/c++",
                 "usr/local/bin/gcc"}
    assert not names & compilers
    # deploy/runtime_root.py: no shell, no package manager, no pip, no sources but ours
    tools = {"bin/sh", "usr/bin/sh", "bin/bash", "usr/bin/bash", "usr/bin/apt-get",
             "usr/bin/dpkg", "usr/bin/perl"}
    assert not names & tools
    site = next(n for n in names if n.endswith("/site-packages")) + "/"
    assert site.startswith("opt/hwaffinity/lib/python3.")
    assert site + "tacker_hwaffinity/cli/main.py" in names
    assert site + "kubernetes/client/api_client.pyc" in names
    assert not [n for n in names if n.startswith(site + "pip/") or "/kubernetes/aio/" in n]
    assert not [n for n in names if n.endswith(".py") and "/tacker_hwaffinity/" not in n]
