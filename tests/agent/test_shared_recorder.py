"""The agent's writer to the API server (agent/recorder.py) is shared by every pod of the
node: one pod's annotation or Event that the server refuses, or is slow to answer, holds
that pod's write and no other; the queue is bounded per pod and in all (doc/security.md)."""
import logging
import threading
import time

import pytest
from prometheus_client import CollectorRegistry

from tacker_hwaffinity.agent import recorder as recorder_mod
from tacker_hwaffinity.agent.recorder import Recorder
from tacker_hwaffinity.agent.runner import Metrics
from tacker_hwaffinity.kube.client import KubeError

LOG = logging.getLogger("test.recorder")
HOLD_S = 20.0           # the longest a hostile write is held: past every bound below


def ref(uid):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "pod-" + uid, "namespace": "ns", "uid": uid}}


class Api:
    """The API server as the recorder sees it: REFUSED uids are answered STATUS, every
    time; SLOW uids' writes are held until RELEASE is set (at most HOLD_S)."""

    def __init__(self, refused=(), slow=(), status=422):
        self.refused, self.slow, self.status = set(refused), set(slow), status
        self.release = threading.Event()
        self.held = threading.Semaphore(0)      # one release per write being held
        self.annotations, self.events, self.calls = {}, [], []
        self._lock = threading.Lock()

    def _answer(self, uid):
        with self._lock:
            self.calls.append(uid)
        if uid in self.slow:
            self.held.release()
            self.release.wait(HOLD_S)
        if uid in self.refused:
            raise KubeError("pod %s: refused" % uid, status=self.status)

    def annotate(self, obj, key, value):
        uid = obj["metadata"]["uid"]
        self._answer(uid)
        with self._lock:
            self.annotations[uid] = value

    def event(self, obj, reason, message):
        uid = obj["metadata"]["uid"]
        self._answer(uid)
        with self._lock:
            self.events.append((uid, reason, message))


def failures(metrics, kind):
    return metrics.registry.get_sample_value("hwaffinity_agent_failures_total",
                                             {"kind": kind}) or 0


def wait_for(condition, timeout):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    return condition()


@pytest.fixture
def running():
    """make(api, **kw): a Recorder on API whose thread runs until the test ends."""
    stop, apis = threading.Event(), []

    def make(api_, **kw):
        apis.append(api_)
        metrics = Metrics(CollectorRegistry())
        rec = Recorder(api_, metrics, LOG, **kw)
        threading.Thread(target=rec.run, args=(stop,), daemon=True).start()
        return rec
    yield make
    stop.set()
    for a in apis:
        a.release.set()


def test_an_annotation_refused_again_and_again_delays_no_other_pod(running):
    api_ = Api(refused={"bad"})
    rec = running(api_)
    rec.annotate(ref("bad"), '{"c":{}}')
    assert wait_for(lambda: failures(rec.metrics, "annotation") >= 3, 10)
    t0 = time.monotonic()
    for i in range(20):
        rec.annotate(ref("good-%d" % i), '{"c":{}}')
    assert wait_for(lambda: len(api_.annotations) == 20, HOLD_S)
    took = time.monotonic() - t0
    assert took < 1.0, "the other pods' annotations waited %.1f s behind one refused" % took
    assert rec.pending() == 1           # the refused one, on its own clock


def test_slow_annotations_hold_one_writer_each_and_the_others_are_written(running):
    slow = {"slow-%d" % i for i in range(recorder_mod.WRITERS - 1)} \
        if hasattr(recorder_mod, "WRITERS") else {"slow-0"}
    api_ = Api(slow=slow)
    rec = running(api_)
    for uid in sorted(slow):
        rec.annotate(ref(uid), '{"c":{}}')
    for _ in slow:                       # every slow write is being answered, slowly
        assert api_.held.acquire(timeout=5)
    t0 = time.monotonic()
    for i in range(20):
        rec.annotate(ref("good-%d" % i), '{"c":{}}')
    written = wait_for(lambda: len(api_.annotations) == 20, 5)
    took = time.monotonic() - t0
    assert written and took < 1.0, "%d of 20 written in %.1f s while %d write(s) were " \
        "held" % (len(api_.annotations), took, len(slow))
    api_.release.set()
    assert wait_for(lambda: len(api_.annotations) == 20 + len(slow), 5)


