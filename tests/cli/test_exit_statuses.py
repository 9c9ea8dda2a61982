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
    assert status == 2 and out == "" and one_error(err, "csar")
    status, _out, err = run(capsys, "csar", "validate", cnf_package, "--instantiate-request",
                            str(not_zip))
    assert status == 2 and "not JSON" in one_error(err, "csar")


@case("csar-validate.key-missing")
def _(tmp_path, capsys, cnf_package):
    status, _out, err = run(capsys, "csar", "validate", cnf_package, "--cluster",
                            os.path.join(CSAR_DATA, "cluster.yaml"), "--topology-key", "cis")
    assert status == 2 and 'no node carries the label "cis"' in one_error(err, "csar")


@case("csar-build.written")
def _(tmp_path, capsys, cnf_package):
    assert os.path.getsize(cnf_package) > 0


@case("csar-build.bad-input")
def _(tmp_path, capsys):
    out_file = tmp_path / "none.zip"
    status, _out, err = run(capsys, "csar", "build", str(tmp_path / "missing"),
                            "--output-file", str(out_file))
    assert status == 2 and one_error(err, "csar") and not out_file.exists()


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
