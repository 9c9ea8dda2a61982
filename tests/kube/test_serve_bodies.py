"""The lanes of room for large bodies and their handling slot (kube.bodies), in this
process: who is cut, who gets room, who is handled first. Over real connections:
tests/kube/test_serve_shared.py."""
import threading
import time

from tacker_hwaffinity.kube import bodies


def test_a_reservation_behind_is_cut_for_a_newcomer_and_a_whole_one_is_not():
    cut = []
    lane = bodies.Lane(300, cut.append)
    stalled = lane.reserve("stalled", 200)
    t0 = time.monotonic()

    def give_back(sock):            # its reader sees the shut connection
        cut.append(sock)
        lane.give_back(stalled)
    lane._cut = give_back
    newcomer = lane.reserve("newcomer", 200)
    waited = time.monotonic() - t0
    assert newcomer is not None and cut == ["stalled"]
    assert bodies.GRACE <= waited < bodies.ROOM_WAIT, waited
    # a body all here waits for its handling, ours: never cut; the next one gets none
    newcomer.received = newcomer.length
    assert lane.reserve("third", 200) is None
    assert cut == ["stalled"]


def test_room_goes_to_the_smallest_waiter_first():
    lane = bodies.Lane(300, lambda sock: None)
    held = lane.reserve("held", 300)
    held.received = held.length                 # whole, waiting for its handling
    granted = []

    def waiter(name, length):
        granted.append((name, lane.reserve(name, length) is not None))
    threads = [threading.Thread(target=waiter, args=(name, length))
               for name, length in (("large", 300), ("small", 100))]
    for t in threads:
        t.start()
    _until(lambda: len(lane._waiting) == 2)
    lane.give_back(held)
    for t in threads:
        t.join(5)
    assert granted == [("small", True), ("large", False)]


def test_the_handling_slot_serves_verified_requests_first_then_in_order():
    handling = bodies.Handling()
    assert handling.take(verified=False)
    order = []

    def take(name, verified):
        assert handling.take(verified)
        order.append(name)
        handling.give_back()
    threads = []
    for name, verified in (("anonymous-1", False), ("anonymous-2", False),
                           ("verified", True)):
        threads.append(threading.Thread(target=take, args=(name, verified)))
        threads[-1].start()
        _until(lambda n=len(threads): sum(map(len, handling._queues)) == n)
    handling.give_back()
    for t in threads:
        t.join(5)
    assert order == ["verified", "anonymous-1", "anonymous-2"]


def _until(condition, limit=5.0):
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "not reached within %s s" % limit
        time.sleep(0.01)
