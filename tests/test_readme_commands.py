"""Every command the README shows runs as shown (doc/testing.md, "The README's commands"),
and so does every command of doc/deploy.md, the README's "Deploy to a cluster" steps.

Convention (tests/doccommands.py reads it): in a ```console block (and a plain ```
block), a line starting with `$ ` is a command (a line ending in a backslash continues it)
and the lines after it, up to the next command, are output the README shows: each of them
(but `...`) must be a line of the real output. In a ```sh or ```bash block every line that
is not a comment is a command. A block right after `<!-- needs: REASON -->` holds commands
that need what no test run has (a cluster, a registry, a cloud, an installation); they are
listed below, each with its reason, and the list must match the pages both ways. The
two Quick start commands are what CI runs: they must be in the README word for word, and
are not run here.

The others run in a fresh copy of the checkout, in page order, through bash (globs and
quoting as a user's shell does them), with this Python's `hwaffinity` first on PATH, and
must exit 0 (or the status listed in EXIT_STATUS).
"""
import os
import shutil
import subprocess
import sys

import pytest

from doccommands import commands, shows


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
# the pages whose commands are run: the README, then the steps moved out of it
PAGES = (README, os.path.join(ROOT, "doc", "deploy.md"))

SETUP = (
    "python3 -m venv .venv && . .venv/bin/activate && pip install '.[schema]' && "
    "hwaffinity plan --cluster samples/cluster.yaml samples/cnf/*.yaml",
    "bash tools/test.sh",
)
# Reviewed: the commands a test run cannot carry out, and why. The real-node and
# control-plane tests are where the cluster ones are checked.
NEEDS = {
    "pip install '.[translator,tacker]'": "install",
    "pip wheel --no-deps -w dist .": "install",
    "pip install 'dist/tacker_hwaffinity-0.1.0-py3-none-any.whl[ssh,openstack]'": "install",
    "hwaffinity relabel --stack STACK --worker-aspect worker_instance --kubeconfig admin.conf "
    "--dry-run": "openstack",
    "docker build -f deploy/Dockerfile -t registry.example.com/tacker-hwaffinity:0.1.0 .":
        "registry",
    "docker push registry.example.com/tacker-hwaffinity:0.1.0": "registry",
    "cd deploy && kustomize edit set image "
    "tacker-hwaffinity=registry.example.com/tacker-hwaffinity:0.1.0": "kustomize",
    "kubectl apply -k deploy/": "cluster",
    "kubectl -n hwaffinity-system create secret generic hwaffinity-controller-vim \\\n"
    "    --from-literal=OS_AUTH_URL=https://keystone.example.com:5000/v3 \\\n"
    "    --from-literal=OS_USERNAME=hwaffinity --from-literal=OS_PASSWORD=\"$OS_PASSWORD\" \\\n"
    "    --from-literal=OS_PROJECT_NAME=k8s --from-literal=OS_USER_DOMAIN_NAME=Default \\\n"
    "    --from-literal=OS_PROJECT_DOMAIN_NAME=Default \\\n"
    "    --from-literal=HWAFFINITY_STACK=0b8d4a4c-7e9f-4f0e-9d55-2f1c3b5a6e7d": "cluster",
    "CLUSTER_IP=$(kubectl -n hwaffinity-system get svc hwaffinity-webhook -o "
    "jsonpath='{.spec.clusterIP}')": "cluster",
    "hwaffinity webhook certs --ip \"$CLUSTER_IP\" --out certs/": "cluster",
    "kubectl -n hwaffinity-system create secret generic hwaffinity-webhook-tls "
    "--type=kubernetes.io/tls \\\n"
    "    --from-file=certs/tls.crt --from-file=certs/tls.key --from-file=certs/ca.crt": "cluster",
    "kubectl -n hwaffinity-system rollout status deployment/hwaffinity-webhook": "cluster",
    "sed \"s|CA_BUNDLE|$(base64 -w0 certs/ca.crt)|\" deploy/webhook/webhooks.yaml | "
    "kubectl apply -f -": "cluster",
    "(umask 077; sed -e \"s|CLUSTER_IP|$CLUSTER_IP|\" -e "
    "\"s|CA_BUNDLE|$(base64 -w0 certs/ca.crt)|\" \\\n"
    "    -e \"s|CLIENT_CERT|$(base64 -w0 certs/client.crt)|\" "
    "-e \"s|CLIENT_KEY|$(base64 -w0 certs/client.key)|\" \\\n"
    "    deploy/webhook/scheduler-config.yaml > hwaffinity-scheduler.yaml)": "cluster",
    "kubectl -n hwaffinity-system get pods": "cluster",
    "kubectl -n hwaffinity-system logs daemonset/hwaffinity-agent | head -3": "cluster",
    "kubectl -n hwaffinity-system logs deployment/hwaffinity-controller | head -3": "cluster",
    "kubectl -n hwaffinity-system logs deployment/hwaffinity-webhook | head -3": "cluster",
    "kubectl -n hwaffinity-system port-forward deployment/hwaffinity-controller 9465 &":
        "cluster",
    "curl -s --retry 5 --retry-connrefused http://127.0.0.1:9465/metrics | "
    "grep '^hwaffinity_controller'": "cluster",
}
# Commands whose documented exit status is not 0.
EXIT_STATUS = {"hwaffinity audit --cluster samples/audit/cluster.yaml --max-loss 40%": 1}


