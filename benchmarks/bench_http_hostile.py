"""Benchmark: the webhook under hostile clients, on loopback.

The server is the real process, ``hwaffinity webhook serve --no-extender`` over HTTPS
with a pair from ``hwaffinity webhook certs`` and every other flag at its default
(256 connections, 10 s read timeout, 60 s idle timeout, admission bodies up to 6 MiB).
Per run it prints:

* its resident memory idle, at its highest while a client sends a 20 MB
  ``/validate`` body (small JSON objects, the costliest to decode) and after the
  answer (a 413 now: the old server read and decoded it);
* ``/validate`` latency (p50/p99 over --rounds reviews of a typical pod, one
  kept-alive TLS connection, as the API server's): alone, then while 200 hostile
  connections are held (100 that never send a byte, 100 that trickle headers a byte
  a second after their handshake, each one reopened as soon as the server cuts it).
  Target p99 < 5 ms (the README's). The reviews are PACE apart, so that 300 of them
  last longer than the read timeout.

Runs --runs times and prints the range of each figure.

    python benchmarks/bench_http_hostile.py [--runs 3] [--rounds 300] [--tree DIR]

``--tree`` runs the server from another checkout (e.g. the previous commit, to see
what it did), with the same flags.
"""
import argparse
import json
import os
import platform
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MiB = 1 << 20
GOAL_MS = 5.0
HOSTILE = 200
PACE = 0.04         # seconds between reviews while the hostile connections are held


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def review():
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "default", "labels": {"app": "a"},
                        "annotations": {"hwaffinity.io/required-during-execution": json.dumps(
                            {"podAntiAffinity": [{"topologyKey": "CIS-node", "labelSelector":
                                                  {"matchLabels": {"app": "a"}}}]})}},
           "spec": {"containers": [{"name": "c", "image": "registry.example.com/app:1",
                                    "resources": {"requests": {"cpu": "100m"}}}]}}
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": "r1", "kind": {"group": "", "version": "v1",
                                                         "kind": "Pod"},
                                   "resource": {"group": "", "version": "v1",
                                                "resource": "pods"},
                                   "namespace": "default", "operation": "CREATE",
                                   "userInfo": {"username": "u"}, "object": pod}}).encode()


class Server:
    def __init__(self, tree, tmp):
        out = os.path.join(tmp, "certs")
        subprocess.run([sys.executable, "-m", "tacker_hwaffinity.cli.main", "webhook",
                        "certs", "--out", out, "--ip", "127.0.0.1"], cwd=tree, check=True,
                       capture_output=True, timeout=60)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tacker_hwaffinity.cli.main", "webhook", "serve",
             "--no-extender", "--address", "127.0.0.1:%d" % self.port,
             "--cert", os.path.join(out, "tls.crt"), "--key", os.path.join(out, "tls.key"),
             "--log-level", "WARNING"], cwd=tree, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=tree))
        self.context = ssl.create_default_context(cafile=os.path.join(out, "ca.crt"))
        deadline = time.monotonic() + 60
        while True:
            try:
                self.tls().close()
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise SystemExit("the webhook did not start")
                time.sleep(0.2)

    def tls(self, timeout=30):
        return self.context.wrap_socket(
            socket.create_connection(("127.0.0.1", self.port), timeout=timeout),
            server_hostname="127.0.0.1")

    def stop(self):
        self.proc.kill()
        self.proc.wait(10)


def big_post(server):
    """(idle, peak, after) RSS in bytes and the status line of a 20 MB /validate."""
    idle = rss(server.proc.pid)
    body = b"[" + b",".join([b'{"a":1}'] * (20 * MiB // 8)) + b"]"
    peak = [idle]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss(server.proc.pid))
            time.sleep(0.005)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    answer = b""
    with server.tls(timeout=120) as s:
        s.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body))
        try:                                  # as Go's client: send, answer or not
            for i in range(0, len(body), MiB):
                s.sendall(body[i:i + MiB])
        except OSError:
            pass                              # the server answered and closed
        try:
            answer = s.recv(4096)
        except OSError:
            pass
    time.sleep(1.0)                           # let a decoding server finish: "after"
    done.set()
    sampler.join()
    return idle, peak[0], rss(server.proc.pid), answer.split(b"\r\n", 1)[0].decode()


