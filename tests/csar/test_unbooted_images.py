"""An image no VDU boots from: Tacker uploads only the files a VDU's
``tosca.artifacts.nfv.SwImage`` artifact names, matched by path, so such an image would
be carried for nothing (and was likely meant for a VDU whose artifact names another
file). ``csar build --image`` refuses it (exit 2), naming what it could have been;
``csar validate`` reports a ``Files/images/`` member no VDU boots from (exit 1)."""
import os

import pytest

from csar_fixtures import REPO, VNF_A, members, rewrite
from tacker_hwaffinity.cli.main import main
from tacker_hwaffinity.csar import build, validate
from tacker_hwaffinity.errors import InputError

K8S_CLUSTER = os.path.join(REPO, "csar", "k8s-cluster")
TOSCA_DF = "Definitions/hwaffinity_k8s_cluster_df_podaffinity_tosca.yaml"
IMAGE = "Files/images/ubuntu-24.04-server-cloudimg-amd64.img"
IMAGES_CHECK = "images: %d under Files/images/, each looked for among the VDUs' image artifacts"


def image_file(folder, name):
    path = folder / name
    path.write_bytes(b"QFI\xfb" + b"\1" * 4000)
    return str(path)


def test_build_refuses_an_image_no_vdu_boots_from_and_names_the_one_they_do(tmp_path):
    wrong = image_file(tmp_path, "ubuntu.img")
    target = tmp_path / "a.zip"
    with pytest.raises(InputError) as e:
        build.build(K8S_CLUSTER, str(target), images=[wrong])
    assert (e.value.source, e.value.field) == (wrong, "--image")
    message = e.value.message
    assert message.startswith("no VDU boots from it as Files/images/ubuntu.img: ")
    assert "The VDUs boot from %s (masterNode of %s, workerNode of %s)" % (
        IMAGE, TOSCA_DF, TOSCA_DF) in message
    assert not target.exists()


def test_without_image_artifacts_it_names_the_vdus_glance_boots(tmp_path):
    with pytest.raises(InputError) as e:
        build.build(VNF_A, str(tmp_path / "a.zip"), images=[image_file(tmp_path, "x.img")])
    assert "No VDU has an image artifact; from Glance, by name: workerNode of " \
           "Definitions/vnf_a_df_default.yaml (sw_image_data name " \
           "ubuntu-22.04-server-cloudimg-amd64)" in e.value.message


def test_build_exit_2_one_line(tmp_path, capsys):
    wrong = image_file(tmp_path, "ubuntu.img")
    assert main(["csar", "build", K8S_CLUSTER, "--image", wrong,
                 "--output-file", str(tmp_path / "a.zip")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert err.startswith("hwaffinity csar build: error: %s: field --image: no VDU boots from it"
                          % wrong)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """VNF-A's real source built with the image its VDUs boot from: validate says OK."""
    folder = tmp_path_factory.mktemp("built")
    image = image_file(folder, os.path.basename(IMAGE))
    return build.build(K8S_CLUSTER, str(folder / "a.zip"), images=[image]).path


def test_validate_reports_a_carried_image_no_vdu_boots_from(built, tmp_path):
    extra = rewrite(built, tmp_path / "b.zip", add={"Files/images/ubuntu.img": b"QFI\xfb"})
    report = validate.validate(extra)
    (problem,) = report.unique()
    assert problem.source == "Files/images/ubuntu.img"
    assert problem.message == ("no VDU boots from it: no tosca.artifacts.nfv.SwImage "
                               "artifact's file is this path (the VDUs boot from %s)" % IMAGE)
    assert IMAGES_CHECK % 2 in report.checks
    assert main(["csar", "validate", extra]) == 1


def test_the_image_the_vdus_boot_from_is_no_problem(built):
    assert IMAGE in members(built)
    report = validate.validate(built)
    assert report.unique() == []
    assert IMAGES_CHECK % 1 in report.checks
