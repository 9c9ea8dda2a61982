"""Every Kubernetes object we ship (deploy/, samples/, csar/) passes the schema check
strictly (no unknown field, nothing the API server refuses, no apiVersion it does not
serve) for every Kubernetes release we support, 1.30 to the newest the package ships.

Objects of kinds without a schema (the PrometheusRule custom resource, kube-scheduler's
configuration, kustomization.yaml) are not checked, as the command does not check them.
"""
import os

import pytest

from tacker_hwaffinity.objects import schema
from tacker_hwaffinity.objects.yamlio import load_objects

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHIPPED = ("deploy", "samples", "csar")


def _manifest_files():
    out = []
    for top in SHIPPED:
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            out.extend(os.path.join(dirpath, n) for n in names
                       if n.endswith((".yaml", ".yml", ".json")))
    return sorted(out)


def _kubernetes_objects():
    """[(object, file relative to the checkout)] of every apiVersion+kind document."""
    out = []
    for path in _manifest_files():
        for obj, _ in load_objects([path]):
            if isinstance(obj.get("apiVersion"), str) and isinstance(obj.get("kind"), str):
                out.append((obj, os.path.relpath(path, ROOT)))
    return out


OBJECTS = _kubernetes_objects()


def test_the_shipped_files_hold_the_objects_we_mean_to_check():
    files = {source for _, source in OBJECTS}
    for expected in ("deploy/webhook/deployment.yaml", "deploy/agent/daemonset.yaml",
                     "samples/cluster.yaml", "samples/cnf/upf-required.yaml",
                     "csar/cnf/Files/kubernetes/amf.yaml"):
        assert expected in files
    checked = [o for o, _ in OBJECTS
               if schema.release(schema.supported_minors()[-1]).type_of(
                   o["apiVersion"], o["kind"])]
    assert len(checked) > 40


@pytest.mark.parametrize("minor", schema.supported_minors())
def test_every_shipped_object_passes_the_strict_check(minor):
    found = []
    check = schema.Check(schema.release(minor), strict=True, report=found.extend)
    errors = check.review(OBJECTS)
    assert [str(e) for e in errors] == []
    assert found == []


def test_the_supported_releases_start_at_1_30_and_follow_the_package():
    minors = schema.supported_minors()
    assert minors[0] == 30 and minors == tuple(range(30, minors[-1] + 1))
    assert minors[-1] >= 37