def test_shown_output_must_be_the_printed_output_in_order():
    assert shows(["a", "b"], ["a", "b"])
    assert not shows(["a"], ["a", "b"])                 # a line left out unsaid
    assert not shows(["b", "a"], ["a", "b"])
    assert shows(["a", "...", "d"], ["a", "b", "c", "d"])
    assert shows(["...", "c"], ["a", "b", "c"]) and not shows(["...", "b"], ["a", "b", "c"])


def _page_commands(pages=PAGES):
    found = []
    for page in pages:
        with open(page, encoding="utf-8") as f:
            found.extend(commands(f.read()))
    return found


def test_the_set_up_commands_are_in_the_readme_word_for_word():
    shown = [c.text for c in _page_commands([README]) if c.lang in ("sh", "bash")]
    for command in SETUP:
        assert command in shown, command


def test_the_list_of_commands_not_run_matches_the_readme():
    found = _page_commands()
    marked = {c.text: c.needs for c in found if c.needs}
    assert marked == NEEDS, "the pages' <!-- needs: --> markers and NEEDS disagree"
    texts = [c.text for c in found]
    for command in list(NEEDS) + list(EXIT_STATUS):
        assert command in texts, "stale: no page shows %r any more" % command


def test_the_parser_finds_commands_output_and_markers():
    text = ("x\n<!-- needs: cluster -->\n```console\n$ kubectl get pods\n```\n\n"
            "```console\n$ hwaffinity a \\\n  --b\nline 1\n...\n$ echo 2\n2\n```\n"
            "```sh\n# comment\nbash tools/test.sh\n```\n```json\n$ not a command\n```\n")
    found = commands(text)
    assert [(c.text, c.needs, c.output) for c in found] == [
        ("kubectl get pods", "cluster", []),
        ("hwaffinity a \\\n  --b", None, ["line 1", "..."]),
        ("echo 2", None, ["2"]),
        ("bash tools/test.sh", None, []),
    ]


def _copy_checkout(dest):
    ignore = shutil.ignore_patterns(".git", ".venv", ".tox", "*.egg-info", "__pycache__",
                                    "dist", "build", ".pytest_cache")
    for name in os.listdir(ROOT):
        src = os.path.join(ROOT, name)
        if name in (".git", ".venv", ".tox", "dist", "build") or name.endswith(".egg-info"):
            continue
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(dest, name), ignore=ignore, symlinks=True)
        else:
            shutil.copy2(src, os.path.join(dest, name))


@pytest.mark.slow
def test_every_readme_command_that_needs_no_cluster_runs_as_shown(tmp_path):
    runnable = [c for c in _page_commands()
                if c.text not in SETUP and c.text not in NEEDS]
    assert len(runnable) >= 6                         # plan, explain, audit, numa, csar...
    work = tmp_path / "checkout"
    work.mkdir()
    _copy_checkout(str(work))
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.pop("HWAFFINITY_TIMING", None)
    failures = []
    for c in runnable:
        r = subprocess.run(["bash", "-c", c.text], cwd=str(work), env=env,
                           capture_output=True, text=True, timeout=120)
        if r.returncode != EXIT_STATUS.get(c.text, 0):
            failures.append("%r: exit %d\n%s%s" % (c, r.returncode, r.stdout[-2000:],
                                                   r.stderr[-2000:]))
            continue
        printed = [line.rstrip() for line in (r.stdout + r.stderr).splitlines()
                   if line.strip()]
        if c.output and not shows(c.output, printed):
            failures.append("%r: the page shows\n%s\n--- but it printed:\n%s" % (
                c, "\n".join(c.output), "\n".join(printed)))
    assert not failures, "\n\n".join(failures)
