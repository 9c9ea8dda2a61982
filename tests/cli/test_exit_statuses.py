"""Every row of doc/cli.md's "Exit statuses" table, run: each case builds its input, runs
the command in process (``main``) and checks the status and its one line. The table's
cases and this module's are one set, so a row without a test (or a test without a row)
fails here."""
import json
import os
import re

import pytest
import yaml

from tacker_hwaffinity.cli.main import main

from tests.audit.helpers import anti, node, pod
from tests.builders import namespace
from tests.scheduling.test_diagnosis import cluster, deployment

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CSAR_DATA = os.path.join(ROOT, "tests", "csar", "data")
CASES = {}


def case(name):
    def register(fn):
        CASES[name] = fn
        return fn
    return register


def elsewhere(name, test):
    """A row whose case needs real parts (a control plane, OpenStack): TEST, a
    'path::function' of this repository, covers it; the case checks it is there."""
    path, function = test.split("::")

    def exists(tmp_path, capsys):
        source = open(os.path.join(ROOT, path)).read()
        assert re.search(r"^def %s\(" % re.escape(function), source, re.M), test
    CASES[name] = exists


def write(tmp_path, name, *objects):
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def one_error(err, command):
    """The error text of ERR, which must be exactly one 'hwaffinity COMMAND: error:' line."""
    assert err.count("\n") == 1 and err.startswith("hwaffinity %s: error: " % command), err
    return err[len("hwaffinity %s: error: " % command):-1]


def plan_cluster(tmp_path, *extra):
    """20 workers on 5 hosts (CIS-node), and the Namespaces default and cnf."""
    return write(tmp_path, "cluster.yaml", *cluster(),
                 namespace("default"), namespace("cnf"), *extra)


@case("plan.placed")
def _(tmp_path, capsys):
    web = write(tmp_path, "web.yaml", deployment(replicas=3))
    status, out, _err = run(capsys, "plan", "--cluster", plan_cluster(tmp_path), web)
    assert status == 0 and "3 of 3 pods placed" in out


@case("plan.unplaced")
def _(tmp_path, capsys):
    web = write(tmp_path, "web.yaml", deployment(replicas=6, aff=anti("web")))
    status, out, _err = run(capsys, "plan", "--cluster", plan_cluster(tmp_path), web)
    assert status == 1 and "5 of 6 pods placed" in out


@case("plan.daemonset-nowhere")
def _(tmp_path, capsys):
    ds = deployment(name="sriov-dp", nodeSelector={"sriov": "true"})
    ds["kind"] = "DaemonSet"
    del ds["spec"]["replicas"]
    status, out, _err = run(capsys, "plan", "--cluster", plan_cluster(tmp_path),
                            write(tmp_path, "ds.yaml", ds))
    assert status == 1 and ("DaemonSet default/sriov-dp: runs on none of the 20 nodes: its "
                            "node selector, required node affinity and taints admit none") \
        in " ".join(out.split())


@case("plan.bad-input")
def _(tmp_path, capsys):
    bad = deployment()
    bad["spec"]["replicas"] = "three"
    status, out, err = run(capsys, "plan", "--cluster", plan_cluster(tmp_path),
                           write(tmp_path, "web.yaml", bad))
    assert status == 2 and out == "" and "field spec.replicas" in one_error(err, "plan")


@case("plan.no-workload")
def _(tmp_path, capsys):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    status, _out, err = run(capsys, "plan", "--cluster", plan_cluster(tmp_path),
                            write(tmp_path, "cm.yaml", cm))
    assert status == 2 and "no workloads in" in one_error(err, "plan")
    status, _out, err = run(capsys, "plan", "--cluster", plan_cluster(tmp_path), "--max-pods",
                            "2", write(tmp_path, "web.yaml", deployment(replicas=3)))
    assert status == 2 and "over the limit of 2" in one_error(err, "plan")


@case("plan.key-missing")
def _(tmp_path, capsys):
    web = write(tmp_path, "web.yaml", deployment(replicas=2))
    status, out, err = run(capsys, "plan", "--cluster", plan_cluster(tmp_path), web,
                           "--topology-key", "cis-node")
    assert (status, out) == (2, "")
    assert one_error(err, "plan") == ('field --topology-key: no node carries the label '
                                      '"cis-node" (did you mean "CIS-node"?)')


