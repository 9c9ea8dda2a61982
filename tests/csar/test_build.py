"""``csar build``: what goes in, TOSCA.meta, the driver copy, determinism."""
import hashlib
import inspect
import os
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from csar_fixtures import CNF, DRIVER_FILE, META, VNF_A, copy_source, members
from tacker_hwaffinity import etsi_types
from tacker_hwaffinity.csar import build, drivers
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.vnfpackage import meta


def _blocks(zip_path):
    return meta.parse(members(zip_path)[META].decode())


def test_fixture_sources_hold_no_etsi_files():
    for src in (VNF_A, CNF):
        for _, _, files in os.walk(src):
            assert not set(files) & set(etsi_types.FILES)


def test_vnf_a_members_and_notes(tmp_path):
    result = build.build(VNF_A, str(tmp_path / "a.zip"))
    assert result.members == [
        "Definitions/etsi_nfv_sol001_common_types.yaml",
        "Definitions/etsi_nfv_sol001_vnfd_types.yaml",
        "Definitions/vnf_a_df_default.yaml", "Definitions/vnf_a_top.vnfd.yaml",
        "Definitions/vnf_a_types.yaml", DRIVER_FILE, "Scripts/install_k8s.sh", META]
    assert any(n.startswith("added %s: the installed" % DRIVER_FILE) for n in result.notes)
    assert sum(n.startswith("added Definitions/etsi_nfv_sol001") for n in result.notes) == 2


def test_driver_is_the_installed_module_byte_for_byte(vnf_a_zip):
    from tacker_hwaffinity.mgmt_driver import DRIVER_TYPE, HwAffinityMgmtDriver
    assert drivers.DRIVER_KEY == DRIVER_TYPE
    # Tacker v1 hashes inspect.getfile(driver.__class__): the same file.
    installed = inspect.getfile(HwAffinityMgmtDriver)
    assert drivers.installed_file(drivers.MODULES[drivers.V1]) == installed
    with open(installed, "rb") as f:
        assert members(vnf_a_zip)[DRIVER_FILE] == f.read()


def test_etsi_files_come_from_the_installed_tacker(vnf_a_zip):
    got = members(vnf_a_zip)
    for name, path in etsi_types.paths().items():
        with open(path, "rb") as f:
            assert got["Definitions/" + name] == f.read()


def test_every_artifact_has_a_fresh_sha256_block(vnf_a_zip):
    got = members(vnf_a_zip)
    blocks = _blocks(vnf_a_zip)
    assert blocks[0].entries == [
        ("TOSCA-Meta-File-Version", "1.0"), ("CSAR-Version", "1.1"),
        ("Created-by", "tacker-hwaffinity tests"),
        ("Entry-Definitions", "Definitions/vnf_a_top.vnfd.yaml")]
    artifacts = {b.source: b for b in blocks[1:]}
    assert sorted(artifacts) == [DRIVER_FILE, "Scripts/install_k8s.sh"]
    for name, block in artifacts.items():
        assert block.get("Algorithm") == "SHA-256"
        assert block.get("Hash") == hashlib.sha256(got[name]).hexdigest()
    # the Content-Type the source gave is kept; the others are derived
    assert artifacts["Scripts/install_k8s.sh"].get("Content-Type") == "application/sh"
    assert artifacts[DRIVER_FILE].get("Content-Type") == "text/x-python"


def test_cnf_manifests_are_hashed(cnf_zip):
    sources = [b.source for b in _blocks(cnf_zip)[1:]]
    assert sources == ["Files/kubernetes/smf.yaml", "Files/kubernetes/upf.yaml"]


def test_stale_hash_and_stale_driver_copy_are_refreshed(tmp_path):
    src = copy_source(VNF_A, tmp_path / "src")
    with open(os.path.join(src, META), "a") as f:
        f.write("Algorithm: SHA-256\nHash: %s\n" % ("ab" * 32))
    with open(os.path.join(src, DRIVER_FILE), "w") as f:
        f.write("# an old copy\n")
    result = build.build(src, str(tmp_path / "a.zip"))
    assert "refreshed the stale hash of Scripts/install_k8s.sh" in result.notes
    assert any(n.startswith("replaced %s" % DRIVER_FILE) for n in result.notes)
    block = [b for b in _blocks(result.path) if b.source == "Scripts/install_k8s.sh"][0]
    with open(os.path.join(src, "Scripts/install_k8s.sh"), "rb") as f:
        assert block.get("Hash") == hashlib.sha256(f.read()).hexdigest()


