"""kubectl's conventions: where the cluster comes from (--cluster, --kubeconfig, $KUBECONFIG,
~/.kube/config, --context), -o FORMAT everywhere (never a path), -f FILE|DIR|-, shell
completion, --version."""
import json
import os
import platform
import shutil
import subprocess
import sys

import pytest
import yaml

from tacker_hwaffinity import __version__
from tacker_hwaffinity.cli import output
from ci_policy import unavailable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, "samples")
CLUSTER = os.path.join(SAMPLES, "cluster.yaml")
CNF = os.path.join(SAMPLES, "cnf")
UPF = os.path.join(CNF, "upf-required.yaml")
SMF = os.path.join(CNF, "smf-preferred.yaml")
AUDIT = os.path.join(SAMPLES, "audit", "cluster.yaml")


def hwaffinity(*args, env=None, stdin=None, cwd=ROOT):
    base = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    base.update(env or {})
    p = subprocess.run([sys.executable, "-m", "tacker_hwaffinity.cli.main", *args],
                       capture_output=True, text=True, env=base, input=stdin, cwd=cwd,
                       timeout=120)
    assert "Traceback" not in p.stderr, p.stderr
    return p


def _kubeconfig(path, server="https://127.0.0.1:9", context="ctx"):
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": "c", "cluster": {"server": server,
                                                "insecure-skip-tls-verify": True}}],
        "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}))
    return str(path)


# --- where the cluster comes from -------------------------------------------------------

def test_no_cluster_anywhere_is_one_line_saying_what_to_give(tmp_path):
    p = hwaffinity("plan", UPF, env={"HOME": str(tmp_path)})
    assert p.returncode == 2
    assert p.stderr == ("hwaffinity plan: error: no cluster to read: give --cluster FILE (a "
                        "'kubectl get nodes,pods,namespaces -A -o yaml' snapshot) or "
                        "--kubeconfig FILE, or set KUBECONFIG\n")


def test_kubeconfig_env_is_read_when_no_flag_names_a_cluster(tmp_path):
    missing = str(tmp_path / "nowhere.conf")
    p = hwaffinity("plan", UPF, env={"HOME": str(tmp_path), "KUBECONFIG": missing})
    assert p.returncode == 2
    assert "kubeconfig %s: no such file" % missing in p.stderr


def test_home_kube_config_is_the_last_resort_and_context_selects_in_it(tmp_path):
    (tmp_path / ".kube").mkdir()
    conf = _kubeconfig(tmp_path / ".kube" / "config")
    p = hwaffinity("plan", UPF, env={"HOME": str(tmp_path)})
    assert p.returncode == 2 and "127.0.0.1:9" in p.stderr, p.stderr   # it tried that server
    p = hwaffinity("audit", "--context", "other", env={"HOME": str(tmp_path)})
    assert p.returncode == 2
    assert "other" in p.stderr and conf in p.stderr, p.stderr


def test_kubeconfig_env_lists_files_and_missing_ones_are_skipped(tmp_path):
    conf = _kubeconfig(tmp_path / "real.conf")
    listed = os.pathsep.join([str(tmp_path / "missing.conf"), conf])
    p = hwaffinity("plan", UPF, env={"HOME": str(tmp_path), "KUBECONFIG": listed})
    assert p.returncode == 2 and "127.0.0.1:9" in p.stderr, p.stderr


def test_context_cannot_apply_to_snapshot_files():
    p = hwaffinity("plan", "--cluster", CLUSTER, "--context", "x", UPF)
    assert p.returncode == 2
    assert "--context" in p.stderr and "--cluster" in p.stderr


def test_cluster_wins_over_kubeconfig_env(tmp_path):
    p = hwaffinity("plan", "--cluster", CLUSTER, UPF,
                   env={"KUBECONFIG": str(tmp_path / "nowhere.conf")})
    assert p.returncode == 0, p.stderr


# --- -f FILE|DIR|- ----------------------------------------------------------------------

def test_a_directory_is_its_manifests_in_name_order():
    by_files = hwaffinity("plan", "--cluster", CLUSTER, SMF, UPF, "-o", "json")
    by_dir = hwaffinity("plan", "--cluster", CLUSTER, "-f", CNF, "-o", "json")
    assert by_dir.returncode == 0, by_dir.stderr
    assert json.loads(by_dir.stdout) == json.loads(by_files.stdout)
    positional = hwaffinity("plan", "--cluster", os.path.dirname(CLUSTER) + "/cluster.yaml",
                            CNF, "-o", "json")
    assert json.loads(positional.stdout) == json.loads(by_files.stdout)


def test_standard_input_is_a_workload_file():
    p = hwaffinity("plan", "--cluster", CLUSTER, "-f", "-", "-o", "json",
                   stdin=open(UPF).read())
    assert p.returncode == 0, p.stderr
    assert all(x["pod"].startswith("cnf/upf-") for x in json.loads(p.stdout)["placements"])


def test_a_directory_without_manifests_is_an_error(tmp_path):
    (tmp_path / "README").write_text("x")
    p = hwaffinity("plan", "--cluster", str(tmp_path), UPF)
    assert p.returncode == 2
    assert p.stderr == ("hwaffinity plan: error: %s: no .json, .yaml, .yml file in the "
                        "directory\n" % tmp_path)


def test_plan_without_workloads_says_so():
    p = hwaffinity("plan", "--cluster", CLUSTER)
    assert p.returncode == 2 and "no workloads to plan" in p.stderr


# --- -o FORMAT --------------------------------------------------------------------------

