"""`hwaffinity plan --scheduler-config` on the files deploy/webhook/ ships: the v1 file
(kube-scheduler 1.25+) is taken as it is, placeholders and all, its extender named in
the notes as not simulated; the v1beta1 file (1.19-1.22) is refused in one line that
says why (other default plugins and weights) and what to give instead."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WEBHOOK = os.path.join(ROOT, "deploy", "webhook")


def _plan(config, *extra):
    return subprocess.run(
        [sys.executable, "-m", "tacker_hwaffinity.cli.main", "plan", "--cluster",
         "samples/cluster.yaml", "samples/cnf/upf-required.yaml", "--scheduler-config",
         config] + list(extra), capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_the_shipped_v1_configuration_is_taken_and_its_extender_noted():
    r = _plan(os.path.join(WEBHOOK, "scheduler-config.yaml"), "-o", "json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert "scheduler extenders are configured but not modelled" in out["notes"]
    assert all(p["node"] for p in out["placements"])
    default = json.loads(_plan_default().stdout)
    assert [p["node"] for p in out["placements"]] == [p["node"] for p in default["placements"]]


def _plan_default():
    return subprocess.run(
        [sys.executable, "-m", "tacker_hwaffinity.cli.main", "plan", "--cluster",
         "samples/cluster.yaml", "samples/cnf/upf-required.yaml", "-o", "json"],
        capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_the_shipped_v1beta1_configuration_is_refused_saying_why():
    r = _plan(os.path.join(WEBHOOK, "scheduler-config-v1beta1.yaml"))
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()
    assert "field apiVersion" in line and "v1beta1" in line
    assert "default plugins and weights differ" in line
    assert "Traceback" not in r.stderr
