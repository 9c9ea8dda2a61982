"""A package is read within stated sizes: the zip's central directory is checked
(each member, the total, the compression ratio) before anything is extracted,
and what a member really holds is counted while it is written."""
import os
import struct
import time
import tracemalloc
import zipfile

import pytest

from tacker_hwaffinity.csar import validate
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.translator import loader
from tacker_hwaffinity.vnfpackage import zipio

MIB = 1 << 20


def _bomb(path, size, name="Files/zeros.bin"):
    """A zip holding SIZE zero bytes in one deflated member (about SIZE / 1000 zipped)."""
    chunk = bytes(MIB)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z, z.open(name, "w") as out:
        for _ in range(size // MIB):
            out.write(chunk)
    return path


def _written(folder):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(folder) for f in fs)


def test_a_bomb_is_refused_by_its_ratio_before_anything_is_written(tmp_path):
    """The issue's package: at the default limits, the declared ratio refuses it at once."""
    bomb = _bomb(str(tmp_path / "bomb.zip"), 64 * MIB)
    assert os.path.getsize(bomb) < MIB
    before = time.monotonic()
    with pytest.raises(InputError) as refused:
        validate.validate(bomb)
    assert time.monotonic() - before < 2
    assert "Files/zeros.bin" in str(refused.value)
    assert "ratio" in str(refused.value)
    assert refused.value.source == bomb


@pytest.mark.parametrize("limits, words", [
    (zipio.Limits(member_bytes=8 * MIB, ratio=10 ** 6), "declares 67108864 bytes"),
    (zipio.Limits(total_bytes=8 * MIB, ratio=10 ** 6), "unpack to 67108864 bytes"),
    (zipio.Limits(members=0), "over 0"),
], ids=["member", "total", "count"])
def test_declared_sizes_are_checked_before_extraction(tmp_path, limits, words):
    bomb = _bomb(str(tmp_path / "bomb.zip"), 64 * MIB)
    into = tmp_path / "out"
    into.mkdir()
    with zipio.open_zip(bomb) as z, pytest.raises(InputError, match=words):
        zipio.extract_safe(z, str(into), limits)
    assert _written(str(into)) == 0


def _lie_about_size(path, name, declared):
    """Rewrite the central directory's uncompressed size of NAME to DECLARED."""
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        at = data.rindex(b"PK\x01\x02" + b"")
        while at >= 0:
            name_len = struct.unpack_from("<H", data, at + 28)[0]
            if data[at + 46:at + 46 + name_len] == name.encode():
                struct.pack_into("<I", data, at + 24, declared)
                break
            at = data.rindex(b"PK\x01\x02", 0, at)
        f.seek(0)
        f.write(data)


def test_a_member_holding_more_than_it_declares_is_cut_off_and_refused(tmp_path):
    bomb = _bomb(str(tmp_path / "bomb.zip"), 64 * MIB)
    _lie_about_size(bomb, "Files/zeros.bin", MIB)
    into = tmp_path / "out"
    into.mkdir()
    tracemalloc.start()
    try:
        with zipio.open_zip(bomb) as z, pytest.raises(InputError, match="declares"):
            zipio.extract_safe(z, str(into), zipio.Limits(ratio=10 ** 6))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert _written(str(into)) <= MIB      # cut off at what it declared, and removed
    assert peak < 8 * MIB


def test_members_are_hashed_streamed(tmp_path):
    import hashlib
    path = _bomb(str(tmp_path / "big.zip"), 32 * MIB)
    tracemalloc.start()
    try:
        with zipio.open_zip(path) as z:
            digest = zipio.digest(z, "Files/zeros.bin", hashlib.sha256)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert digest == hashlib.sha256(bytes(32 * MIB)).hexdigest()
    assert peak < 4 * MIB


def test_translate_refuses_a_bomb_before_extracting(tmp_path):
    bomb = _bomb(str(tmp_path / "bomb.zip"), 64 * MIB)
    with pytest.raises(InputError, match="ratio"):
        with loader.open_vnfd(bomb):
            pass


def test_csar_validate_exits_2_naming_the_member_and_the_flag(tmp_path, capsys):
    from tacker_hwaffinity.cli.main import main
    bomb = _bomb(str(tmp_path / "bomb.zip"), 64 * MIB)
    assert main(["csar", "validate", bomb]) == 2
    err = capsys.readouterr().err
    assert "Files/zeros.bin" in err and "--max-ratio" in err and "Traceback" not in err
    assert main(["csar", "validate", bomb, "--max-ratio", "100000",
                 "--max-member-bytes", str(MIB)]) == 2
    assert "--max-member-bytes" in capsys.readouterr().err
