"""The agent's loop on plain objects and a plain-file cgroup tree: writes, idempotence,
vanished containers, refused writes, annotations and Events, dry run."""
import json
import logging
import os

import pytest
from prometheus_client import CollectorRegistry

from tacker_hwaffinity.agent import cgroupfs
from tacker_hwaffinity.agent.node import NodeState
from tacker_hwaffinity.agent.runner import REASON_PLACEMENT, REASON_WRITE, Agent, Metrics
from tacker_hwaffinity.kube.client import KubeError
from tacker_hwaffinity.numa.cpuset import parse_list

from .podobjects import pod_object
from .test_agent_node import server


class Api:
    def __init__(self, fail=False):
        self.annotations, self.events, self.fail, self.patches = {}, [], fail, 0

    def annotate(self, obj, key, value):
        if self.fail:
            raise KubeError("connection refused")
        self.patches += 1
        self.annotations[obj["metadata"]["name"]] = value
        obj = json.loads(json.dumps(obj))
        obj["metadata"]["annotations"][key] = value
        return obj

    def event(self, obj, reason, message):
        self.events.append((obj["metadata"]["name"], reason, message))


def make_dirs(layout, obj):
    for st in obj["status"]["containerStatuses"]:
        d = layout.container_dir(obj["metadata"]["uid"], obj["status"]["qosClass"],
                                 st["containerID"])
        for level in (os.path.dirname(d), d):
            os.makedirs(level, exist_ok=True)
            for f, v in (("cpuset.cpus", "0-111"), ("cpuset.mems", "0-5")):
                with open(os.path.join(level, f), "w") as fh:
                    fh.write(v + "\n")
    return d


def make_layout(root):
    """A kubelet-shaped systemd cpuset tree under ROOT, and its detected layout."""
    base = root / "cpuset" / "kubepods.slice"
    for sub in ("", "kubepods-burstable.slice", "kubepods-besteffort.slice"):
        (base / sub).mkdir(parents=True, exist_ok=True)
        (base / sub / "cpuset.cpus").write_text("0-111\n")
        (base / sub / "cpuset.mems").write_text("0-5\n")
    return cgroupfs.detect(str(root))


@pytest.fixture
def tree(tmp_path):
    return make_layout(tmp_path)


def agent_for(layout, api=None, dry_run=False):
    return Agent(api or Api(), "n1", NodeState(server()), layout,
                 cgroupfs.Writer(layout, dry_run=dry_run), Metrics(CollectorRegistry()),
                 log=logging.getLogger("test.agent"), dry_run=dry_run)


def read(d):
    return tuple(parse_list(open(os.path.join(d, f)).read()) for f in ("cpuset.cpus",
                                                                    "cpuset.mems"))


def test_a_new_container_is_written_read_back_and_annotated(tree):
    agent = agent_for(tree)
    p = pod_object("p")
    d = make_dirs(tree, p)
    agent.on_sync([])
    agent.on_event("ADDED", p)
    decision = json.loads(agent.api.annotations["p"])["c"]
    assert read(d)[0] == parse_list(decision["exclusiveCpus"])
    assert read(d)[1] == parse_list(decision["mems"])


def test_a_second_full_reconcile_writes_nothing(tree, monkeypatch):
    agent = agent_for(tree)
    pods = [pod_object("p%d" % i, cpu=c) for i, c in enumerate(("2", "500m", "1"))]
    for p in pods:
        make_dirs(tree, p)
    agent.on_sync(pods)
    writes = []
    monkeypatch.setattr(cgroupfs.Writer, "_write",
                        staticmethod(lambda *a: writes.append(a)))
    agent.resync()
    agent.resync()
    assert writes == [] and len(agent.api.annotations) == 3


def test_a_vanished_container_gives_its_grant_back(tree):
    agent = agent_for(tree)
    p = pod_object("p")
    d = make_dirs(tree, p)
    os.remove(os.path.join(d, "cpuset.cpus"))
    os.remove(os.path.join(d, "cpuset.mems"))
    os.rmdir(d)
    agent.on_event("ADDED", p)
    assert not agent.state.placed and not agent.state.placer.used
    assert agent.api.events == []


def test_a_refused_write_is_an_event_and_the_decision_stands(tree):
    agent = agent_for(tree)
    p = pod_object("p")
    d = make_dirs(tree, p)
    with open(os.path.join(d, "cpuset.cpus"), "w") as f:
        f.write("not a list\n")
    agent.on_event("ADDED", p)
    (event,) = agent.api.events
    assert event[1] == REASON_WRITE and "cpuset.cpus" in event[2]
    assert agent.state.placed