def test_a_namespace_the_cluster_lacks_is_a_warning(tmp_path, capsys):
    """An operator may plan before creating the namespace: a warning, not an exit."""
    nodes = plan_cluster(tmp_path)
    bare = dict(deployment(replicas=2), metadata={"name": "web"})
    web = write(tmp_path, "web.yaml", bare)
    status, out, err = run(capsys, "plan", "--cluster", nodes, web, "-n", "cfn")
    assert status == 0 and "2 of 2 pods placed" in out
    assert err == (
        'Warning: %s: Deployment cfn/web: field metadata.namespace: namespace "cfn" is not '
        'in the cluster (did you mean "cnf"?) and no Namespace of the manifests creates it: '
        "the API server would refuse to create the object there\n" % web)
    made = write(tmp_path, "made.yaml", {"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": "cfn"}}, bare)
    assert run(capsys, "plan", "--cluster", nodes, made, "-n", "cfn")[2] == ""
    web = write(tmp_path, "web.yaml", deployment(replicas=1, ns="cfn"))
    status, _out, err = run(capsys, "explain", "--cluster", nodes, "--pod", web)
    assert status == 0 and 'namespace "cfn" is not in the cluster' in err


@case("plan.namespace-mismatch")
def _(tmp_path, capsys):
    web = write(tmp_path, "web.yaml", deployment(replicas=2, ns="cnf"))
    status, _out, err = run(capsys, "plan", "--cluster", plan_cluster(tmp_path), web,
                            "--namespace", "default")
    assert status == 2 and one_error(err, "plan").endswith(
        "the namespace from the provided object \"cnf\" does not match the namespace "
        "\"default\". You must pass '--namespace=cnf' to perform this operation.")


@case("explain.fits")
def _(tmp_path, capsys):
    web = write(tmp_path, "web.yaml", dict(deployment(replicas=1), metadata={"name": "web"}))
    status, out, _err = run(capsys, "explain", "--cluster", plan_cluster(tmp_path),
                            "--pod", web, "-n", "cnf")
    assert status == 0 and out.startswith("Pod cnf/web-")


@case("explain.fits-nowhere")
def _(tmp_path, capsys):
    web = write(tmp_path, "web.yaml", deployment(replicas=1, cpu="64"))
    status, out, _err = run(capsys, "explain", "--cluster", plan_cluster(tmp_path),
                            "--pod", web)
    assert status == 1 and "Selected: none (0/20 nodes are available" in out


def audit_cluster(tmp_path, labelled=True):
    """StatefulSet s in namespace cnf, apart on two hosts (or on two unlabelled nodes)."""
    hosts = ("h1", "h2") if labelled else (None, None)
    return write(tmp_path, "audit.yaml", node("w1", hosts[0]), node("w2", hosts[1]),
                 namespace("cnf"), *[
                     pod("s-%d" % i, n, {"app": "s"}, ("StatefulSet", "s"), ns="cnf",
                         affinity=anti("s")) for i, n in enumerate(["w1", "w2"])])


@case("audit.ok")
def _(tmp_path, capsys):
    status, _out, err = run(capsys, "audit", "--cluster", audit_cluster(tmp_path),
                            "--max-loss", "50%", "--fail-on", "intent-unmet", "-n", "cnf")
    assert (status, err) == (0, "")


@case("audit.over")
def _(tmp_path, capsys):
    status, out, _err = run(capsys, "audit", "--cluster", audit_cluster(tmp_path),
                            "--max-loss", "40%")
    assert status == 1 and "Over threshold: StatefulSet cnf/s: loses 1 of 2 (50%)" in out


@case("audit.key-missing")
def _(tmp_path, capsys):
    status, out, err = run(capsys, "audit", "--cluster", audit_cluster(tmp_path),
                           "--max-loss", "40%", "--topology-key", "cis-node")
    assert (status, out) == (2, "")
    assert one_error(err, "audit") == ('field --topology-key: no node carries the label '
                                       '"cis-node" (did you mean "CIS-node"?)')


