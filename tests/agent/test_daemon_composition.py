"""The agent's composition root (``agent.daemon``): the checks that choose its mode and
can refuse it, then each mode's parts, as the operator sees them (the threads, the start
line, readiness). The node is a cgroup tree and kubelet directory under tmp_path; the API
server is a stand-in whose calls are never made (no thread runs here)."""
import logging
import socket

import pytest
from prometheus_client import CollectorRegistry

from component_doubles import RecordingWorkers
from tacker_hwaffinity.agent import daemon
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.kube import client as kube_client
from tacker_hwaffinity.kube.component import Address, Context

from .test_agent_node import server
from .test_agent_runner import make_layout

LOG = logging.getLogger("test.agent.daemon")


class CoreApi:
    """``CoreV1Api``: its calls are never made here (the supervisor starts no thread)."""

    def __getattr__(self, name):
        def never(*_args, **_kw):
            raise AssertionError("%s called: no API call is made in this test" % name)
        return never


class Conn:
    where = "a stand-in API server"

    def core(self):
        return CoreApi()

    def close(self):
        pass


def config(tmp_path, mode, **over):
    fields = dict(
        node="n1", metrics_address=Address("127.0.0.1", 0, "--metrics-address"),
        load_machine=lambda _reserved: server(), mode=mode,
        nri_socket=str(tmp_path / "nri.sock"), nri_index="90",
        state_dir=str(tmp_path / "state"), cgroup_root=str(tmp_path),
        kubelet_root=str(tmp_path / "kubelet"), kubelet_config=None, cpu_manager_state=None,
        reserved_cpus=None, cpu_map=None, resync=60.0, dry_run=False, kubeconfig=None,
        context=None, log_level="INFO")
    fields.update(over)
    return daemon.AgentConfig(**fields)


@pytest.fixture
def start(monkeypatch):
    """start(CONFIG) -> (Started, RecordingWorkers)."""
    monkeypatch.setattr(kube_client, "connect", lambda kubeconfig, context: Conn())

    def run(cfg):
        workers = RecordingWorkers()
        return daemon.AgentDaemon(cfg).start(Context(LOG, CollectorRegistry(), workers)), \
            workers
    return run


def test_auto_mode_is_nri_where_the_runtimes_socket_is(tmp_path):
    cfg = config(tmp_path, "auto")
    assert daemon.choose_mode(cfg) == daemon.ModeChoice(
        "cgroupfs", "no NRI socket at %s (enable NRI in the runtime for nri mode)"
        % cfg.nri_socket)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as runtime:
        runtime.bind(cfg.nri_socket)
        chosen = daemon.choose_mode(cfg)
    assert (chosen.mode, chosen.why) == ("nri", "the runtime's NRI socket %s exists"
                                         % cfg.nri_socket)
    assert daemon.choose_mode(config(tmp_path, "cgroupfs")).why == "--mode cgroupfs"


def test_cgroupfs_mode_watches_the_nodes_pods(tmp_path, start):
    make_layout(tmp_path)
    run, workers = start(config(tmp_path, "cgroupfs"))
    assert workers.started == ["pod-watch", "recorder", "resync"]
    assert run.start_lines(9464) == ["watching the pods of node n1 (metrics on "
                                     "127.0.0.1:9464)"]
    assert run.ready() == (False, "pods of node n1 not listed and reconciled yet (listing)")


def test_nri_mode_serves_the_runtime_and_keeps_its_checkpoint_directory(tmp_path, start):
    run, workers = start(config(tmp_path, "nri"))
    assert workers.started == ["nri", "nri-updates", "recorder"]
    assert run.start_lines(9464) == ["serving the runtime as NRI plugin 90-hwaffinity "
                                     "(metrics on 127.0.0.1:9464)"]
    assert (tmp_path / "state").is_dir()
    ok, why = run.ready()
    assert not ok and why.startswith("not registered with the runtime yet")


def test_an_unreadable_cpu_map_is_named(tmp_path, start):
    bad = tmp_path / "cpu-map.json"
    bad.write_text("{not json")
    with pytest.raises(InputError) as e:
        start(config(tmp_path, "nri", cpu_map=str(bad)))
    assert e.value.source == str(bad) and "cannot read the CPU map" in str(e.value)


def test_a_cgroup_tree_that_is_not_there_refuses_the_agent(tmp_path, start):
    with pytest.raises(daemon.Refused) as e:
        start(config(tmp_path, "cgroupfs"))
    assert str(e.value).startswith("refusing to run: ")