class Hostile:
    """HOSTILE connections held open, reopened when cut: half never send a byte,
    half trickle a header byte a second after the handshake."""

    def __init__(self, server):
        self.server = server
        self.stop = threading.Event()
        self.socks = [None] * HOSTILE
        self.reopened = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _open(self, i):
        try:
            if i % 2:
                s = self.server.tls(timeout=5)
                s.sendall(b"POST /validate HTTP/1.1\r\n")
            else:
                s = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
            s.setblocking(False)
            return s
        except OSError:
            return None

    def _alive(self, s):
        try:
            return s.recv(1) != b""
        except (BlockingIOError, ssl.SSLWantReadError):
            return True
        except OSError:
            return False

    def _run(self):
        while not self.stop.is_set():
            for i, s in enumerate(self.socks):
                if s is not None and not self._alive(s):
                    s.close()
                    s = self.socks[i] = None
                    self.reopened += 1
                if s is None:
                    self.socks[i] = self._open(i)
                elif i % 2:
                    try:
                        s.send(b"X")
                    except (OSError, ssl.SSLError):
                        pass
            self.stop.wait(1.0)

    def close(self):
        self.stop.set()
        self.thread.join()
        for s in self.socks:
            if s is not None:
                s.close()


def validate_latency(server, rounds, pace=0.0):
    """(p50, p99) in ms of ROUNDS reviews, PACE seconds apart."""
    body = review()
    with server.tls() as s:
        f = s.makefile("rb")
        times = []
        for i in range(rounds + 5):
            time.sleep(pace)
            t0 = time.perf_counter()
            s.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                      b"\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            status = f.readline()
            length = 0
            while True:
                line = f.readline()
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                if line in (b"\r\n", b""):
                    break
            f.read(length)
            assert status.startswith(b"HTTP/1.1 200"), status
            if i >= 5:
                times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.99 * (len(times) - 1))]


def one_run(tree, rounds):
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(tree, tmp)
        try:
            idle, peak, after, status = big_post(server)
            alone = validate_latency(server, rounds, pace=PACE)
            hostile = Hostile(server)
            try:
                deadline = time.monotonic() + 30
                while sum(s is not None for s in hostile.socks) < HOSTILE and \
                        time.monotonic() < deadline:
                    time.sleep(0.2)
                # spread over more than the 10 s read timeout: the server cuts the
                # slow ones and they come back while the reviews go on
                held = validate_latency(server, rounds, pace=PACE)
                reopened = hostile.reopened
                held_rss = rss(server.proc.pid)
            finally:
                hostile.close()
        finally:
            server.stop()
    return {"idle": idle, "peak": peak, "after": after, "status": status,
            "alone": alone, "held": held, "reopened": reopened, "held_rss": held_rss}


def _range(values, scale=1.0, fmt="%.2f"):
    lo, hi = min(values) / scale, max(values) / scale
    return fmt % lo if lo == hi else (fmt + "-" + fmt) % (lo, hi)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--tree", default=ROOT, help="checkout to run the webhook from")
    args = ap.parse_args()
    runs = [one_run(os.path.abspath(args.tree), args.rounds) for _ in range(args.runs)]
    print("machine: %s, %d cores, Python %s; server from %s" % (
        platform.processor() or platform.machine(), os.cpu_count(),
        platform.python_version(), os.path.abspath(args.tree)))
    print("webhook RSS: idle %s MiB; during a 20 MB /validate %s MiB; after %s MiB "
          "(answer: %s)" % (_range([r["idle"] for r in runs], MiB, "%.0f"),
                            _range([r["peak"] for r in runs], MiB, "%.0f"),
                            _range([r["after"] for r in runs], MiB, "%.0f"),
                            ", ".join(sorted({r["status"] or "none" for r in runs}))))
    ok = True
    for key, label in (("alone", "alone"), ("held", "with %d hostile connections held"
                                            % HOSTILE)):
        p99s = [r[key][1] for r in runs]
        ok = ok and max(p99s) < GOAL_MS
        print("/validate %-36s p50 %s ms  p99 %s ms  (goal p99 < %.0f ms, %d rounds x %d "
              "runs)" % (label, _range([r[key][0] for r in runs]), _range(p99s), GOAL_MS,
                         args.rounds, args.runs))
    print("hostile connections cut by the server and reopened: %s per run; webhook RSS "
          "with them held %s MiB" % (_range([r["reopened"] for r in runs], 1, "%d"),
                                     _range([r["held_rss"] for r in runs], MiB, "%.0f")))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