@pytest.mark.parametrize("argv,kind", [
    (["plan", "--cluster", CLUSTER, UPF], "Plan"),
    (["explain", "--cluster", CLUSTER, "--pod", SMF], "Explanation"),
    (["audit", "--cluster", AUDIT], "Audit"),
    (["numa", "plan", "--machine", os.path.join(SAMPLES, "numa", "machine.yaml"),
      os.path.join(SAMPLES, "numa", "pods.yaml")], "NumaPlan"),
    (["numa", "explain", os.path.join(SAMPLES, "numa", "pods.yaml")], "NumaExplanation"),
])
def test_json_and_yaml_are_the_same_versioned_document(argv, kind):
    as_json = hwaffinity(*argv, "-o", "json")
    as_yaml = hwaffinity(*argv, "-o", "yaml")
    assert as_json.returncode == as_yaml.returncode, as_yaml.stderr
    doc = json.loads(as_json.stdout)
    assert doc["apiVersion"] == output.API_VERSION and doc["kind"] == kind
    assert list(doc)[:2] == ["apiVersion", "kind"]
    assert yaml.safe_load(as_yaml.stdout) == doc


def test_name_lists_kind_slash_name():
    plan = hwaffinity("plan", "--cluster", CLUSTER, UPF, "-o", "name")
    doc = json.loads(hwaffinity("plan", "--cluster", CLUSTER, UPF, "-o", "json").stdout)
    assert plan.stdout.splitlines() == ["pod/" + p["pod"] for p in doc["placements"]
                                        if p["node"]]
    explain = hwaffinity("explain", "--cluster", CLUSTER, "--pod", SMF, "-o", "name")
    doc = json.loads(hwaffinity("explain", "--cluster", CLUSTER, "--pod", SMF,
                                "-o", "json").stdout)
    best = max((n for n in doc["nodes"] if n["feasible"]), key=lambda n: n["total"])
    assert explain.stdout.splitlines()[0] == "node/" + best["name"]
    assert len(explain.stdout.splitlines()) == sum(n["feasible"] for n in doc["nodes"])
    audit = hwaffinity("audit", "--cluster", AUDIT, "-o", "name").stdout.splitlines()
    assert audit and all(line.count("/") == 2 for line in audit)


def test_wide_adds_the_reason_column():
    p = hwaffinity("plan", "--cluster", CLUSTER, UPF, "-o", "wide")
    assert p.stdout.splitlines()[0].split() == ["POD", "NODE", "CIS-NODE", "REASON"]


def test_o_is_never_a_path(tmp_path):
    p = hwaffinity("csar", "build", os.path.join(ROOT, "csar", "cnf"), "-o",
                   str(tmp_path / "x.zip"))
    assert p.returncode == 2
    assert "(-o is the output format; the path is --output-file)" in p.stderr
    p = hwaffinity("translate", os.path.join(ROOT, "csar", "k8s-cluster"), "-o", "json/")
    assert p.returncode == 2
    assert "(-o is the output format; the path is --output-dir)" in p.stderr
    assert not os.path.exists(os.path.join(ROOT, "json"))


# --- completion and --version -----------------------------------------------------------

def _bash_complete(line):
    script = hwaffinity("completion", "bash").stdout
    words = line.split(" ")
    run = ('source /dev/stdin; COMP_WORDS=(%s); COMP_CWORD=%d; COMP_LINE="%s"; '
           'COMP_POINT=${#COMP_LINE}; _shtab_hwaffinity hwaffinity "%s" "%s"; '
           'printf "%%s\\n" "${COMPREPLY[@]}"'
           % (" ".join('"%s"' % w for w in words), len(words) - 1, line, words[-1],
              words[-2]))
    p = subprocess.run(["bash", "-c", run], input=script, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return set(p.stdout.split())


def test_bash_completes_commands_options_and_formats():
    assert "plan" in _bash_complete("hwaffinity pl")
    assert "--cluster" in _bash_complete("hwaffinity plan --clu")
    assert {"json", "yaml", "wide", "name"} <= _bash_complete("hwaffinity plan -o ")


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_scripts_name_every_command(shell):
    from tacker_hwaffinity.cli.main import COMMAND_MODULES
    text = hwaffinity("completion", shell).stdout
    for command in COMMAND_MODULES:
        assert command in text, (shell, command)


def test_zsh_takes_the_script_as_a_completion_function(tmp_path):
    """Installed as zsh documents (a file _hwaffinity in $fpath), compinit binds it to
    hwaffinity and it loads as a function; zsh -n finds no syntax error."""
    zsh = shutil.which("zsh")
    if zsh is None:
        unavailable("zsh is missing (tools/install-test-packages.sh shells)")
    (tmp_path / "_hwaffinity").write_text(hwaffinity("completion", "zsh").stdout)
    check = subprocess.run([zsh, "-n", str(tmp_path / "_hwaffinity")], capture_output=True,
                           text=True, timeout=60)
    assert check.returncode == 0, check.stderr
    p = subprocess.run([zsh, "-f", "-c", 'fpath=(%s $fpath); autoload -U compinit; '
                        'compinit -u -d %s/.zcompdump; print -r -- "${_comps[hwaffinity]}"; '
                        'autoload -Uz +X _hwaffinity; whence -w _hwaffinity'
                        % (tmp_path, tmp_path)], capture_output=True, text=True, timeout=60)
    assert p.stdout.splitlines() == ["_hwaffinity", "_hwaffinity: function"], (p.stdout,
                                                                                p.stderr)


def test_version_names_the_package_python_and_kubernetes():
    from tacker_hwaffinity.objects import schema
    p = hwaffinity("--version")
    minors = schema.supported_minors()
    assert p.stdout == "hwaffinity %s (Python %s; Kubernetes 1.%d-1.%d)\n" % (
        __version__, platform.python_version(), minors[0], minors[-1])
    assert minors[0] == 30 and minors[-1] >= 37
