"""The package readers over random and mutated input: TOSCA.meta, the zip reader
(central directory, extraction, streamed hashes), the VNFD loader and the reader of
image VDUs give a result or an InputError, within the bounds below (tests/fuzzing.py).

Bounds: TOSCA.meta 50 ms and 16 MiB (the default); a zip 200 ms and 16 MiB (it
writes files, under limits lowered to 1 MiB a member); a VNFD package 200 ms and
16 MiB (it reads two YAML files and walks their imports); the reader of the VDUs that
boot from a carried image, and validate's check of them, 50 ms each."""
import hashlib
import io
import os
import tempfile
import zipfile

import fuzzing
from hypothesis import example, given, strategies as st

from tacker_hwaffinity.csar import sw_images
from tacker_hwaffinity.translator import loader
from tacker_hwaffinity.vnfpackage import meta, zipio

VALID_META = ("TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-By: x\n"
              "Entry-Definitions: Definitions/top.yaml\n\n"
              "Source: Scripts/install.sh\nAlgorithm: SHA-256\nHash: %s\n" % ("0" * 64))


def _mutated(valid):
    """VALID with random slices replaced, inserted or removed."""
    edit = st.tuples(st.integers(0, len(valid)), st.integers(0, 16),
                     st.text(max_size=24) if isinstance(valid, str) else st.binary(max_size=24))

    def apply(edits):
        out = valid
        for at, length, insert in edits:
            out = out[:at] + insert + out[at + length:]
        return out
    return st.lists(edit, max_size=6).map(apply)


@given(st.one_of(st.text(max_size=2048), _mutated(VALID_META)))
@example("Source: a\r\n")
@example("Key: [unclosed\n")
def test_fuzz_tosca_meta(text):
    fuzzing.bounded(meta.parse, text)


def _valid_zip():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("TOSCA-Metadata/TOSCA.meta", VALID_META)
        z.writestr("Definitions/top.yaml", "tosca_definitions_version: tosca_simple_yaml_1_2\n")
        z.writestr("Files/zeros.bin", bytes(200000))
        z.writestr("Scripts/install.sh", "#!/bin/sh\necho hi\n" * 50)
    return out.getvalue()


VALID_ZIP = _valid_zip()


def _zip_of(name, extract_version=20):
    """One member NAME, its central directory asking for EXTRACT_VERSION (zipfile reads
    up to 63 and raises NotImplementedError past it)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        info = zipfile.ZipInfo(name)
        z.writestr(info, "x")
    data = bytearray(out.getvalue())
    cd = data.rindex(b"PK\x01\x02")
    data[cd + 6] = extract_version     # "version needed to extract", low byte
    return bytes(data)
SMALL = zipio.Limits(member_bytes=1 << 20, total_bytes=4 << 20)


def _read_zip(path):
    """What csar validate does with the archive: sizes, extraction, hashes."""
    with zipio.open_zip(path) as z, tempfile.TemporaryDirectory() as into:
        names = zipio.extract_safe(z, into, SMALL)
        return [zipio.digest(z, name, hashlib.sha256) for name in names]


@given(st.one_of(st.binary(max_size=4096), _mutated(VALID_ZIP)))
@example(VALID_ZIP)
@example(_zip_of("a", extract_version=64))    # found by the fuzzer: NotImplementedError
@example(_zip_of(""))                         # found by the fuzzer: IndexError in is_dir
def test_fuzz_zip_reader(data):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "pkg.zip")
        with open(path, "wb") as f:
            f.write(data)
        fuzzing.bounded(_read_zip, path, seconds=0.2)


TYPES = "tosca_definitions_version: tosca_simple_yaml_1_2\nnode_types: {}\n"
VALID_VNFD = """tosca_definitions_version: tosca_simple_yaml_1_2
imports:
  - types.yaml
  - {extra: {file: types.yaml}}
topology_template:
  inputs:
    size: {type: integer, default: 2}
  substitution_mappings:
    node_type: company.VNF
    properties: {flavour_id: simple}
    requirements: {virtual_link_external: [CP1, virtual_link]}
  node_templates:
    VNF:
      type: company.VNF
      properties: {flavour_id: simple}
  policies:
    - rule: {type: tosca.policies.nfv.AntiAffinityRule, targets: [VDU1]}
"""


def _load(package):
    with loader.open_vnfd(package) as vnfd:
        return vnfd.parsed_params


@given(st.one_of(st.text(max_size=2048), _mutated(VALID_VNFD)))
@example("tosca_definitions_version: x\nimports: [df.yaml]\ntopology_template: "
         "{substitution_mappings: {properties: {flavour_id: a}}}\n")     # imports itself
@example(VALID_VNFD.replace("types.yaml", "/etc/passwd", 1))
@example(VALID_VNFD.replace("types.yaml", "../outside.yaml", 1))
@example(VALID_VNFD.replace("{file: types.yaml}", "{file: t.yaml, repository: r}"))
def test_fuzz_vnfd_reader(text):
    with tempfile.TemporaryDirectory() as folder:
        defs = os.path.join(folder, "pkg", "Definitions")
        os.makedirs(defs)
        with open(os.path.join(folder, "outside.yaml"), "w") as f:
            f.write(TYPES)
        with open(os.path.join(defs, "types.yaml"), "w") as f:
            f.write(TYPES)
        with open(os.path.join(defs, "df.yaml"), "w", encoding="utf-8",
                  errors="surrogatepass") as f:
            f.write(text)
        fuzzing.bounded(_load, os.path.join(folder, "pkg"), seconds=0.2)


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=12))
_TREES = st.recursive(_SCALARS, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)),
    max_leaves=30)


def _vdu(artifact, sw_image_data):
    return {"topology_template": {"node_templates": {"vdu": {
        "artifacts": {"sw_image": artifact}, "properties": {"sw_image_data": sw_image_data}}}}}


@given(st.one_of(_TREES, st.builds(_vdu, st.one_of(_TREES, st.fixed_dictionaries({
    "type": st.just(sw_images.SW_IMAGE), "file": st.text(max_size=40)})), _TREES)))
def test_fuzz_the_image_vdus_reader(data):
    """Whatever a Definitions file parses to, the VDUs that boot from a carried image are
    read as a list, and validate's check of them gives problems and notes, nothing else."""
    with tempfile.TemporaryDirectory() as root:
        fuzzing.bounded(sw_images.image_vdus, "Definitions/df.yaml", data, seconds=0.05)
        fuzzing.bounded(sw_images.check, root, {"Definitions/df.yaml": data}, [], [], [], [],
                        seconds=0.05)
