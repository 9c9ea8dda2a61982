"""A real Tacker on loopback: ``tacker-server`` and ``tacker-conductor`` from the tacker
wheel the tests already install, as separate processes, with a real message bus
(RabbitMQ, ``tests/openstack/rabbit.py``) and a real database (MariaDB, ``mariadb.py``).

* The schema comes from Tacker's own ``tacker-db-manage upgrade head``.
* Authentication is Keystone's: keystonemiddleware in the stock ``keystone`` paste
  pipelines validates tokens against the harness's fake Keystone, as the ``tacker``
  service user; the harness adds the ``nfv-orchestration`` catalog entry that
  python-tackerclient looks for.
* ``[tacker] vnflcm_mgmt_driver = vnflcm_noop,mgmt-drivers-hwaffinity``: the conductor
  loads our driver through its own driver manager (v1); v2 runs the package's script.
* OpenStack VIMs' keys are files under ``vim_keys``; Kubernetes VIMs' keys go to a
  key manager (``[k8s_vim] use_barbican``, Tacker refuses them without one): a real
  Barbican API (``barbicanharness.py``, fixture ``barbican``) that Tacker finds in the
  catalog as its service user, whose domains are therefore given by name (Tacker's
  service context reads ``user_domain_name`` and ``project_domain_name`` only).
* ``[v2_vnfm] kubernetes_vim_rsc_wait_timeout`` is ``K8S_WAIT_S``, so a CNF operation
  that cannot complete (a replica left Pending) fails in under a minute.
* The Tacker processes import the kubernetes client Tacker 16 works with (before 37, whose
  pydantic models refuse its drivers' objects) from the directory
  ``tools/tacker-kubernetes-client.sh`` makes, first on their ``PYTHONPATH``: in the
  field Tacker has a venv of its own, while the test venv needs 37.
* State (configuration, packages, the glance_store, VIM keys, tooz locks, logs) lives in
  a per-run directory, also the processes' working directory (where the conductor's
  heat-translator writes its templates); every process is stopped by its process group
  (SIGTERM, then SIGKILL after a few seconds: the conductor's master does not exit on
  SIGTERM).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

from osharness import REPO, free_port, kill_group, rss_of, tail_of

SERVICE_USER, SERVICE_PASSWORD = "tacker", "secret"
PIPELINE_DRIVERS = "vnflcm_noop,mgmt-drivers-hwaffinity"
# How long v2's Kubernetes infra driver waits for a CNF's resources to be ready before
# FAILED_TEMP (Tacker's default: 500 s); it looks every 10 s.
K8S_WAIT_S = 40

CONF = """\
[DEFAULT]
bind_host = 127.0.0.1
bind_port = {port}
auth_strategy = keystone
api_paste_config = {paste}
state_path = {state}
transport_url = {transport}
graceful_shutdown_timeout = 2
debug = false
use_stderr = true

[database]
connection = {database}

[keystone_authtoken]
auth_type = password
auth_url = {identity}
www_authenticate_uri = {identity}/v3
username = {user}
password = {password}
user_domain_name = Default
project_name = service
project_domain_name = Default
service_token_roles_required = false
interface = public

[vnf_package]
vnf_package_csar_path = {packages}

[glance_store]
filesystem_store_datadir = {store}

[vim_keys]
openstack = {vim_keys}
use_barbican = false

[k8s_vim]
use_barbican = true

[coordination]
backend_url = file://{state}

[tacker]
vnflcm_mgmt_driver = {drivers}

[vnf_lcm]
endpoint_url = http://127.0.0.1:{port}/

[v2_vnfm]
endpoint = http://127.0.0.1:{port}
kubernetes_vim_rsc_wait_timeout = {k8s_wait}

[oslo_policy]
enforce_scope = false
"""


class TackerError(Exception):
    pass


KUBERNETES_CLIENT_SCRIPT = os.path.join(REPO, "tools", "tacker-kubernetes-client.sh")


def kubernetes_client_dir(timeout=300):
    """The directory with Tacker's kubernetes client (made on first use, from PyPI)."""
    proc = subprocess.run(["bash", KUBERNETES_CLIENT_SCRIPT], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, PYTHON=sys.executable))
    lines = proc.stdout.strip().splitlines()
    if proc.returncode or not lines or not os.path.isdir(lines[-1]):
        raise TackerError("tools/tacker-kubernetes-client.sh failed (exit %s):\n%s"
                          % (proc.returncode, proc.stderr[-2000:]))
    return lines[-1]


def _bin(name):
    path = os.path.join(os.path.dirname(sys.executable), name)
    if not os.access(path, os.X_OK):
        raise TackerError("%s is not installed next to %s (pip install tacker)"
                          % (name, sys.executable))
    return path


# The header of the section a Guru Meditation Report prints last.
GMR_LAST_SECTION = "Configuration"


def stacks_only(report):
    """REPORT (a Guru Meditation Report) without its configuration section, which is
    long and not about stacks ("(no report)" for none)."""
    if not report:
        return "(no report)"
    lines = report.splitlines()
    for i, line in enumerate(lines):
        if line.strip("= ") == GMR_LAST_SECTION and i:
            return "\n".join(lines[:i - 1])
    return report


