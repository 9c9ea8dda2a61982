"""``hwaffinity csar build|validate``: output, exit status 0/1/2, no tracebacks."""
import json
import os

from csar_fixtures import CLUSTER, CNF, VNF_A, rewrite
from tacker_hwaffinity.cli.main import main


def _run(capsys, *argv):
    status = main(["csar"] + list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_build_then_validate(tmp_path, capsys):
    pkg = str(tmp_path / "vnf_a.zip")
    status, out, err = _run(capsys, "build", VNF_A, "--output-file", pkg)
    assert status == 0, err
    assert out == "wrote %s (8 files)\n" % pkg
    assert "note: added Scripts/hwaffinity_mgmt_driver.py: the installed " in err
    status, out, err = _run(capsys, "validate", pkg)
    assert status == 0, out
    lines = out.splitlines()
    assert lines[-1] == "%s: OK" % pkg
    assert "checked: Tacker upload checks (csar_utils.load_csar_data): accepted" in lines
    assert not [ln for ln in lines if ln.startswith("problem:")]


def test_validate_cnf_with_cluster_json(tmp_path, capsys):
    pkg = str(tmp_path / "cnf.zip")
    assert _run(capsys, "build", CNF, "--output-file", pkg)[0] == 0
    status, out, err = _run(capsys, "validate", pkg, "--cluster", CLUSTER, "-o", "json")
    assert status == 0, out
    report = json.loads(out)
    assert report["problems"] == []
    assert "plan: 7 of 7 pods placed on 3 distinct CIS-node value(s)" in report["checks"]


def test_problems_exit_1_with_file_and_field(tmp_path, capsys):
    pkg = str(tmp_path / "vnf_a.zip")
    _run(capsys, "build", VNF_A, "--output-file", pkg)
    bad = rewrite(pkg, tmp_path / "bad.zip", replace={"Scripts/install_k8s.sh": b"changed\n"})
    status, out, _ = _run(capsys, "validate", bad)
    assert status == 1
    problems = [ln for ln in out.splitlines() if ln.startswith("problem:")]
    assert len(problems) == 1
    assert problems[0].startswith("problem: TOSCA-Metadata/TOSCA.meta: line 11 "
                                  "(Scripts/install_k8s.sh): field Hash: stale")
    assert out.splitlines()[-1] == "%s: 1 problem(s)" % bad
    status, out, _ = _run(capsys, "validate", bad, "-o", "json")
    assert status == 1
    (problem,) = json.loads(out)["problems"]
    assert (problem["file"], problem["field"]) == ("TOSCA-Metadata/TOSCA.meta", "Hash")


def test_unusable_input_exits_2_without_traceback(tmp_path, capsys):
    junk = tmp_path / "junk.zip"
    junk.write_text("not a zip")
    status, out, err = _run(capsys, "validate", str(junk))
    assert status == 2
    assert err.startswith("hwaffinity csar validate: error: %s: not a zip archive" % junk)
    assert "Traceback" not in err
    status, _, err = _run(capsys, "build", str(tmp_path / "nowhere"), "--output-file",
                          str(tmp_path / "x.zip"))
    assert status == 2
    assert err == "hwaffinity csar build: error: %s: not a directory\n" % (tmp_path / "nowhere")
    assert not os.path.exists(tmp_path / "x.zip")


def test_scheduler_config_needs_a_cluster(tmp_path, capsys):
    status, _, err = _run(capsys, "validate", "x.zip", "--scheduler-config", "s.yaml")
    assert status == 2
    assert "field --scheduler-config: needs --cluster" in err


def test_validate_prints_each_check_as_it_is_found(tmp_path, capsys, monkeypatch):
    """Text output streams: the checks made so far are on stdout while the last check
    (the Vnflcm hooks) runs; -o json stays one document."""
    import io
    from tacker_hwaffinity.csar import vnfd
    pkg = str(tmp_path / "vnf_a.zip")
    _run(capsys, "build", VNF_A, "--output-file", pkg)
    hooks, seen = vnfd.hooks, []

    def watched(*args):
        seen.append(out.getvalue())
        return hooks(*args)
    monkeypatch.setattr(vnfd, "hooks", watched)
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    assert main(["csar", "validate", pkg]) == 0
    assert seen[0].startswith("checked: archive: 8 file(s)\n")
    assert "checked: Tacker upload checks (csar_utils.load_csar_data): accepted\n" in seen[0]
    assert "Vnflcm hooks" not in seen[0] and "Vnflcm hooks" in out.getvalue()
    assert all(len(ln) <= 100 for ln in out.getvalue().splitlines())
    out.seek(0)
    out.truncate()
    assert main(["csar", "validate", pkg, "-o", "json"]) == 0
    assert json.loads(out.getvalue())["package"] == pkg