@case("audit.no-host-label")
def _(tmp_path, capsys):
    status, out, err = run(capsys, "audit", "--cluster", audit_cluster(tmp_path, False),
                           "--max-loss", "40%")
    assert (status, out) == (2, "")
    assert one_error(err, "audit").startswith(
        "field --topology-key: no node carries a host label (CIS-node, "
        "topology.openstack.org/host-id, topology.scs.community/host-id)")
    # naming a key asks another question, which can be answered
    status, _out, _err = run(capsys, "audit", "--cluster", audit_cluster(tmp_path, False),
                             "--max-loss", "40%", "--topology-key", "kubernetes.io/hostname")
    assert status == 1


@case("audit.host-unknown")
def _(tmp_path, capsys):
    cluster = write(tmp_path, "partly.yaml", node("w1", "h1"), node("w2", None),
                    namespace("cnf"), *[
                        pod("s-%d" % i, n, {"app": "s"}, ("StatefulSet", "s"), ns="cnf",
                            affinity=anti("s")) for i, n in enumerate(["w1", "w2"])])
    for gate in (["--max-loss", "50%"], ["--fail-on", "pdb-violated"]):
        status, out, err = run(capsys, "audit", "--cluster", cluster, *gate)
        assert (status, out) == (2, "")
        assert one_error(err, "audit") == (
            "field %s: 1 workload(s) (StatefulSet cnf/s) run replicas on node(s) without the "
            "CIS-node label (w2): which host they share is unknown, so %s cannot be "
            "answered; label them (hwaffinity relabel), ask Nova (--openstack), or narrow "
            "the audit (-n)" % (gate[0], " ".join(gate) if gate[0] == "--fail-on" else gate[0]))
    # the report alone, and a gate that needs no host, are answered
    assert run(capsys, "audit", "--cluster", cluster)[0] == 0
    assert run(capsys, "audit", "--cluster", cluster, "--fail-on", "intent-unmet")[0] == 0


@case("audit.namespace-missing")
def _(tmp_path, capsys):
    status, out, err = run(capsys, "audit", "--cluster", audit_cluster(tmp_path),
                           "--max-loss", "40%", "-n", "cfn")
    assert (status, out) == (2, "")
    assert one_error(err, "audit") == ("field --namespace: no namespace 'cfn' in the cluster "
                                       "(did you mean 'cnf'?)")


@case("audit.bad-threshold")
def _(tmp_path, capsys):
    for bad in ("x", "40%\n", "1" * 10, "101%", "-1", "4" * 5000):
        status, _out, err = run(capsys, "audit", "--cluster", audit_cluster(tmp_path),
                                "--max-loss", bad)
        assert status == 2 and "field --max-loss" in one_error(err, "audit"), bad


@case("audit.stale-needs-openstack")
def _(tmp_path, capsys):
    status, _out, err = run(capsys, "audit", "--cluster", audit_cluster(tmp_path),
                            "--fail-on", "stale-labels")
    assert status == 2 and "needs OpenStack credentials" in one_error(err, "audit")


@pytest.fixture(scope="module")
def cnf_package(tmp_path_factory):
    pkg = str(tmp_path_factory.mktemp("cnf") / "cnf.zip")
    assert main(["csar", "build", os.path.join(CSAR_DATA, "cnf"), "--output-file", pkg]) == 0
    return pkg


@case("csar-validate.ok")
def _(tmp_path, capsys, cnf_package):
    status, out, _err = run(capsys, "csar", "validate", cnf_package, "--cluster",
                            os.path.join(CSAR_DATA, "cluster.yaml"))
    assert status == 0 and out.endswith("%s: OK\n" % cnf_package)


@case("csar-validate.problems")
def _(tmp_path, capsys, cnf_package):
    request = tmp_path / "instantiate.json"
    request.write_text(json.dumps({"flavourId": "simple", "additionalParams": {
        "lcm-kubernetes-def-files": ["Files/kubernetes/missing.yaml"], "namespace": "cnf"}}))
    status, out, _err = run(capsys, "csar", "validate", cnf_package,
                            "--instantiate-request", str(request))
    assert status == 1 and "problem: Files/kubernetes/missing.yaml: field " \
        "lcm-kubernetes-def-files: not a Kubernetes manifest of" in out
    assert "(CnfDefinitionNotFound)" in out


