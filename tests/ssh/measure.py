"""Figures of the SSH adapter against a real sshd on loopback.

    python tests/ssh/measure.py [ROUNDS]

Prints sshd start-up, connection set-up per key type (TCP, key exchange,
host-key check, public-key auth), the round trip of SSHSession.run(["true"]),
and how much of it is the channel itself (open + exec request, measured on
the transport) versus the remote login shell starting up.
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ssh.sshd import HOST, SSHServer

from tacker_hwaffinity.ssh import SSHSession, Target


def ms(values):
    return "median %.1f ms (min %.1f, max %.1f, n=%d)" % (
        statistics.median(values) * 1e3, min(values) * 1e3, max(values) * 1e3, len(values))


def main(rounds=20):
    server = SSHServer()
    try:
        t0 = time.monotonic()
        server.prepare()
        keygen = time.monotonic() - t0
        server.start()
        print("sshd: key generation %.0f ms; start-up to banner %.0f ms"
              % (keygen * 1e3, server.startup_seconds * 1e3))
        for name in ("ed25519", "ecdsa", "rsa"):
            text, _ = server.user_keys[name]
            target = Target(HOST, server.username, port=server.port, private_key=text,
                            known_hosts=server.known_hosts)
            times = []
            for _ in range(max(3, rounds // 4)):
                t0 = time.monotonic()
                SSHSession(target).connect().close()
                times.append(time.monotonic() - t0)
            print("connect (%s user key): %s" % (name, ms(times)))
        with SSHSession(target) as ssh:
            rtt = []
            for _ in range(rounds):
                t0 = time.monotonic()
                ssh.run(["true"], check=True)
                rtt.append(time.monotonic() - t0)
            print("run(['true']) round trip: %s" % ms(rtt))
            transport, chan_ms = ssh._link.transport, []
            for _ in range(rounds):
                t0 = time.monotonic()
                chan = transport.open_session(timeout=5)
                chan.exec_command("true")
                chan_ms.append(time.monotonic() - t0)
                chan.recv_exit_status()
                chan.close()
            print("  of which channel open + exec request: %s" % ms(chan_ms))
            print("  the rest is the remote login shell (%s) starting and the command"
                  % os.environ.get("SHELL", "?"))
            print("counters: %s" % ssh.stats.as_dict())
    finally:
        server.cleanup(keep_logs=False)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
