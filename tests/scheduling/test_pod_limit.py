"""Bounded (#38 item 4): the pods a command plans are counted from the workloads' specs
before any is made, and over the limit (``--max-pods``, default ``workloads.MAX_PODS``)
that is an error naming the file, object and field; ``explain`` makes only the pod it
explains. Reported: 10,000,000 replicas ran past 10 minutes to 10 GB with no output."""
import os
import time
from unittest import mock

import pytest
from hypothesis import given, strategies as st

from builders import node
from tacker_hwaffinity.cli import main as cli_main
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling import workloads
from tacker_hwaffinity.scheduling.snapshot import (
    cluster_from_objects, first_workload_pod, workloads_from_objects)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "samples", "cluster.yaml")
UPF = os.path.join(ROOT, "samples", "cnf", "upf-required.yaml")
HUGE = 10_000_000


def workload(kind, name, count):
    """A KIND (Deployment, ReplicaSet, StatefulSet or Job) NAME making COUNT pods."""
    spec = {"selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "c", "image": "x"}]}}}
    if kind == "Job":
        spec = {"parallelism": count, "template": spec["template"]}
    else:
        spec["replicas"] = count
    return {"apiVersion": "batch/v1" if kind == "Job" else "apps/v1", "kind": kind,
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


KINDS = st.sampled_from(["Deployment", "ReplicaSet", "StatefulSet", "Job"])


@given(st.lists(st.tuples(KINDS, st.integers(0, 40)), min_size=1, max_size=5),
       st.integers(1, 100))
def test_over_the_limit_is_refused_before_any_pod_is_made(specs, limit):
    objects = [(workload(kind, "w%d" % i, n), "w.yaml") for i, (kind, n) in enumerate(specs)]
    total = sum(n for _, n in specs)
    with mock.patch.object(workloads, "expand", wraps=workloads.expand) as expand:
        if total <= limit:
            pods, _, _ = workloads_from_objects(objects, max_pods=limit)
            assert len(pods) == total
            return
        with pytest.raises(InputError) as refused:
            workloads_from_objects(objects, max_pods=limit)
    assert expand.call_count == 0
    err = refused.value
    crossing = next(i for i in range(len(specs))
                    if sum(n for _, n in specs[:i + 1]) > limit)
    kind = specs[crossing][0]
    assert (err.source, err.obj) == ("w.yaml", "%s default/w%d" % (kind, crossing))
    assert err.field == ("spec.parallelism" if kind == "Job" else "spec.replicas")
    assert "over the limit of %d a command plans (--max-pods raises it)" % limit in err.message


def test_the_default_limit_holds_a_huge_deployment_and_names_it():
    big = workload("Deployment", "big", HUGE)
    start = time.monotonic()
    with pytest.raises(InputError) as refused:
        workloads_from_objects([(big, "big.yaml")])
    assert time.monotonic() - start < 1
    assert str(refused.value) == (
        "big.yaml: Deployment default/big: field spec.replicas: 10000000 pods, over the "
        "limit of %d a command plans (--max-pods raises it)" % workloads.MAX_PODS)


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet", "Job"])
def test_expand_with_a_count_makes_the_first_pods_of_the_whole_list(kind):
    obj = workload(kind, "web", 7)
    whole = [p.key for p in workloads.expand(obj)]
    assert [p.key for p in workloads.expand(obj, count=3)] == whole[:3]
    assert workloads.expand(dict(obj), count=1)[0].labels == workloads.expand(obj)[0].labels


def test_explain_makes_only_the_pod_it_explains():
    big = workload("Deployment", "big", HUGE)
    start = time.monotonic()
    first, total, notes = first_workload_pod([(big, "big.yaml")])
    assert time.monotonic() - start < 1
    assert total == HUGE and notes == []
    assert first.key == workloads.expand(workload("Deployment", "big", 1))[0].key


def test_explain_skips_a_workload_of_no_replicas_for_the_next():
    objects = [(workload("Deployment", "none", 0), "w.yaml"),
               (workload("StatefulSet", "db", 2), "w.yaml")]
    first, total, _ = first_workload_pod(objects)
    assert (first.key, total) == ("default/db-0", 2)


def test_the_plan_of_a_huge_deployment_exits_2_at_once(capsys, tmp_path):
    huge = tmp_path / "huge.yaml"
    huge.write_text(open(UPF).read().replace("replicas: 3", "replicas: %d" % HUGE))
    start = time.monotonic()
    assert cli_main.main(["plan", "--cluster", CLUSTER, str(huge)]) == 2
    assert time.monotonic() - start < 5
    assert capsys.readouterr().err == (
        "hwaffinity plan: error: %s: Deployment cnf/upf: field spec.replicas: 10000000 pods, "
        "over the limit of 100000 a command plans (--max-pods raises it)\n" % huge)
    assert cli_main.main(["plan", "--cluster", CLUSTER, UPF, "--max-pods", "2"]) == 2
    assert "3 pods, over the limit of 2" in capsys.readouterr().err
    assert cli_main.main(["plan", "--cluster", CLUSTER, UPF, "--max-pods", "3"]) == 0


def test_explain_of_a_huge_deployment_explains_its_first_replica(capsys, tmp_path):
    huge = tmp_path / "huge.yaml"
    huge.write_text(open(UPF).read().replace("replicas: 3", "replicas: %d" % HUGE))
    start = time.monotonic()
    assert cli_main.main(["explain", "--cluster", CLUSTER, "--pod", str(huge)]) == 0
    assert time.monotonic() - start < 5
    text = " ".join(capsys.readouterr().out.split())     # the note wraps at 100 columns
    assert ("Note: %s holds 10000000 pods; explaining the first, cnf/upf-58655487d8-j9fkp"
            % huge) in text


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_max_pods_must_be_a_positive_integer(capsys, value):
    with pytest.raises(SystemExit) as exited:
        cli_main.main(["plan", "--cluster", CLUSTER, UPF, "--max-pods", value])
    assert exited.value.code == 2
    assert ("argument --max-pods: expected a positive integer, got %r" % value
            in capsys.readouterr().err)


def test_a_node_among_the_workloads_is_refused():
    with pytest.raises(InputError, match="a Node is part of the cluster, not a workload"):
        workloads_from_objects([(node("n1"), "w.yaml")],
                               cluster_from_objects([(node("n2"), "c.yaml")]))