@case("csar-validate.unusable")
def _(tmp_path, capsys, cnf_package):
    not_zip = tmp_path / "x.zip"
    not_zip.write_text("not a zip")
    status, out, err = run(capsys, "csar", "validate", str(not_zip))
    assert status == 2 and out == "" and one_error(err, "csar validate")
    status, _out, err = run(capsys, "csar", "validate", cnf_package, "--instantiate-request",
                            str(not_zip))
    assert status == 2 and "not JSON" in one_error(err, "csar validate")


@case("csar-validate.key-missing")
def _(tmp_path, capsys, cnf_package):
    status, _out, err = run(capsys, "csar", "validate", cnf_package, "--cluster",
                            os.path.join(CSAR_DATA, "cluster.yaml"), "--topology-key", "cis")
    assert status == 2 and 'no node carries the label "cis"' in one_error(err, "csar validate")


@case("csar-build.written")
def _(tmp_path, capsys, cnf_package):
    assert os.path.getsize(cnf_package) > 0


@case("csar-build.bad-input")
def _(tmp_path, capsys):
    out_file = tmp_path / "none.zip"
    status, _out, err = run(capsys, "csar", "build", str(tmp_path / "missing"),
                            "--output-file", str(out_file))
    assert status == 2 and one_error(err, "csar build") and not out_file.exists()


NUMA = os.path.join(ROOT, "samples", "numa")
# a CRI-RM affinity with a misspelt field, on line 11 of the file
BAD_AFFINITY = """apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: prod
  annotations:
    cri-resource-manager.intel.com/affinity: |
      c1:
        - scope: {key: pod/name, operator: Equals, values: [web]}
          match: {key: name, operator: Equals, values: [c2]}
          wieght: 3
spec:
  containers: [{name: c1, image: x}, {name: c2, image: x}]
"""


@case("numa-explain.decoded")
def _(tmp_path, capsys):
    status, out, _err = run(capsys, "numa", "explain", os.path.join(NUMA, "pods.yaml"))
    assert status == 0 and out


@case("numa-explain.bad-annotation")
def _(tmp_path, capsys):
    bad = tmp_path / "pods.yaml"
    bad.write_text(BAD_AFFINITY)
    status, _out, err = run(capsys, "numa", "explain", str(bad))
    assert status == 2 and one_error(err, "numa explain").endswith(
        "unknown field 'wieght' (expected scope, match, weight) (line 11, column 11)")


@case("numa-plan.placed")
def _(tmp_path, capsys):
    status, _out, _err = run(capsys, "numa", "plan", os.path.join(NUMA, "pods.yaml"),
                             "--machine", os.path.join(NUMA, "machine.yaml"))
    assert status == 0


@case("numa-plan.unplaced")
def _(tmp_path, capsys):
    big = write(tmp_path, "big.yaml", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big", "namespace": "d"},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {
            "requests": {"cpu": "500", "memory": "1Gi"},
            "limits": {"cpu": "500", "memory": "1Gi"}}}]}})
    status, _out, err = run(capsys, "numa", "plan", big,
                            "--machine", os.path.join(NUMA, "machine.yaml"))
    assert status == 1 and err.startswith("hwaffinity numa plan: d/big/c not placed: ")


@case("numa-plan.bad-input")
def _(tmp_path, capsys):
    status, _out, err = run(capsys, "numa", "plan", os.path.join(NUMA, "pods.yaml"),
                            "--machine", str(tmp_path / "none.yaml"))
    assert status == 2 and "none.yaml" in one_error(err, "numa plan")


@case("translate.written")
def _(tmp_path, capsys):
    out_dir = tmp_path / "heat"
    status, out, _err = run(capsys, "translate", os.path.join(ROOT, "csar", "k8s-cluster"),
                            "--flavour", "podaffinity", "--output-dir", str(out_dir))
    assert status == 0 and (out_dir / "main.yaml").is_file()


@case("translate.bad-input")
def _(tmp_path, capsys):
    status, out, err = run(capsys, "translate", os.path.join(ROOT, "csar", "k8s-cluster"),
                           "--output-dir", str(tmp_path / "heat"))
    assert (status, out) == (2, "") and "field --flavour: several deployment flavours" \
        in one_error(err, "translate")
    assert not (tmp_path / "heat").exists()


