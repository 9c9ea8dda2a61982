"""TOSCA.meta: read as Tacker splits it, written so that every reader agrees."""
import re

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.vnfpackage import meta

HEADER = ("TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: test\n"
          "Entry-Definitions: Definitions/top.yaml\n")


def test_blocks_and_lines():
    text = HEADER + "\nSource: Scripts/a.sh\nAlgorithm: SHA-256\nHash: abc\n\n\nName: b.img\n"
    blocks = meta.parse(text)
    assert [b.line for b in blocks] == [1, 6, 11]
    assert blocks[0].get("Entry-Definitions") == "Definitions/top.yaml"
    assert not blocks[0].is_artifact and blocks[1].is_artifact and not blocks[2].is_artifact
    assert [b.source for b in blocks] == [None, "Scripts/a.sh", "b.img"]
    assert blocks[1].where() == "line 6 (Scripts/a.sh)"


@pytest.mark.parametrize("text, expected", [
    (HEADER.replace("\n", "\r\n"), "CR line ends"),
    (HEADER + "   \nSource: a\n", "line 5: only spaces"),
    (HEADER + "\nthis is not a pair\n", "line 6: not 'Key: value'"),
    (HEADER + "\nSource: a\nSource: b\n", "line 7: field Source: given twice"),
    (HEADER + "\nSource: yes\n", "line 6: field Source: YAML does not read 'yes' back"),
    (HEADER + "\nHash: 0123\n", "line 6: field Hash: YAML does not read '0123' back"),
    ("", "is empty"),
])
def test_unreadable_meta_is_located(text, expected):
    with pytest.raises(InputError) as e:
        meta.parse(text)
    assert expected in str(e.value)
    assert str(e.value).startswith(meta.PATH)


def test_a_file_name_yaml_reads_differently_cannot_be_written():
    with pytest.raises(InputError, match="cannot be written"):
        meta.artifact_block("Scripts/x: y.sh", "0" * 64)
    with pytest.raises(InputError, match="cannot be written"):
        meta.artifact_block("123", "0" * 64)


def test_content_types():
    assert meta.content_type("Scripts/x.py") == "text/x-python"
    assert meta.content_type("Files/kubernetes/a.yaml") == "application/yaml"
    assert meta.content_type("Files/images/u.qcow2") == meta.IMAGE_CONTENT_TYPE
    assert meta.content_type("BaseHOT/x.bin") == "application/octet-stream"


_KEY = st.from_regex(r"[A-Z][A-Za-z-]{0,12}", fullmatch=True)
_VALUE = st.from_regex(r"[A-Za-z0-9_/][A-Za-z0-9_./-]{0,30}", fullmatch=True)
_BLOCK = st.dictionaries(_KEY, _VALUE, min_size=1, max_size=5)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(_BLOCK, min_size=1, max_size=5))
def test_render_then_parse_is_identity_and_tacker_splits_it_the_same(raw_blocks):
    blocks = [meta.Block(list(b.items()), 0) for b in raw_blocks]
    readable = [b for b in blocks if all(meta._reads_back(k, v) for k, v in b.entries)]
    text = meta.render(readable)
    if not readable:
        return
    parsed = meta.parse(text)
    assert [b.entries for b in parsed] == [b.entries for b in readable]
    # Tacker's own split (csar_utils._convert_artifacts) sees the same blocks.
    chunks = [c for c in re.split(b"\n\n+", text.encode()) if c.strip()]
    assert [yaml.safe_load(c) for c in chunks] == [
        {k: yaml.safe_load("%s: %s" % (k, v))[k] for k, v in b.entries} for b in readable]