def test_executable_bit_is_kept(vnf_a_zip):
    with zipfile.ZipFile(vnf_a_zip) as z:
        modes = {i.filename: i.external_attr >> 16 for i in z.infolist()}
    assert modes["Scripts/install_k8s.sh"] == 0o100755
    assert modes[DRIVER_FILE] == 0o100644


def test_images_are_left_out_unless_given(tmp_path):
    src = copy_source(VNF_A, tmp_path / "src")
    os.makedirs(os.path.join(src, "Files", "images"))
    with open(os.path.join(src, "Files", "images", "ubuntu.qcow2"), "wb") as f:
        f.write(b"QFI\xfb" + b"\0" * 64)
    result = build.build(src, str(tmp_path / "a.zip"))
    assert "Files/images/ubuntu.qcow2" not in result.members
    assert any("left out image Files/images/ubuntu.qcow2" in n for n in result.notes)
    image = tmp_path / "given.img"
    image.write_bytes(b"\1" * 100)
    # a VDU boots from it (an image no VDU boots from is refused: test_unbooted_images.py)
    df = os.path.join(src, "Definitions", "vnf_a_df_default.yaml")
    with open(df, encoding="utf-8") as f:
        text = f.read()
    with open(df, "w", encoding="utf-8") as f:
        f.write(text.replace("          size: 2 GB\n", "          size: 2 GB\n      artifacts:\n"
                             "        sw_image:\n          type: tosca.artifacts.nfv.SwImage\n"
                             "          file: ../Files/images/given.img\n", 1))
    result = build.build(src, str(tmp_path / "b.zip"), images=[str(image)])
    assert members(result.path)["Files/images/given.img"] == b"\1" * 100
    block = [b for b in _blocks(result.path) if b.source == "Files/images/given.img"][0]
    assert block.entries == [("Name", "Files/images/given.img"),
                             ("Content-Type", meta.IMAGE_CONTENT_TYPE)]
    with zipfile.ZipFile(result.path) as z:
        assert z.getinfo("Files/images/given.img").compress_type == zipfile.ZIP_STORED


def test_entry_definitions_is_found_without_tosca_meta(tmp_path):
    src = copy_source(VNF_A, tmp_path / "src")
    os.remove(os.path.join(src, META))
    result = build.build(src, str(tmp_path / "a.zip"))
    head = _blocks(result.path)[0]
    assert head.get("Entry-Definitions") == "Definitions/vnf_a_top.vnfd.yaml"
    assert head.get("Created-by") == "tacker-hwaffinity"


def test_etsi_definitions_option(tmp_path):
    etsi = tmp_path / "etsi"
    etsi.mkdir()
    for name in etsi_types.FILES:
        with open(etsi_types.paths()[name], "rb") as f:
            (etsi / name).write_bytes(f.read() + b"# local copy\n")
    result = build.build(VNF_A, str(tmp_path / "a.zip"), etsi_dir=str(etsi))
    assert members(result.path)["Definitions/" + etsi_types.FILES[0]].endswith(b"# local copy\n")
    with pytest.raises(InputError, match="--etsi-definitions"):
        build.build(VNF_A, str(tmp_path / "b.zip"), etsi_dir=str(tmp_path / "none"))


def _edit(path, old, new):
    with open(path) as f:
        text = f.read()
    assert old in text
    with open(path, "w") as f:
        f.write(text.replace(old, new))


def test_v2_artifact_gets_the_v2_script(tmp_path):
    src = copy_source(VNF_A, tmp_path / "src")
    _edit(os.path.join(src, "Definitions", "vnf_a_df_default.yaml"),
          "file: Scripts/hwaffinity_mgmt_driver.py", "file: ../Scripts/hwaffinity_mgmt_v2.py")
    result = build.build(src, str(tmp_path / "a.zip"))
    assert DRIVER_FILE not in result.members
    with open(drivers.installed_file(drivers.MODULES[drivers.V2]), "rb") as f:
        assert members(result.path)["Scripts/hwaffinity_mgmt_v2.py"] == f.read()


