"""The one loader of a package's YAML (objects/package_yaml.py): each bound refuses its
input with the file and line, before anyone walks it; within them, files read as
``yaml.safe_load`` (tosca-parser, heat-translator, Tacker) reads them.

The issue's package: a Vnflcm hook ``implementation`` that is nine aliases of nine
aliases nine levels deep kept ``csar validate`` running past 25 s at 741 MiB and growing.
It goes through the CLI here, in a process whose CPU time and memory are limited."""
import glob
import os
import re
import subprocess
import sys
import threading
import time
import tracemalloc

import pytest
import yaml

from csar_fixtures import CNF, REPO, VNF_A, members, rewrite
from tacker_hwaffinity import etsi_types
from tacker_hwaffinity.csar import validate
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import package_yaml
from tacker_hwaffinity.translator import loader, nested
from tacker_hwaffinity.vnfpackage import meta

DF = "Definitions/vnf_a_df_default.yaml"
HOOK = "instantiate_end:\n            implementation: mgmt-drivers-hwaffinity"
MIB = 1 << 20
VALIDATE_CPU_SECONDS = 60     # the child's CPU limit: today's code passed it, growing
VALIDATE_MEMORY = 2 << 30     # its address space: today's code reached it
VALIDATE_RSS_MIB = 512        # what the refusal may reach (measured: about 125 MiB)


def alias_nest(width, depth, name="lol"):
    """('x-nest: ...' YAML defining &a0..&a<depth-1>, each WIDTH aliases of the one
    before: WIDTH ** DEPTH values expanded), the alias of the last one)."""
    lines = ["x-nest:", "  - &a0 [%s]" % ", ".join([name] * width)]
    for level in range(1, depth):
        lines.append("  - &a%d [%s]" % (level, ", ".join(["*a%d" % (level - 1)] * width)))
    return "\n".join(lines) + "\n", "*a%d" % (depth - 1)


def laughing_package(vnf_a_zip, target, width=9, depth=9):
    """VNF-A with its instantiate_end hook's implementation an alias nest."""
    text = members(vnf_a_zip)[DF].decode("utf-8")
    assert HOOK in text
    nest, top = alias_nest(width, depth)
    laughs = nest + text.replace(HOOK, "instantiate_end:\n            implementation: " + top)
    assert len(laughs) - len(text) < 1024
    return rewrite(vnf_a_zip, target, replace={DF: laughs.encode("utf-8")})


# the child limits itself before it imports anything (a preexec_fn would fork a process
# that has eventlet loaded)
# Its peak RSS is its own VmHWM, printed last: wait4's ru_maxrss counts the RSS of the
# parent it was forked from (Linux keeps the pre-exec high-water mark), which is an xdist
# worker's after hundreds of tests (748 MiB once).
CHILD = ("import resource, sys\n"
         "resource.setrlimit(resource.RLIMIT_CPU, (%d, %d))\n"
         "resource.setrlimit(resource.RLIMIT_AS, (%d, %d))\n"
         "from tacker_hwaffinity.cli.main import main\n"
         "status = main(sys.argv[1:])\n"
         "hwm = [ln.split()[1] for ln in open('/proc/self/status') if ln.startswith('VmHWM:')]\n"
         "print('child-peak-rss-kib=%%s' %% hwm[0], flush=True)\n"
         "sys.exit(status)\n" % ((VALIDATE_CPU_SECONDS,) * 2 + (VALIDATE_MEMORY,) * 2))
PEAK = re.compile(r"child-peak-rss-kib=(\d+)")


def _validate_in_a_child(package, log):
    """``hwaffinity csar validate PACKAGE`` in a child process under the limits above:
    (exit status, output, the child's resource usage)."""
    with open(log, "wb") as out:
        child = subprocess.Popen([sys.executable, "-c", CHILD, "csar", "validate", package],
                                 stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
                                 env=dict(os.environ, PYTHONPATH=REPO))
    # the CPU limit ends it; this is for a machine so loaded that its CPU time crawls
    killer = threading.Timer(VALIDATE_CPU_SECONDS * 10, child.kill)
    killer.start()
    try:
        _, status, usage = os.wait4(child.pid, 0)
    finally:
        killer.cancel()
    child.returncode = os.waitstatus_to_exitcode(status)
    with open(log, "rb") as f:
        return child.returncode, " ".join(f.read().decode("utf-8", "replace").split()), usage


def test_billion_laughs_package_is_refused_by_csar_validate(vnf_a_zip, tmp_path):
    """The issue's package, through the CLI's ``csar validate`` in a child process: one
    located problem, exit 1, in a fraction of the child's CPU and memory limits."""
    package = laughing_package(vnf_a_zip, str(tmp_path / "laughs.zip"))
    status, out, usage = _validate_in_a_child(package, str(tmp_path / "validate.log"))
    assert status == 1 and "Traceback" not in out, (status, out[-2000:])
    assert ("problem: %s: at line 7: over %d values with its aliases expanded (an alias "
            "bomb?)" % (DF, package_yaml.BOUNDS.values)) in out
    assert "Tacker's upload check and the flavours skipped" in out
    peak_kib = int(PEAK.search(out).group(1))
    assert peak_kib < VALIDATE_RSS_MIB * 1024, peak_kib


