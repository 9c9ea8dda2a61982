"""The audit's snapshot (#54): kinds the audit does not read, custom resources included,
are skipped and named in one note; a mistyped built-in kind is still bad input."""
import pytest

from builders import node, pod
from tacker_hwaffinity.cli.audit import split
from tacker_hwaffinity.errors import InputError

SRC = "snap.yaml"


def test_kinds_the_audit_does_not_read_are_skipped_with_a_note():
    nad = {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
           "metadata": {"name": "n3", "namespace": "cnf"}}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    notes = []
    by = split([(node("n1"), SRC), (nad, SRC), (pod("a", on="n1"), SRC), (config, SRC)],
               notes)
    assert [o["metadata"]["name"] for o in by["Node"] + by["Pod"]] == ["n1", "a"]
    assert notes == ["snap.yaml: 2 objects are not read by the audit and are skipped: "
                     "NetworkAttachmentDefinition/n3 (k8s.cni.cncf.io/v1), ConfigMap/c (v1)"]


def test_a_mistyped_built_in_kind_is_bad_input():
    with pytest.raises(InputError) as e:
        split([({"apiVersion": "apps/v1", "kind": "Deploymnet", "metadata": {"name": "d"}},
                SRC)])
    assert e.value.field == "kind" and "did you mean Deployment?" in e.value.message


def test_an_object_read_needs_its_name():
    with pytest.raises(InputError, match="object has no metadata.name"):
        split([({"apiVersion": "v1", "kind": "Pod", "metadata": {}}, SRC)])