@pytest.mark.parametrize("file, message", [
    ("../../escape.py", "escapes the package"),
    ("/abs/driver.py", "must be a relative path"),
])
def test_driver_artifact_path_outside_the_package(tmp_path, file, message):
    src = copy_source(VNF_A, tmp_path / "src")
    _edit(os.path.join(src, "Definitions", "vnf_a_df_default.yaml"),
          "file: Scripts/hwaffinity_mgmt_driver.py", "file: %s" % file)
    with pytest.raises(InputError) as e:
        build.build(src, str(tmp_path / "a.zip"))
    assert message in str(e.value)
    assert "Definitions/vnf_a_df_default.yaml" in str(e.value)
    assert "artifacts.mgmt-drivers-hwaffinity.file" in str(e.value)
    assert not (tmp_path / "a.zip").exists()


def test_path_rule():
    assert drivers.package_path("Scripts/x.py") == ("Scripts/x.py", drivers.V1)
    assert drivers.package_path("./Scripts/../Scripts/x.py") == ("Scripts/x.py", drivers.V1)
    assert drivers.package_path("../Scripts/x.py") == ("Scripts/x.py", drivers.V2)
    assert drivers.package_path("x.py") == ("x.py", drivers.V1)


def test_link_out_of_the_source_is_refused(tmp_path):
    src = copy_source(VNF_A, tmp_path / "src")
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the package")
    os.symlink(secret, os.path.join(src, "Scripts", "leak.txt"))
    with pytest.raises(InputError, match="outside the source directory"):
        build.build(src, str(tmp_path / "a.zip"))


def test_meta_block_for_a_missing_file_is_an_error(tmp_path):
    src = copy_source(VNF_A, tmp_path / "src")
    with open(os.path.join(src, META), "a") as f:
        f.write("\nSource: Scripts/gone.sh\n")
    with pytest.raises(InputError) as e:
        build.build(src, str(tmp_path / "a.zip"))
    assert str(e.value) == ("TOSCA-Metadata/TOSCA.meta: line 9 (Scripts/gone.sh): field "
                            "Source: Scripts/gone.sh is not in the source directory")


def test_output_inside_the_source_is_not_packed(tmp_path):
    src = copy_source(VNF_A, tmp_path / "src")
    out = os.path.join(src, "pkg.zip")
    build.build(src, out)
    first = open(out, "rb").read()
    assert "pkg.zip" not in build.build(src, out).members
    assert open(out, "rb").read() == first


def test_same_inputs_same_bytes_whatever_the_mtime(tmp_path):
    src = copy_source(VNF_A, tmp_path / "src")
    one = build.build(src, str(tmp_path / "one.zip")).path
    for folder, _, files in os.walk(src):
        for f in files:
            os.utime(os.path.join(folder, f), (1e9, 1e9))
    two = build.build(src, str(tmp_path / "two.zip")).path
    assert open(one, "rb").read() == open(two, "rb").read()


_NAME = st.from_regex(r"[a-z][a-z0-9_]{0,8}\.(sh|txt|yaml|py)", fullmatch=True)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.dictionaries(_NAME, st.binary(max_size=300), min_size=1, max_size=6),
       order=st.randoms(use_true_random=False))
def test_determinism_property(tmp_path_factory, files, order):
    """Any set of extra files, written in any order: two builds, the same bytes."""
    outs = []
    for attempt in range(2):
        base = tmp_path_factory.mktemp("prop")
        src = copy_source(VNF_A, base / "src")
        names = sorted(files)
        order.shuffle(names)
        for name in names:
            with open(os.path.join(src, "Scripts", name), "wb") as f:
                f.write(files[name])
        outs.append(open(build.build(src, str(base / "p.zip")).path, "rb").read())
    assert outs[0] == outs[1]
    got = members_of_bytes(outs[0])
    for name, data in files.items():
        assert got["Scripts/" + name] == data


def members_of_bytes(data):
    import io
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {n: z.read(n) for n in z.namelist()}
