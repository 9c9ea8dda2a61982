"""``csar validate``: built packages pass Tacker's own checks; each fault is caught
once, located by file and field, with Tacker's own verdict where Tacker has one."""
import hashlib

import pytest

from csar_fixtures import (CLUSTER, CLUSTER_TWO_HOSTS, CLUSTER_UNLABELED, DRIVER_FILE, META,
                           members, meta_text, rewrite, set_meta, tacker_upload)
from tacker_hwaffinity.csar import validate as csar_validate
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.intake import read
from tacker_hwaffinity.intake.source import Files

SCRIPT = "Scripts/install_k8s.sh"
DF = "Definitions/vnf_a_df_default.yaml"


def _check(path, cluster=None):
    plan = read.cluster(Files((cluster,))) if cluster else None
    return csar_validate.validate(path, plan)


def _problems(path, cluster=None):
    return [str(p) for p in _check(path, cluster).unique()]


def test_built_vnf_a_passes(vnf_a_zip):
    report = _check(vnf_a_zip)
    assert report.unique() == []
    assert "Tacker upload checks (csar_utils.load_csar_data): accepted" in report.checks
    assert ("flavour default: parsed (tosca-parser, imports offline), translated "
            "(heat-translator + tacker-hwaffinity)") in report.checks


def test_built_cnf_passes_and_plans(cnf_zip):
    report = _check(cnf_zip, CLUSTER)
    assert report.unique() == []
    assert "plan: 7 of 7 pods placed on 3 distinct CIS-node value(s)" in report.checks
    # smf's anti-affinity is only preferred: 4 replicas on 3 hosts is a note
    assert any("Deployment cnf/smf: 2 replicas on CIS-node=" in n and "only preferred" in n
               for n in report.notes)


@pytest.mark.parametrize("package", ["vnf_a_zip", "cnf_zip"])
def test_tackers_own_upload_accepts_built_packages(request, tmp_path, package):
    path = request.getfixturevalue(package)
    vnf_data, flavours, artifacts = tacker_upload(path, tmp_path)
    hashed = {a["Source"] for a in artifacts}
    assert hashed == {n for n in members(path)
                      if not n.startswith(("Definitions/", "TOSCA-Metadata/"))}
    assert len(flavours) == 1


def test_tampered_file(vnf_a_zip, tmp_path):
    bad = rewrite(vnf_a_zip, tmp_path / "bad.zip", replace={SCRIPT: b"#!/bin/sh\nrm -rf /\n"})
    digest = hashlib.sha256(b"#!/bin/sh\nrm -rf /\n").hexdigest()
    problems = _problems(bad)
    assert len(problems) == 1
    assert problems[0].startswith(
        "%s: line 11 (%s): field Hash: stale: sha-256 of %s is %s; Tacker: The hash "
        % (META, SCRIPT, SCRIPT, digest))
    assert problems[0].endswith('of artifact file "%s" is an invalid value.' % SCRIPT)


def test_stale_hash(vnf_a_zip, tmp_path):
    text = meta_text(vnf_a_zip)
    old = [ln for ln in text.splitlines() if ln.startswith("Hash:")][1]
    bad = set_meta(vnf_a_zip, tmp_path / "bad.zip", text.replace(old, "Hash: " + "ab" * 32))
    problems = _problems(bad)
    assert len(problems) == 1
    assert "line 11 (%s): field Hash: stale" % SCRIPT in problems[0]
    # the same fault is refused by Tacker's own upload processing
    from tacker.common import exceptions
    with pytest.raises(exceptions.InvalidCSAR, match="is an invalid value"):
        tacker_upload(bad, tmp_path)


def test_source_escaping_the_package(vnf_a_zip, tmp_path):
    text = meta_text(vnf_a_zip).replace("Name: %s" % SCRIPT, "Name: ../../etc/passwd")
    problems = _problems(set_meta(vnf_a_zip, tmp_path / "bad.zip", text))
    escape = [p for p in problems if "../../etc/passwd" in p and "field Name" in p]
    assert len(escape) == 1
    assert "goes up with '..': it resolves outside the package" in escape[0]
    assert 'Tacker: The path("../../etc/passwd") of artifact Source resolves outside' in escape[0]
    # the script, now unlisted, is reported too
    assert "%s: has no hash block in %s" % (SCRIPT, META) in problems[-1]


def test_archive_member_escaping_the_package(vnf_a_zip, tmp_path):
    bad = rewrite(vnf_a_zip, tmp_path / "bad.zip", add={"../evil.sh": b"echo owned\n"})
    problems = _problems(bad)
    assert problems[0] == ("../evil.sh: archive member name goes up with '..': it escapes the "
                           "package when extracted")
    assert not (tmp_path / "evil.sh").exists()


def test_missing_artifact_listed_in_tosca_meta(vnf_a_zip, tmp_path):
    bad = rewrite(vnf_a_zip, tmp_path / "bad.zip", drop={SCRIPT})
    problems = _problems(bad)
    assert problems == [
        '%s: line 11 (%s): field Name: %s is missing from the package; Tacker: The path'
        '("%s") of artifact Source is an invalid value.' % (META, SCRIPT, SCRIPT, SCRIPT)]


def test_missing_driver_artifact(vnf_a_zip, tmp_path):
    text = "\n".join(b for b in meta_text(vnf_a_zip).split("\n\n") if DRIVER_FILE not in b)
    bad = rewrite(vnf_a_zip, tmp_path / "bad.zip", drop={DRIVER_FILE},
                  replace={META: text.encode()})
    problems = _problems(bad)
    assert ("%s: node VNF: field topology_template.node_templates.VNF.artifacts."
            "mgmt-drivers-hwaffinity.file: %s is not in the package (the artifact is missing)"
            % (DF, DRIVER_FILE)) in problems


