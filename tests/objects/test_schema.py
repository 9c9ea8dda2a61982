"""objects.schema: objects against one Kubernetes release's OpenAPI schema, fully (the
manifests a user writes) and cheaply (the snapshot's keys, while the pruner runs)."""
import gzip

import pytest
from hypothesis import given, settings, strategies as st

from builders import container, namespace, node, pod
from fuzzing import bounded
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import schema, yamlio
from tacker_hwaffinity.scheduling.snapshot import SNAPSHOT_FIELDS

NEWEST = schema.supported_minors()[-1]


def deployment(spec_extra=None, pod_spec_extra=None, replicas=3):
    spec = {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [container()], **(pod_spec_extra or {})}}}
    spec.update(spec_extra or {})
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "cnf"}, "spec": spec}


def findings(obj, minor=NEWEST):
    return schema.release(minor).findings(obj)


def review(objects, strict=False, minor=NEWEST):
    found = []
    check = schema.Check(schema.release(minor), strict, report=found.extend)
    errors = check.review([(o, "w.yaml") for o in objects])
    return [str(e) for e in errors], found


def test_a_misspelt_field_is_kubectl_s_warning_with_its_path():
    errors, warnings = review([deployment(pod_spec_extra={"afinity": {}})])
    assert errors == []
    assert warnings == ['w.yaml: Deployment cnf/web: unknown field "spec.template.spec.afinity"']


def test_list_items_are_named_by_index():
    d = deployment(pod_spec_extra={"containers": [container(imagePullPolcy="Always")]})
    assert findings(d) == [("unknown", "spec.template.spec.containers[0].imagePullPolcy",
                            "unknown field")]


def test_strict_makes_unknown_fields_errors_and_counts_them():
    d = deployment({"replica": 3}, {"afinity": {}})
    errors, warnings = review([d], strict=True)
    assert len(warnings) == 2
    assert errors == ["w.yaml: Deployment cnf/web: field spec.replica: unknown field (--strict)",
                      "w.yaml: Deployment cnf/web: field spec.template.spec.afinity: unknown "
                      "field (--strict)"]
    check = schema.Check(schema.release(NEWEST), strict=True)
    with pytest.raises(InputError) as e:
        check.objects([(d, "w.yaml")])
    assert str(e.value) == ("w.yaml: Deployment cnf/web: field spec.replica: unknown field "
                            "(--strict) (and 1 more)")


@pytest.mark.parametrize("change,field,message", [
    ({"replicas": "3"}, "spec.replicas", "expected integer, got string '3'"),
    ({"replicas": True}, "spec.replicas", "expected integer, got boolean True"),
    ({"template": None}, "spec.template", "required field is missing"),
    ({"strategy": {"rollingUpdate": {"maxSurge": 1.5}}},
     "spec.strategy.rollingUpdate.maxSurge", "expected string or integer, got number 1.5"),
])
def test_what_the_api_server_refuses_is_an_error_naming_the_field(change, field, message):
    d = deployment()
    d["spec"].update(change)
    d["spec"] = {k: v for k, v in d["spec"].items() if v is not None}
    errors, warnings = review([d])
    assert errors == ["w.yaml: Deployment cnf/web: field %s: %s" % (field, message)]
    assert warnings == []


def test_nulls_dates_and_numeric_quantities_are_what_the_api_server_takes():
    d = deployment({"strategy": {"rollingUpdate": {"maxSurge": None, "maxUnavailable": "25%"}}})
    d["metadata"]["annotations"] = {"built": __import__("datetime").date(2024, 1, 1)}
    d["spec"]["template"]["spec"]["containers"] = [
        container(requests={"cpu": 1, "memory": "1Gi"}, limits={"cpu": 0.5})]
    assert findings(d) == []


