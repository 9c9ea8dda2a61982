"""kube.informer's projection (fields), its store-less mode and how it goes on past a
callback that raises, over a stand-in list call that answers as the kubernetes client does
(a paged list's bytes, a watch's line-delimited events). The loop against the real
API server is tests/controlplane/test_kube_informer.py."""
import json
import logging
import threading

import pytest
from prometheus_client import CollectorRegistry

from tacker_hwaffinity.kube.client import Connection
from tacker_hwaffinity.kube.informer import Informer, InformerMetrics

FIELDS = {"metadata": ("name", "namespace", "uid", "labels"), "spec": ("nodeName",),
          "status": ("phase",)}


def full_pod(name, rv="1"):
    return {"metadata": {"name": name, "namespace": "ns", "uid": "u-" + name,
                         "labels": {"app": "a"}, "resourceVersion": rv,
                         "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready"}]}}


class Response:
    def __init__(self, data=b"", events=()):
        self.data = data
        self.lines = [json.dumps(e).encode() + b"\n" for e in events]

    def stream(self, amt=None, decode_content=True):
        yield from self.lines

    def close(self):
        pass

    def release_conn(self):
        pass


class Api:
    """Pages of LISTED (two per page), then one watch with EVENTS, then watches that
    end at once (the informer backs those off; STOP ends the test)."""

    def __init__(self, listed, events=()):
        self.listed, self.events, self.watches = listed, list(events), 0

    def __call__(self, watch=False, **kw):
        if watch:
            self.watches += 1
            events, self.events = self.events, []
            return Response(events=events)
        start = int(kw.get("_continue") or 0)
        page = self.listed[start:start + 2]
        more = start + 2 < len(self.listed)
        return Response(json.dumps({"metadata": {"resourceVersion": "10", "continue":
                                                 str(start + 2) if more else None},
                                    "items": page}).encode())


def conn():
    return Connection(None, "https://api.test")


def run_until(informer, done, timeout=10):
    """Run INFORMER in a thread until DONE() holds; returns what run() raised."""
    stop, raised = threading.Event(), []

    def target():
        try:
            informer.run(stop)
        except BaseException as e:  # noqa: BLE001 - what the test checks
            raised.append(e)
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    deadline = threading.Event()
    for _ in range(int(timeout / 0.02)):
        if done() or raised or not thread.is_alive():
            break
        deadline.wait(0.02)
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
    return raised


