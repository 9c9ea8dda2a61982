"""The hwaffinity CLI on the shipped samples and on bad input (exit codes, no tracebacks)."""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tacker_hwaffinity.scheduling.profile import Profile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, "samples")
CLUSTER = os.path.join(SAMPLES, "cluster.yaml")
UPF = os.path.join(SAMPLES, "cnf", "upf-required.yaml")
SMF = os.path.join(SAMPLES, "cnf", "smf-preferred.yaml")


def cli(*args, stdin=None):
    p = subprocess.run([sys.executable, "-m", "tacker_hwaffinity.cli.main"] + list(args),
                       capture_output=True, text=True, input=stdin, cwd=ROOT, timeout=120)
    assert "Traceback" not in p.stderr, p.stderr
    return p


def test_plan_samples_json_places_every_replica_on_its_own_host():
    p = cli("plan", "--cluster", CLUSTER, UPF, SMF, "-o", "json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    upf = [x for x in out["placements"] if x["pod"].startswith("cnf/upf-")]
    assert len(upf) == 3 and len({x["domain"] for x in upf}) == 3
    assert all(set(x) == {"pod", "node", "domain", "reasons"} for x in out["placements"])
    assert sorted(out["domains"]) == ["compute-1", "compute-2", "compute-3"]
    assert all(len(v) == 3 for v in out["domains"].values())


def test_plan_text_and_exit_1_when_a_replica_cannot_be_placed(tmp_path):
    four = tmp_path / "upf4.yaml"
    four.write_text(open(UPF).read().replace("replicas: 3", "replicas: 4"))
    p = cli("plan", "--cluster", CLUSTER, str(four))
    assert p.returncode == 1
    assert "0/7 nodes are available: 1 node(s) had untolerated taint " \
           "{node-role.kubernetes.io/control-plane: }, 6 node(s) didn't match pod " \
           "anti-affinity rules." in " ".join(p.stdout.split())    # wrapped at 100 columns
    assert "3 of 4 pods placed on 3 distinct CIS-node value(s)." in p.stdout


def test_plan_svg_is_well_formed_and_shows_every_host_and_pod():
    p = cli("plan", "--cluster", CLUSTER, UPF, "-o", "svg")
    assert p.returncode == 0
    root = ET.fromstring(p.stdout)
    text = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    for host in ("compute-1", "compute-2", "compute-3"):
        assert host in text
    assert text.count("upf-58655487d8-") == 3          # the pods (the legend names their RS)
    assert "ReplicaSet cnf/upf-58655487d8" in text


def test_cluster_from_stdin():
    p = cli("plan", "--cluster", "-", UPF, "-o", "json", stdin=open(CLUSTER).read())
    assert p.returncode == 0


def test_explain_json_contract():
    p = cli("explain", "--cluster", CLUSTER, "--pod", UPF, "-o", "json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert len(out["nodes"]) == 7
    for n in out["nodes"]:
        assert set(n) >= {"name", "feasible", "reasons", "scores", "total"}
    master = next(n for n in out["nodes"] if n["name"] == "master-0")
    assert master["feasible"] is False
    assert master["reasons"] == ["node(s) had untolerated taint "
                                 "{node-role.kubernetes.io/control-plane: }"]
    worker = next(n for n in out["nodes"] if n["name"] == "worker-0")
    assert set(worker["scores"]) == {
        "TaintToleration", "NodeAffinity", "NodeResourcesFit", "PodTopologySpread",
        "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality"}
    weights = dict(Profile().scores)
    assert worker["total"] == sum(weights[k] * v for k, v in worker["scores"].items())
    assert worker["scores"]["TaintToleration"] == 100  # no PreferNoSchedule taint


def test_explain_notes_the_gt_lt_extension(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("""
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: x}]
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector:
          matchExpressions: [{key: foo, operator: Gt, values: ["20"]}]
        topologyKey: CIS-node
""")
    out = json.loads(cli("explain", "--cluster", CLUSTER, "--pod", str(f), "-o", "json").stdout)
    assert any("Gt/Lt" in n and "plain Kubernetes rejects" in n for n in out["notes"])


def test_explain_with_scheduler_config(tmp_path):
    cfg = tmp_path / "s.yaml"
    cfg.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                   "profiles:\n- plugins:\n    filter:\n      disabled: [{name: '*'}]\n")
    out = json.loads(cli("explain", "--cluster", CLUSTER, "--pod", UPF, "--scheduler-config",
                         str(cfg), "-o", "json").stdout)
    assert all(n["feasible"] for n in out["nodes"])


BAD = {
    "malformed.yaml": ("kind: Pod\nmetadata: {name: [\n", "malformed YAML at line"),
    "dupkey.yaml": ("kind: Pod\nkind: Pod\nmetadata: {name: a}\n", "duplicate key"),
    "unknownkind.yaml": ("kind: Gizmo\nmetadata: {name: a}\n", "unknown kind 'Gizmo'"),
    "badop.yaml": ("kind: Pod\nmetadata: {name: a}\nspec:\n  affinity:\n    podAntiAffinity:\n"
                   "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                   "      - labelSelector: {matchExpressions: [{key: a, operator: Near}]}\n"
                   "        topologyKey: CIS-node\n",
                   "Pod default/a: field spec.affinity.podAntiAffinity."
                   "requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector."
                   "matchExpressions[0].operator"),
    "gtvalue.yaml": ("kind: Pod\nmetadata: {name: a}\nspec:\n  affinity:\n    podAffinity:\n"
                     "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                     "      - labelSelector: {matchExpressions: [{key: a, operator: Gt, "
                     "values: ['1', '2']}]}\n        topologyKey: CIS-node\n",
                     "exactly one value"),
    "scalar.yaml": ("just a string\n", "expected a Kubernetes object"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_workloads_exit_2_with_file_object_and_field(tmp_path, name):
    text, expected = BAD[name]
    f = tmp_path / name
    f.write_text(text)
    p = cli("plan", "--cluster", CLUSTER, str(f))
    assert p.returncode == 2
    assert str(f) in p.stderr and expected in p.stderr
    assert p.stderr.count("\n") == 1


def test_missing_file_and_bad_node_label(tmp_path):
    p = cli("plan", "--cluster", str(tmp_path / "nope.yaml"), UPF)
    assert p.returncode == 2 and "cannot read file" in p.stderr
    f = tmp_path / "c.yaml"
    f.write_text("kind: Node\nmetadata:\n  name: n\n  labels: {rack: 7}\n")
    p = cli("plan", "--cluster", str(f), UPF)
    assert p.returncode == 2
    assert "Node n: field metadata.labels[rack]" in p.stderr


def test_usage_errors_exit_2():
    assert cli("plan").returncode == 2
    assert cli("explain", "--cluster", CLUSTER).returncode == 2
