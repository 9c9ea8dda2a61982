"""The one rule of what a reader reads, skips with a note, or refuses (#54): custom
resources and built-in kinds it does not read are skipped, what the API server would
refuse (a mistyped built-in kind, a built-in kind in a version its group does not serve)
is an error naming the kind meant; never a false green."""
from unittest import mock

import pytest
from hypothesis import given, strategies as st

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import kinds, schema

READ = ("Pod", "Deployment", "DaemonSet")
SRC = "chart.yaml"


def obj(kind, api_version="v1", name="x"):
    o = {"kind": kind, "metadata": {"name": name}}
    if api_version is not None:
        o["apiVersion"] = api_version
    return o


def reads(o, read=READ):
    return kinds.Kinds(read).reads(o, SRC)


def refusal(o, read=READ):
    with pytest.raises(InputError) as e:
        reads(o, read)
    assert e.value.source == SRC
    return e.value


@pytest.fixture
def without_schema_data():
    """The rule as it is when the schema data cannot be read."""
    kinds.built_in.cache_clear()
    with mock.patch.object(schema, "supported_minors", side_effect=schema.Unavailable("x")):
        yield
    kinds.built_in.cache_clear()


def test_read_kinds_are_read_in_their_group_or_without_an_api_version():
    assert reads(obj("Deployment", "apps/v1"))
    assert reads(obj("Pod"))
    assert reads(obj("Pod", None))


@pytest.mark.parametrize("api_version, kind", [
    ("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition"),
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ("sriovnetwork.openshift.io/v1", "SriovNetwork"),
    ("gateway.networking.k8s.io/v1", "HTTPRoute"),       # a CRD group under k8s.io
    ("example.com/v1", "Pod"),                           # a custom kind named like ours
    ("policy/v1", "PodDisruptionBudget"), ("v1", "ConfigMap"), ("batch/v1", "CronJob")])
def test_custom_resources_and_built_in_kinds_not_read_are_skipped(api_version, kind):
    assert reads(obj(kind, api_version)) is False


@pytest.mark.parametrize("api_version, kind, meant", [
    ("apps/v1", "Deplyment", "Deployment"),
    ("apps/v1", "deployment", "Deployment"),
    ("v1", "ConfigMapp", "ConfigMap"),
    ("v1", "Deplyment", "Deployment (apps/v1)"),
    ("policy/v1", "PodDisruptionBudgets", "PodDisruptionBudget")])
def test_a_mistyped_built_in_kind_is_an_error_naming_the_kind_meant(api_version, kind, meant):
    err = refusal(obj(kind, api_version))
    assert err.field == "kind" and err.obj == "%s default/x" % kind
    assert err.message.startswith("unknown kind %r in %s: not a kind of Kubernetes 1."
                                  % (kind, api_version))
    assert err.message.endswith("(did you mean %s?)" % meant)


def test_an_unknown_kind_of_a_group_without_a_dot_is_an_error_without_a_guess():
    err = refusal(obj("Widget", "acme/v1"))
    assert "unknown kind 'Widget' in acme/v1" in err.message and "did you mean" not in \
        err.message


def test_a_built_in_kind_in_a_version_its_group_does_not_serve_is_an_error():
    err = refusal(obj("Deployment", "extensions/v1beta1"))
    assert err.field == "apiVersion"
    assert err.message.startswith('no matches for kind "Deployment" in version '
                                  '"extensions/v1beta1": Kubernetes 1.')
    assert err.message.endswith("serves it in apps/v1")
    assert "serves it in apps/v1" in refusal(obj("Deployment", "v1")).message
    assert "policy/v1" in refusal(obj("PodDisruptionBudget", "policy/v1beta1")).message


def test_an_unknown_kind_without_an_api_version_is_an_error():
    assert reads(obj("ConfigMap", None)) is False
    err = refusal(obj("Gizmo", None))
    assert err.message.startswith("unknown kind 'Gizmo' and no apiVersion")
    assert "did you mean Deployment (apps/v1)" in refusal(obj("Deploymnet", None)).message


