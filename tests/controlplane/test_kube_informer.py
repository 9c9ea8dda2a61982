"""The shared watch loop (kube.informer) and the writes of kube.events, against
the real kube-apiserver: events as they happen, 410 Gone, an API server
restart in the middle of a watch, Events and annotation patches.

Pods here name a scheduler that does not exist, so nothing but the test
changes them (no scheduling, no status updates, immediate deletion).
"""
import functools
import logging
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
from kubernetes.client.exceptions import ApiException

from tacker_hwaffinity.kube import client as kube_client
from tacker_hwaffinity.kube import events
from tacker_hwaffinity.kube.client import KubeError
from tacker_hwaffinity.kube.informer import Informer

from . import harness
from . import workloads as w

pytestmark = pytest.mark.controlplane
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOGGER = "tacker_hwaffinity.kube.informer"


def new_pod(cp, namespace, name, labels=None, node=None):
    pod = w.pod(name, namespace, labels or {"app": "informer"})
    pod["spec"]["schedulerName"] = "hwaffinity-test-nobody"
    if node:
        pod["spec"]["nodeName"] = node
    return cp.admin.create("/api/v1/namespaces/%s/pods" % namespace, pod)


def delete_pod(cp, namespace, name):
    cp.admin.delete("/api/v1/namespaces/%s/pods/%s" % (namespace, name),
                    {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0},
                    ok=(200, 202, 404))


class Recorder:
    """What the informer told: [(type, name)] and one [names] per sync."""

    def __init__(self):
        self.seen, self.syncs = [], []

    def handler(self, event_type, obj):
        self.seen.append((event_type, obj["metadata"]["name"]))

    def on_sync(self, objects):
        self.syncs.append(sorted(o["metadata"]["name"] for o in objects))

    def wait_for(self, event, timeout=20):
        harness.wait_until(lambda: event in self.seen, timeout, interval=0.05,
                           what="%s %s (seen %s)" % (event + (self.seen,)))


@pytest.fixture
def ns(control_plane, namespace):
    """The test's namespace, emptied (not only deleted) afterwards: pending pods
    of a namespace still terminating would show up in other tests' snapshots."""
    yield namespace
    for pod in control_plane.pods(namespace):
        delete_pod(control_plane, namespace, pod["metadata"]["name"])
    harness.wait_until(lambda: not control_plane.pods(namespace), 20,
                       what="the pods of %s to be gone" % namespace)


@pytest.fixture
def conn(control_plane):
    c = kube_client.connect(control_plane.kubeconfig)
    yield c
    c.close()


@pytest.fixture
def running():
    """start(informer) runs it in a thread; the teardown stops it and checks
    that stop is prompt even in the middle of an idle watch."""
    started = []

    def start(informer):
        stop = threading.Event()
        thread = threading.Thread(target=informer.run, args=(stop,), daemon=True)
        thread.start()
        started.append((informer, stop, thread))
        assert informer.synced.wait(20), "the first list did not finish"
        return informer
    yield start
    for _, stop, thread in started:
        t0 = time.monotonic()
        stop.set()
        thread.join(10)
        assert not thread.is_alive(), "run() did not return after stop"
        assert time.monotonic() - t0 < 2.0, "stop took %.1fs" % (time.monotonic() - t0)


