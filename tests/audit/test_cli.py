import json
import os
import re

import pytest
import yaml

from tacker_hwaffinity.cli.main import main

from tests.audit.helpers import anti, node, pod

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "samples", "audit", "cluster.yaml")


def _write(tmp_path, objs):
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump_all(objs))
    return str(p)


def _spread_ok(tmp_path):
    return _write(tmp_path, [node("w1", "h1"), node("w2", "h2")] + [
        pod("s-%d" % i, n, {"app": "s"}, ("StatefulSet", "s"), affinity=anti("s"))
        for i, n in enumerate(["w1", "w2"])])


def test_exit_0_json_has_version_and_fields(tmp_path, capsys):
    assert main(["audit", "--cluster", _spread_ok(tmp_path), "-o", "json",
                 "--max-loss", "50%", "--fail-on", "unprotected",
                 "--fail-on", "intent-unmet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["version"] == 1 and out["findings"] == [] and out["staleLabels"] is None
    (w,) = out["workloads"]
    assert set(w) == {"namespace", "kind", "name", "desired", "desiredFrom", "running",
                      "hosts", "worstHost", "worstLoss", "lossRatio", "pdbs",
                      "pdbHoldsAfterWorstHost", "intent", "intentMet", "violations",
                      "unprotected"}
    assert w["intentMet"] is True and w["lossRatio"] == 0.5


@pytest.mark.parametrize("flags", [["--max-loss", "49%"], ["--max-loss", "0"],
                                   ["--fail-on", "intent-unmet"],
                                   ["--fail-on", "unprotected"],
                                   ["--fail-on", "pdb-violated"]])
def test_exit_1_on_each_threshold(flags, capsys):
    assert main(["audit", "--cluster", SAMPLE] + flags) == 1
    assert "Over threshold:" in capsys.readouterr().out


def test_unprotected_is_not_flagged_when_intent_exists(tmp_path):
    assert main(["audit", "--cluster", _spread_ok(tmp_path), "--fail-on", "unprotected"]) == 0


@pytest.mark.parametrize("args,msg", [
    (["--max-loss", "150%"], "field --max-loss"),
    (["--fail-on", "stale-labels"], "needs OpenStack credentials"),
])
def test_exit_2_on_bad_flags(args, msg, capsys):
    assert main(["audit", "--cluster", SAMPLE] + args) == 2
    err = capsys.readouterr().err
    assert msg in err and len(err.strip().splitlines()) == 1


def test_exit_2_on_bad_object(tmp_path, capsys):
    bad = _write(tmp_path, [{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                             "metadata": {"name": "b", "namespace": "n"},
                             "spec": {"minAvailable": "half",
                                      "selector": {"matchLabels": {"a": "b"}}}}])
    assert main(["audit", "--cluster", bad]) == 2
    assert "PodDisruptionBudget n/b: field spec.minAvailable" in capsys.readouterr().err
    bad = _write(tmp_path, [{"apiVersion": "v1", "kind": "ConfigMapp",
                             "metadata": {"name": "x"}}])
    assert main(["audit", "--cluster", bad]) == 2
    assert "unknown kind 'ConfigMapp' in v1" in capsys.readouterr().err


def test_svg_has_a_cell_per_host_and_workload(capsys):
    assert main(["audit", "--cluster", SAMPLE, "-o", "svg"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("<svg") and out.rstrip().endswith("</svg>")
    # web: 2 on compute-a (red: half is over a third), db: one per host
    assert out.count("<title>") == 3 + 2 + 3      # cells: web 3 hosts, cache 2, db 3
    assert "Deployment shop/web on compute-a: 2 of 4" in out
    assert 'fill="#f28e2b"' in out


def _readme_block():
    text = open(os.path.join(ROOT, "README.md")).read()
    m = re.search(r"<!-- audit-example -->\n```\n\$ (.*?)\n(.*?)```", text, re.S)
    assert m, "README lacks the audit example block"
    return m.group(1), m.group(2)


def test_readme_example_is_the_real_output(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    command, shown = _readme_block()
    argv = command.split()
    assert argv[:2] == ["hwaffinity", "audit"]
    rc = main(argv[1:])
    assert capsys.readouterr().out == shown
    assert rc == 1


def _two_namespaces(tmp_path):
    """s in ns a (apart on two hosts), t in ns b (both on h1, no intent); t's pods'
    anti-affinity-free neighbours still count for s's judgement."""
    return _write(tmp_path, [node("w1", "h1"), node("w2", "h2")] + [
        pod("s-%d" % i, n, {"app": "s"}, ("StatefulSet", "s"), ns="a", affinity=anti("s"))
        for i, n in enumerate(["w1", "w2"])] + [
        pod("t-%d" % i, "w1", {"app": "t"}, ("StatefulSet", "t"), ns="b") for i in range(2)])


def test_namespace_reports_only_that_namespaces_workloads(tmp_path, capsys):
    path = _two_namespaces(tmp_path)
    assert main(["audit", "--cluster", path, "-o", "json", "--max-loss", "50%"]) == 1
    assert {w["name"] for w in json.loads(capsys.readouterr().out)["workloads"]} == {"s", "t"}
    assert main(["audit", "--cluster", path, "-o", "json", "--max-loss", "50%",
                 "-n", "a"]) == 0             # t's loss is not this namespace's finding
    assert [w["name"] for w in json.loads(capsys.readouterr().out)["workloads"]] == ["s"]
    assert main(["audit", "--cluster", path, "--namespace", "b", "--namespace", "a"]) == 0
    text = capsys.readouterr().out
    assert "StatefulSet a/s" in text and "StatefulSet b/t" in text


def test_a_namespace_without_pods_is_bad_input(tmp_path, capsys):
    assert main(["audit", "--cluster", _two_namespaces(tmp_path), "-n", "shop",
                 "--max-loss", "50%"]) == 2
    captured = capsys.readouterr()
    assert captured.err == ("hwaffinity audit: error: field --namespace: no pod of the "
                            "cluster is in namespace 'shop': nothing to audit\n")
    assert captured.out == ""
