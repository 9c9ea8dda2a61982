"""The installation plan, the script's arguments and output lines, the
``install`` parameters and the upload bundle: pure rules, no I/O."""
import io
import tarfile

import pytest

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.labeling import params as parameters
from tacker_hwaffinity.labeling.plan import Worker
from tacker_hwaffinity.mgmt import install, install_plan as ip, install_ssh, lifecycle


def _srv(sid, fixed, floating=None, net="k8s"):
    entries = [{"addr": fixed, "OS-EXT-IPS:type": "fixed", "version": 4}]
    if floating:
        entries.append({"addr": floating, "OS-EXT-IPS:type": "floating", "version": 4})
    return {"id": sid, "addresses": {net: entries}}


def _opts(**over):
    opts = parameters.parse({"hwaffinity_param": {"install": dict({"enabled": True},
                                                                   **over)}})
    return opts["hwaffinity"].install


MASTERS = [Worker("m%d" % i, "m%d" % i, ["10.0.0.1%d" % i]) for i in range(3)]
WORKERS = [Worker("w%d" % i, "w%d" % i, ["10.0.0.2%d" % i]) for i in range(2)]
SERVERS = {w.server_id: _srv(w.server_id, w.addresses[0]) for w in MASTERS + WORKERS}


def test_addresses_fixed_for_kubernetes_floating_for_ssh():
    assert ip.node_addresses(_srv("a", "10.0.0.5", "172.24.4.9")) == ("10.0.0.5", "172.24.4.9")
    assert ip.node_addresses(_srv("a", "10.0.0.5")) == ("10.0.0.5", "10.0.0.5")
    two = {"addresses": {"mgmt": [{"addr": "192.168.0.4", "OS-EXT-IPS:type": "fixed"}],
                         "k8s": [{"addr": "10.0.0.5", "OS-EXT-IPS:type": "fixed"},
                                 {"addr": "fd00::5", "OS-EXT-IPS:type": "fixed",
                                  "version": 6}]}}
    assert ip.node_addresses(two, "k8s") == ("10.0.0.5", "10.0.0.5")
    assert ip.node_addresses(two) == ("10.0.0.5", "10.0.0.5")   # networks sorted by name
    assert ip.node_addresses(two, "absent") is None
    assert ip.node_addresses({}) is None


def test_a_new_cluster_inits_on_the_first_master_and_joins_the_rest():
    plan = ip.make_plan(MASTERS, WORKERS, SERVERS, _opts())
    assert (plan.first.name, plan.first.role, plan.new_cluster) == ("m0", ip.INIT, True)
    assert [(n.name, n.role) for n in plan.masters] == [("m1", ip.JOIN_MASTER),
                                                        ("m2", ip.JOIN_MASTER)]
    assert [(n.name, n.role) for n in plan.workers] == [("w0", ip.JOIN_WORKER),
                                                        ("w1", ip.JOIN_WORKER)]
    assert plan.endpoint == "10.0.0.10:6443" and plan.vip is None
    assert [n.name for n in plan.all_nodes()] == ["m0", "m1", "m2", "w0", "w1"]


def test_the_vip_is_the_endpoint_and_only_masters_hold_it():
    plan = ip.make_plan(MASTERS, WORKERS, SERVERS, _opts(), vip="10.0.0.100")
    assert plan.endpoint == "10.0.0.100:6443"
    assert "--vip" in ip.script_argv(plan.first, plan, _opts())
    assert "--vip" in ip.script_argv(plan.masters[0], plan, _opts())
    assert "--vip" not in ip.script_argv(plan.workers[0], plan, _opts())
    given = ip.make_plan(MASTERS, [], SERVERS, _opts(control_plane_endpoint="api.example:443"),
                         vip="10.0.0.100")
    assert given.endpoint == "api.example:443"


def test_an_existing_cluster_refreshes_the_token_on_a_live_master():
    plan = ip.make_plan([MASTERS[2]], WORKERS[:1], SERVERS, _opts(),
                        installed_master=MASTERS[0])
    assert (plan.first.name, plan.first.role, plan.new_cluster) == ("m0", ip.REFRESH, False)
    assert [n.name for n in plan.masters] == ["m2"]
    assert ip.script_argv(plan.first, plan, _opts(token_ttl="90m")) == [
        "--role", "refresh-join", "--token-ttl", "90m"]


def test_arguments_per_role_are_exact():
    opts = _opts(pod_cidr="10.245.0.0/16", service_cidr="10.97.0.0/16",
                 flannel_version="v0.27.0", kubernetes_minor="1.34")
    plan = ip.make_plan(MASTERS, WORKERS, SERVERS, opts)
    assert ip.script_argv(plan.first, plan, opts, dry_run=True) == [
        "--role", "init", "--node-ip", "10.0.0.10", "--control-plane-endpoint",
        "10.0.0.10:6443", "--pod-cidr", "10.245.0.0/16", "--service-cidr", "10.97.0.0/16",
        "--flannel-version", "v0.27.0", "--kubernetes-minor", "1.34", "--dry-run"]
    assert ip.script_argv(plan.workers[1], plan, opts, join_file="./join.env") == [
        "--role", "join-worker", "--node-ip", "10.0.0.21", "--kubernetes-minor", "1.34",
        "--join-file", "./join.env"]


