"""``csar validate`` checks a CNF's manifests against the Kubernetes release's schema too:
unknown fields are warnings (problems with --strict), a fault the client models already
found is one problem, not two."""
import hashlib

from csar_fixtures import META, members, meta_text, rewrite
from tacker_hwaffinity.csar import validate as csar_validate
from tacker_hwaffinity.objects import schema

NAME = "Files/kubernetes/upf.yaml"


def _with_upf(cnf_zip, tmp_path, old, new):
    body = members(cnf_zip)[NAME].decode()
    assert old in body
    body = body.replace(old, new, 1)
    text = meta_text(cnf_zip)
    stale = [ln for ln in text.splitlines() if ln.startswith("Hash:")][1]
    text = text.replace(stale, "Hash: " + hashlib.sha256(body.encode()).hexdigest())
    return rewrite(cnf_zip, tmp_path / "bad.zip", replace={NAME: body.encode(),
                                                           META: text.encode()})


def _validate(path, strict=False):
    check = schema.Check(schema.release(schema.supported_minors()[-1]), strict)
    report = csar_validate.validate(path, schema_check=check)
    return [str(p) for p in report.unique()], check.warnings, report.checks


def test_the_built_cnf_passes_the_schema(cnf_zip):
    problems, warnings, checks = _validate(cnf_zip, strict=True)
    assert problems == [] and warnings == []
    assert any("against the Kubernetes 1.%d OpenAPI schema" % schema.supported_minors()[-1]
               in c for c in checks)


def test_a_misspelt_field_is_a_warning_and_a_strict_problem_once(cnf_zip, tmp_path):
    bad = _with_upf(cnf_zip, tmp_path, "replicas: 3", "replicas: three")
    problems, warnings, _ = _validate(bad)
    assert problems == ["%s: Deployment cnf/upf: field spec.replicas: Input should be a valid "
                        "integer, got 'three'" % NAME]
    assert warnings == []
    bad = _with_upf(cnf_zip, tmp_path, "replicas: 3", "replica: 3")
    problems, warnings, _ = _validate(bad, strict=True)
    assert warnings == ['%s: Deployment cnf/upf: unknown field "spec.replica"' % NAME]
    assert problems == ["%s: Deployment cnf/upf: field spec.replica: unknown field" % NAME]


def test_without_the_client_models_the_schema_alone_checks_and_a_note_says_so(
        cnf_zip, tmp_path, monkeypatch):
    """Tacker 16's Python has the kubernetes client 36 (the tacker extra pins it), whose
    models check nothing: validate is not broken by it, the schema finds the fault."""
    from tacker_hwaffinity.csar import manifests
    monkeypatch.setattr(manifests, "models_available", lambda: False)
    check = schema.Check(schema.release(schema.supported_minors()[-1]), False)
    report = csar_validate.validate(cnf_zip, schema_check=check)
    assert report.unique() == []
    assert any("no pydantic models" in n for n in report.notes)
    bad = _with_upf(cnf_zip, tmp_path, "replicas: 3", "replicas: three")
    problems, _, checks = _validate(bad)          # models_available is still patched
    assert len(problems) == 1 and "spec.replicas" in problems[0]
    assert not any("client models" in c for c in checks)
