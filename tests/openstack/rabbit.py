"""A private RabbitMQ broker on 127.0.0.1 for the tests (Debian's rabbitmq-server).

Nothing of the system's is used: the node, its Erlang port mapper (epmd), its
distribution port, its data, logs and cookie all live in a run directory, on free
loopback ports, and the whole process group goes when the broker is stopped.
``RabbitMQ().start().url`` is an oslo.messaging transport URL
(``rabbit://guest:guest@127.0.0.1:<port>/``; ``loopback_users = none`` lets
guest in from 127.0.0.1 only, as the listener is there alone).
"""
import os
import shutil
import subprocess
import tempfile
import time

from osharness import free_port, kill_group, serving, tail_of

SERVER = "/usr/lib/rabbitmq/lib/rabbitmq_server-3.10.8/sbin/rabbitmq-server"


class BrokerError(Exception):
    pass


def installed():
    return os.path.exists(_server()) and shutil.which("epmd") is not None


def _server():
    base = "/usr/lib/rabbitmq/lib"
    if os.path.isdir(base):
        for d in sorted(os.listdir(base), reverse=True):
            path = os.path.join(base, d, "sbin", "rabbitmq-server")
            if d.startswith("rabbitmq_server-") and os.path.exists(path):
                return path
    return SERVER


class RabbitMQ:
    def __init__(self, run_dir=None):
        self.run_dir = run_dir or tempfile.mkdtemp(prefix="hwaffinity-rabbit-")
        self.port = self.epmd_port = None
        self.procs = []

    @property
    def url(self):
        return "rabbit://guest:guest@127.0.0.1:%d/" % self.port

    def start(self, timeout=60):
        self.port, self.epmd_port, dist = free_port(), free_port(), free_port()
        conf = os.path.join(self.run_dir, "rabbitmq.conf")
        with open(conf, "w") as f:
            f.write("listeners.tcp.default = 127.0.0.1:%d\nloopback_users = none\n"
                    % self.port)
        plugins = os.path.join(self.run_dir, "enabled_plugins")
        with open(plugins, "w") as f:
            f.write("[].")
        env = dict(os.environ, HOME=self.run_dir,
                   RABBITMQ_NODENAME="hwaffinity%d@localhost" % self.port,
                   RABBITMQ_CONFIG_FILE=conf, RABBITMQ_ENABLED_PLUGINS_FILE=plugins,
                   RABBITMQ_MNESIA_BASE=os.path.join(self.run_dir, "mnesia"),
                   RABBITMQ_LOG_BASE=os.path.join(self.run_dir, "log"), RABBITMQ_LOGS="-",
                   RABBITMQ_PID_FILE=os.path.join(self.run_dir, "pid"),
                   RABBITMQ_DIST_PORT=str(dist), ERL_EPMD_PORT=str(self.epmd_port),
                   ERL_EPMD_ADDRESS="127.0.0.1",
                   RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface "
                                                       "{127,0,0,1}")
        log = open(os.path.join(self.run_dir, "rabbitmq.log"), "wb")
        # epmd in the foreground, so that it goes with the broker
        self.procs.append(subprocess.Popen(
            ["epmd", "-port", str(self.epmd_port), "-address", "127.0.0.1"], env=env,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        self.procs.append(subprocess.Popen(
            [_server()], env=env, cwd=self.run_dir, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.procs[-1].poll() is not None:
                raise BrokerError("rabbitmq-server exited (%s):\n%s"
                                  % (self.procs[-1].returncode, self.log_tail()))
            if "Server startup complete" in self.log_tail(200):
                return self
            time.sleep(0.2)
        self.stop()
        raise BrokerError("rabbitmq-server not ready within %d s:\n%s"
                          % (timeout, self.log_tail()))

    def log_tail(self, lines=30):
        return tail_of(os.path.join(self.run_dir, "rabbitmq.log"), lines)

    def stop(self):
        for proc in reversed(self.procs):
            kill_group(proc, grace=15)
        self.procs = []
        shutil.rmtree(self.run_dir, ignore_errors=True)


def running():
    """A started broker for a fixture (``osharness.serving``)."""
    return serving(RabbitMQ, installed(), "rabbitmq-server", BrokerError)
