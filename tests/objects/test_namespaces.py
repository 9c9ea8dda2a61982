"""Where a manifest's objects land (objects/namespaces.py): kubectl's -n, the kubeconfig
context's namespace, else default; a namespace the cluster lacks is refused."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import namespaces
from tacker_hwaffinity.objects.namespaces import Target


def deployment(name="web", ns=None):
    meta = {"name": name}
    if ns is not None:
        meta["namespace"] = ns
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": {}}


def test_the_flag_then_the_context_then_default():
    assert namespaces.target("cnf", "ctx") == Target("cnf", "--namespace")
    assert namespaces.target(None, "ctx") == Target("ctx", "the kubeconfig context's namespace")
    assert namespaces.target(None, None) == Target("default", "the default")
    assert namespaces.target("cnf").explicit and not namespaces.target(None, "ctx").explicit


@pytest.mark.parametrize("bad", ["", "CNF", "-cnf", "cnf-", "a" * 64, "c_n_f", "cnf\n"])
def test_a_flag_that_names_no_namespace_is_bad_input(bad):
    with pytest.raises(InputError) as e:
        namespaces.target(bad)
    assert e.value.field == "--namespace"


def test_objects_without_a_namespace_land_in_the_target_and_a_note_says_so():
    given_ = [(deployment("a"), "a.yaml"), (deployment("b", "cnf"), "b.yaml"),
              ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}, "n.yaml")]
    out, notes = namespaces.place(given_, Target())
    assert [o["metadata"].get("namespace") for o, _ in out] == ["default", "cnf", None]
    assert notes == ['1 object(s) name no namespace: planned in namespace "default" '
                     "(the default; -n/--namespace sets another)"]
    assert "namespace" not in given_[0][0]["metadata"]      # the input is left as it was
    out, notes = namespaces.place([(deployment("a"), "a.yaml")], Target("cnf", "--namespace"))
    assert out[0][0]["metadata"]["namespace"] == "cnf"
    assert notes == ['1 object(s) name no namespace: planned in namespace "cnf" (--namespace)']
    assert namespaces.place([(deployment("a", "x"), "a.yaml")], Target()) == (
        [(deployment("a", "x"), "a.yaml")], [])


def test_with_the_flag_another_namespace_is_refused_as_kubectl_refuses_it():
    with pytest.raises(InputError) as e:
        namespaces.place([(deployment("b", "cnf"), "b.yaml")], Target("cfn", "--namespace"))
    assert str(e.value) == (
        "b.yaml: Deployment cnf/b: field metadata.namespace: the namespace from the provided "
        "object \"cnf\" does not match the namespace \"cfn\". You must pass "
        "'--namespace=cnf' to perform this operation.")
    # from the context (not the flag), an object's own namespace stands, as in kubectl
    out, _ = namespaces.place([(deployment("b", "cnf"), "b.yaml")],
                              Target("ctx", "the kubeconfig context's namespace"))
    assert out[0][0]["metadata"]["namespace"] == "cnf"


def test_a_namespace_the_cluster_lacks_is_refused_unless_the_manifests_create_it():
    objs = [(deployment("web", "cfn"), "deploy.yaml")]
    with pytest.raises(InputError) as e:
        namespaces.check_exist(objs, {"default", "cnf"})
    assert str(e.value) == (
        'deploy.yaml: Deployment cfn/web: field metadata.namespace: namespace "cfn" is not in '
        'the cluster (did you mean "cnf"?) and no Namespace of the manifests creates it: the '
        "API server would refuse to create the object there")
    made = [({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "cfn"}}, "ns.yaml")]
    namespaces.check_exist(made + objs, {"default"})
    namespaces.check_exist(objs, {"cfn"})
    # the API server's own namespaces exist even where a hand-made snapshot omits them
    namespaces.check_exist([(deployment("web", "default"), "d.yaml"),
                            (deployment("dns", "kube-system"), "d.yaml")], {"cnf"})


@given(st.lists(st.sampled_from([None, "a", "b"]), max_size=8))
def test_every_namespaced_object_names_one_after_placing(named):
    objs = [(deployment("w%d" % i, ns), "f.yaml") for i, ns in enumerate(named)]
    out, notes = namespaces.place(objs, Target("t"))
    assert [o["metadata"]["namespace"] for o, _ in out] == [ns or "t" for ns in named]
    assert bool(notes) == (None in named)