def test_driver_copy_differs_from_the_installed_module(vnf_a_zip, tmp_path):
    body = members(vnf_a_zip)[DRIVER_FILE] + b"# patched\n"
    text = meta_text(vnf_a_zip)
    old = [ln for ln in text.splitlines() if ln.startswith("Hash:")][0]
    text = text.replace(old, "Hash: " + hashlib.sha256(body).hexdigest())
    bad = rewrite(vnf_a_zip, tmp_path / "bad.zip", replace={DRIVER_FILE: body,
                                                             META: text.encode()})
    problems = _problems(bad)
    assert len(problems) == 1, problems
    assert problems[0].startswith("%s: node VNF: is not the installed " % DRIVER_FILE)
    assert problems[0].endswith("Tacker: The hash verification of VNF Package MgmtDriver and "
                                "Tacker MgmtDriver does not match.")


def _edit_member(path, target, name, old, new):
    text = members(path)[name].decode()
    assert old in text
    return rewrite(path, target, replace={name: text.replace(old, new).encode()})


def test_hook_naming_an_unregistered_driver(vnf_a_zip, tmp_path):
    bad = _edit_member(vnf_a_zip, tmp_path / "bad.zip", DF,
                       "heal_end:\n            implementation: mgmt-drivers-hwaffinity",
                       "heal_end:\n            implementation: mgmt-drivers-nowhere")
    problems = _problems(bad)
    assert ("%s: node VNF: field topology_template.node_templates.VNF.interfaces.Vnflcm.heal_end"
            ".implementation: names artifact 'mgmt-drivers-nowhere', which node VNF does not "
            "define" % DF) in problems
    assert any("mgmt-drivers-nowhere is not a registered MgmtDriver (entry points of "
               "tacker.tacker.mgmt.drivers: mgmt-drivers-hwaffinity, noop, vnflcm_noop)" in p
               for p in problems)


def test_vnfd_that_tosca_parser_rejects(vnf_a_zip, tmp_path):
    bad = _edit_member(vnf_a_zip, tmp_path / "bad.zip", DF,
                       "type: tosca.nodes.nfv.VduCp", "type: tosca.nodes.nfv.NoSuchCp")
    problems = _problems(bad)
    assert any(p.startswith("%s: tosca-parser rejected the VNFD" % DF) and "NoSuchCp" in p
               for p in problems)
    assert any(p.startswith("bad.zip: Tacker refuses the upload") and "NoSuchCp" in p
               for p in problems)


def test_bad_manifest_is_located(cnf_zip, tmp_path):
    name = "Files/kubernetes/upf.yaml"
    body = members(cnf_zip)[name].decode().replace("replicas: 3", "replicas: three").replace(
        "image: registry", "imagee: registry")
    text = meta_text(cnf_zip)
    old = [ln for ln in text.splitlines() if ln.startswith("Hash:")][1]
    text = text.replace(old, "Hash: " + hashlib.sha256(body.encode()).hexdigest())
    bad = rewrite(cnf_zip, tmp_path / "bad.zip", replace={name: body.encode(),
                                                           META: text.encode()})
    assert _problems(bad) == [
        "%s: Deployment cnf/upf: field spec.replicas: Input should be a valid integer, got "
        "'three'" % name,
        "%s: Deployment cnf/upf: field spec.template.spec.containers[0].imagee: unknown field"
        % name]


def test_replicas_that_do_not_fit_on_distinct_hosts(cnf_zip):
    problems = _problems(cnf_zip, CLUSTER_TWO_HOSTS)
    assert len(problems) == 1
    assert problems[0].startswith("Files/kubernetes/upf.yaml: pod cnf/upf-")
    assert problems[0].endswith(": not placed: 0/5 nodes are available: 1 node(s) had "
                                "untolerated taint {node-role.kubernetes.io/control-plane: }, "
                                "4 node(s) didn't match pod anti-affinity rules.")


def test_replica_on_a_node_without_the_host_label(cnf_zip):
    problems = _problems(cnf_zip, CLUSTER_UNLABELED)
    assert len(problems) == 1
    assert problems[0].startswith("Files/kubernetes/upf.yaml: pod cnf/upf-")
    assert problems[0].endswith(": placed on node worker-4, which has no CIS-node label: the "
                                "required anti-affinity on CIS-node cannot hold there")


def test_not_a_zip_is_unusable_input(tmp_path):
    path = tmp_path / "x.zip"
    path.write_text("hello")
    with pytest.raises(InputError, match="not a zip archive"):
        csar_validate.validate(str(path))


def test_driver_artifact_path_escaping_the_package(vnf_a_zip, tmp_path):
    bad = _edit_member(vnf_a_zip, tmp_path / "bad.zip", DF,
                       "file: Scripts/hwaffinity_mgmt_driver.py", "file: ../../driver.py")
    problems = _problems(bad)
    assert ("%s: node VNF: field topology_template.node_templates.VNF.artifacts."
            "mgmt-drivers-hwaffinity.file: artifact file '../../driver.py' escapes the package "
            "(v2 paths are relative to Definitions/)" % DF) in problems


def test_missing_tosca_meta(vnf_a_zip, tmp_path):
    problems = _problems(rewrite(vnf_a_zip, tmp_path / "bad.zip", drop={META}))
    assert problems[0] == ("%s: missing: Tacker finds the VNFD and the artifact hashes "
                           "through it" % META)
