"""The intake (#53): every way objects come into the commands, through one module.

Each source kind (files, a directory, standard input, a live API server on loopback),
how flags resolve to a source as kubectl resolves them, the schema check through the
intake, located errors, the pod bound, and the notes and warnings gathered into one
typed result."""
import dataclasses
import http.server
import io
import json
import os
import threading
import urllib.parse

import pytest
import yaml
from hypothesis import given, strategies as st

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.intake import read
from tacker_hwaffinity.intake.source import Files, Live, cluster_source
from tacker_hwaffinity.objects import schema
from tacker_hwaffinity.objects.namespaces import Target
from tacker_hwaffinity.scheduling.profile import Profile
from tacker_hwaffinity.scheduling.snapshot import SNAPSHOT_FIELDS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "samples", "cluster.yaml")
SCHEDULER_CONFIG = os.path.join(ROOT, "deploy", "webhook", "scheduler-config.yaml")
with open(CLUSTER, encoding="utf-8") as _f:
    SAMPLE = yaml.safe_load(_f)["items"]
NODES = [o for o in SAMPLE if o["kind"] == "Node"]
PODS = [o for o in SAMPLE if o["kind"] == "Pod"]


def _write(path, objects):
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    return str(path)


def _deployment(name, replicas):
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}}


def _check(strict=False):
    return schema.Check.from_flags(None, strict)


# --- sources -------------------------------------------------------------------------------

def test_a_snapshot_file_is_built_into_the_snapshot_with_its_notes_and_phases():
    got = read.cluster(Files((CLUSTER,)))
    assert [n.name for n in got.content.snapshot.nodes] == [n["metadata"]["name"] for n in NODES]
    assert isinstance(got.content.profile, Profile)
    assert list(got.notes) == got.content.snapshot.notes
    assert [p.name for p in got.phases] == ["parse", "snapshot"]
    assert got.phases[0].end <= got.phases[1].end
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.notes = ()


def test_a_directory_gives_its_manifests_in_name_order(tmp_path):
    _write(tmp_path / "b.yaml", PODS)
    _write(tmp_path / "a.yml", NODES)
    (tmp_path / "ignored.txt").write_text("not read")
    got = read.objects(Files((str(tmp_path),)), SNAPSHOT_FIELDS)
    assert [s for _, s in got.content] == ([str(tmp_path / "a.yml")] * len(NODES)
                                           + [str(tmp_path / "b.yaml")] * len(PODS))


def test_standard_input_is_read_once_and_named_stdin(monkeypatch):
    with open(CLUSTER, encoding="utf-8") as f:
        monkeypatch.setattr("sys.stdin", io.StringIO(f.read()))
    got = read.objects(Files(("-",)), SNAPSHOT_FIELDS)
    assert {s for _, s in got.content} == {"<stdin>"} and len(got.content) == len(SAMPLE)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    with pytest.raises(InputError) as e:
        read.objects(Files(("-",)), SNAPSHOT_FIELDS)
    assert e.value.source == "<stdin>" and "no Kubernetes objects" in str(e.value)


class _ApiServer(http.server.ThreadingHTTPServer):
    """Answers every list with LISTS' items at resourceVersion 7; pods refuse
    resourceVersionMatch (an API server without the field) and are read at the latest."""

    def __init__(self, lists):
        super().__init__(("127.0.0.1", 0), _ApiHandler)
        self.lists = lists


class _ApiHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        kind = url.path.rsplit("/", 1)[-1]
        if kind == "pods" and "resourceVersionMatch" in url.query:
            self._answer(400, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                               "message": "resourceVersionMatch: unknown", "code": 400})
            return
        self._answer(200, {"kind": "List", "apiVersion": "v1",
                           "metadata": {"resourceVersion": "7"},
                           "items": self.server.lists.get(kind, [])})

    def _answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def api_server(tmp_path):
    server = _ApiServer({"nodes": NODES, "pods": PODS})
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "loop",
        "clusters": [{"name": "loop", "cluster": {
            "server": "http://127.0.0.1:%d" % server.server_address[1]}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "loop", "context": {"cluster": "loop", "user": "u"}}]}))
    yield str(kubeconfig)
    server.shutdown()
    server.server_close()
    thread.join(10)


def test_a_live_api_server_is_read_pruned_with_its_notes(api_server):
    got = read.cluster(Live(api_server), _check())
    assert [n.name for n in got.content.snapshot.nodes] == [n["metadata"]["name"] for n in NODES]
    assert got.notes[0].startswith("pods in all namespaces were read at the latest "
                                   "resourceVersion, not at the nodes' 7")
    assert got.warnings == ()   # what a server sends it validated itself
    raw = read.objects(Live(api_server), SNAPSHOT_FIELDS)
    node = next(o for o, _ in raw.content if o["kind"] == "Node")
    assert set(node["status"]) <= set(SNAPSHOT_FIELDS["Node"]["status"])
    assert all(s.startswith("cluster http://127.0.0.1:") for _, s in raw.content)


def test_an_unreachable_api_server_is_bad_input_naming_the_flag(tmp_path):
    closed = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _ApiHandler)
    port = closed.server_address[1]
    closed.server_close()       # nothing listens there now
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:%d" % port}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    with pytest.raises(InputError) as e:
        read.objects(Live(str(kubeconfig)), SNAPSHOT_FIELDS)
    assert e.value.field == "--kubeconfig"


# --- how flags resolve to a source ----------------------------------------------------------

def test_files_win_and_take_no_context_nor_stdin_twice():
    assert cluster_source(["a.yaml", "-"], "k", None) == Files(("a.yaml", "-"))
    with pytest.raises(InputError) as e:
        cluster_source(["a.yaml"], None, "ctx")
    assert e.value.field == "--context"
    with pytest.raises(InputError) as e:
        cluster_source(["-", "-"], None, None)
    assert e.value.field == "--cluster"