def test_missing_masters_or_addresses_are_named():
    with pytest.raises(InputError) as e:
        ip.make_plan([], WORKERS, SERVERS, _opts())
    assert "master_node.aspect_id" in str(e.value)
    servers = dict(SERVERS, w1={"id": "w1", "addresses": {}})
    with pytest.raises(InputError) as e:
        ip.make_plan(MASTERS, WORKERS, servers, _opts(network="k8s"))
    assert "server w1 (w1) has no fixed IPv4 address on network 'k8s'" in str(e.value)
    assert "hwaffinity_param.install.network" in str(e.value)


def test_output_lines_are_read_and_failures_explained():
    node = ip.Node("s", "w1", ip.JOIN_WORKER, "10.0.0.5", "10.0.0.5", False)
    out = ('[install_k8s] x\nHWAFFINITY_JOIN {"join_file": "/a"}\nHWAFFINITY_JOIN '
           '{"join_file": "/b"}\nHWAFFINITY_RESULT not-json\n')
    lines = ip.parse_output(out)
    assert lines["HWAFFINITY_JOIN"] == {"join_file": "/b"}
    assert lines["HWAFFINITY_RESULT"] == {"unparsed": "not-json"}
    err = 'HWAFFINITY_ERROR {"step": "install-containerd", "exit_code": 100, "log": "/l"}\n'
    assert ip.failure(node, 1, "", err) == ("w1 (10.0.0.5, join-worker): step "
                                            "install-containerd failed (exit 100); log /l on "
                                            "the node")
    assert ip.failure(node, 2, "", "install_k8s: error: bad\nmore") == (
        "w1 (10.0.0.5, join-worker): refused (exit 2, nothing changed): install_k8s: error: bad")
    assert "could not unpack the script" in ip.failure(node, 125, "", "tar: not found")
    assert ip.failure(node, 127, "", "") == "w1 (10.0.0.5, join-worker): exit 127: no message"


@pytest.mark.parametrize("field,value,message", [
    ("kubernetes_minor", "1.30", "1.31 or later"),
    ("kubernetes_minor", "latest", "1.31 or later"),
    ("pod_cidr", "10.244.0.0", "IPv4 CIDR"),
    ("token_ttl", "2 days", "duration"),
    ("control_plane_endpoint", "http://x", "HOST or HOST:PORT"),
    ("script", "/etc/passwd", "relative path inside the VNF package"),
    ("script", "Scripts/../../x.sh", "relative path inside the VNF package"),
    ("parallel", 0, "at least 1"),
    ("surprise", True, "unknown field surprise"),
])
def test_bad_install_parameters_name_the_field(field, value, message):
    with pytest.raises(InputError) as e:
        parameters.parse({"hwaffinity_param": {"install": {field: value}}})
    assert "additionalParams.hwaffinity_param.install.%s" % field in str(e.value)
    assert message in str(e.value)


def test_install_defaults_keep_installation_off():
    opts = parameters.parse({})["hwaffinity"].install
    assert (opts["enabled"], opts["dry_run"], opts["sudo"], opts["kubernetes_minor"],
            opts["timeout"], opts["parallel"]) == (False, False, True, "1.35", 1800, 8)


def test_the_bundle_holds_the_script_0700_and_the_join_file_0600():
    data = install_ssh.bundle(b"#!/bin/bash\n", "token=abc\n")
    assert data == install_ssh.bundle(b"#!/bin/bash\n", "token=abc\n")  # deterministic
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = {m.name: (m.mode, m.uid, m.mtime) for m in tar.getmembers()}
    assert members == {"install_k8s.sh": (0o700, 0, 0), "join.env": (0o600, 0, 0)}
    with tarfile.open(fileobj=io.BytesIO(install_ssh.bundle(b"x"))) as tar:
        assert tar.getnames() == ["install_k8s.sh"]


def test_the_script_is_read_from_the_package_only(tmp_path):
    (tmp_path / "Scripts").mkdir()
    (tmp_path / "Scripts" / "install_k8s.sh").write_bytes(b"#!/bin/bash\n")
    (tmp_path / "Scripts" / "link.sh").symlink_to("/etc/hostname")
    job = lifecycle.Job("instantiate_end", parameters.parse({}), package_dir=str(tmp_path))
    assert install.script_bytes(job) == b"#!/bin/bash\n"
    job.package_dir = lambda: str(tmp_path)   # v1: resolved only when needed
    assert install.script_bytes(job) == b"#!/bin/bash\n"
    job.params = parameters.parse({"hwaffinity_param": {"install": {"script": "Scripts/link.sh"}}})
    with pytest.raises(InputError) as e:
        install.script_bytes(job)
    assert "Scripts/link.sh leaves the VNF package" in str(e.value)
    job.package_dir = None
    with pytest.raises(InputError) as e:
        install.script_bytes(job)
    assert "the VNF package directory is unknown" in str(e.value)
