"""``csar build -o``: a missing folder is made, a directory or a path through a file is
one line and exit 2, and so is a binary VNFD (#38 item 3: they were tracebacks)."""
import os

from csar_fixtures import CNF, copy_source
from tacker_hwaffinity.cli.main import main


def _build(capsys, *argv):
    status = main(["csar", "build"] + list(argv))
    out, err = capsys.readouterr()
    return status, out, [line for line in err.splitlines() if not line.startswith("note: ")]


def test_the_output_folder_is_made(tmp_path, capsys):
    target = tmp_path / "dist" / "deeper" / "vnf-b.zip"
    status, out, errors = _build(capsys, CNF, "--output-file", str(target))
    assert (status, errors) == (0, [])
    assert out.startswith("wrote %s (" % target) and target.is_file()


def test_a_directory_as_the_output_is_named(tmp_path, capsys):
    status, out, errors = _build(capsys, CNF, "--output-file", str(tmp_path))
    assert (status, out) == (2, "")
    assert errors == ["hwaffinity csar build: error: %s: field --output-file: is a directory: "
                      "give the package file to write (PKG.zip)" % tmp_path]


def test_an_output_folder_that_is_a_file_is_named(tmp_path, capsys):
    (tmp_path / "dist").write_text("a file")
    target = os.path.join(str(tmp_path / "dist"), "vnf-b.zip")
    status, _, errors = _build(capsys, CNF, "--output-file", target)
    assert status == 2
    assert errors == ["hwaffinity csar build: error: %s: field --output-file: cannot create its "
                      "directory %s: File exists" % (target, tmp_path / "dist")]


def test_a_binary_vnfd_is_one_line(tmp_path, capsys):
    src = copy_source(CNF, tmp_path / "src")
    with open(os.path.join(src, "Definitions", "bad.yaml"), "wb") as f:
        f.write(b"a: \xff\xfe\n")
    status, _, errors = _build(capsys, src, "--output-file", str(tmp_path / "x.zip"))
    assert status == 2
    assert errors == ["hwaffinity csar build: error: Definitions/bad.yaml: not UTF-8 text "
                      "(invalid start byte): a VNFD is YAML"]