def test_list_then_watch_delivers_added_modified_deleted_of_the_selected_pods(
        control_plane, conn, ns, running):
    cp, rec = control_plane, Recorder()
    node = "ghost-" + ns     # pods bound to a node no kubelet runs
    new_pod(cp, ns, "before", node=node)
    new_pod(cp, ns, "elsewhere")                      # not on the node: never seen
    informer = running(Informer(conn, conn.core().list_pod_for_all_namespaces, "Pod",
                                "pods on node %s" % node, rec.handler, on_sync=rec.on_sync,
                                field_selector="spec.nodeName=" + node))
    assert rec.syncs == [["before"]] and rec.seen == []
    assert informer.get(ns, "before")["kind"] == "Pod"
    listed_at = informer.resource_version

    new_pod(cp, ns, "p1", node=node)
    rec.wait_for(("ADDED", "p1"))
    cp.admin.patch("/api/v1/namespaces/%s/pods/p1" % ns,
                   {"metadata": {"labels": {"step": "two"}}})
    rec.wait_for(("MODIFIED", "p1"))
    assert informer.get(ns, "p1")["metadata"]["labels"]["step"] == "two"
    # a pod starting to match the selector arrives as ADDED (this is how a pod
    # scheduled onto a node reaches a node agent)
    new_pod(cp, ns, "later")
    cp.admin.create("/api/v1/namespaces/%s/pods/later/binding" % ns, {
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "later"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
    rec.wait_for(("ADDED", "later"))
    delete_pod(cp, ns, "p1")
    rec.wait_for(("DELETED", "p1"))

    # a bound pod deleted with grace 0 gets its deletionTimestamp first (MODIFIED)
    assert rec.seen[:3] == [("ADDED", "p1"), ("MODIFIED", "p1"), ("ADDED", "later")]
    assert rec.seen[-1] == ("DELETED", "p1")
    assert set(rec.seen[3:-1]) <= {("MODIFIED", "p1")}
    assert sorted(o["metadata"]["name"] for o in informer.list()) == ["before", "later"]
    assert informer.get(ns, "p1") is None
    assert int(informer.resource_version) > int(listed_at)
    assert (informer.relists, informer.errors, informer.last_error) == (0, 0, None)
    assert rec.syncs == [["before"]]


def test_a_watch_that_ends_is_reopened_from_the_last_version(
        control_plane, conn, ns, running):
    cp, rec = control_plane, Recorder()
    watches = []
    core_list = functools.partial(conn.core().list_namespaced_pod, ns)

    def list_call(**kw):
        if kw.get("watch"):
            watches.append(kw["resource_version"])
        return core_list(**kw)
    running(Informer(conn, list_call, "Pod", "pods in " + ns, rec.handler,
                     on_sync=rec.on_sync, timeout_seconds=2))
    new_pod(cp, ns, "p1")
    rec.wait_for(("ADDED", "p1"))
    harness.wait_until(lambda: len(watches) >= 3, 10, what="two more watches")
    new_pod(cp, ns, "p2")
    rec.wait_for(("ADDED", "p2"))
    assert len(rec.syncs) == 1                    # never listed again
    assert watches[1] != watches[0]               # each watch resumes where the last ended


@pytest.mark.parametrize("how", ["http-410", "error-event-410"])
def test_410_gone_lists_again_and_calls_on_sync(control_plane, conn, ns, running,
                                                caplog, how):
    cp, rec = control_plane, Recorder()
    core_list = functools.partial(conn.core().list_namespaced_pod, ns)
    watches = []

    def list_call(**kw):
        if kw.get("watch"):
            watches.append(kw["resource_version"])
            if len(watches) == 1:
                if how == "http-410":
                    raise ApiException(status=410, reason="Gone")
                return FakeStream(b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1",'
                                  b'"status":"Failure","message":"too old resource version: 1 '
                                  b'(2)","reason":"Expired","code":410}}\n')
        return core_list(**kw)
    new_pod(cp, ns, "p0")
    caplog.set_level(logging.INFO, logger=LOGGER)
    informer = running(Informer(conn, list_call, "Pod", "pods in " + ns, rec.handler,
                                on_sync=rec.on_sync))
    harness.wait_until(lambda: len(rec.syncs) == 2, 10, what="a second list")
    new_pod(cp, ns, "p1")
    rec.wait_for(("ADDED", "p1"))
    assert rec.syncs == [["p0"], ["p0"]]
    assert informer.relists == 1 and informer.errors == 0
    assert any("expired" in r.getMessage() and r.levelno == logging.INFO
               for r in caplog.records), caplog.text


class FakeStream:
    """A watch response that sends BODY and ends (an urllib3 response's surface)."""

    def __init__(self, body):
        self.body = body

    def stream(self, amt=None, decode_content=True):
        yield self.body

    def close(self):
        pass

    def release_conn(self):
        pass


def test_an_api_server_restart_is_survived_and_what_changed_meanwhile_is_synced(
        control_plane, conn, ns, running, caplog):
    cp, rec = control_plane, Recorder()
    core_list = functools.partial(conn.core().list_namespaced_pod, ns)
    hold, release = threading.Event(), threading.Event()
    informer = None

    def list_call(**kw):
        # once the informer has failed twice (its watch broke, the server refused
        # it), hold its next call until the test has changed the cluster behind
        # its back
        if hold.is_set() and informer.errors >= 2:
            release.wait(60)
        return core_list(**kw)
    caplog.set_level(logging.INFO, logger=LOGGER)
    informer = running(Informer(conn, list_call, "Pod", "pods in " + ns, rec.handler,
                                on_sync=rec.on_sync, backoff_initial=0.2, backoff_max=1.0))
    new_pod(cp, ns, "a")
    rec.wait_for(("ADDED", "a"))
    # move the store's revision past the informer's, so that the restarted
    # server's watch cache starts after it
    cp.admin.patch("/api/v1/namespaces/" + ns, {"metadata": {"labels": {"moved": "1"}}})

    hold.set()
    cp.restart_apiserver(down_for=2)
    harness.wait_until(lambda: informer.errors >= 2, 10, what="the informer to fail twice")
    new_pod(cp, ns, "b")          # created while the informer could not watch
    delete_pod(cp, ns, "a")       # deleted meanwhile: no DELETED will come
    release.set()

    harness.wait_until(lambda: "b" in (rec.syncs[-1] if len(rec.syncs) > 1 else ())
                       or ("ADDED", "b") in rec.seen, 30, what="b after the restart")
    new_pod(cp, ns, "c")
    rec.wait_for(("ADDED", "c"), timeout=30)
    names = sorted(o["metadata"]["name"] for o in informer.list())
    assert names == ["b", "c"], names
    assert informer.relists >= 1, "the old version should have expired: %s" % caplog.text
    assert rec.syncs[-1] == ["b"]
    failures = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert failures and len(failures) == informer.errors
    assert any("unreachable while trying to" in r.getMessage() for r in failures)
    for r in failures:
        line = r.getMessage()
        assert line.startswith("Pod informer: ") and "\n" not in line, line
        assert r.exc_info is None and "Traceback" not in line


def test_a_handler_that_raises_for_one_pod_is_logged_and_the_loop_goes_on(control_plane, conn,
                                                                          ns, caplog):
    cp, rec = control_plane, Recorder()

    def handler(event_type, obj):
        if obj["metadata"]["name"] == "bad":
            raise ValueError("a bug")
        rec.handler(event_type, obj)
    informer = Informer(conn, functools.partial(conn.core().list_namespaced_pod, ns),
                        "Pod", "pods in " + ns, handler)
    stop, raised = threading.Event(), []

    def run():
        try:
            informer.run(stop)
        except Exception as e:  # noqa: BLE001 - what the test checks
            raised.append(str(e))
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        assert informer.synced.wait(20), "the first list did not finish"
        new_pod(cp, ns, "bad")
        new_pod(cp, ns, "good")
        rec.wait_for(("ADDED", "good"))             # the pod after the one that failed
        assert thread.is_alive() and not raised
    finally:
        stop.set()
        thread.join(20)
    bugs = [r for r in caplog.records if r.name == LOGGER and r.exc_info]
    assert len(bugs) == 1 and "handler on ADDED %s/bad" % ns in bugs[0].getMessage()


def test_a_dead_watch_turns_the_webhooks_healthz_to_503_with_the_reason(control_plane, ns,
                                                                          tmp_path):
    """The real `hwaffinity webhook serve` process, its pod watch made to die on one
    pod: /healthz, /readyz and /livez say so, the process stays. (A pod the cache fails
    on no longer ends the watch: a BaseException is what still would.)"""
    cp, port = control_plane, harness.free_port()
    code = "\n".join((
        "import sys",
        "from tacker_hwaffinity.kube import informer",
        "dispatch = informer.Informer._dispatch",
        "class Boom(BaseException):",
        "    pass",
        "def broken(self, event):",
        "    if (event.get('object') or {}).get('metadata', {}).get('name') == 'boom':",
        "        raise Boom('cannot index pod boom')",
        "    return dispatch(self, event)",
        "informer.Informer._dispatch = broken",
        "from tacker_hwaffinity.cli.main import main",
        "sys.exit(main(sys.argv[1:]))"))
    log = tmp_path / "webhook.log"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "webhook", "serve", "--insecure-for-tests",
         "--address", "127.0.0.1:%d" % port, "--kubeconfig", cp.kubeconfig],
        stdout=open(log, "wb"), stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)

    def answer(path):
        assert proc.poll() is None, log.read_text()
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path),
                                        timeout=2) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError:
            return None, ""
    try:
        harness.wait_until(lambda: answer("/healthz")[0] == 200, 60,
                           what="the webhook's caches synced")
        new_pod(cp, ns, "boom")
        harness.wait_until(lambda: answer("/healthz")[0] == 503, 30,
                           what="/healthz to fail after the pod watch died")
        want = (503, "worker thread pod-watch died: Boom: cannot index pod boom\n")
        assert answer("/healthz") == want and answer("/readyz") == want
        assert answer("/livez") == want
        assert proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(15)


