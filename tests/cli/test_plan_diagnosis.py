"""``hwaffinity plan`` and ``audit`` name the mistakes behind a plan (issue #38): warnings on
standard error, one summary per workload with replicas left over, repeated reasons said
once. The cluster: 20 workers on 5 physical hosts (tests/scheduling/test_diagnosis.py)."""
import json
import os
import subprocess
import sys

import yaml

from tests.scheduling.test_diagnosis import anti, cluster, deployment

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def hwaffinity(*args):
    p = subprocess.run([sys.executable, "-m", "tacker_hwaffinity.cli.main"] + list(args),
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "Traceback" not in p.stderr, p.stderr
    return p


def write(tmp_path, name, *objects):
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def test_a_wrong_case_topology_key_is_a_warning_and_the_plan_still_exits_0(tmp_path):
    nodes = write(tmp_path, "cluster.yaml", *cluster())
    web = write(tmp_path, "deploy.yaml", deployment(aff=anti("cis-node")))
    p = hwaffinity("plan", "--cluster", nodes, web)
    assert p.returncode == 0
    assert "12 of 12 pods placed" in p.stdout
    assert p.stderr == (
        "Warning: %s: Deployment default/web: spec.template.spec.affinity.podAntiAffinity."
        "requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: no node carries the "
        'label "cis-node" (did you mean "CIS-node"?)\n' % web)
    assert "Warning" not in p.stdout


def test_a_node_without_the_host_label_is_named(tmp_path):
    nodes = cluster()
    del nodes[0]["metadata"]["labels"]["CIS-node"]
    nodes[0]["status"]["allocatable"]["cpu"] = "64"  # the emptiest node: it takes one
    p = hwaffinity("plan", "--cluster", write(tmp_path, "c.yaml", *nodes),
                   write(tmp_path, "d.yaml", deployment(replicas=3, aff=anti())))
    assert p.returncode == 0
    assert '1 of 20 nodes have no "CIS-node" label (w00): pods placed there count for no ' \
           'host' in p.stderr


def test_unplaced_replicas_get_one_summary_and_identical_reasons_are_said_once(tmp_path):
    p = hwaffinity("plan", "--cluster", write(tmp_path, "c.yaml", *cluster()),
                   write(tmp_path, "d.yaml", deployment(aff=anti())))
    assert p.returncode == 1
    # -o wide: one line each, as the text form's lines before they wrap at 100 columns
    lines = hwaffinity("plan", "--cluster", write(tmp_path, "c.yaml", *cluster()),
                       write(tmp_path, "d.yaml", deployment(aff=anti())),
                       "-o", "wide").stdout.splitlines()
    assert all(len(x) <= 100 for x in p.stdout.splitlines())
    i = lines.index("5 of 12 pods placed on 5 distinct CIS-node value(s).")
    assert lines[i + 1] == ("Deployment default/web: 5 of 12 replicas placed: required "
                            "anti-affinity on CIS-node allows at most 5 (5 hosts carry the key)")
    unschedulable = [x for x in lines if x.startswith("Unschedulable ")]
    assert len(unschedulable) == 1
    assert unschedulable[0].endswith(" (7 pods): 0/20 nodes are available: 20 node(s) didn't "
                                     "match pod anti-affinity rules.")
    preemption = [x for x in lines if "DefaultPreemption" in x]
    assert len(preemption) == 1 and "(7 pods) fit no node" in preemption[0]
    assert p.stderr == ""


def test_json_lists_warnings_and_unplaced(tmp_path):
    web = write(tmp_path, "d.yaml", deployment(aff=anti(labels={"app": "webb"})),
                deployment("db", replicas=30, cpu="3"))
    p = hwaffinity("plan", "--cluster", write(tmp_path, "c.yaml", *cluster()), web,
                   "-o", "json")
    assert p.returncode == 1
    out = json.loads(p.stdout)
    assert {"topologyKey", "placements", "domains", "notes"} <= set(out)
    assert len(out["warnings"]) == 1 and "does not select this workload's own pods" \
        in out["warnings"][0]
    assert p.stderr == "Warning: %s\n" % out["warnings"][0]
    [db] = out["unplaced"]
    assert db["workload"] == "Deployment default/db" and db["desired"] == 30
    assert db["limit"] is None and "Insufficient cpu" in db["reason"]
    assert "ImageLocality" not in p.stdout


def test_a_host_key_no_node_carries_is_bad_input_for_audit_and_plan(tmp_path):
    nodes = write(tmp_path, "c.yaml", *cluster())
    expected = ('hwaffinity %s: error: field --topology-key: no node carries the label '
                '"cis-node" (did you mean "CIS-node"?)\n')
    p = hwaffinity("audit", "--cluster", nodes, "--topology-key", "cis-node", "-o", "json",
                   "--max-loss", "40%", "--fail-on", "intent-unmet")
    assert (p.returncode, p.stdout, p.stderr) == (2, "", expected % "audit")
    web = write(tmp_path, "deploy.yaml", deployment(replicas=2))
    p = hwaffinity("plan", "--cluster", nodes, web, "--topology-key", "cis-node")
    assert (p.returncode, p.stdout, p.stderr) == (2, "", expected % "plan")
    ok = hwaffinity("audit", "--cluster", nodes)
    assert ok.stderr == ""


def test_explain_gives_the_workloads_own_warnings(tmp_path):
    web = write(tmp_path, "deploy.yaml", deployment(replicas=3, aff=anti("cis-node")))
    p = hwaffinity("explain", "--cluster", write(tmp_path, "c.yaml", *cluster()), "--pod", web,
                   "-o", "json")
    assert p.returncode == 0
    [w] = json.loads(p.stdout)["warnings"]
    assert w.endswith('topologyKey: no node carries the label "cis-node" (did you mean '
                      '"CIS-node"?)')
    assert p.stderr == "Warning: %s\n" % w