def test_an_event_refused_for_good_stops_no_event_behind_it(running):
    api_ = Api(refused={"bad"}, status=403)    # say, its namespace is being deleted
    rec = running(api_)
    rec.event(ref("bad"), "NUMAPlacementFailed", "first in the queue")
    assert wait_for(lambda: failures(rec.metrics, "event") >= 1, 5)
    for i in range(10):
        rec.event(ref("good-%d" % i), "NUMAPlacementFailed", "behind it")
    assert wait_for(lambda: len(api_.events) == 10, 3), \
        "%d of 10 Events written behind one refused" % len(api_.events)


def test_a_refused_event_is_given_up_after_its_attempts(running):
    api_ = Api(refused={"bad"}, status=403)
    rec = running(api_, backoff=0.01, max_backoff=0.02)
    rec.event(ref("bad"), "NUMAPlacementFailed", "never accepted")
    assert wait_for(lambda: rec.pending() == 0, 5)
    assert api_.calls.count("bad") == recorder_mod.EVENT_ATTEMPTS


def test_one_pod_cannot_fill_the_event_queue_nor_crowd_out_another():
    metrics = Metrics(CollectorRegistry())
    api_ = Api()
    rec = Recorder(api_, metrics, LOG)          # not running: everything waits
    for i in range(10000):
        rec.event(ref("noisy"), "NUMAPlacementFailed", "message %d" % i)
    rec.event(ref("quiet"), "NUMAPlacementFailed", "the one that matters")
    assert rec.pending() < 1000, "one pod queued %d Events" % rec.pending()
    assert rec.pending() == recorder_mod.EVENTS_PER_POD + 1
    assert failures(metrics, "event-dropped") == 10000 - recorder_mod.EVENTS_PER_POD
    stop = threading.Event()
    threading.Thread(target=rec.run, args=(stop,), daemon=True).start()
    try:
        assert wait_for(lambda: ("quiet", "NUMAPlacementFailed", "the one that matters")
                        in api_.events, 5)
    finally:
        stop.set()


def test_the_event_queue_is_bounded_in_all():
    metrics = Metrics(CollectorRegistry())
    rec = Recorder(Api(), metrics, LOG)
    for i in range(3 * recorder_mod.MAX_EVENTS):
        rec.event(ref("pod-%d" % i), "NUMAPlacementFailed", "one each")
    assert rec.pending() == recorder_mod.MAX_EVENTS


def test_an_annotation_of_a_pod_the_server_no_longer_has_is_dropped(running):
    api_ = Api(refused={"gone"}, status=404)
    rec = running(api_)
    rec.annotate(ref("gone"), '{"c":{}}')
    assert wait_for(lambda: rec.pending() == 0, 5)
    assert api_.calls == ["gone"]


def test_a_resynchronization_forgets_the_pods_that_are_gone():
    rec = Recorder(Api(), Metrics(CollectorRegistry()), LOG)
    for i in range(100):
        rec.annotate(ref("pod-%d" % i), '{"c":{}}')
    rec.retain({"pod-7"})
    assert rec.pending() == 1


def test_a_write_that_raises_anything_stops_no_writer(running):
    class Broken(Api):
        def annotate(self, obj, key, value):
            if obj["metadata"]["uid"] == "bad":
                raise ValueError("a bug on this pod's path")
            super().annotate(obj, key, value)
    api_ = Broken()
    rec = running(api_, writers=1)
    rec.annotate(ref("bad"), '{"c":{}}')
    for i in range(5):
        rec.annotate(ref("good-%d" % i), '{"c":{}}')
    assert wait_for(lambda: len(api_.annotations) == 5, 5)
    assert failures(rec.metrics, "annotation") >= 1 and rec.pending() == 1