def test_a_package_under_the_budget_validates(vnf_a_zip, tmp_path):
    """An alias nest of 8**5 values (80,000 with its definitions) is under the budget:
    the package reads, and what validate says of the hook is its meaning, not its size."""
    report = validate.validate(laughing_package(vnf_a_zip, str(tmp_path / "p.zip"), 8, 5))
    assert not [p for p in report.unique() if "values with its aliases" in p.message]
    assert [p for p in report.unique() if p.field and p.field.endswith(
        "Vnflcm.instantiate_end.implementation") and p.message == "must name an artifact"]


def _bound_cases():
    nest, top = alias_nest(9, 7)
    return {
        "values": (nest + "impl: %s\n" % top, package_yaml.BOUNDS, "7",
                   "over 100000 values with its aliases expanded (an alias bomb?)"),
        "recursive": ("a: 1\nb: &loop [x, *loop]\n", package_yaml.BOUNDS, "2",
                      "alias *loop names a node that holds it (a recursive structure)"),
        "depth": ("a: 1\nb:\n  " + "[" * 200 + "]" * 200 + "\n", package_yaml.BOUNDS, "3",
                  "nests deeper than 128 mappings and lists"),
        "time": ("a: 1\nb: [%s]\n" % ", ".join(["x"] * 50000),     # wherever the clock says
                 package_yaml.Bounds(seconds=1e-9), "[12]", "still parsing after 1e-09 s of CPU"),
    }


@pytest.mark.parametrize("case", sorted(_bound_cases()))
def test_each_bound_refuses_with_the_file_and_line(tmp_path, case):
    text, bounds, line, words = _bound_cases()[case]
    path = tmp_path / "Definitions" / "df.yaml"
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(package_yaml.OverBound) as refused:
        package_yaml.read(str(path), source="Definitions/df.yaml", bounds=bounds)
    assert re.fullmatch("Definitions/df.yaml: at line %s: %s" % (line, re.escape(words)),
                        str(refused.value)), str(refused.value)


def test_a_file_over_the_size_bound_is_refused_unread(tmp_path):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:
        f.truncate(package_yaml.BOUNDS.bytes + 1)     # sparse: no disk, all its size
    tracemalloc.start()
    try:
        with pytest.raises(package_yaml.OverBound, match="16777217 bytes, over the 16777216"):
            package_yaml.read(str(big))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MIB


def test_a_file_that_holds_more_than_its_size_says_is_read_up_to_the_bound(tmp_path):
    """A FIFO says it holds nothing: it is read a chunk at a time, up to the bound."""
    fifo = str(tmp_path / "fifo.yaml")
    os.mkfifo(fifo)
    writer = subprocess.Popen([sys.executable, "-c", "import sys\nwith open(sys.argv[1], 'w') "
                               "as f:\n    f.write('a: ' + 'x' * 5000)", fifo])
    try:
        with pytest.raises(package_yaml.OverBound, match="4097 bytes, over the 4096"):
            package_yaml.read(fifo, bounds=package_yaml.Bounds(bytes=4096))
    finally:
        writer.kill()
        writer.wait(timeout=10)


def _package_files():
    found = set(etsi_types.paths().values())
    for pattern in ("csar/*/Definitions/*.yaml", "csar/*/BaseHOT/*/*.yaml",
                    "tests/csar/data/*/Definitions/*.yaml"):
        found.update(glob.glob(os.path.join(REPO, pattern)))
    return sorted(found)