def test_errors_are_one_line_and_retried_with_backoff(caplog):
    # a server that refuses connections: a loopback port nobody listens on
    from kubernetes import client
    cfg = client.Configuration()
    cfg.host = "https://127.0.0.1:%d" % harness.free_port()
    cfg.retries = 0
    api = client.ApiClient(cfg)
    informer = Informer(kube_client.Connection(api, cfg.host),
                        functools.partial(client.CoreV1Api(api).list_namespaced_pod, "x"),
                        "Pod", "pods in x", lambda *a: None, backoff_initial=0.1,
                        backoff_max=0.4)
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), daemon=True)
    caplog.set_level(logging.INFO, logger=LOGGER)
    t0 = time.monotonic()
    thread.start()
    harness.wait_until(lambda: informer.errors >= 5, 10, interval=0.05, what="5 failures")
    elapsed = time.monotonic() - t0
    stop.set()                                   # in the middle of a backoff wait
    thread.join(5)
    assert not thread.is_alive() and time.monotonic() - t0 - elapsed < 1.0
    assert elapsed >= 0.1 + 0.2 + 0.4 + 0.4      # the waits between the 5 tries, capped
    assert not informer.synced.is_set()
    lines = [r.getMessage() for r in caplog.records
             if r.name == LOGGER and r.levelno == logging.WARNING]
    assert lines[0].startswith("Pod informer: API server %s: unreachable while trying to list "
                               "pods in x (" % cfg.host), lines[0]
    assert "retrying in 0.1s" in lines[0] and "retrying in 0.4s" in lines[4]
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in caplog.records)
    assert informer.last_error in lines[-1]
    api.close()


