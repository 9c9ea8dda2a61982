"""What operators feed the commands (#54): the ``helm template`` output of a CNF chart
(samples/helm/cnf-upf.yaml: Multus NetworkAttachmentDefinitions, SR-IOV, a
ServiceMonitor, PodDisruptionBudgets, a ConfigMap and ServiceAccount, a DaemonSet, a
pre-install Job and a test Pod as Helm hooks) is planned: what is not planned is named in
notes, the DaemonSet's pods are planned per node, and a mistyped built-in kind is still
exit 2. In process, through ``main``."""
import json
import os

import yaml

from tacker_hwaffinity.cli import main as cli_main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HELM = os.path.join(ROOT, "samples", "helm")
CLUSTER = os.path.join(HELM, "cluster.yaml")
CHART = os.path.join(HELM, "cnf-upf.yaml")
# The plan of the chart: the node agent DaemonSet first (helm's order), one pod per SR-IOV
# node; the SMF's two replicas apart (preferred anti-affinity); the UPF's three on the three
# hosts with virtual functions (required anti-affinity, intel.com/sriov_netdevice).
PLACEMENTS = {
    "cnf/edge1-nodeagent-j2lsv": "worker-0", "cnf/edge1-nodeagent-9wdbh": "worker-1",
    "cnf/edge1-nodeagent-jb4df": "worker-2", "cnf/edge1-smf-6cbcdbf68-96c9f": "worker-1",
    "cnf/edge1-smf-6cbcdbf68-mrw2p": "worker-2", "cnf/edge1-upf-0": "worker-0",
    "cnf/edge1-upf-1": "worker-1", "cnf/edge1-upf-2": "worker-2"}
DOMAINS = {"compute-1": ["cnf/edge1-nodeagent-j2lsv", "cnf/edge1-upf-0"],
           "compute-2": ["cnf/edge1-nodeagent-9wdbh", "cnf/edge1-smf-6cbcdbf68-96c9f",
                         "cnf/edge1-upf-1"],
           "compute-3": ["cnf/edge1-nodeagent-jb4df", "cnf/edge1-smf-6cbcdbf68-mrw2p",
                         "cnf/edge1-upf-2"]}


def run(capsys, *argv):
    """(exit status, stdout, stderr) of ``hwaffinity ARGV``."""
    status = cli_main.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def plan_json(capsys, *files):
    status, out, err = run(capsys, "plan", "--cluster", CLUSTER, *files, "-o", "json")
    return status, json.loads(out) if out else None, err


def test_the_chart_is_helm_template_output():
    with open(CHART, encoding="utf-8") as f:
        text = f.read()
    assert text.startswith("# What `helm template")
    docs = text.split("\n---\n")[1:]
    assert all(d.startswith("# Source: cnf-upf/templates/") for d in docs)
    kinds = [d["kind"] for d in yaml.safe_load_all(text) if d]
    assert kinds.index("DaemonSet") < kinds.index("Deployment") < kinds.index("StatefulSet")


def test_the_chart_is_planned_with_its_skipped_objects_named(capsys):
    status, doc, err = plan_json(capsys, CHART)
    assert status == 0, err
    placed = {p["pod"]: p["node"] for p in doc["placements"]}
    agents = sorted(n for pod, n in placed.items() if pod.startswith("cnf/edge1-nodeagent-"))
    assert agents == ["worker-0", "worker-1", "worker-2"]      # the SR-IOV nodes
    upf = {placed["cnf/edge1-upf-%d" % i] for i in range(3)}
    assert upf == {"worker-0", "worker-1", "worker-2"}          # one per host, with VFs
    assert PLACEMENTS == placed
    assert doc["domains"] == DOMAINS
    assert ("%s: 9 objects are not workloads and are skipped: PodDisruptionBudget/edge1-smf "
            "(policy/v1), PodDisruptionBudget/edge1-upf (policy/v1), ServiceAccount/"
            "edge1-cnf-upf (v1), ConfigMap/edge1-upf-config (v1), Service/edge1-smf (v1), "
            "Service/edge1-upf-metrics (v1), NetworkAttachmentDefinition/edge1-sriov-n3 "
            "(k8s.cni.cncf.io/v1), NetworkAttachmentDefinition/edge1-sriov-n6 "
            "(k8s.cni.cncf.io/v1), ServiceMonitor/edge1-upf (monitoring.coreos.com/v1)"
            % CHART) in doc["notes"]
    assert ("%s: 2 objects are Helm hooks, not part of the release, and are not planned: "
            "Job/edge1-upf-preflight (helm.sh/hook: pre-install), Pod/edge1-upf-test-connection "
            "(helm.sh/hook: test)" % CHART) in doc["notes"]
    assert not doc["unplaced"]


