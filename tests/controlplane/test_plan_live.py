"""`hwaffinity plan/explain --kubeconfig`: the snapshot read from the real API
server, compared with the same cluster read through `kubectl get -o yaml`,
and every way the connection can fail (one line, exit 2)."""
import json
import os
import subprocess
import sys

import pytest
import yaml

from tacker_hwaffinity.kube import client as kube_client
from tacker_hwaffinity.kube.cluster import LISTS, read_cluster

from . import harness
from . import workloads as w

pytestmark = pytest.mark.controlplane
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAN_READER = os.path.join(ROOT, "deploy", "rbac", "plan-reader.yaml")


def hwaffinity(*args, stdin=None, env=None):
    return subprocess.run([sys.executable, "-m", "tacker_hwaffinity.cli.main"] + list(args),
                          input=stdin, capture_output=True, text=True, timeout=120, env=env)


def one_line_error(result):
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture
def existing_pods(control_plane, host_nodes, namespace):
    labels = {"app": "live"}
    for i, node in enumerate(sorted(host_nodes)[:4]):
        control_plane.admin.create("/api/v1/namespaces/%s/pods" % namespace, w.pod(
            "live-%d" % i, namespace, labels, node_selector={"kubernetes.io/hostname": node}))
    harness.wait_until(lambda: len([p for p in control_plane.pods(namespace)
                                    if p["status"].get("phase") == "Running"]) == 4,
                       60, what="4 pods Running")
    return namespace


def test_a_plan_read_from_the_api_equals_the_plan_from_kubectl_yaml(
        control_plane, existing_pods, tmp_path):
    cp, ns = control_plane, existing_pods
    labels = {"app": "live"}
    workload = tmp_path / "deploy.yaml"
    workload.write_text(yaml.safe_dump(w.deployment(
        "spread", ns, 5, {"app": "spread"},
        aff={**w.affinity("anti", "preferred", "CIS-node", {"app": "spread"}),
             **w.affinity("affinity", "preferred", "kubernetes.io/hostname", labels)})))
    snapshot = tmp_path / "cluster.yaml"
    cp.wait_quiet()     # every bound pod counts in the resource scores: both reads must agree
    snapshot.write_text(cp.snapshot_yaml())
    from_file = hwaffinity("plan", "--cluster", str(snapshot), str(workload), "-o", "json")
    live = hwaffinity("plan", "--kubeconfig", cp.reader_kubeconfig, str(workload), "-o", "json")
    assert from_file.returncode == 0, from_file.stderr
    assert live.returncode == 0, live.stderr
    a, b = json.loads(from_file.stdout), json.loads(live.stdout)
    assert a["placements"] == b["placements"] and a["domains"] == b["domains"]
    assert a["notes"] == b["notes"]
    assert len(b["placements"]) == 5 and all(p["node"] for p in b["placements"])
    # as kubectl does: $KUBECONFIG without the flag, then ~/.kube/config without either
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    by_env = hwaffinity("plan", str(workload), "-o", "json",
                        env=dict(env, KUBECONFIG=cp.reader_kubeconfig, HOME=str(home)))
    assert by_env.returncode == 0, by_env.stderr
    assert json.loads(by_env.stdout)["placements"] == b["placements"]
    (home / ".kube" / "config").write_text(open(cp.reader_kubeconfig).read())
    by_home = hwaffinity("plan", str(workload), "-o", "json", env=dict(env, HOME=str(home)))
    assert by_home.returncode == 0, by_home.stderr
    assert json.loads(by_home.stdout)["placements"] == b["placements"]
    # explain reads the same way
    e_file = hwaffinity("explain", "--cluster", str(snapshot), "--pod", str(workload),
                        "-o", "json")
    e_live = hwaffinity("explain", "--kubeconfig", cp.reader_kubeconfig, "--context",
                        "hwaffinity", "--pod", str(workload), "-o", "json")
    assert e_file.returncode == 0 and e_live.returncode == 0, e_live.stderr
    assert json.loads(e_file.stdout) == json.loads(e_live.stdout)


