"""What one party can do to an informer every component shares: an object at the head of
the stream that its handler cannot take (those behind it still arrive), and a version
gone as soon as it is listed, over and over (the lists are backed off, not made back to
back: a relist storm loads the API server and holds the pod index's lock each time).
Over the stand-in list call of test_informer_unit."""
import json
import time

from tacker_hwaffinity.kube.informer import Informer
from tests.kube.test_informer_unit import FIELDS, Api, Response, conn, full_pod, run_until


class GoneApi(Api):
    """Lists as Api does; every watch ends at once with a 410 ERROR event, as a server
    whose window the versions leave as soon as they are listed would answer."""

    def __init__(self, listed):
        Api.__init__(self, listed)
        self.lists = []         # time.monotonic() of each list

    def __call__(self, watch=False, **kw):
        if watch:
            self.watches += 1
            return Response(events=[{"type": "ERROR", "object": {
                "kind": "Status", "code": 410, "message": "too old resource version"}}])
        if not kw.get("_continue"):
            self.lists.append(time.monotonic())
        return Api.__call__(self, **kw)


def test_a_version_gone_as_soon_as_listed_is_listed_again_after_a_backoff():
    api = GoneApi([full_pod("a"), full_pod("b")])
    synced = []
    informer = Informer(conn(), api, "Pod", "pods", lambda t, o: None, on_sync=synced.append,
                        fields=FIELDS, store=False, backoff_initial=0.1, backoff_max=0.4)
    raised = run_until(informer, lambda: len(api.lists) > 8 or (
        api.lists and time.monotonic() - api.lists[0] > 1.5), timeout=5)
    assert not raised and informer.synced.is_set()
    # lists at 0, 0.1, 0.3, 0.7, 1.1, 1.5 s at most: never back to back
    gaps = [b - a for a, b in zip(api.lists, api.lists[1:])]
    assert 2 <= len(api.lists) <= 7 and min(gaps) >= 0.09, gaps


def test_a_version_gone_after_a_working_watch_is_listed_again_at_once():
    api = GoneApi([full_pod("a")])
    events = [{"type": "ADDED", "object": full_pod("x", "11")}]
    real = api.__call__

    def watch_once_then_gone(watch=False, **kw):
        if watch and events:
            api.watches += 1
            return Response(events=[events.pop()])
        return real(watch=watch, **kw)
    seen = []
    informer = Informer(conn(), watch_once_then_gone, "Pod", "pods",
                        lambda t, o: seen.append(o["metadata"]["name"]),
                        fields=FIELDS, store=False, backoff_initial=5.0)
    started = time.monotonic()
    assert not run_until(informer, lambda: len(api.lists) >= 2, timeout=4)
    assert seen == ["x"] and len(api.lists) >= 2 and time.monotonic() - started < 4


def test_an_object_its_handler_cannot_take_does_not_stop_those_behind_it():
    bad = full_pod("bad", "11")
    events = [{"type": "ADDED", "object": bad}, {"type": "ADDED", "object": "not an object"}]
    events += [{"type": "ADDED", "object": full_pod("p%d" % i, str(12 + i))} for i in range(50)]
    seen = []

    def handler(event_type, obj):
        if obj["metadata"]["name"] == "bad":
            raise RuntimeError("this object breaks the handler")
        seen.append(obj["metadata"]["name"])
    informer = Informer(conn(), Api([full_pod("a")], events), "Pod", "pods", handler,
                        fields=FIELDS, store=False)
    assert not run_until(informer, lambda: len(seen) == 50, timeout=5)
    assert seen == ["p%d" % i for i in range(50)]
    assert informer.errors == 0


class Chunked(Response):
    """A watch whose events come cut into chunks of SIZE bytes, across event lines."""

    def __init__(self, events, size):
        Response.__init__(self, events=events)
        data = b"".join(self.lines)
        self.chunks = [data[i:i + size] for i in range(0, len(data), size)]

    def stream(self, amt=None, decode_content=True):
        yield from self.chunks


def test_a_large_object_in_small_chunks_costs_the_watch_one_pass():
    import urllib3.exceptions  # noqa: F401 - imported before the clock starts
    big = full_pod("big", "11")
    big["metadata"]["annotations"] = {"tenant": "x" * (1536 << 10)}       # 1.5 MiB
    events = [{"type": "ADDED", "object": big}]
    events += [{"type": "ADDED", "object": full_pod("p%d" % i, str(12 + i))} for i in range(20)]
    response = Chunked(events, 1024)
    started = time.monotonic()
    got = list(Informer._events(response))
    assert time.monotonic() - started < 1.0
    assert got == [json.loads(line) for line in response.lines]
    assert [e["object"]["metadata"]["name"] for e in list(Informer._events(
        Chunked(events[1:], 7)))] == ["p%d" % i for i in range(20)]