def test_record_event_creates_an_event_about_the_pod(control_plane, conn, ns,
                                                     monkeypatch):
    cp = control_plane
    pod = new_pod(cp, ns, "p1")
    long = "é" * 600 + "tail"                              # 1204 bytes of UTF-8
    created = events.record_event(conn, pod, "Warning", "HwAffinityTest", long,
                                  "hwaffinity-test", action="Pinning")
    found = cp.events(ns, reason="HwAffinityTest", name="p1")
    assert [e["metadata"]["name"] for e in found] == [created["metadata"]["name"]]
    ev = found[0]
    assert ev["metadata"]["name"].startswith("p1.")
    assert ev["involvedObject"] == {
        "apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": "p1",
        "uid": pod["metadata"]["uid"], "resourceVersion": pod["metadata"]["resourceVersion"]}
    assert ev["type"] == "Warning" and ev["action"] == "Pinning" and ev["count"] == 1
    assert ev["message"] == "é" * 512 and len(ev["message"].encode()) == 1024
    assert ev["source"]["component"] == ev["reportingComponent"] == "hwaffinity-test"
    assert ev["reportingInstance"].startswith("hwaffinity-test-")
    assert ev["firstTimestamp"] == ev["lastTimestamp"] and ev["eventTime"].endswith("Z")

    # a whole second: the client would re-serialise eventTime without a fraction
    whole = events._now().replace(microsecond=0)
    monkeypatch.setattr(events, "_now", lambda: whole)
    again = events.record_event(conn, pod, "Normal", "HwAffinityTest", "again",
                                "hwaffinity-test")
    assert again["action"] == "HwAffinityTest"
    assert len(cp.events(ns, reason="HwAffinityTest", name="p1")) == 2

    gone = dict(pod, metadata=dict(pod["metadata"], namespace=ns + "-none"))
    with pytest.raises(KubeError) as e:
        events.record_event(conn, gone, "Normal", "HwAffinityTest", "x", "hwaffinity-test")
    assert e.value.status == 404 and "create events in namespace" in str(e.value)