elsewhere("relabel.correct", "tests/mgmt/test_relabel_cli.py::"
          "test_relabel_fixes_stale_labels_and_is_idempotent")
elsewhere("relabel.failed", "tests/mgmt/test_relabel_cli.py::"
          "test_a_worker_without_a_node_is_listed_and_exits_1")


@case("relabel.bad-input")
def _(tmp_path, capsys, monkeypatch):
    for var in list(os.environ):
        if var.startswith("OS_"):
            monkeypatch.delenv(var)
    status, out, err = run(capsys, "relabel", "--stack", "vnf", "--worker-aspect", "w")
    assert (status, out) == (2, "") and one_error(err, "relabel").startswith(
        "no OpenStack credentials")
    status, _out, err = run(capsys, "relabel", "--stack", "vnf",
                            "--params", str(tmp_path / "none.yaml"))
    assert status == 2 and "field --params: cannot read" in one_error(err, "relabel")
    status, _out, err = run(capsys, "relabel", "--cluster-nodes", "--stack", "vnf")
    assert status == 2 and one_error(err, "relabel").startswith("field --stack: give one of "
                                                                "--cluster-nodes, ")


elsewhere("daemon.stopped", "tests/webhook/test_cli.py::"
          "test_ctrl_c_stops_the_webhook_cleanly_with_exit_0")


@case("agent.refused")
def _(tmp_path, capsys):
    cgroups = tmp_path / "cgroup"
    (cgroups / "unified").mkdir(parents=True)
    status, _out, err = run(capsys, "agent", "--node", "n1", "--mode", "cgroupfs",
                            "--cgroup-root", str(cgroups), "--kubeconfig",
                            str(tmp_path / "none"))
    assert status == 2
    assert err.splitlines()[-1].startswith("hwaffinity agent: error: refusing to run: ")


@case("controller.refused")
def _(tmp_path, capsys):
    status, _out, err = run(capsys, "controller", "--stack", "vnf")
    assert status == 2 and one_error(err, "controller") == (
        "field --stack: name the workers of the stack with --aspect and/or --vdu")


@case("webhook-serve.refused")
def _(tmp_path, capsys):
    status, _out, err = run(capsys, "webhook", "serve", "--cert", str(tmp_path / "tls.crt"),
                            "--key", str(tmp_path / "tls.key"))
    assert status == 2 and one_error(err, "webhook serve").startswith(
        "field --cert: no such file")


@case("completion.printed")
def _(tmp_path, capsys):
    status, out, _err = run(capsys, "completion", "bash")
    assert status == 0 and "hwaffinity" in out


@case("usage")
def _(tmp_path, capsys):
    for argv in (["plan", "--no-such-option"], ["audit", "--fail-on", "nothing"],
                 ["explain"], ["csar", "validate"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2, argv
        assert ": error: " in capsys.readouterr().err


@case("interrupt")
def _(tmp_path, capsys, monkeypatch):
    from tacker_hwaffinity.cli import plan

    def interrupted(args):
        raise KeyboardInterrupt
    monkeypatch.setattr(plan, "run", interrupted)
    assert run(capsys, "plan", "--cluster", plan_cluster(tmp_path), "x.yaml") == (130, "", "")


def table_cases():
    """The first column of doc/cli.md's "Exit statuses" table."""
    text = open(os.path.join(ROOT, "doc", "cli.md")).read()
    section = text.split("## Exit statuses", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z.-]+)` \|", section, re.M)


def test_every_row_of_the_table_has_a_case_and_every_case_a_row():
    rows = table_cases()
    assert len(rows) == len(set(rows))
    assert set(rows) == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_exit_status(name, request, tmp_path, capsys):
    fn = CASES[name]
    kwargs = {"tmp_path": tmp_path, "capsys": capsys}
    params = fn.__code__.co_varnames[:fn.__code__.co_argcount]
    for extra in params:
        if extra not in kwargs:
            kwargs[extra] = request.getfixturevalue(extra)
    fn(**kwargs)
