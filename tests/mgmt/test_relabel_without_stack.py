"""``hwaffinity relabel`` without a Heat stack (issue #55): the flag rules (exactly one
way of choosing the workers, exit 2 naming the flags), and ``lifecycle.relabel`` choosing
the workers with the controller's selectors among one Nova list and naming the node
whose providerID names a server Nova does not list. Nova and kubectl are recorded
answers here; tests/controlplane/test_provider_id_e2e.py runs it on real Nova."""
import json
import logging
import uuid

import pytest

from tacker_hwaffinity.cli.main import main
from tacker_hwaffinity.openstack import workers as selectors
from tacker_hwaffinity.labeling import params as parameters
from tacker_hwaffinity.mgmt import lifecycle
from tacker_hwaffinity.mgmt.reconcile import HookFailed
from tests.builders import node

pytest.importorskip("keystoneauth1")
LOG = logging.getLogger("test.mgmt.relabel")
A, B, C = (str(uuid.UUID(int=i)) for i in (0xa, 0xb, 0xc))
GHOST = str(uuid.UUID(int=0xd))
NO_SERVER = "no such server in Nova (or these credentials cannot see it)"


@pytest.mark.parametrize("argv,message", [
    ([], "say which servers are the workers: give one of --cluster-nodes, "
         "--worker-metadata KEY=VALUE or --stack NAME_OR_ID"),
    (["--cluster-nodes", "--stack", "s"], "field --stack: give one of --cluster-nodes, "
     "--worker-metadata KEY=VALUE or --stack NAME_OR_ID, not --cluster-nodes and --stack"),
    (["--worker-metadata", "role=worker", "--stack", "s"], "field --stack: give one of "
     "--cluster-nodes, --worker-metadata KEY=VALUE or --stack NAME_OR_ID, not "
     "--worker-metadata and --stack"),
    (["--cluster-nodes", "--worker-metadata", "role=worker"], "not --cluster-nodes and "
     "--worker-metadata"),
    (["--cluster-nodes", "--worker-aspect", "worker_instance"], "field --worker-aspect: "
     "--worker-aspect and --worker-vdu name a stack's workers: they need --stack"),
    (["--worker-metadata", "role=worker", "--worker-vdu", "w0"], "field --worker-vdu: "),
    (["--worker-metadata", "role"], "field --worker-metadata: expected KEY=VALUE, got 'role'"),
    (["--cluster-nodes"], "field --kubeconfig: without --stack there is no master to find: "
     "reach the cluster with --kubeconfig or --ssh-host"),
])
def test_exactly_one_way_of_choosing_the_workers_else_exit_2(argv, message, capsys):
    assert main(["relabel"] + argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("hwaffinity relabel: error: ") and message in err, err


def test_params_naming_a_stacks_workers_need_the_stack(tmp_path, capsys):
    params = tmp_path / "params.yaml"
    params.write_text("hwaffinity_param:\n  worker_vdus: [w0]\n")
    assert main(["relabel", "--cluster-nodes", "--params", str(params),
                 "--ssh-host", "192.0.2.1"]) == 2
    assert "field --params: names a stack's workers" in capsys.readouterr().err


def _server(sid, name, ip, host, metadata=None):
    """A server as Nova's /servers/detail lists it."""
    return {"id": sid, "name": name, "status": "ACTIVE", "OS-EXT-SRV-ATTR:host": host,
            "hostId": "hid-" + (host or "none"), "updated": "2026-12-02T00:00:00Z",
            "metadata": metadata or {},
            "addresses": {"net": [{"addr": ip, "OS-EXT-IPS:type": "fixed"}]}}


class Nova:
    """The one Nova list ``relabel`` may make, answered from SERVERS."""

    def __init__(self, servers):
        self.servers_listed, self.lists = servers, 0

    def servers(self):
        self.lists += 1
        return list(self.servers_listed)


class Kubectl:
    """A kubectl runner answering 'get nodes' with NODES (Node objects); records calls."""

    where = "recorded kubectl"

    def __init__(self, nodes):
        self.nodes, self.calls, self.closed = nodes, [], False

    def run(self, argv, stdin=None, timeout=None):
        self.calls.append(argv)
        assert argv[:3] == ["kubectl", "get", "nodes"], argv   # nothing else is run here
        return 0, json.dumps({"kind": "List", "items": self.nodes}), ""

    def close(self):
        self.closed = True


def _nodes():
    """n-a and n-b: a's and b's VMs by providerID (n-a labelled right already); n-c by
    InternalIP; ghost: its providerID names a server Nova does not list; far: another
    region's."""
    return [node("n-a", {"CIS-node": "h1"}, ip="10.0.0.1", provider_id="openstack:///" + A),
            node("n-b", {}, ip="10.0.0.9", provider_id="openstack://RegionOne/" + B),
            node("n-c", {}, ip="10.0.0.3"),
            node("ghost", {}, ip="10.0.0.2", provider_id="openstack:///" + GHOST),
            node("far", {}, ip="10.0.0.4", provider_id="openstack://RegionTwo/" + GHOST)]


def _relabel(select, servers, nodes, dry_run=True, host_source="host"):
    """lifecycle.relabel of a stackless Job choosing the workers with SELECT."""
    parsed = parameters.parse({"hwaffinity_param": {"host_source": host_source}})
    job = lifecycle.Job("relabel", parsed, access={"region_name": "RegionOne"},
                        select_workers=select)
    nova, kube = Nova(servers), Kubectl(nodes)
    done = lifecycle.relabel(job, dry_run, LOG, openstack=nova, connect=lambda _c, _i: kube)
    assert nova.lists == 1 and len(kube.calls) == 1 and kube.closed
    return done


def test_cluster_nodes_are_the_servers_that_are_nodes_and_the_ghost_is_named():
    servers = [_server(A, "vm-a", "10.0.0.1", "h1"), _server(B, "vm-b", "10.0.0.2", "h2"),
               _server(C, "vm-c", "10.0.0.3", "h3"),
               _server(str(uuid.UUID(int=0xe)), "spare", "10.0.0.8", "h1")]
    done = _relabel(selectors.ClusterNodeWorkers, servers, _nodes())
    assert sorted((r["worker"], r["node"], r["host"]) for r in done.plan.mapping()) == [
        ("vm-a", "n-a", "h1"), ("vm-b", "n-b", "h2"), ("vm-c", "n-c", "h3")]
    assert done.plan.changes() == {"n-b": {"CIS-node": "h2"}, "n-c": {"CIS-node": "h3"}}
    assert done.serverless == ["node ghost (providerID openstack:///%s): %s"
                               % (GHOST, NO_SERVER)]
    assert done.errors == done.serverless


def test_metadata_chooses_the_workers_and_the_ghost_is_named_all_the_same():
    servers = [_server(A, "vm-a", "10.0.0.1", "h1", {"role": "worker"}),
               _server(B, "vm-b", "10.0.0.2", "h2", {"role": "master"}),
               _server(C, "vm-c", "10.0.0.3", "h3", {"role": "worker"})]
    done = _relabel(lambda _nodes, _region: selectors.MetadataWorkers({"role": "worker"}),
                    servers, _nodes())
    assert [(r["worker"], r["node"]) for r in done.plan.mapping()] == [
        ("vm-a", "n-a"), ("vm-c", "n-c")]
    assert [e.split(" (")[0] for e in done.errors] == ["node ghost"]


def test_a_ghost_and_a_worker_that_cannot_be_handled_are_both_named():
    """Without --dry-run, the workers' problems fail the run (HookFailed, after the
    right labels are applied: here none differ), and the ghost is named with them."""
    servers = [_server(A, "vm-a", "10.0.0.1", "h1"), _server(C, "vm-c", "10.0.0.3", None)]
    nodes = [n for n in _nodes() if n["metadata"]["name"] != "n-b"]
    with pytest.raises(HookFailed) as failed:
        _relabel(selectors.ClusterNodeWorkers, servers, nodes, dry_run=False)
    message = str(failed.value)
    assert message.startswith("1 problem(s): vm-c (server %s): the compute host is not "
                              "visible" % C), message
    assert message.endswith("; also node ghost (providerID openstack:///%s): %s"
                            % (GHOST, NO_SERVER)), message


def test_a_respread_dry_run_names_the_worker_it_would_move_and_moves_nothing(caplog):
    """vm-a and vm-c share h1; n-a carries its host label already (settled), so vm-c is
    the one Nova would be asked to move. A dry run asks nothing of Nova (one list)."""
    caplog.set_level(logging.INFO, logger=LOG.name)
    servers = [_server(A, "vm-a", "10.0.0.1", "h1"), _server(B, "vm-b", "10.0.0.2", "h2"),
               _server(C, "vm-c", "10.0.0.3", "h1")]
    parsed = parameters.parse({"hwaffinity_param": {"on_colocation": "respread"}})
    job = lifecycle.Job("relabel", parsed, access={"region_name": "RegionOne"},
                        select_workers=selectors.ClusterNodeWorkers)
    nova, kube = Nova(servers), Kubectl(_nodes())
    done = lifecycle.relabel(job, True, LOG, openstack=nova, connect=lambda _c, _i: kube)
    assert nova.lists == 1 and done.respread is None
    assert "respread (dry run): would ask Nova to move worker vm-c (server %s) off host h1" \
        % C in caplog.text
    assert caplog.text.count("would ask Nova") == 1
    assert done.plan.warnings == ["workers vm-a, vm-c share compute host h1: one hardware "
                                  "fault takes them all down"]


def test_the_on_colocation_flag_offers_exactly_the_parameters_modes():
    """cli/relabel.py spells the modes out (importing labeling.params would slow --help):
    they stay the parameter's."""
    import argparse
    from tacker_hwaffinity.cli import relabel as relabel_cli
    parser = argparse.ArgumentParser()
    relabel_cli.register(parser.add_subparsers())
    sub = parser._subparsers._group_actions[0].choices["relabel"]
    (flag,) = [a for a in sub._actions if "--on-colocation" in a.option_strings]
    assert tuple(flag.choices) == parameters.ON_COLOCATION
