"""Every ``-o json|yaml`` document validates against its JSON Schema in doc/schemas/
(issue #38: a stable, versioned schema for each output, documented in doc/output.md).

Each command runs as a user runs it, on the samples and on inputs that fill the fields
the samples leave empty (unplaced pods, warnings, problems, errors), in both formats.
"""
import functools
import glob
import json
import logging
import os
import re
import zipfile

import jsonschema
import pytest
import yaml

from tacker_hwaffinity.cli import output
from tacker_hwaffinity.cli.main import main
from tests.builders import node, pod
from tests.scheduling.test_diagnosis import anti, cluster, deployment

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMAS = os.path.join(ROOT, "doc", "schemas")
SAMPLES = os.path.join(ROOT, "samples")
CLUSTER = os.path.join(SAMPLES, "cluster.yaml")
SMF = os.path.join(SAMPLES, "cnf", "smf-preferred.yaml")
UPF = os.path.join(SAMPLES, "cnf", "upf-required.yaml")
MACHINE = os.path.join(SAMPLES, "numa", "machine.yaml")
NUMA_PODS = os.path.join(SAMPLES, "numa", "pods.yaml")
VNF_A = os.path.join(ROOT, "tests", "csar", "data", "vnf_a")
FORMATS = (output.JSON, output.YAML)

SAMPLE_COMMANDS = {
    "plan": ["plan", "--cluster", CLUSTER, UPF, SMF],
    "explain": ["explain", "--cluster", CLUSTER, "--pod", SMF],
    "audit": ["audit", "--cluster", os.path.join(SAMPLES, "audit", "cluster.yaml"),
              "--max-loss", "10%", "--all"],
    "numa plan": ["numa", "plan", "--machine", MACHINE, NUMA_PODS],
    "numa explain": ["numa", "explain", NUMA_PODS],
}
# a pod whose affinity annotation does not parse: request, pool and cpus are null
BAD_NUMA_POD = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "broken", "namespace": "demo", "annotations": {
                    "cri-resource-manager.intel.com/affinity": "c: [ [nope"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]}}


@functools.lru_cache(maxsize=None)
def schema(kind):
    with open(os.path.join(SCHEMAS, "%s.v1.json" % kind), encoding="utf-8") as f:
        return json.load(f)


def check(doc):
    """DOC is valid for the schema its kind names; returns DOC."""
    assert doc["apiVersion"] == output.API_VERSION
    jsonschema.validate(doc, schema(doc["kind"]), cls=jsonschema.Draft202012Validator)
    return doc


def parse(text, fmt):
    return json.loads(text) if fmt == output.JSON else yaml.safe_load(text)


def run(capsys, argv, fmt):
    """(exit status, the validated document) of ``hwaffinity ARGV -o FMT``."""
    status = main(list(argv) + ["-o", fmt])
    return status, check(parse(capsys.readouterr().out, fmt))


def write(tmp_path, name, *objects):
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def test_every_schema_is_a_draft_2020_12_schema_of_its_kind():
    files = sorted(glob.glob(os.path.join(SCHEMAS, "*.v1.json")))
    assert files
    for path in files:
        kind = os.path.basename(path)[:-len(".v1.json")]
        s = schema(kind)
        jsonschema.Draft202012Validator.check_schema(s)
        assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert s["properties"]["kind"] == {"const": kind}
        assert s["properties"]["apiVersion"] == {"const": output.API_VERSION}
        assert s["additionalProperties"] is False
        assert set(s["required"]) == set(s["properties"])


def test_every_kind_the_cli_writes_has_a_schema_and_every_schema_a_kind():
    written = set()
    for path in glob.glob(os.path.join(ROOT, "tacker_hwaffinity", "cli", "*.py")):
        with open(path, encoding="utf-8") as f:
            written |= set(re.findall(r'output\.document\(\s*"(\w+)"', f.read()))
    shipped = {os.path.basename(p)[:-len(".v1.json")]
               for p in glob.glob(os.path.join(SCHEMAS, "*.v1.json"))}
    assert len(written) >= 9
    assert written == shipped


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", sorted(SAMPLE_COMMANDS))
def test_the_samples(name, fmt, capsys):
    status, doc = run(capsys, SAMPLE_COMMANDS[name], fmt)
    assert status in (0, 1)
    if name == "audit":
        assert doc["findings"] and doc["staleLabels"] is None


