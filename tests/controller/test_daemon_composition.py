"""The controller's composition root (``controller.daemon.ControllerDaemon.start``): the
parts it builds from its typed configuration, in the order the operator sees them (the
threads, the /metrics families, the start lines, readiness), and the record rebalancing
is given. OpenStack's credentials and the API server are stand-ins here; every part of
the controller is its own (the same with the real control plane:
tests/controlplane/test_controller_e2e.py)."""
import logging
import types

import pytest
from prometheus_client import CollectorRegistry

from component_doubles import RecordingWorkers
from tacker_hwaffinity.controller import daemon, rebalance
from tacker_hwaffinity.openstack.workers import MetadataWorkers
from tacker_hwaffinity.kube import client as kube_client
from tacker_hwaffinity.kube.component import Address, Context
from tacker_hwaffinity.labeling import params

ACCESS = {"auth_url": "http://keystone.invalid/v3", "username": "ctl", "password": "pw",
          "project_name": "ops", "user_domain_name": "Default",
          "project_domain_name": "Default", "region_name": "RegionTwo"}
THREADS = ["node-watch", "pod-watch", "namespace-watch", "leader", "replicaset-watch",
           "deployment-watch", "statefulset-watch", "daemonset-watch", "job-watch",
           "poddisruptionbudget-watch"]
FAMILIES = ["hwaffinity_informer_object_errors", "hwaffinity_workload_replicas",
            "hwaffinity_workload_desired_replicas",
            "hwaffinity_workload_replicas_on_busiest_host", "hwaffinity_workload_host_loss_ratio",
            "hwaffinity_workload_intent_met", "hwaffinity_workload_pdb_holds_after_host_loss",
            "hwaffinity_node_label_stale", "hwaffinity_exposure_workloads_dropped",
            "hwaffinity_exposure_failures", "hwaffinity_exposure_seconds",
            "hwaffinity_rebalance_pods_evicted", "hwaffinity_controller_relabels",
            "hwaffinity_controller_evictions", "hwaffinity_controller_violations",
            "hwaffinity_controller_poll_seconds", "hwaffinity_controller_poll_errors",
            "hwaffinity_controller_notifications", "hwaffinity_controller_evictions_stuck",
            "hwaffinity_controller_object_errors", "hwaffinity_controller_nodes_host_unknown",
            "hwaffinity_controller_ticks_abandoned"]


class ApiGroup:
    """A Kubernetes API group's client: list calls that are never made here (the
    supervisor below starts no thread)."""

    def __getattr__(self, name):
        def never(**_kw):
            raise AssertionError("%s called: no watch runs in this test" % name)
        return never


class Conn:
    where = "a stand-in API server"

    def __init__(self):
        self.closed = False

    def core(self):
        return ApiGroup()

    apps = batch = policy = core

    def close(self):
        self.closed = True


def config(rebalance_limit, label_keys=("CIS-node",)):
    hw = params.parse({"hwaffinity_param": {"label_keys": list(label_keys)}})["hwaffinity"]
    return daemon.ControllerConfig(
        hw=hw, select_workers=lambda _os, _nodes, _region: MetadataWorkers({"cluster": "c1"}),
        metrics_address=Address("127.0.0.1", 0, "--metrics-address"),
        lease=daemon.Lease("hwaffinity-system", "hwaffinity-controller", "replica-a", 15.0),
        poll_interval=30.0, grace=60.0, eviction_interval=10.0, termination_margin=30.0,
        max_termination_wait=600.0, dry_run=False, rebalance=rebalance_limit,
        host_id_labels=("topology.openstack.org/host-id",), nova_scope="auto",
        notifications_url=None, exposure_max_workloads=500, os_cloud=None, kubeconfig=None,
        context=None, log_level="INFO")


@pytest.fixture
def started(monkeypatch):
    """start(CONFIG) -> (Started, the runner.Controller it built, the workers, registry,
    Conn)."""
    monkeypatch.setattr(daemon, "access_from_environment", lambda cloud: dict(ACCESS))
    monkeypatch.setattr(daemon, "session", lambda access: types.SimpleNamespace())
    built = {}
    real_main_loop = daemon.MainLoop

    def main_loop(controller, *args):
        built["controller"] = controller
        return real_main_loop(controller, *args)
    monkeypatch.setattr(daemon, "MainLoop", main_loop)

    def start(cfg):
        conn = Conn()
        monkeypatch.setattr(kube_client, "connect", lambda kubeconfig, context: conn)
        registry, workers = CollectorRegistry(), RecordingWorkers()
        ctx = Context(logging.getLogger("test.controller.daemon"), registry, workers)
        return daemon.ControllerDaemon(cfg).start(ctx), built["controller"], workers, \
            registry, conn
    return start


def test_the_parts_come_up_in_the_order_the_operator_sees_them(started):
    run, controller, workers, registry, conn = started(config(rebalance_limit=2))
    assert workers.started == THREADS
    assert run.start_lines(9465) == [
        "controller replica-a: workers are servers with metadata cluster=c1; Nova every "
        "30 s, grace 60 s; hostId kept in topology.openstack.org/host-id, rebalancing at "
        "most 2 eviction(s) a poll (metrics on 127.0.0.1:9465)",
        "controller replica-a: OpenStack user ctl, project ops; Nova polls list every "
        "project's servers if Nova allows all_tenants to these credentials, else project "
        "ops's only, decided at the first poll (--nova-scope auto)"]
    # the informers', the exposure gauges', rebalancing's, the tick's (as before #53)
    assert [m.name for m in registry.collect()] == FAMILIES
    assert controller.s.region == "RegionTwo" and controller.s.hw.label_keys == ("CIS-node",)
    run.close[0]()
    assert conn.closed


def test_rebalancing_works_on_the_host_label_with_the_owner_and_budget_caches(started):
    _, controller, *_ = started(config(rebalance_limit=3, label_keys=("rack-host",)))
    rebalancer = controller.rebalancer
    assert (rebalancer.key, rebalancer.limit) == ("rack-host", 3)
    assert [c.kind for c in rebalancer.owners] == ["ReplicaSet", "Deployment", "StatefulSet",
                                                    "DaemonSet", "Job"]
    assert rebalancer.pdbs.kind == "PodDisruptionBudget"
    assert isinstance(rebalancer.metrics, rebalance.RebalanceMetrics)
    _, quiet, *_ = started(config(rebalance_limit=0))
    assert quiet.rebalancer is None


def test_readiness_waits_for_the_three_caches_then_says_the_role(started):
    run, controller, *_ = started(config(rebalance_limit=0))
    assert run.ready() == (False, "caches not synced yet")
    for cache in (controller.nodes, controller.pods, controller.namespaces):
        assert run.ready() == (False, "caches not synced yet")
        cache.synced.set()
    assert run.ready() == (True, "standby")