def test_the_kubeconfig_is_found_as_kubectl_finds_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    with pytest.raises(InputError, match="no cluster to read"):
        cluster_source(None, None, None)
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text("{}")
    assert cluster_source(None, None, "c") == Live(str(tmp_path / ".kube" / "config"), "c")
    monkeypatch.setenv("KUBECONFIG", "/a:/b")
    assert cluster_source([], None, None) == Live("/a:/b")
    assert cluster_source(None, "/given", None) == Live("/given")


def test_manifests_land_in_the_kubeconfig_contexts_namespace_as_kubectl_puts_them(tmp_path):
    conf = tmp_path / "config"
    conf.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "a",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "a", "context": {"cluster": "c", "user": "u", "namespace": "cnf"}},
                     {"name": "b", "context": {"cluster": "c", "user": "u"}}]}))
    live = Live(str(conf))
    assert read.namespace(None, live) == Target("cnf", "the kubeconfig context's namespace")
    assert read.namespace(None, Live(str(conf), "b")) == Target()
    assert read.namespace("x", live) == Target("x", "--namespace")     # the flag wins
    assert read.namespace(None, Files(("c.yaml",))) == Target()          # files: no context
    with pytest.raises(InputError) as e:
        read.namespace(None, Live(str(conf), "nope"))
    assert (e.value.field, str(e.value)) == (
        "--kubeconfig", "field --kubeconfig: kubeconfig %s: no context 'nope'" % conf)
    with pytest.raises(InputError, match="no such file"):
        read.namespace(None, Live(str(tmp_path / "missing")))


# --- the schema check, warnings and notes gathered ------------------------------------------

def _with_unknown_field(tmp_path):
    node = json.loads(json.dumps(NODES[0]))
    node["spec"]["notAField"] = True
    node["metadata"]["labelz"] = {}
    return _write(tmp_path / "c.yaml", [node] + NODES[1:] + PODS)


def test_the_snapshot_check_warns_of_unknown_keys_located(tmp_path):
    path = _with_unknown_field(tmp_path)
    check = _check()
    got = read.cluster(Files((path,)), check)
    name = NODES[0]["metadata"]["name"]
    assert got.warnings == ('%s: Node %s: unknown field "metadata.labelz"' % (path, name),)
    assert list(got.warnings) == check.warnings


def test_strict_makes_an_unknown_key_an_error_naming_file_object_and_field(tmp_path):
    path = _with_unknown_field(tmp_path)
    with pytest.raises(InputError) as e:
        read.cluster(Files((path,)), _check(strict=True))
    assert (e.value.source, e.value.obj, e.value.field) == (
        path, "Node %s" % NODES[0]["metadata"]["name"], "metadata.labelz")


def test_each_read_gives_the_warnings_it_added_and_the_profile_notes(tmp_path):
    check = _check()
    bad = _deployment("web", 2)
    bad["spec"]["replicaz"] = 1
    first = read.workloads([_write(tmp_path / "w.yaml", [bad])], check)
    second = read.cluster(Files((_with_unknown_field(tmp_path),)), check, SCHEDULER_CONFIG)
    assert first.warnings and second.warnings
    assert list(first.warnings + second.warnings) == check.warnings
    assert "scheduler extenders are configured but not modelled" in second.notes
    assert list(second.notes) == second.content.snapshot.notes + second.content.profile.notes


# --- located errors and the pod bound -------------------------------------------------------

def test_a_workload_file_as_cluster_is_refused_naming_it(tmp_path):
    path = _write(tmp_path / "w.yaml", [_deployment("web", 1)])
    with pytest.raises(InputError) as e:
        read.cluster(Files((path,)))
    assert e.value.source == path and "nothing a cluster snapshot is read for" in str(e.value)


def test_a_snapshot_without_nodes_is_refused(tmp_path):
    with pytest.raises(InputError, match="no nodes in the cluster snapshot"):
        read.cluster(Files((_write(tmp_path / "p.yaml", PODS),)))


def test_an_empty_workload_file_and_no_workload_are_refused(tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(InputError) as e:
        read.workloads([str(empty)])
    assert e.value.source == str(empty)
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}
    with pytest.raises(InputError, match="no workloads in"):
        read.workloads([_write(tmp_path / "s.yaml", [service])])


@given(st.lists(st.integers(0, 40), min_size=1, max_size=5), st.integers(1, 100))
def test_the_pod_bound_refuses_exactly_what_goes_over_it(tmp_path_factory, replicas, bound):
    path = _write(tmp_path_factory.mktemp("w") / "w.yaml",
                  [_deployment("d%d" % i, n) for i, n in enumerate(replicas)])
    if sum(replicas) <= bound:
        assert len(read.workloads([path], max_pods=bound).content) == len(replicas)
        return
    with pytest.raises(InputError) as e:
        read.workloads([path], max_pods=bound)
    assert e.value.source == path and e.value.field == "spec.replicas"
    assert "over the limit of %d" % bound in str(e.value)


def test_manifests_and_documents_keep_their_sources(tmp_path):
    path = _write(tmp_path / "m.yaml", PODS[:2])
    assert [s for _, s in read.manifests([path]).content] == [path, path]
    assert read.manifests([]).content == []
    (tmp_path / "one.yaml").write_text("a: 1\n")
    assert read.documents(str(tmp_path / "one.yaml")).content == [
        ({"a": 1}, str(tmp_path / "one.yaml"))]
    with pytest.raises(InputError, match="exactly one KubeSchedulerConfiguration"):
        read.profile(path)
