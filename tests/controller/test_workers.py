"""Which servers the controller treats as workers: metadata, or a Heat stack's members
(read from Heat's captured answer, tests/mgmt/data/heat_resources.json)."""
import json
import subprocess
import sys
import logging
import os

import pytest

from tacker_hwaffinity.openstack.workers import MetadataWorkers, StackWorkers
from tacker_hwaffinity.openstack.api import OpenStackError
from tacker_hwaffinity.openstack.servers import ServerState

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "mgmt", "data",
                    "heat_resources.json")
CAPTURED = json.load(open(DATA))
MEMBERS = ["1986d674-fc41-4576-9199-9e160781e96e", "91fe7480-f233-4b39-af66-77be03d5332e",
           "6f76b95e-e31d-4bf5-871d-1802f518e455"]


def state(sid, status="ACTIVE", metadata=None):
    return ServerState(sid, "vm", status, None, "h1", "x", "2026-01-01T00:00:00Z",
                       metadata or {})


class Heat:
    def __init__(self, resources):
        self.resources, self.calls, self.fail = list(resources), 0, False

    def stack_resources(self, stack_id):
        self.calls += 1
        if self.fail:
            raise OpenStackError("Heat GET /stacks/s/resources: HTTP 503")
        assert stack_id == "vnf-stack"
        return self.resources


def test_metadata_selects_servers_with_every_pair():
    w = MetadataWorkers({"cluster": "c1", "role": "worker"})
    got = w.select([state("a", metadata={"cluster": "c1", "role": "worker"}),
                    state("b", metadata={"cluster": "c1"}), state("c")])
    assert [s.id for s in got] == ["a"]
    assert w.describe() == "servers with metadata cluster=c1, role=worker"


def test_stack_members_of_the_aspect_are_the_workers_with_one_heat_call():
    heat = Heat(CAPTURED["resources"])
    w = StackWorkers(heat, "vnf-stack", aspects=["worker_instance"])
    got = w.select([state(i) for i in MEMBERS] + [state("other-vm")])
    assert sorted(s.id for s in got) == sorted(MEMBERS)
    assert heat.calls == 1
    # later polls: known servers cost no Heat call
    assert [s.id for s in w.select([state(MEMBERS[0])])] == [MEMBERS[0]]
    assert heat.calls == 1


def test_a_new_server_rereads_the_stack_at_most_once_per_interval():
    now = [0.0]
    heat = Heat(CAPTURED["resources"][:-2])      # the third member is not there yet
    w = StackWorkers(heat, "vnf-stack", aspects=["worker_instance"], refresh_interval=60,
                     clock=lambda: now[0])
    assert len(w.select([state(i) for i in MEMBERS])) == 2
    heat.resources = CAPTURED["resources"]       # scale-out finished in Heat
    now[0] = 10.0
    assert len(w.select([state("unrelated")])) == 0 and heat.calls == 1   # too soon
    now[0] = 70.0
    got = w.select([state("unrelated-2")])
    # the third member's change came before the read: it is returned now
    assert [s.id for s in got] == [MEMBERS[2]] and heat.calls == 2


def test_heat_failing_keeps_the_last_known_workers(caplog):
    now = [0.0]
    heat = Heat(CAPTURED["resources"])
    w = StackWorkers(heat, "vnf-stack", aspects=["worker_instance"], refresh_interval=0,
                     clock=lambda: now[0], log=logging.getLogger("t"))
    w.select([state(i) for i in MEMBERS])
    heat.fail = True
    with caplog.at_level(logging.WARNING):
        got = w.select([state(MEMBERS[1]), state("new")])
    assert [s.id for s in got] == [MEMBERS[1]]
    assert "workers as last known" in caplog.text and "HTTP 503" in caplog.text


def test_a_missing_aspect_or_vdu_is_reported(caplog):
    heat = Heat(CAPTURED["resources"])
    w = StackWorkers(heat, "vnf-stack", aspects=["nope"], vdus=["workerX"],
                     log=logging.getLogger("t"))
    with caplog.at_level(logging.WARNING):
        assert w.select([state(i) for i in MEMBERS]) == []
    assert "aspect nope: the stack has no resource 'nope'" in caplog.text
    assert "the stack has no server workerX" in caplog.text


@pytest.mark.parametrize("flags,message", [
    ([], "field --worker-metadata: say which servers are the workers"),
    (["--stack", "s"], "field --stack: name the workers of the stack with --aspect"),
    (["--vdu", "w", "--worker-metadata", "a=b"], "field --aspect: --aspect and --vdu need"),
    (["--stack", "s", "--aspect", "a", "--worker-metadata", "x=y"], "not both"),
    (["--worker-metadata", "x"], "expected KEY=VALUE, got 'x'"),
])
def test_the_worker_flags_are_checked_before_anything_is_contacted(flags, message):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    r = subprocess.run([sys.executable, "-m", "tacker_hwaffinity.cli.main", "controller",
                        "--kubeconfig", "/nonexistent"] + flags, capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 2
    assert message in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
