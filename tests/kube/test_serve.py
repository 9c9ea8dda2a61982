"""The metrics and health port of the in-cluster components, on loopback.

The server runs in a child process of its own, as it does in the components: the
pytest process may have had threading and sockets patched by eventlet (the Tacker
tests import it), which no component ever has.
"""
import http.client
import json
import os
import re
import subprocess
import sys
import time

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import fuzzing

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHILD = r"""
import json, sys, time
from prometheus_client import CollectorRegistry, Counter
from tacker_hwaffinity.kube.serve import HealthServer
state_file = sys.argv[1]
registry = CollectorRegistry()
Counter("hwaffinity_test_things", "Things counted by the test.", registry=registry).inc(3)
def health():
    with open(state_file) as f:
        state = json.load(f)
    if state.get("raise"):
        raise RuntimeError(state["raise"])
    return state["ok"], state["message"]
srv = HealthServer(0, host="127.0.0.1", registry=registry, health=health).start()
print(srv.port, flush=True)
line = sys.stdin.readline()           # "stop" (or EOF): stop, twice, then report
srv.stop()
srv.stop()
print("stopped", flush=True)
sys.stdin.readline()
"""


class Child:
    def __init__(self, tmp_path):
        self.state = tmp_path / "state.json"
        self.set(ok=True, message="ok")
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD, str(self.state)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     cwd=ROOT)
        self.port = int(self.proc.stdout.readline())

    def set(self, **state):
        self.state.write_text(json.dumps(state))

    def get(self, path, accept=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            conn.request("GET", path, headers={"Accept": accept} if accept else {})
            resp = conn.getresponse()
            return resp.status, resp.getheader("Content-Type"), resp.read().decode()
        finally:
            conn.close()

    def stop(self):
        self.proc.stdin.write("stop\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "stopped"

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def server(tmp_path):
    child = Child(tmp_path)
    yield child
    child.close()


def test_metrics_show_a_counter_of_the_given_registry(server):
    assert server.port > 0
    status, ctype, body = server.get("/metrics")
    assert status == 200
    assert ctype.startswith("text/plain")
    assert "hwaffinity_test_things_total 3.0" in body
    assert "python_gc" not in body          # the global registry is not mixed in


def test_metrics_in_openmetrics_when_asked(server):
    status, ctype, body = server.get("/metrics", accept="application/openmetrics-text")
    assert status == 200 and ctype.startswith("application/openmetrics-text")
    assert body.rstrip().endswith("# EOF")


def test_healthz_follows_the_health_callable(server):
    assert server.get("/healthz")[::2] == (200, "ok\n")
    server.set(ok=False, message="pods not listed yet")
    assert server.get("/healthz")[::2] == (503, "pods not listed yet\n")
    server.set(ok=True, message="ok", **{"raise": "boom"})
    status, _, body = server.get("/healthz?verbose=1")
    assert status == 503 and "RuntimeError: boom" in body


def test_everything_else_is_404(server):
    assert server.get("/")[0] == 404
    assert server.get("/metricsx")[0] == 404


def test_stop_frees_the_port(server):
    assert server.get("/healthz")[::2] == (200, "ok\n")
    t0 = time.monotonic()
    server.stop()                          # twice is harmless (the child stops twice)
    assert time.monotonic() - t0 < 5
    with pytest.raises(OSError):
        http.client.HTTPConnection("127.0.0.1", server.port, timeout=2).request(
            "GET", "/healthz")


# --- what a hostile client can make the server hold (issue #24 item 6) ---

GUARDED = r"""
import json, sys
from tacker_hwaffinity.kube.serve import HealthServer, Route
conf = json.loads(sys.argv[1])
def echo(body):
    return 200, "application/json", json.dumps({"items": len(json.loads(body))}).encode()
def boom(body):
    raise RuntimeError("a bug")
srv = HealthServer(0, host="127.0.0.1", posts={
    "/echo": Route(echo, 1 << 20), "/small": Route(echo, 1000), "/boom": Route(boom, 1000)},
    **conf).start()
print(srv.port, flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def guarded():
    procs = []

    def start(**conf):
        proc = subprocess.Popen([sys.executable, "-c", GUARDED, json.dumps(conf)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                cwd=ROOT)
        procs.append(proc)
        return int(proc.stdout.readline())
    yield start
    for proc in procs:
        proc.kill()
        proc.wait(10)


def _exchange(port, head, body=b"", timeout=5):
    """Send HEAD (and BODY) on a new connection; (status, body text) of the answer, or
    None when the server closed without one. A server that waits for more than was
    sent times the read out (socket.timeout)."""
    import socket
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head + body)
        resp = http.client.HTTPResponse(s)
        try:
            resp.begin()
        except http.client.RemoteDisconnected:
            return None
        return resp.status, resp.read().decode()


def test_a_body_over_the_routes_limit_is_413_before_a_byte_is_read(guarded):
    port = guarded()
    # only the headers: the old server (64 MiB for every path) waited for the body
    status, text = _exchange(port, b"POST /small HTTP/1.1\r\nHost: x\r\n"
                                   b"Content-Length: 1001\r\n\r\n")
    assert status == 413
    assert text == "a POST to /small takes at most 1000 bytes, this one declares 1001\n"
    assert _exchange(port, b"POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n",
                     b"[]") == (200, '{"items": 0}')


def test_a_post_without_a_length_or_chunked_is_411_and_a_get_takes_no_body(guarded):
    port = guarded()
    assert _exchange(port, b"POST /echo HTTP/1.1\r\nHost: x\r\n\r\n")[0] == 411
    # chunked, even with a Content-Length beside it (request smuggling): refused
    status, text = _exchange(port, b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                                   b"Transfer-Encoding: chunked\r\n\r\n", b"[]")
    assert (status, text) == (411, "a POST to /echo needs a Content-Length (a chunked "
                                   "body is refused)\n")
    status, text = _exchange(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
                                   b"Content-Length: 3\r\n\r\n", b"xyz")
    assert (status, text) == (413, "a GET carries no body\n")


def test_a_deeply_nested_body_is_a_400_with_the_depth_not_a_dead_thread(guarded):
    port = guarded()
    deep = b"[" * 50000 + b"]" * 50000          # json.loads: RecursionError
    head = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(deep)
    assert _exchange(port, head, deep) == (
        400, "the JSON body nests 50000 levels deep; a POST to /echo takes at most 64\n")
    ok = b"[" * 64 + b"]" * 64
    assert _exchange(port, b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                     % len(ok), ok) == (200, '{"items": 1}')
    # brackets in strings are text, not nesting
    text = json.dumps(["[" * 5000]).encode()
    assert _exchange(port, b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                     % len(text), text) == (200, '{"items": 1}')


def test_a_handler_that_raises_answers_500(guarded):
    port = guarded()
    assert _exchange(port, b"POST /boom HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n",
                     b"[]") == (500, "internal error: RuntimeError\n")


def test_slow_and_idle_clients_are_cut_and_do_not_keep_a_real_one_out(guarded):
    """60 connections against a cap of 20: 30 never send a byte, 30 trickle their
    headers a byte at a time (slowloris). A real request is answered, and every
    one of the 60 is shut down by the server: past the cap, or past the read
    timeout however slowly it trickles. The old server held them all (a 60 s
    timeout per read, restarted by every byte)."""
    import socket
    port = guarded(max_connections=20, read_timeout=2.0, idle_timeout=30.0)
    idle = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(30)]
    slow = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(30)]
    head = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n"
    try:
        t0 = time.monotonic()
        assert _exchange(port, head, b"[]", timeout=10) == (200, '{"items": 0}')
        assert time.monotonic() - t0 < 5        # generous: the point is not blocked
        sent = 0
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            open_ = []
            for s in idle + slow:
                s.setblocking(False)
                try:
                    if s.recv(4096) != b"":
                        open_.append(s)             # an answer: not expected
                except BlockingIOError:
                    open_.append(s)
                except OSError:
                    pass                            # reset: cut
            if not open_:
                break
            for s in slow:                          # one more byte each, if still open
                if s in open_:
                    try:
                        s.send(head[sent % len(head):sent % len(head) + 1])
                    except OSError:
                        pass
            sent += 1
            time.sleep(0.5)                         # the slowloris's pace, not a wait
        assert not open_, "%d of 60 slow or idle connections still open" % len(open_)
        assert _exchange(port, head, b"[]") == (200, '{"items": 0}')
    finally:
        for s in idle + slow:
            s.close()


# --- framing: one reading of every request (issue #36 item 4) ---

def _received(port, data, timeout=5):
    """Every byte the server writes for DATA on a new connection, until it closes."""
    import socket
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        return _read_all(s)


def _read_all(sock):
    """Every byte SOCK receives until the other side closes."""
    received = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return received
        received += chunk


def test_answers_are_written_as_h11_writes_them_and_close_where_asked(guarded):
    port = guarded()
    ok = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
          b"Content-Length: 3\r\n%s\r\nok\n")
    get = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    assert _received(port, get) == ok % b""           # kept open: the client's EOF ends it
    for request in (b"GET /healthz HTTP/1.0\r\n\r\n",
                    b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Close\r\n\r\n"):
        assert _received(port, request + get) == ok % b"Connection: close\r\n"
    # HEAD is not served: the 501's head alone
    assert _received(port, b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n") == (
        b"HTTP/1.1 501 Not Implemented\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"Content-Length: 0\r\nConnection: close\r\n\r\n")


def _answers(port, data, timeout=5):
    """Send DATA on a new connection and read until the server closes it: the status
    codes of every answer, in order."""
    import socket
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        received = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                received += chunk
        except ConnectionResetError:
            pass
    return [int(code) for code in re.findall(rb"HTTP/1\.1 (\d{3}) ", received)]


SMUGGLED = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"


@pytest.mark.parametrize("head,body", [
    # two lengths: the old server took the first and read the rest as a second request
    (b"Content-Length: 2\r\nContent-Length: %d\r\n" % (2 + len(SMUGGLED)), b"[]" + SMUGGLED),
    (b"Content-Length: 2\r\nContent-Length: 2\r\n", b"[]"),
    (b"Content-Length: 2, 2\r\n", b"[]"),
    # a folded (obs-fold) header line
    (b"Content-Length: 2\r\nX-Note: a\r\n b\r\n", b"[]"),
    # a digit that is not ASCII (str.isdigit() took it, int() then raised)
    (b"Content-Length: \xb2\r\n", b"[]"),
    (b"Content-Length: \xd9\xa2\r\n", b"[]"),
])
def test_ambiguous_framing_is_one_400_and_the_connection_closes(guarded, head, body):
    port = guarded()
    request = b"POST /small HTTP/1.1\r\nHost: x\r\n" + head + b"\r\n" + body
    assert _answers(port, request + SMUGGLED) == [400]


def test_the_refusal_names_what_is_ambiguous(guarded):
    port = guarded()
    for head, why in ((b"Content-Length: 2\r\nContent-Length: 2\r\n",
                       "more than one Content-Length"),
                      (b"Content-Length: 2, 2\r\n", "more than one Content-Length"),
                      (b"Content-Length: 2\r\nX-Note: a\r\n b\r\n",
                       "a header is folded over lines (obs-fold)")):
        assert _exchange(port, b"POST /small HTTP/1.1\r\nHost: x\r\n" + head + b"\r\n",
                         b"[]") == (400, "malformed request: %s\n" % why)


@pytest.mark.parametrize("coding", [b"", b"chunked", b"gzip", b"chunked, identity"])
def test_any_transfer_coding_is_refused(guarded, coding):
    """An empty Transfer-Encoding was ignored by the old server, which then read the
    Content-Length body: a proxy that takes the coding would frame it otherwise."""
    port = guarded()
    request = (b"POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
               b"Transfer-Encoding: " + coding + b"\r\n\r\n[]")
    statuses = _answers(port, request + SMUGGLED)
    # an empty one is malformed (400); a body whose last coding is chunked needs a
    # length instead (411); any other coding is not served (501)
    assert statuses == [{b"": 400, b"chunked": 411}.get(coding, 501)], statuses


def test_headers_over_the_cap_are_431_before_they_are_all_read(guarded):
    from tacker_hwaffinity.kube.serve import HEADER_BYTES
    port = guarded()
    padding = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 8000)
                       for i in range(HEADER_BYTES // 8000 + 1))
    status, text = _exchange(port, b"POST /small HTTP/1.1\r\nHost: x\r\n" + padding +
                             b"Content-Length: 2\r\n\r\n", b"[]")
    assert status == 431
    assert text == "the request's headers take more than %d bytes\n" % HEADER_BYTES
    # just under it: answered
    fits = b"X-Pad: %s\r\n" % (b"a" * (HEADER_BYTES - 200))
    assert _exchange(port, b"POST /small HTTP/1.1\r\nHost: x\r\n" + fits +
                     b"Content-Length: 2\r\n\r\n", b"[]") == (200, '{"items": 0}')


def test_an_upgrade_is_not_taken_and_connect_is_not_served(guarded):
    """The parser stops at a head that asks to switch protocols (an exception of its own,
    not a parse error): the request is answered as HTTP/1.1 and the connection goes
    on; CONNECT is a method the server does not serve."""
    port = guarded()
    upgrade = (b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
               b"Upgrade: websocket\r\n\r\n")
    assert _answers(port, upgrade + SMUGGLED) == [200, 200]
    post = (b"POST /small HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: h2c\r\n"
            b"Content-Length: 2\r\n\r\n[]")
    assert _answers(port, post + SMUGGLED) == [200, 200]
    assert _answers(port, b"CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\n") == [501]


def test_keep_alive_and_100_continue(guarded):
    port = guarded()
    one = b"POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n[]"
    get = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    assert _answers(port, one + get + one + SMUGGLED) == [200, 200, 200, 200]
    assert _answers(port, b"POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                          b"Expect: 100-continue\r\n\r\n[]" + SMUGGLED) == [100, 200, 200]


# --- the request reader, fuzzed in this process over a socket pair (issue #36 item 2) ---

VALID_REQUESTS = [
    b"POST /small HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Content-Length: 2\r\n\r\n[]",
    b"GET /healthz HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n",
    b"POST /small HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 7\r\n\r\n"
    b"[[[1]]]GET /metrics HTTP/1.0\r\n\r\n",
    b"POST /deep HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n[[[[]]]]]",
    b"POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
]


def _mutated(draw_data, st):
    """A valid request (or two of them) with random edits: bytes replaced, inserted
    or cut, at random places."""
    data = bytearray(b"".join(draw_data(st.lists(st.sampled_from(VALID_REQUESTS),
                                                 min_size=1, max_size=2))))
    for _ in range(draw_data(st.integers(0, 4))):
        at = draw_data(st.integers(0, len(data)))
        edit = draw_data(st.sampled_from(["replace", "insert", "cut"]))
        piece = draw_data(st.binary(min_size=1, max_size=8) | st.sampled_from(
            [b"\r\n", b"\r\n ", b": ", b"0", b"\xb2", b",", b"Content-Length: 5\r\n",
             b"Transfer-Encoding: chunked\r\n", b"\n\n", b"\x00", b" HTTP/1.1",
             b"Connection: Upgrade\r\nUpgrade: websocket\r\n", b"CONNECT ", b"HTTP/2.0"]))
        if edit == "replace":
            data[at:at + len(piece)] = piece
        elif edit == "insert":
            data[at:at] = piece
        else:
            del data[at:at + len(piece)]
    return bytes(data)


class Fuzzed:
    """A HealthServer that is not started, whose connection reader runs in the
    calling thread on one end of a socket pair."""

    def __init__(self):
        from prometheus_client import CollectorRegistry

        from tacker_hwaffinity.kube.serve import HealthServer, Route

        def echo(body):                 # as the real handlers: bad JSON is a 400
            try:
                return 200, "application/json", b'{"items": %d}' % len(json.loads(body))
            except (ValueError, TypeError) as e:
                return 400, "text/plain", str(e).encode()
        self.server = HealthServer(0, registry=CollectorRegistry(), posts={
            "/small": Route(echo, 100), "/deep": Route(echo, 100, max_depth=3)},
            read_timeout=1.0, idle_timeout=1.0)
        for request in VALID_REQUESTS:      # lazy imports (numpy, the exposition)
            self.answers(request)

    def answers(self, data):
        """The bytes the server wrote for DATA, sent whole and then end of file."""
        import socket
        ours, theirs = socket.socketpair()
        with ours, theirs:
            theirs.sendall(data)
            theirs.shutdown(socket.SHUT_WR)
            self.server.connections.add(ours, 1.0)
            try:
                self.server.serve_connection(ours)
            finally:
                self.server.connections.remove(ours)
            ours.close()
            return _read_all(theirs)


def _statuses(received):
    """The status codes of the HTTP/1.1 answers in RECEIVED, read by h11 as a client
    reads them: each must parse whole, and nothing may follow the last."""
    import h11
    client = h11.Connection(h11.CLIENT)

    def ask():
        client.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
        client.send(h11.EndOfMessage())
    ask()
    client.receive_data(received)
    client.receive_data(b"")
    statuses, answering = [], False
    while True:
        try:
            event = client.next_event()
        except h11.RemoteProtocolError as e:        # closed where an answer may come
            assert not answering and not client.trailing_data[0], (e, received[-300:])
            return statuses
        if isinstance(event, h11.InformationalResponse):
            statuses.append(event.status_code)
        elif isinstance(event, h11.Response):
            statuses.append(event.status_code)
            answering = True
        elif isinstance(event, h11.EndOfMessage):
            answering = False
            if client.their_state is not h11.DONE:
                continue                            # MUST_CLOSE: ConnectionClosed next
            client.start_next_cycle()
            ask()
        elif isinstance(event, h11.ConnectionClosed):
            return statuses
        elif not isinstance(event, h11.Data):
            raise AssertionError("%r after %r" % (event, received[-300:]))


FUZZED = None


def _fuzzed():
    global FUZZED
    if FUZZED is None:
        FUZZED = Fuzzed()
    return FUZZED


@given(st.data())
@example(None)
def test_fuzz_the_request_reader(data):
    """Random bytes, and valid requests with random edits: every answer is a whole
    HTTP/1.1 response (a 4xx/5xx for what is not a valid request), the connection
    ends at the client's end of file, nothing raises out of the connection's
    thread, within 50 ms of CPU and 16 MiB."""
    if data is None:                    # the defects: smuggled and ambiguous lengths
        request = (b"POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                   b"Content-Length: 40\r\n\r\n[]" + VALID_REQUESTS[1])
    elif data.draw(st.booleans()):
        request = data.draw(st.binary(max_size=512))
    else:
        request = _mutated(data.draw, st)
    received = fuzzing.bounded(_fuzzed().answers, request)
    statuses = _statuses(received)
    if data is None:
        assert statuses == [400]
    assert set(statuses) <= {100, 200, 400, 404, 405, 411, 413, 431, 501, 505}, statuses
