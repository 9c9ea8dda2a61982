"""Generated pod names never collide: a taken name makes the replica take its next candidate."""
import json
import os

import pytest

from tacker_hwaffinity.cli.main import main
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling import workloads
from tacker_hwaffinity.scheduling.snapshot import workloads_from_objects

from tests.builders import node, pod
from .helpers import snapshot

SAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "samples")
TEMPLATE = {"metadata": {"labels": {"app": "big"}},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {
                "requests": {"cpu": "1m", "memory": "1Mi"}}}]}}


def controller(kind, name, replicas, ns="default", **spec):
    obj = {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": ns},
           "spec": dict(spec, replicas=replicas, selector={"matchLabels": {"app": "big"}},
                        template=TEMPLATE)}
    if kind == "Job":
        del obj["spec"]["replicas"], obj["spec"]["selector"]
        obj["apiVersion"] = "batch/v1"
        obj["spec"]["parallelism"] = replicas
    return obj


def names(objs, snap=None):
    pods, _, _ = workloads_from_objects([(o, "w.yaml") for o in objs], snap)
    return [p.name for p in pods]


@pytest.mark.slow
def test_5000_replicas_plan_with_unique_names_and_repeat_exactly(tmp_path, capsys):
    big = controller("Deployment", "big-0", 5000)
    h = workloads.template_hash(TEMPLATE)
    usual = [workloads._suffix("default", "big-0", h, i) for i in range(5000)]
    assert len(set(usual)) < 5000, "this Deployment must hit the birthday collision"
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"kind": "List", "items": [
        node("n%d" % i, {"kubernetes.io/hostname": "n%d" % i},
             alloc={"cpu": "64", "memory": "64Gi", "pods": "1000"}) for i in range(8)]}))
    deploy = tmp_path / "big.json"
    deploy.write_text(json.dumps(big))
    outputs = []
    for _ in range(2):
        assert main(["plan", "--cluster", str(cluster), str(deploy), "-o", "json",
                     "--topology-key", "kubernetes.io/hostname"]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    placed = [p["pod"] for p in json.loads(outputs[0])["placements"]]
    assert len(placed) == 5000 and len(set(placed)) == 5000
    # the usual name is kept wherever it is free: only the later duplicates moved
    first_seen = {}
    for i, s in enumerate(usual):
        first_seen.setdefault(s, i)
    moved = [i for i, s in enumerate(usual) if first_seen[s] != i]
    assert moved and all(placed[i] != "default/big-0-%s-%s" % (h, usual[i]) for i in moved)
    assert all(placed[i] == "default/big-0-%s-%s" % (h, usual[i])
               for i in range(5000) if i not in moved)


def test_a_snapshot_pod_holding_the_first_name_moves_only_that_replica():
    deploy = controller("Deployment", "web", 3)
    free = names([deploy])
    for phase in (None, "Pending", "Succeeded"):  # any existing pod holds its name
        holder = pod(free[0], on="n1" if phase is None else None, phase=phase)
        got = names([deploy], snapshot(node("n1"), holder))
        assert got[1:] == free[1:] and got[0] != free[0]
        assert got[0].rsplit("-", 1)[0] == free[0].rsplit("-", 1)[0]  # same prefix, new suffix
        assert got == names([deploy], snapshot(node("n1"), holder))  # deterministic


def test_an_earlier_workload_holding_the_name_moves_the_later_replica():
    deploy = controller("Deployment", "web", 2)
    free = names([deploy])
    bare = pod(free[1])
    got = names([bare, deploy])
    assert got[0] == free[1] and got[1] == free[0] and got[2] not in free
    with pytest.raises(InputError) as e:  # the bare pod's name is fixed: a real conflict
        names([deploy, bare])
    assert "already exists" in str(e.value) and e.value.field == "metadata.name"


@pytest.mark.parametrize("kind,extra", [
    ("ReplicaSet", {}), ("Job", {}), ("Job", {"completionMode": "Indexed", "completions": 3})])
def test_replicasets_and_jobs_take_the_next_name_too(kind, extra):
    obj = controller(kind, "w", 3, **extra)
    free = names([obj])
    got = names([obj], snapshot(node("n1"), pod(free[2], on="n1")))
    assert got[:2] == free[:2] and got[2] != free[2] and len(set(got) | {free[2]}) == 4
    if extra:
        assert got[2].startswith("w-2-")


def test_statefulset_names_stay_fixed_and_a_conflict_is_an_error():
    sts = controller("StatefulSet", "db", 2)
    assert names([sts]) == ["db-0", "db-1"]
    with pytest.raises(InputError) as e:
        names([sts], snapshot(node("n1"), pod("db-1", on="n1")))
    assert "pod default/db-1 already exists" in str(e.value)
    with pytest.raises(InputError):
        names([sts, sts])


def test_names_without_collisions_are_unchanged(capsys):
    assert main(["plan", "--cluster", os.path.join(SAMPLES, "cluster.yaml"),
                 os.path.join(SAMPLES, "cnf", "smf-preferred.yaml"),
                 os.path.join(SAMPLES, "cnf", "upf-required.yaml"), "-o", "json"]) == 0
    placed = [p["pod"] for p in json.loads(capsys.readouterr().out)["placements"]]
    assert placed == ["cnf/smf-7fcb84c568-pxd69", "cnf/smf-7fcb84c568-97gqs",
                      "cnf/smf-7fcb84c568-8fbpq", "cnf/smf-7fcb84c568-2kd5v",
                      "cnf/smf-7fcb84c568-dbbnd", "cnf/smf-7fcb84c568-67qc5",
                      "cnf/upf-58655487d8-j9fkp", "cnf/upf-58655487d8-788lq",
                      "cnf/upf-58655487d8-2qzkn"]


def test_csar_placement_moves_a_generated_name_taken_by_an_earlier_manifest():
    # csar validate plans one object at a time: the names made by earlier
    # objects are passed on, so a colliding replica takes its next name
    from tacker_hwaffinity.csar.placement import check
    from tacker_hwaffinity.scheduling.profile import Profile
    deploy = controller("Deployment", "web", 2)
    free = names([deploy])
    objects = [(pod(free[1]), "a.yaml"), (deploy, "b.yaml")]
    problems, _, summary = check(objects, snapshot(node("n1")), Profile(), "CIS-node")
    assert problems == [] and "3 of 3 pods placed" in summary
    got, _, _ = workloads_from_objects([(deploy, "b.yaml")], snapshot(node("n1")),
                                  avoid={"default/" + free[1]})
    assert got[0].name == free[0] and got[1].name not in free
