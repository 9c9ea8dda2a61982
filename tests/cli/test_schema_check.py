"""--kubernetes-version and --strict on plan, explain, audit: a misspelt field is
kubectl's warning (stderr, and "warnings" in JSON), an error with --strict; what the API
server refuses is an error (doc/cli.md, "Schema check"); the check is in every install
(tests/cli/test_extras.py runs it with the old schema extra's modules blocked)."""
import json
import os

import pytest

from tacker_hwaffinity.cli.main import main
from tacker_hwaffinity.objects import schema


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "samples", "cluster.yaml")
UPF = os.path.join(ROOT, "samples", "cnf", "upf-required.yaml")
NEWEST = schema.supported_minors()[-1]


def _manifest(tmp_path, old, new, source=UPF, name="w.yaml"):
    with open(source) as f:
        text = f.read()
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1))
    return str(path)


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err.splitlines()


def test_a_misspelt_affinity_warns_as_kubectl_does_and_strict_refuses(tmp_path, capsys):
    path = _manifest(tmp_path, "    spec:\n      affinity:", "    spec:\n      afinity:")
    warning = 'Warning: %s: Deployment cnf/upf: unknown field "spec.template.spec.afinity"' % path
    status, out, err = _run(capsys, "plan", "--cluster", CLUSTER, path)
    assert status == 0 and err == [warning]
    assert "3 of 3 pods placed" in out         # the term is gone: nothing stops stacking
    status, out, err = _run(capsys, "plan", "--cluster", CLUSTER, path, "-o", "json")
    assert json.loads(out)["warnings"] == [warning[len("Warning: "):]]
    status, out, err = _run(capsys, "plan", "--strict", "--cluster", CLUSTER, path)
    assert status == 2 and out == ""
    assert err == [warning, "hwaffinity plan: error: %s: Deployment cnf/upf: field "
                   "spec.template.spec.afinity: unknown field (--strict)" % path]


def test_a_misspelt_replicas_warns(tmp_path, capsys):
    path = _manifest(tmp_path, "replicas: 3", "replica: 3")
    status, out, err = _run(capsys, "plan", "--cluster", CLUSTER, path)
    assert status == 0
    assert err == ['Warning: %s: Deployment cnf/upf: unknown field "spec.replica"' % path]


def test_a_wrong_type_is_an_error_naming_the_field(tmp_path, capsys):
    path = _manifest(tmp_path, "replicas: 3", 'replicas: "3"')
    status, out, err = _run(capsys, "plan", "--cluster", CLUSTER, path)
    assert status == 2
    assert err == ["hwaffinity plan: error: %s: Deployment cnf/upf: field spec.replicas: "
                   "expected integer, got string '3'" % path]


@pytest.mark.parametrize("version", ["1.29", "1.%d" % (NEWEST + 1), "latest"])
def test_an_unsupported_kubernetes_version_is_bad_input(capsys, version):
    status, out, err = _run(capsys, "plan", "--kubernetes-version", version, "--cluster",
                            CLUSTER, UPF)
    assert status == 2
    assert err == ["hwaffinity plan: error: field --kubernetes-version: %r is not a supported "
                   "Kubernetes version (1.30 to 1.%d; written 1.N, v1.N or 1.N.P)"
                   % (version, NEWEST)]


def test_a_field_newer_than_the_named_release_warns(tmp_path, capsys):
    path = _manifest(tmp_path, "      containers:", "      resources:\n        requests: "
                     "{cpu: '1'}\n      containers:")
    _, _, err = _run(capsys, "explain", "--kubernetes-version", "v1.31.2", "--cluster",
                     CLUSTER, "--pod", path)
    assert err == ['Warning: %s: Deployment cnf/upf: unknown field "spec.template.spec.resources"'
                   % path]
    _, out, err = _run(capsys, "explain", "--kubernetes-version", "1.32", "--cluster",
                       CLUSTER, "--pod", path, "-o", "json")
    assert err == [] and json.loads(out)["warnings"] == []


def test_a_misspelt_snapshot_key_warns_in_audit_and_plan(tmp_path, capsys):
    cluster = _manifest(tmp_path, "  kind: Node\n  metadata:\n",
                        "  kind: Node\n  metadata:\n    lables: {a: b}\n", CLUSTER, "c.yaml")
    warning = 'Warning: %s: Node master-0: unknown field "metadata.lables"' % cluster
    status, out, err = _run(capsys, "audit", "--cluster", cluster, "-o", "json")
    assert status == 0 and err == [warning]
    assert json.loads(out)["warnings"] == [warning[len("Warning: "):]]
    status, out, err = _run(capsys, "plan", "--cluster", cluster, UPF)
    assert status == 0 and err == [warning]
    status, out, err = _run(capsys, "audit", "--strict", "--cluster", cluster)
    assert status == 2 and err[-1].startswith("hwaffinity audit: error: %s: Node master-0: "
                                              "field metadata.lables: unknown field" % cluster)


def test_the_shipped_samples_give_no_warning(capsys):
    status, out, err = _run(capsys, "plan", "--strict", "--cluster", CLUSTER, UPF)
    assert status == 0 and err == []