def test_the_projection_prunes_listed_and_watched_objects_before_store_and_handlers():
    seen, synced = [], []
    api = Api([full_pod("a"), full_pod("b"), full_pod("c")],
              [{"type": "MODIFIED", "object": full_pod("b", "11")},
               {"type": "ADDED", "object": full_pod("d", "12")}])
    informer = Informer(conn(), api, "Pod", "pods", lambda t, o: seen.append((t, o)),
                        on_sync=synced.append, fields=FIELDS)
    raised = run_until(informer, lambda: len(seen) == 2)
    assert not raised and len(seen) == 2
    expected = {"metadata": {"name": "b", "namespace": "ns", "uid": "u-b",
                             "labels": {"app": "a"}},
                "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}, "kind": "Pod"}
    assert seen[0] == ("MODIFIED", expected)
    assert [o["metadata"]["name"] for o in synced[0]] == ["a", "b", "c"]
    for obj in synced[0] + [o for _, o in seen] + informer.list():
        assert "managedFields" not in obj["metadata"] and "containers" not in obj["spec"]
        assert obj["status"] == {"phase": "Running"}
    assert informer.get("ns", "d")["metadata"] == {"name": "d", "namespace": "ns",
                                                   "uid": "u-d", "labels": {"app": "a"}}


def test_without_a_store_the_informer_hands_on_and_keeps_nothing():
    seen, synced = [], []
    api = Api([full_pod("a"), full_pod("b"), full_pod("c")],
              [{"type": "ADDED", "object": full_pod("d", "12")}])
    informer = Informer(conn(), api, "Pod", "pods", lambda t, o: seen.append(o["metadata"]),
                        on_sync=synced.append, fields=FIELDS, store=False)
    assert not run_until(informer, lambda: seen)
    assert len(synced[0]) == 3 and seen[0]["name"] == "d" and informer.synced.is_set()
    assert informer._cache == {}
    with pytest.raises(RuntimeError, match="keeps no store"):
        informer.list()
    with pytest.raises(RuntimeError, match="keeps no store"):
        informer.get("ns", "a")


def errors(registry, reason):
    return registry.get_sample_value("hwaffinity_informer_object_errors_total",
                                     {"kind": "Pod", "reason": reason}) or 0


def test_a_handler_that_raises_for_one_object_is_logged_counted_and_the_watch_goes_on(caplog):
    seen = []

    def handler(event_type, obj):
        if obj["metadata"]["name"] == "bad":
            raise ValueError("a bug\nsecond line")
        seen.append(obj["metadata"]["name"])
    api = Api([full_pod("a")], [{"type": "ADDED", "object": full_pod("bad", "12")},
                                {"type": "ADDED", "object": "not an object"},
                                {"type": "MODIFIED", "object": {"metadata": ["odd"]}},
                                {"type": "ADDED", "object": full_pod("later", "13")}])
    registry = CollectorRegistry()
    informer = Informer(conn(), api, "Pod", "pods", handler, fields=FIELDS,
                        log=logging.getLogger("test.informer"),
                        metrics=InformerMetrics(registry))
    with caplog.at_level(logging.WARNING, logger="test.informer"):
        raised = run_until(informer, lambda: "later" in seen)
    assert not raised and seen == ["later"]
    assert informer.resource_version == "13" and informer.get("ns", "later")
    assert errors(registry, "handler") == 2 and errors(registry, "malformed_event") == 1
    bugs = [r for r in caplog.records if r.exc_info]
    assert [r.getMessage() for r in bugs][0] == (
        "Pod informer: handler on ADDED ns/bad failed (ValueError); going on")


def test_synced_waits_for_on_sync_and_an_on_sync_that_raises_is_listed_again():
    calls = []

    def on_sync(objects):
        calls.append(len(objects))
        if len(calls) == 1:
            raise KeyError("uid")
    registry = CollectorRegistry()
    informer = Informer(conn(), Api([full_pod("a")]), "Pod", "pods", lambda *a: None,
                        on_sync=on_sync, backoff_initial=0.01,
                        metrics=InformerMetrics(registry))
    raised = run_until(informer, informer.synced.is_set, timeout=10)
    assert not raised and calls == [1, 1] and informer.synced.is_set()
    assert errors(registry, "sync") == 1 and informer.errors == 1
    assert "on_sync after listing 1 pods failed; listing again" in informer.last_error


def test_an_index_follows_the_store_through_list_modify_and_delete():
    recreated = full_pod("b", "12")
    recreated["metadata"]["uid"] = "u-b2"        # deleted and created again: a new uid
    seen = []
    api = Api([full_pod("a"), full_pod("b")],
              [{"type": "MODIFIED", "object": full_pod("a", "11")},
               {"type": "DELETED", "object": full_pod("b", "12")},
               {"type": "ADDED", "object": recreated}])
    informer = Informer(conn(), api, "Pod", "pods", lambda t, o: seen.append(
        (t, informer.by("uid", o["metadata"]["uid"]))), fields=FIELDS,
        indexers={"uid": lambda o: o["metadata"].get("uid")})
    assert not run_until(informer, lambda: len(seen) == 3)
    # each handler already sees the index updated: the object, or None once deleted
    assert [(t, o and o["metadata"]["uid"]) for t, o in seen] == [
        ("MODIFIED", "u-a"), ("DELETED", None), ("ADDED", "u-b2")]
    assert sorted(informer.keys("uid")) == ["u-a", "u-b2"]
    assert informer.by("uid", "u-a") is informer.get("ns", "a")
    assert informer.by("uid", "u-b") is None