def test_kinds_without_a_schema_are_skipped_and_removed_apis_warned():
    crd = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
           "metadata": {"name": "r"}, "spec": {"anything": 1}}
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1",
              "kind": "KubeSchedulerConfiguration", "profiles": []}
    lookalike = dict(deployment(), apiVersion="apps.example.com/v1")
    assert [findings(o) for o in (crd, config, lookalike)] == [[], [], []]
    old = dict(deployment(), apiVersion="extensions/v1beta1")
    pdb = {"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "p", "namespace": "cnf"}, "spec": {}}
    errors, warnings = review([old, pdb], minor=30)
    assert errors == []
    assert warnings == [
        'w.yaml: Deployment cnf/web: no matches for kind "Deployment" in version '
        '"extensions/v1beta1" in Kubernetes 1.30 (not checked)',
        'w.yaml: PodDisruptionBudget cnf/p: no matches for kind "PodDisruptionBudget" in '
        'version "policy/v1beta1" in Kubernetes 1.30 (not checked)']


def test_a_field_newer_than_the_release_is_unknown_to_it():
    """PodSpec.resources (pod-level requests and limits) came in 1.32."""
    d = deployment(pod_spec_extra={"resources": {"requests": {"cpu": "1"}}})
    assert findings(d, 31) == [("unknown", "spec.template.spec.resources", "unknown field")]
    assert findings(d, 32) == []


@pytest.mark.parametrize("text,minor", [("1.31", 31), ("v1.31", 31), ("1.31.4", 31),
                                        (None, NEWEST)])
def test_version_forms(text, minor):
    assert schema.parse_version(text, schema.supported_minors()) == minor


@pytest.mark.parametrize("text", ["1.29", "1.%d" % (NEWEST + 1), "2.0", "1.x", "131", "",
                                  "1.31-rc1"])
def test_unsupported_versions_name_the_range(text):
    with pytest.raises(InputError) as e:
        schema.parse_version(text, schema.supported_minors())
    assert str(e.value) == ("field --kubernetes-version: %r is not a supported Kubernetes "
                            "version (1.30 to 1.%d; written 1.N, v1.N or 1.N.P)"
                            % (text, NEWEST))


def _snapshot_warnings(text, kept=SNAPSHOT_FIELDS, strict=False):
    found = []
    check = schema.Check(schema.release(NEWEST), strict, report=found.extend)
    known = check.snapshot(kept)
    objects = yamlio.parse_documents(text, "c.json", kept, known)
    check.snapshot_done(known)
    return objects, found


def test_a_misspelt_snapshot_key_is_a_warning_and_the_pruner_still_prunes():
    import json
    n = node("worker-1", labels={"CIS-node": "a"})
    n["metadata"]["lables"] = {"x": "y"}
    n["metadata"]["uid"] = "u"
    n["status"] = {"allocatable": {"cpu": "1"}, "nodeInfo": {}, "capacty": {}}
    p = pod("p", on="worker-1", owner=("ReplicaSet", "rs"), cpu="1")
    p["spec"]["nodeSelectr"] = {}
    p["spect"] = {}
    objects, warnings = _snapshot_warnings(json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": [n, p, namespace("default")]}))
    assert warnings == ['c.json: Node worker-1: unknown field "metadata.lables"',
                        'c.json: Node worker-1: unknown field "status.capacty"',
                        'c.json: Pod default/p: unknown field "spect"',
                        'c.json: Pod default/p: unknown field "spec.nodeSelectr"']
    assert objects[0]["metadata"] == {"name": "worker-1", "labels": {"CIS-node": "a"}}
    assert objects[0]["status"] == {"allocatable": {"cpu": "1"}}


def test_a_snapshot_s_nested_kept_mappings_are_checked_too():
    kept = {"Pod": {"spec": (("containers", ("name", "resources")),)}}
    p = pod("p", containers=[container(), container("d", imagePulPolicy="x")])
    _, warnings = _snapshot_warnings(__import__("json").dumps(p), kept)
    assert warnings == ['c.json: Pod default/p: unknown field "spec.containers[1].imagePulPolicy"']


def test_a_snapshot_s_removed_api_is_counted_once_per_file_and_strict_raises():
    pdb = ('{"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget", '
           '"metadata": {"name": "p%d"}, "spec": {}}')
    from tacker_hwaffinity.cli.audit import AUDIT_FIELDS
    text = '{"kind": "List", "items": [%s, %s]}' % (pdb % 1, pdb % 2)
    _, warnings = _snapshot_warnings(text, AUDIT_FIELDS)
    assert warnings == ['c.json: 2 object(s) not checked: no matches for kind '
                        '"PodDisruptionBudget" in version "policy/v1beta1" in Kubernetes 1.%d'
                        % NEWEST]
    with pytest.raises(InputError, match=r"field metadata.lables: unknown field \(--strict\)"):
        _snapshot_warnings('{"apiVersion": "v1", "kind": "Node", '
                           '"metadata": {"name": "n", "lables": {}}}', strict=True)


# mtime=0: gzip stamps the time in its header, and the test ids must be the same in
# every xdist worker (they differed within a second: "Different tests were collected")
@pytest.mark.parametrize("content", [
    None, b"not gzip", gzip.compress(b"[1", mtime=0), gzip.compress(b"{}", mtime=0),
    gzip.compress(b'{"minors": []}', mtime=0)],
    ids=["missing", "not-gzip", "not-json", "empty", "no-minors"])
def test_a_broken_installation_is_one_error_naming_the_file(monkeypatch, tmp_path, content):
    """Missing or damaged schemas stop the command (exit 2): no check is skipped."""
    path = tmp_path / "kubernetes-schemas.json.gz"
    if content is not None:
        path.write_bytes(content)
    monkeypatch.setattr(schema, "DATA", str(path))
    schema._data.cache_clear()
    try:
        with pytest.raises(InputError) as e:
            schema.Check.from_flags(None, False)
        assert str(e.value).startswith("the Kubernetes schemas of this installation cannot be "
                                       "read (%s: " % path)
        assert str(e.value).endswith("): reinstall tacker-hwaffinity")
        assert "\n" not in str(e.value)
    finally:
        schema._data.cache_clear()


def test_the_shipped_schemas_cover_1_30_to_the_newest():
    minors = schema.supported_minors()
    assert minors == tuple(range(30, minors[-1] + 1)) and minors[-1] >= 37


def test_a_missing_required_field_is_one_error_each():
    """jsonschema reported each missing field once per missing field (n x n)."""
    d = deployment()
    del d["spec"]["selector"], d["spec"]["template"]
    errors, _ = review([d])
    assert errors == ["w.yaml: Deployment cnf/web: field spec.selector: required field is "
                      "missing", "w.yaml: Deployment cnf/web: field spec.template: required "
                      "field is missing"]


KEYS = st.sampled_from(["apiVersion", "kind", "metadata", "spec", "template", "containers",
                        "name", "replicas", "selector", "afinity", "labels", "resources", 1])
SCALARS = (st.none() | st.booleans() | st.integers() | st.text(max_size=6)
           | st.floats(allow_nan=False))
JSONISH = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(KEYS, inner, max_size=5), max_leaves=40)
OBJECTS = st.builds(lambda api, kind, body: dict(body, apiVersion=api, kind=kind),
                    st.sampled_from(["v1", "apps/v1", "batch/v1", "policy/v1", "v2",
                                     "example.com/v1"]),
                    st.sampled_from(["Pod", "Deployment", "StatefulSet", "Job", "Node",
                                     "PodDisruptionBudget", "CustomResourceDefinition"]),
                    st.dictionaries(KEYS, JSONISH, max_size=5))


@settings(deadline=None)
@given(OBJECTS | st.builds(deployment, st.dictionaries(KEYS, JSONISH, max_size=3),
                           st.dictionaries(KEYS, JSONISH, max_size=3)))
def test_fuzz_the_check_gives_warnings_or_input_errors_within_bounds(obj):
    check = schema.Check(schema.release(NEWEST), strict=True)
    check.review([(obj, "w.yaml")])         # warm: validators are built once per kind
    bounded(check.objects, [(obj, "w.yaml")], seconds=0.05)
    assert all(isinstance(w, str) and "\n" not in w for w in check.warnings)


def test_fuzz_a_deeply_nested_custom_resource_definition_is_bounded():
    deep = {"type": "object"}
    for _ in range(400):
        deep = {"type": "object", "properties": {"a": deep}}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "x.example.com"},
           "spec": {"group": "example.com", "names": {"kind": "X", "plural": "x"},
                    "scope": "Namespaced", "versions": [
                        {"name": "v1", "served": True, "storage": True,
                         "schema": {"openAPIV3Schema": deep}}]}}
    check = schema.Check(schema.release(NEWEST))
    bounded(check.objects, [(crd, "crd.yaml")], seconds=0.5, mib=64)
