"""The image a TOSCA flavour's VDUs boot from (``csar/sw_images.py``): ``csar build
--image`` makes their ``sw_image_data`` checksum the image's SHA-512, which Tacker
compares with Glance's; ``csar validate`` says when they differ or the image is missing."""
import hashlib
import os

import pytest

from csar_fixtures import REPO, members, rewrite
from tacker_hwaffinity.csar import build, sw_images, validate
from tacker_hwaffinity.errors import InputError

K8S_CLUSTER = os.path.join(REPO, "csar", "k8s-cluster")
TOSCA_DF = "Definitions/hwaffinity_k8s_cluster_df_podaffinity_tosca.yaml"
IMAGE = "Files/images/ubuntu-24.04-server-cloudimg-amd64.img"
ZEROS = "0" * 128


@pytest.fixture
def image(tmp_path):
    path = tmp_path / os.path.basename(IMAGE)
    path.write_bytes(b"QFI\xfb" + os.urandom(5000))
    return path


def _source_text():
    with open(os.path.join(K8S_CLUSTER, TOSCA_DF), encoding="utf-8") as f:
        return f.read()


def test_the_tosca_flavours_vdus_boot_from_the_image_the_package_carries():
    import yaml
    data = yaml.safe_load(_source_text())
    assert [(node, path) for node, path, _ in sw_images.image_vdus(TOSCA_DF, data)] == [
        ("masterNode", IMAGE), ("workerNode", IMAGE)]


def test_build_with_the_image_sets_both_checksums_and_nothing_else(tmp_path, image):
    result = build.build(K8S_CLUSTER, str(tmp_path / "a.zip"), images=[str(image)])
    built = members(result.path)
    digest = hashlib.sha512(image.read_bytes()).hexdigest()
    assert built[IMAGE] == image.read_bytes()
    assert built[TOSCA_DF].decode() == _source_text().replace(ZEROS, digest)
    assert _source_text().count(ZEROS) == 2
    assert any("set the sw_image_data checksum of masterNode, workerNode" in n
               for n in result.notes)
    report = validate.validate(result.path)
    assert report.unique() == []
    assert any(c.startswith("images: 2 VDU(s)") for c in report.checks)


def test_build_without_the_image_says_which_vdus_cannot_boot(tmp_path):
    result = build.build(K8S_CLUSTER, str(tmp_path / "a.zip"))
    assert IMAGE not in members(result.path)
    told = [n for n in result.notes if "does not carry" in n]
    assert [n.split(": ")[1].split()[0] for n in told] == ["masterNode", "workerNode"]
    report = validate.validate(result.path)
    assert report.unique() == []
    assert sum("Tacker cannot instantiate its flavour" in n for n in report.notes) == 2


def test_validate_finds_an_image_that_is_not_the_one_the_checksum_names(tmp_path, image):
    built = build.build(K8S_CLUSTER, str(tmp_path / "a.zip"), images=[str(image)]).path
    swapped = rewrite(built, tmp_path / "b.zip", replace={IMAGE: b"another image"})
    problems = [str(p) for p in validate.validate(swapped).unique()]
    assert len(problems) == 2, problems
    assert all(TOSCA_DF in p and "sw_image_data.checksum.hash" in p
               and "checksum verification failed" in p for p in problems), problems


def _source_with(tmp_path, old, new):
    import shutil
    src = tmp_path / "src"
    shutil.copytree(K8S_CLUSTER, src)
    path = src / TOSCA_DF
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return str(src)


def test_a_checksum_of_another_algorithm_is_refused(tmp_path, image):
    src = _source_with(tmp_path, "algorithm: sha-512", "algorithm: sha-256")
    with pytest.raises(InputError) as e:
        build.build(src, str(tmp_path / "a.zip"), images=[str(image)])
    assert e.value.source == TOSCA_DF
    assert e.value.field.endswith("masterNode.properties.sw_image_data.checksum.algorithm")
    assert "Glance's, which is sha-512" in e.value.message


def test_a_hash_that_also_appears_elsewhere_is_left_to_the_author(tmp_path, image):
    src = _source_with(tmp_path, "description: Kubernetes control-plane node",
                       "description: Kubernetes control-plane node %s" % ZEROS)
    with pytest.raises(InputError) as e:
        build.build(src, str(tmp_path / "a.zip"), images=[str(image)])
    assert e.value.source == TOSCA_DF
    assert "also appears outside the sw_image_data of masterNode, workerNode" in e.value.message
    assert hashlib.sha512(image.read_bytes()).hexdigest() in e.value.message