def test_a_bad_annotation_is_one_event_however_often_it_is_seen(tree):
    agent = agent_for(tree)
    p = pod_object("p", annotations={"cri-resource-manager.intel.com/affinity": "c: [[["})
    agent.on_event("ADDED", p)
    agent.on_event("MODIFIED", p)
    agent.resync()
    (event,) = agent.api.events
    assert event[1] == REASON_PLACEMENT and "bad annotation" in event[2]


def test_api_errors_leave_the_decision_and_retry_later(tree):
    api = Api(fail=True)
    agent = agent_for(tree, api)
    p = pod_object("p")
    d = make_dirs(tree, p)
    agent.on_event("ADDED", p)
    assert agent.state.placed and read(d)[0] != parse_list("0-111")
    assert api.annotations == {}                            # the patch failed: none recorded
    api.fail = False
    agent.resync()
    assert agent.recorded[p["metadata"]["uid"]] == api.annotations["p"]   # from the retry
    sent = api.patches
    agent.resync()                          # the watch has not shown it yet: not sent twice
    assert api.patches == sent
    assert parse_list(json.loads(api.annotations["p"])["c"]["exclusiveCpus"]) == read(d)[0]


def test_dry_run_writes_nothing_anywhere(tree):
    agent = agent_for(tree, dry_run=True)
    p = pod_object("p")
    d = make_dirs(tree, p)
    agent.on_event("ADDED", p)
    assert read(d) == (parse_list("0-111"), parse_list("0-5"))
    assert agent.api.annotations == {} and agent.state.placed


def test_killed_between_write_and_annotation_a_new_agent_makes_them_agree(tree, monkeypatch):
    """The first agent wrote the cgroups but died before recording its decisions."""
    pods = [pod_object("p%d" % i, cpu=c, created="2026-01-01T00:00:0%dZ" % i)
            for i, c in enumerate(("2", "1", "500m"))]
    dirs = [make_dirs(tree, p) for p in pods]
    first = agent_for(tree, Api(fail=True))
    first.on_sync(pods)
    assert first.api.annotations == {}
    written = [read(d) for d in dirs]           # what the running containers have now
    assert all(cpus != parse_list("0-111") for cpus, _ in written)   # the first agent wrote
    second = agent_for(tree)
    writes = []
    monkeypatch.setattr(cgroupfs.Writer, "_write", staticmethod(lambda *a: writes.append(a)))
    second.on_sync(pods)
    assert writes == []                          # no container's CPUs or memory touched
    assert [read(d) for d in dirs] == written
    for p, (cpus, mems) in zip(pods, written):  # and the annotations record what they have
        decision = json.loads(second.api.annotations[p["metadata"]["name"]])["c"]
        assert mems == parse_list(decision["mems"])
        if "exclusiveCpus" in decision:
            assert cpus == parse_list(decision["exclusiveCpus"])


def test_reserved_cpus_come_from_the_kubelet_configuration(tmp_path):
    from tacker_hwaffinity.agent import preflight
    assert preflight.kubelet_reserved_cpus(str(tmp_path)) is None
    (tmp_path / "config.yaml").write_text("kind: KubeletConfiguration\nreservedSystemCPUs: "
                                          "0-1\n")
    assert preflight.kubelet_reserved_cpus(str(tmp_path)) == "0-1"
    (tmp_path / "cpu_manager_state").write_text('{"policyName": "static"}')
    with pytest.raises(preflight.Refused) as e:
        preflight.check_cpu_manager(str(tmp_path))
    assert "static" in str(e.value)


class Store:
    """What the agent reads of an informer with a uid index (kube.informer.Informer.by
    and .keys): the informer has stored each object before the agent hears of it."""

    def __init__(self):
        self.objects = {}

    def by(self, index, key):
        assert index == "uid"
        return self.objects.get(key)

    def keys(self, index):
        return list(self.objects)


def test_with_an_informer_the_agent_reads_its_store_and_keeps_no_copy(tree):
    from tacker_hwaffinity.agent.runner import PodsByUid
    store = Store()
    agent = agent_for(tree)
    agent.pods = PodsByUid(store)
    p = pod_object("p")
    make_dirs(tree, p)
    store.objects[p["metadata"]["uid"]] = p              # the informer stores, then calls
    agent.on_sync([p])
    assert agent.pods._own == {} and agent.pods.uids() == [p["metadata"]["uid"]]
    assert agent.api.annotations["p"]                   # decided and recorded from the store
    del store.objects[p["metadata"]["uid"]]
    agent.on_event("DELETED", p)
    assert not agent.state.placed and agent.recorded == {}
