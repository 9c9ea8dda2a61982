"""Wrong input is an error (#38 item 3): an empty file, a file of the wrong kind, a
snapshot without nodes, manifests without workloads are one line on stderr naming the
file, and exit 2; so are an output path that is a directory or cannot be made, and a
binary file; Ctrl-C is exit 130 and nothing printed. In process, through ``main``."""
import errno
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from builders import namespace, node, pod
from tacker_hwaffinity.cli import main as cli_main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "samples", "cluster.yaml")
UPF = os.path.join(ROOT, "samples", "cnf", "upf-required.yaml")
PDBS = os.path.join(ROOT, "csar", "cnf", "Files", "kubernetes", "disruption-budgets.yaml")
SNAPSHOT = "expected 'kubectl get nodes,pods,namespaces -A -o yaml'"


def run(capsys, *argv):
    """(exit status, stdout, stderr) of ``hwaffinity ARGV``."""
    status = cli_main.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def one_line(capsys, *argv):
    """The one stderr line of ``hwaffinity ARGV``, which must exit 2 and print nothing."""
    status, out, err = run(capsys, *argv)
    assert (status, out) == (2, ""), (status, out, err)
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def write(path, *objects):
    path.write_text(yaml.safe_dump_all(objects) if objects else "")
    return str(path)


@pytest.fixture
def files(tmp_path):
    """Named files: an empty one, a node and its namespace, a pod alone, a namespace
    alone."""
    return {"empty": write(tmp_path / "empty.yaml"),
            "pods": write(tmp_path / "pods.yaml", pod("a", on="n1")),
            "namespaces": write(tmp_path / "namespaces.yaml", namespace("default")),
            "nodes": write(tmp_path / "nodes.yaml", node("n1"), namespace("default"))}


@pytest.mark.parametrize("command", [["plan"], ["audit"], ["explain", "--pod", UPF]],
                         ids=["plan", "audit", "explain"])
def test_an_empty_cluster_file_is_named(capsys, files, command):
    args = command[:1] + ["--cluster", files["nodes"], "--cluster", files["empty"]] + \
        command[1:] + ([UPF] if command == ["plan"] else [])
    err = one_line(capsys, *args)
    assert "%s: no Kubernetes objects in the file: %s" % (files["empty"], SNAPSHOT) in err


@pytest.mark.parametrize("command", ["plan", "audit", "explain"])
def test_a_snapshot_without_nodes_names_every_file(capsys, files, command):
    """Reported: audit printed an empty table and exited 0, so --max-loss passed; plan
    printed '0/0 nodes are available' and a preemption note per pod."""
    extra = {"plan": [UPF], "audit": ["--max-loss", "0"], "explain": ["--pod", UPF]}[command]
    err = one_line(capsys, command, "--cluster", files["pods"], "--cluster",
                   files["namespaces"], *extra)
    assert err == "hwaffinity %s: error: no nodes in the cluster snapshot %s, %s: %s\n" % (
        command, files["pods"], files["namespaces"], SNAPSHOT)


def test_a_workload_given_as_the_cluster_is_named(capsys):
    err = one_line(capsys, "plan", "--cluster", UPF, UPF)
    assert err.startswith("hwaffinity plan: error: %s: holds 1 Deployment and nothing a "
                          "cluster snapshot is read for (Node, Pod, " % UPF), err
    assert err.endswith(SNAPSHOT + "\n")


def test_csar_validate_checks_its_cluster_like_plan(capsys, files):
    err = one_line(capsys, "csar", "validate", "no-such.zip", "--cluster", files["empty"])
    assert "%s: no Kubernetes objects in the file" % files["empty"] in err


