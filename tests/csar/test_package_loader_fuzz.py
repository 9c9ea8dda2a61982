"""The one loader of a package's YAML, fuzzed on the paths that read it: ``csar
validate``'s (the Definitions, the imports check over every YAML file, the manifests,
TOSCA.meta) and the translator's (a package's flavour, heat-translator's nested
templates). Any text (alias nests, deep nesting, huge scalars, bad UTF-8, tags) gives a
result or an InputError within the bounds below (tests/fuzzing.py), and what the loader
accepts reads as tosca-parser's loader reads it.

Bounds: 250 ms of CPU and 24 MiB at the peak for a validate or translator read (a
scalar of up to 2 MB is read whole, as text and as parsed); the loader alone 100 ms and
16 MiB (the default)."""
import os
import tempfile

import fuzzing
import yaml
from hypothesis import example, given, strategies as st

from tacker_hwaffinity.csar import vnfd
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import package_yaml
from tacker_hwaffinity.translator import loader, nested
from tacker_hwaffinity.vnfpackage import meta

SECONDS, MIB = 0.25, 24
TOSCA_PARSER_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)    # its yamlparser's
TOSCA_HEAD = ("tosca_definitions_version: tosca_simple_yaml_1_2\n"
              "topology_template:\n  substitution_mappings:\n    node_type: company.VNF\n"
              "    properties: {flavour_id: simple}\n  node_templates:\n    VNF:\n"
              "      type: company.VNF\n      interfaces:\n        Vnflcm:\n"
              "          instantiate_end:\n            implementation: ")
TAGS = ("!!str", "!!int", "!!float", "!!bool", "!!null", "!!binary", "!!timestamp", "!!set",
        "!!omap", "!!pairs", "!!seq", "!!map", "!!python/object:os.system",
        "!!python/name:os.system", "!custom", "!", "!<tag:yaml.org,2002:str>")


def _alias_nest(width, depth, flow):
    """YAML whose last anchor expands to WIDTH ** DEPTH values, and that anchor's alias."""
    items = ["lol"] * width
    lines = ["x-nest:"]
    for level in range(depth):
        if flow:
            lines.append("  - &a%d [%s]" % (level, ", ".join(items)))
        else:
            lines.append("  - &a%d\n%s" % (level, "".join("    - %s\n" % i for i in items)))
        items = ["*a%d" % level] * width
    return "\n".join(lines) + "\n", "*a%d" % (depth - 1)


@st.composite
def alias_nests(draw):
    nest, top = _alias_nest(draw(st.integers(1, 12)), draw(st.integers(1, 12)), draw(
        st.booleans()))
    return nest + TOSCA_HEAD + top + "\n"


@st.composite
def deep_nests(draw):
    depth = draw(st.integers(1, 3000))
    kind = draw(st.sampled_from(["flow-seq", "flow-map", "block"]))
    if kind == "flow-seq":
        body = "[" * depth + "]" * depth
    elif kind == "flow-map":
        body = "{a: " * depth + "1" + "}" * depth
    else:
        body = "".join("\n" + " " * (14 + 2 * i) + "k:" for i in range(min(depth, 400))) + " 1"
    return TOSCA_HEAD + body + "\n"


@st.composite
def huge_scalars(draw):
    size = draw(st.integers(0, 2 << 20))
    style = draw(st.sampled_from(["%s", "'%s'", '"%s"', "|\n              %s"]))
    return TOSCA_HEAD + style % (draw(st.sampled_from("x !#&*%")) * size) + "\n"


@st.composite
def tagged(draw):
    value = draw(st.sampled_from(["x", "1", "2024-13-01", "aGk=", "{a: 1}", "[a, b]", "",
                                  "[[a, 1]]", "{? a}", "&x y", "*x"]))
    return TOSCA_HEAD + "%s %s\n" % (draw(st.sampled_from(TAGS)), value)


def bad_utf8():
    return st.binary(max_size=256).map(lambda junk: TOSCA_HEAD.encode("utf-8") + junk)


TEXTS = st.one_of(st.text(max_size=2048), alias_nests(), deep_nests(), huge_scalars(),
                  tagged())
FILES = st.one_of(TEXTS.map(lambda text: text.encode("utf-8", "surrogatepass")), bad_utf8())


def _package(folder, data):
    """A package folder whose Definitions/df.yaml holds DATA (bytes)."""
    defs = os.path.join(folder, "Definitions")
    os.makedirs(defs)
    with open(os.path.join(defs, "df.yaml"), "wb") as f:
        f.write(data)
    return folder


def _validate_reads(root):
    """What csar validate reads of a package's YAML: the imports check over every file,
    the Definitions, the manifests. (Its Vnflcm hooks, where the issue's alias nest was
    expanded, get what the Definitions gave: test_package_loader.py runs the issue's
    package through the whole of validate; here each call would scan the entry points.)"""
    problems = []
    try:
        loader.check_imports(root)
    except InputError as e:
        problems.append(e)
    defs = vnfd.definitions(root, ["Definitions/df.yaml"], problems)
    try:
        package_yaml.read_manifests(os.path.join(root, "Definitions", "df.yaml"))
    except InputError as e:
        problems.append(e)
    return defs, problems


def _translator_reads(root):
    with loader.open_vnfd(root) as found:
        return found.parsed_params


@given(FILES)
@example(("x-l: &a [&b [lol, lol], *b, *b]\n" + TOSCA_HEAD + "*a\n").encode("utf-8"))
@example(b"a: &a [*a]\n")
@example(b"a: \xff\xfe\n")
def test_fuzz_validate_and_translator_reads(data):
    with tempfile.TemporaryDirectory() as folder:
        root = _package(folder, data)
        fuzzing.bounded(_validate_reads, root, seconds=SECONDS, mib=MIB)
        fuzzing.bounded(_translator_reads, root, seconds=SECONDS, mib=MIB)


@given(TEXTS)
@example("heat_template_version: 2013-05-23\nresources: {a: &r {type: x}, b: *r}\n")
def test_fuzz_nested_templates_read_as_heat_does(text):
    """heat-translator writes what the package holds (shared values as aliases)."""
    fuzzing.bounded(nested.load, text, "VDU1.hot.yaml", seconds=SECONDS, mib=MIB)


@given(st.one_of(alias_nests(), tagged(), st.text(max_size=512)).map(
    lambda text: "Entry-Definitions: " + " ".join(text.split())))
def test_fuzz_tosca_meta_values(line):
    """TOSCA.meta's values are read back as YAML (the line may hold a whole alias nest)."""
    fuzzing.bounded(meta.parse, line + "\n", seconds=SECONDS, mib=MIB)


@given(st.one_of(st.text(max_size=2048), alias_nests(), tagged()))
@example("0: !")    # an empty scalar tagged '!': libyaml makes '', PyYAML's own parser None
def test_accepted_text_reads_as_tosca_parser_reads_it(text):
    """Within the bounds, the loader is tosca-parser's (``yaml.load`` with libyaml's
    CSafeLoader when PyYAML has it, as heat-translator's and our loader before), its
    ValueErrors located instead."""
    got = fuzzing.bounded(package_yaml.loads, text, "df.yaml", seconds=0.1)
    if got is not None:
        assert repr(got) == repr(yaml.load(text, Loader=TOSCA_PARSER_LOADER))
