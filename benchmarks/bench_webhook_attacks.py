"""Benchmark: the webhook's memory and /validate latency under the header and the
slow-client attacks, on loopback.

The server is the real process, ``hwaffinity webhook serve --no-extender`` over HTTPS
with every connection flag at its default (as ``bench_http_hostile.py`` starts it).
Per run it prints its resident memory (idle, highest during, after) and the p50/p99
of ``/validate`` (one kept-alive TLS connection, as the API server's, reviews PACE
apart) in each phase:

* baseline: no one else connected;
* headers: --connections clients each send 99 headers of 64 KB and stall, reopened
  as soon as the server cuts them (the issue's reproduction, which took the old
  server from 79 to 666 MiB);
* near-cap headers: --connections clients each send headers just under the cap
  (``kube.serve.HEADER_BYTES``) and stall, so that the server holds them until the
  read timeout; reopened when cut;
* slow clients: --slow clients each trickle one header byte every 0.5 s, reopened
  when cut (slowloris);
* declared and stalled: --declaring clients each declare a body of 200,000 bytes
  (over ``kube.serve.BIG_BODY``) and send none of it, or half, reopened when cut;
  measured with reviews of about 100 KB, each on a new connection with the caller's
  5 s timeout (the old server gave its one large-body slot to the first head and
  held it for the 10 s read timeout).

Every attack is bounded: a fixed number of clients on loopback, for as long as the
reviews of its phase take (--rounds x PACE, about 8 s; --rounds / 10 large reviews, at
most 20 s).

    python benchmarks/bench_webhook_attacks.py [--runs 1] [--rounds 300]
        [--connections 80] [--slow 200] [--declaring 80] [--tree DIR]
"""
import argparse
import json
import os
import platform
import socket
import ssl
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bench_http_hostile import Server, review, rss, validate_latency

