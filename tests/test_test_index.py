"""doc/test-index.md is what tools/test_index.py prints (regenerate: ``python
tools/test_index.py > doc/test-index.md``), every module of the package has a test file
there or a reason in the tool's UNTESTED, and the tool's rules find what they say."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "doc", "test-index.md")


def _tool():
    spec = importlib.util.spec_from_file_location(
        "test_index_tool", os.path.join(ROOT, "tools", "test_index.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


tool = _tool()


def test_the_page_is_what_the_tool_prints():
    with open(PAGE, encoding="utf-8") as f:
        page = f.read()
    assert page == tool.markdown(tool.index()), (
        "doc/test-index.md is stale: python tools/test_index.py > doc/test-index.md")


def test_every_module_has_a_test_file_or_a_reason_and_every_reason_is_needed():
    found = tool.index()
    assert set(found) == set(tool.modules()) and len(found) > 100
    untested = sorted(name for name, (paths, via, used_by) in found.items()
                      if not (paths or via or used_by))
    assert untested == sorted(tool.UNTESTED), (
        "modules with no test file and no reason (first) or a reason but tests (second): "
        "%s, %s" % (sorted(set(untested) - set(tool.UNTESTED)),
                    sorted(set(tool.UNTESTED) - set(untested))))


KNOWN = {name: name.replace(".", "/") + ".py" for name in (
    "tacker_hwaffinity.numa", "tacker_hwaffinity.numa.topology", "tacker_hwaffinity.numa.svg",
    "tacker_hwaffinity.cli.numa", "tacker_hwaffinity.cli.relabel", "tacker_hwaffinity.table")}


def test_imports_and_strings_name_a_module_and_comments_do_not():
    text = ("import os\n"
            "# from tacker_hwaffinity.numa import svg\n"
            "from tacker_hwaffinity.numa import (topology,\n    nothing_here as x)\n"
            "ARGV = ['-m', 'tacker_hwaffinity.cli.numa']\n")
    assert tool.named_modules(text, KNOWN) == {
        "tacker_hwaffinity.numa", "tacker_hwaffinity.numa.topology",
        "tacker_hwaffinity.cli.numa"}
    assert tool.named_modules("x = 'tacker_hwaffinity.table.render'\n", KNOWN) == {
        "tacker_hwaffinity.table"}


def test_a_test_file_is_named_after_its_module():
    assert tool.name_matches("tests/numa/test_topology.py", KNOWN) == \
        "tacker_hwaffinity.numa.topology"
    assert tool.name_matches("tests/numa/test_cli.py", KNOWN) == "tacker_hwaffinity.cli.numa"
    assert tool.name_matches("tests/mgmt/test_relabel_cli.py", KNOWN) == \
        "tacker_hwaffinity.cli.relabel"
    assert tool.name_matches("tests/test_table.py", KNOWN) == "tacker_hwaffinity.table"
    assert tool.name_matches("tests/audit/test_topology.py", KNOWN) is None


def test_relative_imports_resolve_against_the_package():
    text = "from .svg import draw\nfrom . import topology\nfrom ..cli import numa\n"
    assert tool._relative_imports(text, "tacker_hwaffinity.numa", KNOWN) == {
        "tacker_hwaffinity.numa", "tacker_hwaffinity.numa.svg",
        "tacker_hwaffinity.numa.topology", "tacker_hwaffinity.cli.numa"}