def test_what_is_no_object_is_an_error():
    assert "expected a Kubernetes object" in refusal(["a"]).message
    assert refusal({"metadata": {"name": "x"}}).field == "kind"
    assert refusal({"kind": "Pod", "apiVersion": 1}).field == "apiVersion"


def test_each_verdict_is_worked_out_once():
    rule = kinds.Kinds(READ)
    with mock.patch.object(kinds, "built_in", wraps=kinds.built_in) as table:
        for _ in range(3):
            rule.reads(obj("ConfigMap"), SRC)
            with pytest.raises(InputError):
                rule.reads(obj("ConfigMapp"), SRC)
    assert table.call_count == 2


def test_the_fallback_is_served_by_the_newest_release():
    newest = kinds.built_in()
    assert newest.release.startswith("Kubernetes 1.")
    for api_version, names in kinds.FALLBACK.items():
        for kind in names:
            assert (api_version, kind) in newest.served, (api_version, kind)


def test_without_the_schema_data_the_fallback_still_refuses_typos(without_schema_data):
    assert kinds.built_in().release.startswith("the common Kubernetes kinds")
    assert "did you mean Deployment" in refusal(obj("Deplyment", "apps/v1")).message
    assert reads(obj("NetworkAttachmentDefinition", "k8s.cni.cncf.io/v1")) is False
    assert reads(obj("ConfigMap")) is False
    assert reads(obj("Deployment", "apps/v1"))


@given(st.text(min_size=1, max_size=30), st.sampled_from(
    ["k8s.cni.cncf.io/v1", "monitoring.coreos.com/v1", "x.example/v2"]))
def test_any_kind_of_a_custom_group_is_skipped(kind, api_version):
    assert reads(obj(kind, api_version)) is False


@given(st.sampled_from(sorted(kinds.built_in().served)))
def test_every_kind_the_release_serves_is_read_or_skipped(pair):
    api_version, kind = pair
    assert reads(obj(kind, api_version)) is (kind in READ)


@given(st.text(min_size=1, max_size=30), st.sampled_from(["v1", "apps/v1", "batch/v1"]))
def test_a_kind_of_a_built_in_group_is_read_skipped_or_refused_naming_its_field(kind, api):
    try:
        verdict = reads(obj(kind, api))
    except InputError as e:
        assert e.field in ("kind", "apiVersion") and (api, kind) not in kinds.built_in().served
    else:
        assert (api, kind) in kinds.built_in().served and verdict is (kind in READ)


def test_helm_hooks_are_the_pods_and_jobs_annotated():
    def annotated(kind, value):
        return dict(obj(kind), metadata={"name": "t", "annotations": {kinds.HELM_HOOK: value}})
    assert kinds.helm_hook(annotated("Pod", "test")) == "test"
    assert kinds.helm_hook(annotated("Job", "pre-install,pre-upgrade")) == \
        "pre-install,pre-upgrade"
    assert kinds.helm_hook(annotated("Deployment", "post-install")) is None  # keeps running
    assert kinds.helm_hook(annotated("Pod", " ")) is None
    assert kinds.helm_hook(obj("Pod")) is None


def test_a_note_names_each_object_file_by_file_bounded():
    one = kinds.note([(SRC, kinds.entry(obj("ServiceMonitor", "monitoring.coreos.com/v1",
                                            "upf")))], "is skipped", "are skipped")
    assert one == ["chart.yaml: 1 object is skipped: ServiceMonitor/upf "
                   "(monitoring.coreos.com/v1)"]
    two = kinds.note([("a.yaml", "A/a (v1)"), ("b.yaml", "B/b (v1)"), ("a.yaml", "C/c (v1)")],
                     "is skipped", "are skipped")
    assert two == ["3 objects are skipped: a.yaml: A/a (v1), C/c (v1); b.yaml: B/b (v1)"]
    many = kinds.note([(SRC, "K/%d (v1)" % i) for i in range(25)], "is", "are skipped")
    assert many[0].startswith("25 objects are skipped: chart.yaml: K/0 (v1), ")
    assert many[0].endswith("K/9 (v1), and 15 more")
    assert kinds.note([], "is", "are") == []
    assert kinds.entry({"kind": "X", "metadata": None}) == "X/<unnamed> (no apiVersion)"