def test_the_same_document_in_both_formats(capsys):
    assert run(capsys, SAMPLE_COMMANDS["plan"], output.JSON)[1] \
        == run(capsys, SAMPLE_COMMANDS["plan"], output.YAML)[1]


def test_a_field_the_schema_does_not_name_is_refused(capsys):
    """additionalProperties is false where we own the shape: a new field is a deliberate
    schema change, made with the code."""
    doc = run(capsys, SAMPLE_COMMANDS["plan"], output.JSON)[1]
    doc["placements"][0]["score"] = 1
    with pytest.raises(jsonschema.ValidationError, match="score"):
        check(doc)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_plan_with_unplaced_replicas_and_warnings(fmt, tmp_path, capsys):
    nodes = write(tmp_path, "cluster.yaml", *cluster())
    web = write(tmp_path, "web.yaml", deployment(aff=anti()),
                deployment("db", replicas=2, aff=anti("cis-node", {"app": "db"})))
    status, doc = run(capsys, ["plan", "--cluster", nodes, web], fmt)
    assert status == 1
    assert doc["unplaced"] and doc["warnings"]
    assert any(p["node"] is None and p["reasons"] for p in doc["placements"])


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_explanation_where_no_node_fits(fmt, tmp_path, capsys):
    nodes = write(tmp_path, "cluster.yaml", *cluster(n=3))
    web = write(tmp_path, "web.yaml", deployment(replicas=1, nodeSelector={"disk": "none"}))
    status, doc = run(capsys, ["explain", "--cluster", nodes, "--pod", web], fmt)
    assert status == 1      # no node can take it (doc/cli.md, "Exit statuses")
    assert doc["selected"] is None and doc["summary"]
    assert all(n["total"] is None and n["reasons"] for n in doc["nodes"])