from tacker_hwaffinity.kube.serve import HEADER_BYTES

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MiB = 1 << 20
PACE = 0.025        # seconds between reviews
HUGE = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 65000) for i in range(99))
NEAR = b"X-Pad: %s\r\n" % (b"a" * (HEADER_BYTES - 1024))
HEAD = b"POST /validate HTTP/1.1\r\nHost: x\r\n"
DECLARED = 200000           # the body the declaring clients announce
CALLER_TIMEOUT = 5.0        # the API server's, at most
SENT = {"declared": HEAD + b"Content-Length: %d\r\n\r\n" % DECLARED,
        "stalled": HEAD + b"Content-Length: %d\r\n\r\n%s" % (DECLARED, b" " * (DECLARED // 2)),
        "huge": HEAD + HUGE, "near": HEAD + NEAR, "slow": HEAD}


class Attack:
    """COUNT clients running KIND ("huge", "near" or "slow") against SERVER in threads
    of their own, each reopening its connection when the server cuts it; the
    server's highest RSS is sampled every 10 ms meanwhile."""

    def __init__(self, server, kind, count):
        self.server, self.kind = server, kind
        self.stop = threading.Event()
        self.peak = rss(server.proc.pid)
        self.reopened = 0
        self.threads = [threading.Thread(target=self._client, daemon=True)
                        for _ in range(count)]
        self.threads.append(threading.Thread(target=self._sample, daemon=True))
        for t in self.threads:
            t.start()

    def _sample(self):
        while not self.stop.wait(0.01):
            self.peak = max(self.peak, rss(self.server.proc.pid))

    def _client(self):
        while not self.stop.is_set():
            try:
                with self.server.tls(timeout=5) as s:
                    s.sendall(SENT[self.kind])
                    while not self.stop.is_set():
                        if self.kind == "slow":
                            s.sendall(b"X")
                        s.settimeout(0.5)
                        try:
                            if not s.recv(4096):
                                break               # cut
                        except socket.timeout:
                            continue
            except (OSError, ssl.SSLError):
                pass
            self.reopened += 1
            self.stop.wait(0.05)

    def close(self):
        self.stop.set()
        for t in self.threads:
            t.join(10)


def large_review():
    """An AdmissionReview of about 100 KB: a pod with a large annotation."""
    body = json.loads(review())
    body["request"]["object"]["metadata"]["annotations"]["note"] = "x" * 100000
    return json.dumps(body).encode()


def large_latency(server, rounds):
    """(p50, p99) in ms of ROUNDS reviews of about 100 KB (fewer when they take more
    than 20 s), each on a new connection with the caller's timeout (one that fails
    counts as that timeout)."""
    body = large_review()
    times = []
    deadline = time.monotonic() + 20
    for _ in range(rounds):
        if time.monotonic() > deadline:
            break
        t0 = time.perf_counter()
        try:
            with server.tls(timeout=CALLER_TIMEOUT) as s:
                s.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: "
                          b"application/json\r\nContent-Length: %d\r\n\r\n%s"
                          % (len(body), body))
                ok = s.makefile("rb").readline().startswith(b"HTTP/1.1 200")
        except OSError:
            ok = False
        times.append((time.perf_counter() - t0) * 1000 if ok else CALLER_TIMEOUT * 1000)
    times.sort()
    return statistics.median(times), times[int(0.99 * (len(times) - 1))]


def one_run(tree, rounds, connections, slow, declaring):
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(tree, tmp)
        try:
            validate_latency(server, 20)                    # warm
            out["idle"] = rss(server.proc.pid)
            out["baseline"] = validate_latency(server, rounds, pace=PACE) + (
                rss(server.proc.pid), rss(server.proc.pid), 0)
            out["large"] = large_latency(server, rounds // 10) + (
                rss(server.proc.pid), rss(server.proc.pid), 0)
            for kind, count in (("huge", connections), ("near", connections),
                                ("slow", slow), ("declared", declaring),
                                ("stalled", declaring)):
                attack = Attack(server, kind, count)
                try:
                    time.sleep(1.0)             # the attack under way before the reviews
                    if kind in ("declared", "stalled"):
                        p50, p99 = large_latency(server, rounds // 10)
                    else:
                        p50, p99 = validate_latency(server, rounds, pace=PACE)
                finally:
                    attack.close()
                out[kind] = (p50, p99, attack.peak, rss(server.proc.pid), attack.reopened)
        finally:
            server.stop()
    return out


def _range(values, scale=1.0, fmt="%.2f"):
    lo, hi = min(values) / scale, max(values) / scale
    return fmt % lo if lo == hi else (fmt + "-" + fmt) % (lo, hi)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--connections", type=int, default=80)
    ap.add_argument("--slow", type=int, default=200)
    ap.add_argument("--declaring", type=int, default=80)
    ap.add_argument("--tree", default=ROOT, help="checkout to run the webhook from")
    args = ap.parse_args()
    tree = os.path.abspath(args.tree)
    runs = [one_run(tree, args.rounds, args.connections, args.slow, args.declaring)
            for _ in range(args.runs)]
    print("machine: %s, %d cores, Python %s; server from %s; %d run(s) of %d reviews "
          "per phase, %.0f ms apart" % (
              platform.processor() or platform.machine(), os.cpu_count(),
              platform.python_version(), tree, args.runs, args.rounds, PACE * 1000))
    print("webhook RSS idle: %s MiB" % _range([r["idle"] for r in runs], MiB, "%.0f"))
    labels = {"baseline": "baseline (no attack)",
              "large": "baseline, 100 KB reviews (new connections)",
              "huge": "%d clients x 99 headers of 64 KB" % args.connections,
              "near": "%d clients stalled just under the %d KiB header cap"
                      % (args.connections, HEADER_BYTES >> 10),
              "slow": "%d slow clients (a byte every 0.5 s)" % args.slow,
              "declared": "%d clients declaring %d bytes, sending none"
                          % (args.declaring, DECLARED),
              "stalled": "%d clients declaring %d bytes, sending half"
                         % (args.declaring, DECLARED)}
    for key, label in labels.items():
        print("%-52s /validate p50 %s ms, p99 %s ms; RSS peak %s MiB, after %s MiB; "
              "connections cut and reopened %s" % (
                  label, _range([r[key][0] for r in runs]), _range([r[key][1] for r in runs]),
                  _range([r[key][2] for r in runs], MiB, "%.0f"),
                  _range([r[key][3] for r in runs], MiB, "%.0f"),
                  _range([r[key][4] for r in runs], 1, "%d")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