def test_the_text_plan_of_the_chart(capsys):
    status, out, _ = run(capsys, "plan", "--cluster", CLUSTER, CHART)
    assert status == 0
    assert "8 of 8 pods placed on 3 distinct CIS-node value(s)." in out


def test_explain_of_the_chart_explains_its_daemon_pod_unpinned(capsys):
    status, out, err = run(capsys, "explain", "--cluster", CLUSTER, "--pod", CHART, "-o",
                           "json")
    assert status == 0, err
    doc = json.loads(out)
    assert doc["pod"].startswith("cnf/edge1-nodeagent-")
    feasible = sorted(n["name"] for n in doc["nodes"] if n["feasible"])
    assert feasible == ["worker-0", "worker-1", "worker-2"]
    assert any("DaemonSet cnf/edge1-nodeagent runs one pod on each node" in n
               for n in doc["notes"])


def test_a_mistyped_built_in_kind_in_a_chart_is_exit_2_with_the_kind_meant(capsys, tmp_path):
    with open(CHART, encoding="utf-8") as f:
        text = f.read().replace("kind: StatefulSet", "kind: StatefullSet")
    bad = tmp_path / "chart.yaml"
    bad.write_text(text)
    status, out, err = run(capsys, "plan", "--cluster", CLUSTER, str(bad))
    assert (status, out) == (2, "")
    error = err.splitlines()[-1]      # after the schema check's warning on the same kind
    assert error.startswith("hwaffinity plan: error: %s: StatefullSet cnf/edge1-upf: field "
                            "kind: unknown kind 'StatefullSet' in apps/v1: not a kind of "
                            "Kubernetes 1." % bad)
    assert error.endswith("(did you mean StatefulSet?)")


def test_custom_resources_in_the_cluster_snapshot_are_skipped_with_a_note(capsys, tmp_path):
    with open(CLUSTER, encoding="utf-8") as f:
        snapshot = yaml.safe_load(f)
    snapshot["items"].append({"apiVersion": "k8s.cni.cncf.io/v1",
                              "kind": "NetworkAttachmentDefinition",
                              "metadata": {"name": "n3", "namespace": "cnf"}})
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(snapshot))
    status, out, err = run(capsys, "plan", "--cluster", str(path), CHART, "-o", "json")
    assert status == 0, err
    assert ("%s: 1 object is not read for the cluster snapshot and is skipped: "
            "NetworkAttachmentDefinition/n3 (k8s.cni.cncf.io/v1)" % path) \
        in json.loads(out)["notes"]


def test_a_cluster_file_of_custom_resources_only_is_no_snapshot(capsys, tmp_path):
    path = tmp_path / "nads.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "k8s.cni.cncf.io/v1",
                                    "kind": "NetworkAttachmentDefinition",
                                    "metadata": {"name": "n3", "namespace": "cnf"}}))
    for command in (["plan", CHART], ["audit"]):
        status, out, err = run(capsys, command[0], "--cluster", CLUSTER, "--cluster",
                               str(path), *command[1:])
        assert (status, out) == (2, ""), err
        assert ("%s: holds 1 NetworkAttachmentDefinition and nothing a cluster snapshot is "
                "read for" % path) in err