@pytest.mark.parametrize("fmt", FORMATS)
def test_numa_documents_of_a_pod_whose_annotation_does_not_parse(fmt, tmp_path, capsys):
    bad = write(tmp_path, "bad.yaml", BAD_NUMA_POD)
    status, doc = run(capsys, ["numa", "plan", "--machine", MACHINE, NUMA_PODS, bad], fmt)
    assert status == 2
    (broken,) = [c for c in doc["containers"] if c["error"]]
    assert broken["request"] is None and broken["pool"] is None
    status, doc = run(capsys, ["numa", "explain", bad], fmt)
    assert status == 2 and doc["containers"][0]["errors"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_package_built_then_validated_with_a_problem(fmt, tmp_path, capsys):
    pkg = str(tmp_path / "vnf_a.zip")
    status, doc = run(capsys, ["csar", "build", VNF_A, "--output-file", pkg], fmt)
    assert status == 0 and doc["path"] == pkg and doc["members"]
    bad = str(tmp_path / "bad.zip")
    with zipfile.ZipFile(pkg) as src, zipfile.ZipFile(bad, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, b"changed\n" if info.filename == "Scripts/install_k8s.sh"
                         else data)
    status, doc = run(capsys, ["csar", "validate", bad], fmt)
    assert status == 1
    assert doc["problems"] and doc["checks"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_translation(fmt, tmp_path, capsys):
    status, doc = run(capsys, ["translate", os.path.join(ROOT, "csar", "k8s-cluster"),
                               "--flavour", "podaffinity", "--output-dir", str(tmp_path)],
                      fmt)
    assert status == 0
    assert doc["files"][0] == str(tmp_path / "main.yaml")


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_audit_with_stale_labels(fmt):
    """Nova's side needs OpenStack: the report is built from fake servers, as
    ``cli/audit.py`` builds it, and dumped the way the command dumps it."""
    import io

    from tacker_hwaffinity.audit import core, render, stale, thresholds
    from tacker_hwaffinity.openstack.servers import ServerState
    nodes = [node("w%d" % i, {"CIS-node": "cmp-%d" % i}, ip="10.0.0.%d" % i) for i in range(3)]
    pods = [pod("web-%d" % i, {"app": "web"}, on="w%d" % i) for i in range(3)]
    gone = "dddddddd-0000-4000-8000-000000000000"     # a server Nova does not list
    nodes.append(node("ghost", {}, ip="10.0.0.9", provider_id="openstack:///" + gone))
    servers = [ServerState("s0", "vm-0", "ACTIVE", None, "cmp-9", "h0", "", {}, ("10.0.0.0",)),
               ServerState("s1", "vm-1", "MIGRATING", None, "cmp-1", "h1", "", {},
                           ("10.0.0.1",))]
    report_stale = stale.check_nodes(stale.nodes_from_objects(nodes), servers, "CIS-node",
                                     scope="project")
    report = core.audit(nodes, pods, "CIS-node", host_override=report_stale.nova_hosts())
    found = thresholds.findings(report, None, ("stale-labels",), report_stale)
    out = io.StringIO()
    output.dump(output.document("Audit", render.to_dict(report, report_stale, found)), fmt,
                out)
    doc = check(parse(out.getvalue(), fmt))
    assert {n["state"] for n in doc["staleLabels"]["nodes"]} == {"stale", "moving", "unknown"}
    assert {"node": "ghost", "state": "unknown", "label": None, "novaHost": None,
            "server": gone, "serverName": None,
            "serverStatus": None} in doc["staleLabels"]["nodes"]
    assert "node ghost: host label stale or VM unknown to Nova" in doc["findings"]


@pytest.fixture
def relabel_logger():
    """``relabel`` gives its logger a handler on this test's stderr: taken off after."""
    log = logging.getLogger("tacker_hwaffinity.relabel")
    handlers, level = list(log.handlers), log.level
    yield
    log.handlers[:], log.level = handlers, level


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_relabel(fmt, monkeypatch, capsys, relabel_logger):
    """Heat, Nova and Kubernetes need a cloud (tests/mgmt/test_relabel_cli.py, marked
    controlplane): here the command runs with the reconciliation replaced by its
    LabelPlan of three workers (a change, a colocation warning, an error) and a node
    whose server Nova does not list."""
    from tacker_hwaffinity import openstack
    from tacker_hwaffinity.labeling import params, plan as label_plan
    from tacker_hwaffinity.mgmt import lifecycle
    workers = [label_plan.Worker("w0", "s0", ["10.0.0.1"], host="cmp-a"),
               label_plan.Worker("w1", "s1", ["10.0.0.2"], host="cmp-a"),
               label_plan.Worker("w2", "s2", ["10.0.0.3"])]
    nodes = [label_plan.KubeNode("n0", ["10.0.0.1"], {"CIS-node": "old"}),
             label_plan.KubeNode("n1", ["10.0.0.2"], {"CIS-node": "cmp-a"})]
    hw = params.parse({"hwaffinity_param": {"host_source": "host"}})["hwaffinity"]
    plan = label_plan.plan(workers, nodes, hw)
    monkeypatch.setattr(openstack, "access_from_environment", lambda cloud: {})
    ghost = "node ghost (providerID openstack:///ID): no such server in Nova"
    monkeypatch.setattr(lifecycle, "relabel",
                        lambda job, dry_run, log: lifecycle.Relabelled(plan, [ghost]))
    status, doc = run(capsys, ["relabel", "--stack", "vnf", "--worker-vdu", "w0",
                               "--dry-run"], fmt)
    assert status == 1
    assert doc["changes"] == {"n0": {"CIS-node": "cmp-a"}}
    assert doc["warnings"] and doc["workers"][2]["node"] is None
    assert doc["errors"] == plan.errors + [ghost] and len(doc["errors"]) == 2
