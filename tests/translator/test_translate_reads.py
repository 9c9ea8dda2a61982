"""``translate`` reads what it is given and what that imports (#38 items 3 and 4): a
top VNFD's flavours are the files it imports, not every YAML file beside it; a binary
file is one line; a package given by a relative path may import its own files by an
absolute one; an import cycle anywhere is named (a property over import graphs)."""
import os
import shutil
import tempfile
import time

import pytest
from hypothesis import given, settings, strategies as st

from tacker_hwaffinity.cli.main import main
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.translator import loader
from translate_helpers import K8S_PACKAGE, translate_file

DF = "sample_kubernetes_df_podaffinity.yaml"
TOP = "sample_kubernetes_top.vnfd.yaml"


def _copy(tmp_path):
    return shutil.copytree(K8S_PACKAGE, str(tmp_path / "pkg"))


def test_a_top_vnfd_reads_its_imports_not_its_neighbours(tmp_path):
    """Reported: an unrelated broken YAML file beside the top VNFD failed the command."""
    pkg = _copy(tmp_path)
    with open(os.path.join(pkg, "Definitions", "unrelated.yaml"), "w") as f:
        f.write("foo: [\n")
    top = os.path.join(pkg, "Definitions", TOP)
    assert "main.yaml" in translate_file(top, "podaffinity")


def test_a_top_vnfd_that_imports_no_flavour_says_so(tmp_path):
    pkg = _copy(tmp_path)
    top = os.path.join(pkg, "Definitions", TOP)
    with open(top) as f:
        text = f.read()
    with open(top, "w") as f:
        f.write("".join(line for line in text.splitlines(True) if "_df_" not in line))
    with pytest.raises(InputError) as refused:
        translate_file(top, "podaffinity")
    assert (refused.value.source, refused.value.field) == (top, "imports")
    assert refused.value.message.startswith("imports no deployment flavour file")


def test_a_binary_file_is_one_line(tmp_path, capsys):
    binary = tmp_path / "vnfd.yaml"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\xd0\xff" * 20)
    assert main(["translate", str(binary), "--output-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == ("hwaffinity translate: error: %s: not UTF-8 text (invalid continuation "
                   "byte): a VNFD is YAML\n" % binary)


def test_a_relative_package_may_import_its_own_file_by_absolute_path(tmp_path, monkeypatch,
                                                                     capsys):
    """Reported: ValueError: Can't mix absolute and relative paths. The package lacks
    the ETSI files, so it is read from a copy with them added: its absolute import of
    its own file is that file's copy; one outside it is refused in one line."""
    pkg = _copy(tmp_path)
    for name in os.listdir(os.path.join(pkg, "Definitions")):
        if name.startswith("etsi_nfv_sol001"):
            os.unlink(os.path.join(pkg, "Definitions", name))
    df = os.path.join(pkg, "Definitions", DF)
    with open(df) as f:
        text = f.read()
    own = os.path.join(pkg, "Definitions", "sample_kubernetes_types.yaml")
    with open(df, "w") as f:
        f.write(text.replace("  - sample_kubernetes_types.yaml\n", "  - %s\n" % own, 1))
    monkeypatch.chdir(tmp_path)
    out = str(tmp_path / "out")
    assert main(["translate", "pkg", "--flavour", "podaffinity", "--output-dir", out]) == 0
    outside = tmp_path / "outside.yaml"
    shutil.copyfile(own, outside)
    with open(df, "w") as f:
        f.write(text.replace("  - sample_kubernetes_types.yaml\n", "  - %s\n" % outside, 1))
    capsys.readouterr()
    assert main(["translate", "pkg", "--flavour", "podaffinity", "--output-dir", out]) == 2
    assert capsys.readouterr().err == (
        "hwaffinity translate: error: pkg/Definitions/%s: field imports: import %s is "
        "outside the package (pkg); only its own files are read\n" % (DF, outside))


TYPES = "tosca_definitions_version: tosca_simple_yaml_1_2\n"
FILES = 5


def _has_cycle(edges):
    state = {}

    def visit(n):
        state[n] = "open"
        for m in edges.get(n, ()):
            if state.get(m) == "open" or (m not in state and visit(m)):
                return True
        state[n] = "done"
        return False
    return any(n not in state and visit(n) for n in range(FILES))


@settings(deadline=None)
@given(st.dictionaries(st.integers(0, FILES - 1),
                       st.lists(st.integers(0, FILES - 1), max_size=3, unique=True)))
def test_an_import_cycle_is_named_before_any_parser_follows_it(edges):
    """Files f0..f4 of Definitions/ import each other as EDGES says: the package's imports
    are refused iff the graph has a cycle, the cycle named is one of its cycles, and
    within a second."""
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "Definitions"))
        for n in range(FILES):
            with open(os.path.join(root, "Definitions", "f%d.yaml" % n), "w") as f:
                f.write(TYPES + "imports: [%s]\n" % ", ".join(
                    "f%d.yaml" % m for m in edges.get(n, ())))
        start = time.monotonic()
        try:
            loader.check_imports(root)
            named = None
        except InputError as e:
            named = e.message
        assert time.monotonic() - start < 1
    assert (named is not None) == _has_cycle(edges), (edges, named)
    if named is not None:
        assert named.startswith("import cycle: ")
        chain = [int(p[len("Definitions/f"):-len(".yaml")])
                 for p in named[len("import cycle: "):].split(" -> ")]
        assert chain[0] == chain[-1] and len(chain) >= 2
        assert all(b in edges.get(a, ()) for a, b in zip(chain, chain[1:])), (edges, named)