def test_paged_lists_read_everything_at_one_version(control_plane, existing_pods):
    conn = kube_client.connect(control_plane.kubeconfig)
    try:
        whole, notes = read_cluster(conn)
        paged, paged_notes = read_cluster(conn, page_size=2)
    finally:
        conn.close()
    assert notes == paged_notes == []

    def keys(objects):
        return [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])
                for o, _ in objects]
    assert keys(whole) == keys(paged)
    kinds = [k for k, _, _ in keys(whole)]
    assert kinds == sorted(kinds, key=[k for k, _, _, _ in LISTS].index)
    assert kinds.count("Pod") >= 4 and kinds.count("Node") >= 6
    obj, source = whole[0]
    assert obj["apiVersion"] == "v1" and source.startswith("cluster https://127.0.0.1:")


def test_the_documented_cluster_role_is_enough(control_plane, host_nodes, tmp_path):
    cp = control_plane
    out = subprocess.run([cp.bin["kubectl"], "--kubeconfig", cp.kubeconfig, "apply", "-f",
                          PLAN_READER], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    kubeconfig = cp.user_kubeconfig("plan-reader-user", "hwaffinity-plan-reader")
    pod = tmp_path / "pod.yaml"
    pod.write_text(yaml.safe_dump(w.pod("probe", "default", {"app": "probe"})))
    result = hwaffinity("plan", "--kubeconfig", kubeconfig, str(pod))
    assert result.returncode == 0, result.stderr
    assert "1 of 1 pods placed" in result.stdout


def test_missing_rbac_is_one_line_naming_what_to_grant(control_plane, tmp_path):
    kubeconfig = control_plane.user_kubeconfig("nobody-at-all")
    pod = tmp_path / "pod.yaml"
    pod.write_text(yaml.safe_dump(w.pod("probe", "default", {"app": "probe"})))
    line = one_line_error(hwaffinity("plan", "--kubeconfig", kubeconfig, str(pod)))
    assert "forbidden to list nodes" in line and "ClusterRole" in line
    assert control_plane.server in line


def test_an_unreachable_server_is_one_line(control_plane, tmp_path):
    with open(control_plane.kubeconfig) as f:
        cfg = json.load(f)
    cfg["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:%d" % harness.free_port()
    kubeconfig = tmp_path / "closed.kubeconfig"
    kubeconfig.write_text(json.dumps(cfg))
    pod = tmp_path / "pod.yaml"
    pod.write_text(yaml.safe_dump(w.pod("probe", "default", {"app": "probe"})))
    line = one_line_error(hwaffinity("plan", "--kubeconfig", str(kubeconfig), str(pod)))
    assert "unreachable" in line and cfg["clusters"][0]["cluster"]["server"] in line


@pytest.mark.parametrize("case", ["missing", "garbage", "context"])
def test_a_bad_kubeconfig_is_one_line(control_plane, tmp_path, case):
    pod = tmp_path / "pod.yaml"
    pod.write_text(yaml.safe_dump(w.pod("probe", "default", {"app": "probe"})))
    kubeconfig, extra = str(tmp_path / "kubeconfig"), []
    if case == "garbage":
        (tmp_path / "kubeconfig").write_text("clusters: [\n")
    elif case == "context":
        kubeconfig, extra = control_plane.kubeconfig, ["--context", "no-such-context"]
    line = one_line_error(hwaffinity("plan", "--kubeconfig", kubeconfig, *extra, str(pod)))
    assert "kubeconfig" in line
    if case == "context":
        assert "no-such-context" in line


def test_cluster_and_kubeconfig_are_exclusive_and_context_needs_kubeconfig(tmp_path):
    snapshot = os.path.join(ROOT, "samples", "cluster.yaml")
    pod = os.path.join(ROOT, "samples", "cnf", "upf-required.yaml")
    r = hwaffinity("plan", "--cluster", snapshot, "--kubeconfig", "x", pod)
    assert r.returncode == 2 and "not allowed with" in r.stderr
    line = one_line_error(hwaffinity("plan", "--cluster", snapshot, "--context", "c", pod))
    assert "--context" in line and "--cluster" in line