def test_empty_and_node_and_workload_free_manifests_are_refused(capsys, files):
    err = one_line(capsys, "plan", "--cluster", CLUSTER, UPF, files["empty"])
    assert ("%s: no Kubernetes objects in the file: expected Pod, Deployment, ReplicaSet, "
            "StatefulSet, DaemonSet, Job or ReplicationController manifests"
            % files["empty"]) in err
    err = one_line(capsys, "plan", "--cluster", CLUSTER, CLUSTER)
    assert ("%s: Node master-0: field kind: a Node is part of the cluster, not a workload: "
            "give it with --cluster" % CLUSTER) in err
    err = one_line(capsys, "plan", "--cluster", CLUSTER, PDBS)
    assert ("error: no workloads in %s: expected Pod, Deployment, ReplicaSet, StatefulSet, "
            "DaemonSet, Job or ReplicationController manifests" % PDBS) in err
    err = one_line(capsys, "explain", "--cluster", CLUSTER, "--pod", CLUSTER)
    assert "a Node is part of the cluster, not a workload" in err


def test_a_file_of_budgets_beside_the_workloads_is_still_a_note(capsys):
    status, out, _ = run(capsys, "plan", "--cluster", CLUSTER, UPF, PDBS, "-o", "json")
    assert status == 0 and any("are not workloads and are skipped: PodDisruptionBudget/" in n
                               for n in json.loads(out)["notes"])


def test_numa_pod_files_must_hold_pods(capsys, files):
    machine = os.path.join(ROOT, "samples", "numa", "machine.yaml")
    err = one_line(capsys, "numa", "plan", "--machine", machine, files["empty"])
    assert "%s: no pods in the file: expected Pod manifests" % files["empty"] in err
    assert "no pods in the file" in one_line(capsys, "numa", "explain", files["empty"])


def test_webhook_certs_into_a_file_is_one_line(capsys, tmp_path):
    pytest.importorskip("cryptography")
    blocker = tmp_path / "certs"
    blocker.write_text("a file")
    err = one_line(capsys, "webhook", "certs", "--out", str(blocker))
    assert "%s: field --out: cannot write: File exists" % blocker in err


def test_ctrl_c_is_exit_130_and_quiet(capsys, monkeypatch):
    from tacker_hwaffinity.cli import plan

    def interrupted(args):
        raise KeyboardInterrupt
    monkeypatch.setattr(plan, "run", interrupted)
    assert run(capsys, "plan", "--cluster", CLUSTER, UPF) == (130, "", "")


_AS_IN_A_TERMINAL = ("import runpy, signal, sys; "
                     "signal.signal(signal.SIGINT, signal.default_int_handler); "
                     "sys.argv[0] = 'hwaffinity'; "
                     "runpy.run_module('tacker_hwaffinity.cli.main', run_name='__main__')")


def test_ctrl_c_on_a_real_process_is_exit_130_without_a_traceback(tmp_path):
    """The process blocks reading a FIFO nobody writes: once it has opened it (the
    writer's open then succeeds), SIGINT arrives in the middle of the command.

    Python runs a handler between bytecodes: a SIGINT that lands after the open but before
    the read syscall starts leaves the read blocked with the KeyboardInterrupt pending
    (1 run in 60 under load). So the writer is closed once the signal is sent: the read
    returns, and the interrupt is raised there, before the empty file is looked at."""
    fifo = str(tmp_path / "cluster.yaml")
    os.mkfifo(fifo)
    # Ctrl-C reaches a foreground command; a shell starts a background job with SIGINT
    # ignored, which Python (and so the command) then keeps: the suite run as one (nohup
    # ... &) would see exit 2 here. So the child takes SIGINT as a terminal's command does.
    proc = subprocess.Popen([sys.executable, "-c", _AS_IN_A_TERMINAL, "plan",
                             "--cluster", fifo, UPF], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while True:     # a polling loop: ENXIO until the reader has opened the FIFO
        try:
            writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as e:
            assert e.errno == errno.ENXIO and proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.01)
    try:
        proc.send_signal(signal.SIGINT)
    finally:
        os.close(writer)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err) == (130, "", "")