def test_patch_annotations_round_trips(control_plane, conn, ns):
    cp = control_plane
    new_pod(cp, ns, "p1")
    patched = events.patch_annotations(conn, ns, "p1",
                                       {"hwaffinity.io/cpus": "2-3", "other": "x"})
    assert patched["kind"] == "Pod"
    assert {k: v for k, v in patched["metadata"]["annotations"].items()} == {
        "hwaffinity.io/cpus": "2-3", "other": "x"}
    patched = events.patch_annotations(conn, ns, "p1", {"other": None})
    assert patched["metadata"]["annotations"] == {"hwaffinity.io/cpus": "2-3"}
    live = cp.admin.get("/api/v1/namespaces/%s/pods/p1" % ns)
    assert live["metadata"]["annotations"] == {"hwaffinity.io/cpus": "2-3"}
    with pytest.raises(KubeError) as e:
        events.patch_annotations(conn, ns, "missing", {"a": "b"})
    assert e.value.status == 404 and "pod %s/missing" % ns in str(e.value)


def test_an_optional_kind_the_server_does_not_serve_reads_as_none(control_plane, conn, caplog):
    """The test server (1.20) serves no policy/v1 PodDisruptionBudgets: an optional
    informer is synced and empty, says so once, counts no error, and asks again; a
    required one counts an error and is not synced."""
    caplog.set_level(logging.INFO, logger="test.optional")
    log = logging.getLogger("test.optional")
    call = conn.policy().list_pod_disruption_budget_for_all_namespaces
    asked = []                      # the optional informer's requests, by their parameters

    def optional_call(**params):
        asked.append(params)
        return call(**params)
    optional = Informer(conn, optional_call, "PodDisruptionBudget", "poddisruptionbudgets",
                        lambda *a: None, log=log, optional=True, backoff_max=0.2)
    required = Informer(conn, call, "PodDisruptionBudget", "poddisruptionbudgets",
                        lambda *a: None, log=log, backoff_initial=0.1, backoff_max=0.2)
    stop = threading.Event()
    threads = [threading.Thread(target=i.run, args=(stop,)) for i in (optional, required)]
    for t in threads:
        t.start()
    try:
        assert optional.synced.wait(10)
        harness.wait_until(lambda: len(asked) >= 3 and required.errors >= 2, 30,
                           interval=0.05, what="a few more rounds of both")
        assert optional.list() == [] and optional.served is False and optional.errors == 0
        assert not required.synced.is_set() and required.errors >= 2
        assert "404" in required.last_error
        said = [r.getMessage() for r in caplog.records if "does not serve" in r.getMessage()]
        assert len(said) == 1, said
    finally:
        stop.set()
        for t in threads:
            t.join(10)