class Process:
    def __init__(self, name, argv, log_path, env, cwd):
        self.name, self.log_path = name, log_path
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                                     start_new_session=True)

    def alive(self):
        return self.proc.poll() is None

    def rss_bytes(self):
        """Resident memory of the process group's processes (the conductor forks a
        worker)."""
        total = 0
        for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
            try:
                if os.getpgid(pid) == self.proc.pid:
                    total += rss_of(pid)
            except ProcessLookupError:
                continue
        return total

    def tail(self, lines=40):
        return tail_of(self.log_path, lines)

    def stacks(self, timeout=10.0):
        """The Guru Meditation Report Tacker's commands print on SIGUSR2 (oslo.reports):
        every thread's and greenthread's stack, for a test that timed out. "" when the
        process is gone or prints nothing within TIMEOUT seconds."""
        if not self.alive():
            return ""
        start = os.path.getsize(self.log_path)
        os.kill(self.proc.pid, signal.SIGUSR2)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as f:
                f.seek(start)
                report = f.read().decode("utf-8", "replace")
            # the report's last section is the configuration, after the greenthreads
            if GMR_LAST_SECTION in report:
                return report
            time.sleep(0.2)   # polling the log for the report's end, with a deadline
        return ""

    def stop(self, grace=3.0):
        kill_group(self.proc, grace)
        try:                            # what the group left behind (the forked worker)
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._log.close()


class Tacker:
    """tacker-server + tacker-conductor for CLOUD (an ``osharness.OpenStackCloud`` with
    Heat), on TRANSPORT_URL and DATABASE_URL, state in RUN_DIR."""

    def __init__(self, cloud, transport_url, database_url, run_dir):
        self.cloud, self.transport_url, self.database_url = cloud, transport_url, database_url
        self.run_dir = run_dir
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.server = self.conductor = None
        self.startup_seconds = self.migrate_seconds = None

    @property
    def identity(self):
        return self.cloud.info["base_url"] + "/identity"

    def _write_conf(self):
        dirs = {k: os.path.join(self.run_dir, k) for k in
                ("state", "packages", "store", "vim_keys")}
        for d in dirs.values():
            os.makedirs(d, exist_ok=True)
        paste = os.path.join(self.run_dir, "api-paste.ini")
        shutil.copyfile(os.path.join(sys.prefix, "etc", "tacker", "api-paste.ini"), paste)
        self.conf = os.path.join(self.run_dir, "tacker.conf")
        with open(self.conf, "w") as f:
            f.write(CONF.format(port=self.port, paste=paste, transport=self.transport_url,
                                database=self.database_url, identity=self.identity,
                                user=SERVICE_USER, password=SERVICE_PASSWORD,
                                drivers=PIPELINE_DRIVERS, k8s_wait=K8S_WAIT_S, **dirs))

    def start(self, timeout=90):
        t0 = time.monotonic()
        self._write_conf()
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=os.pathsep.join(
            [kubernetes_client_dir()] + [p for p in os.environ.get("PYTHONPATH", "").split(
                os.pathsep) if p]))
        migrate = subprocess.run([_bin("tacker-db-manage"), "--config-file", self.conf,
                                  "upgrade", "head"], capture_output=True, text=True,
                                 timeout=300, env=env, cwd=self.run_dir)
        if migrate.returncode:
            raise TackerError("tacker-db-manage upgrade head failed:\n%s"
                              % (migrate.stdout + migrate.stderr)[-3000:])
        self.migrate_seconds = time.monotonic() - t0
        logs = os.path.join(self.run_dir, "logs")
        os.makedirs(logs, exist_ok=True)
        self.conductor = Process("tacker-conductor", [
            _bin("tacker-conductor"), "--config-file", self.conf],
            os.path.join(logs, "tacker-conductor.log"), env, self.run_dir)
        self.server = Process("tacker-server", [
            _bin("tacker-server"), "--config-file", self.conf],
            os.path.join(logs, "tacker-server.log"), env, self.run_dir)
        self._register_service()
        deadline = t0 + timeout
        while True:
            for p in (self.server, self.conductor):
                if not p.alive():
                    raise TackerError("%s exited (%s):\n%s" % (p.name, p.proc.returncode,
                                                              p.tail()))
            if self._serving() and self._conductor_ready():
                self.startup_seconds = time.monotonic() - t0
                return self
            if time.monotonic() > deadline:
                raise TackerError("Tacker not ready within %d s:\nserver:\n%s\nconductor:\n%s"
                                  % (timeout, self.server.tail(), self.conductor.tail()))
            time.sleep(0.3)

    def _serving(self):
        try:
            with urllib.request.urlopen(self.url + "/", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def _conductor_ready(self):
        """The conductor consumes its RPC queues (v1 and packages; v2): it logs nothing
        when it is ready, so ask the broker (a passive declare: consumers per queue)."""
        import kombu
        url = self.transport_url.replace("rabbit://", "amqp://", 1)
        try:
            with kombu.Connection(url, connect_timeout=2) as conn:
                for queue in ("TACKER_CONDUCTOR", "TACKER_CONDUCTOR_V2"):
                    channel = conn.channel()
                    try:
                        _, _, consumers = channel.queue_declare(queue=queue, passive=True)
                    finally:
                        channel.close()
                    if not consumers:
                        return False
        except Exception:  # noqa: BLE001 - no queue yet (404 closes the channel), no broker
            return False
        return True

    def _register_service(self):
        body = json.dumps({"type": "nfv-orchestration", "url": self.url + "/"}).encode()
        req = urllib.request.Request(self.identity + "/_harness/services", data=body,
                                     method="POST",
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=10).read()

    def rss_bytes(self):
        return {p.name: p.rss_bytes() for p in (self.server, self.conductor) if p}

    def processes(self):
        """[(name, Process)] of the started server and conductor."""
        return [(p.name, p) for p in (self.server, self.conductor) if p is not None]

    def logs(self):
        return {name: p.log_path for name, p in self.processes()}

    def stop(self):
        for p in (self.server, self.conductor):
            if p is not None:
                p.stop()