@pytest.mark.parametrize("path", _package_files(), ids=os.path.basename)
def test_real_files_read_as_tosca_parser_reads_them(path):
    """tosca-parser reads these with libyaml's CSafeLoader (PyYAML's SafeLoader without
    libyaml): the bounded loader gives the same values (types, dates, mapping order)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    expected = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    got = package_yaml.read(path)
    assert got == expected
    assert repr(got) == repr(expected)      # mapping order and types too


def test_semantics_are_safe_loads():
    """Tags, merge keys, repeated keys, shared anchors: as ``yaml.safe_load`` (Tacker's)."""
    text = ("base: &b {x: 1, when: 2024-01-02}\nderived: {<<: *b, y: !!str 2}\n"
            "twice: 1\ntwice: 2\nbinary: !!binary aGk=\nset: !!set {a, b}\n"
            "shared: [*b, *b]\nfloat: .inf\n")
    assert repr(package_yaml.loads(text, "f.yaml")) == repr(yaml.safe_load(text))
    with pytest.raises(InputError, match="f.yaml: not valid YAML at line 1: .*python/object"):
        package_yaml.loads("a: !!python/object:os.system x\n", "f.yaml")
    with pytest.raises(InputError, match="f.yaml: not valid YAML at line 1: invalid value"):
        package_yaml.loads("a: 2024-13-01\n", "f.yaml")      # safe_load: ValueError escapes


def test_heat_reading_keeps_dates_strings_within_the_bounds():
    """heat-translator's nested templates, read as Heat reads them, aliases bounded."""
    data = nested.load("heat_template_version: 2013-05-23\nresources: {}\n", "VDU1.hot.yaml")
    assert data["heat_template_version"] == "2013-05-23"
    nest, top = alias_nest(9, 7)
    with pytest.raises(package_yaml.OverBound, match="^nested template VDU1.hot.yaml: at "
                       "line 7: over 100000 values"):
        nested.load(nest + "resources: %s\n" % top, "VDU1.hot.yaml")


def test_tosca_meta_line_with_an_alias_nest_is_refused_in_time():
    """TOSCA.meta's check that a value reads back ran ``str()`` over what one line's
    aliases expand to: 9**7 values took seconds and hundreds of MiB."""
    values = ["&a0 [%s]" % ", ".join(["lol"] * 9)]
    values += ["&a%d [%s]" % (i, ", ".join(["*a%d" % (i - 1)] * 9)) for i in range(1, 7)]
    line = "Entry-Definitions: [%s]" % ", ".join(values)
    tracemalloc.start()
    started = time.thread_time()
    try:
        with pytest.raises(InputError, match="does not read"):
            meta.parse(line + "\n")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.thread_time() - started < 1
    assert peak < 4 * MIB


def test_check_imports_does_not_skip_a_file_over_the_bounds(tmp_path):
    """A YAML file that is not one document is skipped (a manifest?); one over the
    bounds is not: tosca-parser and Tacker would read it without them."""
    defs = tmp_path / "Definitions"
    defs.mkdir()
    (defs / "manifest.yaml").write_text("a: 1\n---\nb: 2\n")
    assert loader.check_imports(str(tmp_path)) == 0
    nest, top = alias_nest(9, 7)
    (defs / "df.yaml").write_text("tosca_definitions_version: x\n" + nest + "y: %s\n" % top)
    with pytest.raises(package_yaml.OverBound) as refused:
        loader.check_imports(str(tmp_path))
    assert refused.value.source == str(defs / "df.yaml")


def test_manifest_alias_bomb_is_a_located_problem(cnf_zip, tmp_path):
    """A CNF manifest's aliases were shared by the loader and expanded by the model
    check after it (pydantic walks every value)."""
    name = "Files/kubernetes/bomb.yaml"
    nest, top = alias_nest(9, 7)
    bomb = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\n" + nest
            + "data: %s\n" % top)
    package = rewrite(cnf_zip, str(tmp_path / "cnf.zip"), add={name: bomb.encode("utf-8")})
    report = validate.validate(package)
    assert "%s: at line 10: over 100000 values with its aliases expanded (an alias bomb?)" \
        % name in [str(p) for p in report.unique()]


def test_manifests_keep_their_strict_reading(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems:\n- {kind: A, a: &x [1]}\n"
                    "- {kind: B, b: *x}\n")
    assert package_yaml.read_manifests(str(path)) == [{"kind": "A", "a": [1]},
                                                      {"kind": "B", "b": [1]}]
    path.write_text('{"kind": "A", "kind": "B"}')
    with pytest.raises(InputError, match="malformed JSON at line 1, column 15: duplicate key"):
        package_yaml.read_manifests(str(path))


def test_a_manifest_files_documents_share_its_bounds(tmp_path):
    """A file's documents are counted together: each holds 7 values, the second passes 12."""
    path = tmp_path / "m.yaml"
    path.write_text("".join("---\nkind: K%d\nv: [1, 2]\n" % i for i in range(3)))
    assert len(package_yaml.read_manifests(str(path))) == 3
    with pytest.raises(package_yaml.OverBound, match="^m.yaml: at line 6: over 12 values"):
        package_yaml.read_manifests(str(path), "m.yaml", package_yaml.Bounds(values=12))


def test_build_reads_the_source_within_the_bounds(tmp_path):
    from csar_fixtures import copy_source
    from tacker_hwaffinity.csar import build
    src = copy_source(CNF, tmp_path / "src")
    nest, top = alias_nest(9, 7)
    with open(os.path.join(src, "Definitions", "bomb.yaml"), "w") as f:
        f.write(nest + "y: %s\n" % top)
    with pytest.raises(package_yaml.OverBound, match="^Definitions/bomb.yaml: at line 7"):
        build.build(src, str(tmp_path / "x.zip"))


def test_translate_reads_within_the_bounds(tmp_path):
    from csar_fixtures import copy_source
    src = copy_source(VNF_A, tmp_path / "src")
    df = os.path.join(src, DF)
    with open(df, encoding="utf-8") as f:
        text = f.read()
    nest, top = alias_nest(9, 9)
    with open(df, "w", encoding="utf-8") as f:
        f.write(nest + text.replace(HOOK, "instantiate_end:\n            implementation: "
                                    + top))
    with pytest.raises(InputError, match="at line 7: over 100000 values"):
        with loader.open_vnfd(src):
            pass
