"""Real Nova + Heat (+ fake Keystone, Glance, Neutron) for tests: start,
reach and stop them (pytest side).

This module runs in the pytest process and imports nothing from Nova or
Heat. The servers (``fakecloud.py``, ``fakeheat.py``) run as subprocesses
with the python of the venv built by ``tools/openstack-venv.sh``, on free
``127.0.0.1`` ports. See ``doc/openstack-harness.md``.

Typical use outside the pytest fixtures::

    cloud = OpenStackCloud(computes=3)
    try:
        cloud.start()            # Nova, Placement, fake Keystone/Glance
        cloud.start_heat()       # optional: Heat API + engine
        nova = cloud.nova("admin")
        neutron = cloud.neutron("member")   # the fake Neutron
        heat = cloud.heat("member")
    finally:
        cloud.stop(keep_logs=False)

Users (password ``secret``, domain ``Default``):

``admin``  roles admin, member, reader; default project ``admin``
           (also admin in project ``demo``);
``member`` (Keystone name ``demo``) roles member, reader in project ``demo``.
"""
import atexit
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from controlplane.harness import free_port  # noqa: F401  (re-exported for the harnesses here)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
VENV_SCRIPT = os.path.join(REPO, "tools", "openstack-venv.sh")
PASSWORD = "secret"
DOMAIN = "Default"
# harness user -> (Keystone user name, default project)
USERS = {"admin": ("admin", "admin"), "member": ("demo", "demo")}
DEFAULT_COMPUTES = int(os.environ.get("HWAFFINITY_OPENSTACK_COMPUTES", "3"))
# networks of the fake Neutron (fakeneutron.py)
PRIVATE_NETWORK = "private"
PUBLIC_NETWORK = "public"
# novaclient's newest microversion (Nova 34 serves up to 2.104)
NOVA_LATEST = "2.96"
# Microversion of the harness's move operations: block_migration "auto" and a
# null host (2.25+), GET /servers/{id}/migrations (2.23+), service uuids and
# forced_down by PUT (2.53+), no "force" (2.68+); evacuate leaves the server
# ACTIVE (2.95+ would stop it: SHUTOFF).
MOVE_VERSION = "2.68"
HOST_ATTR = "OS-EXT-SRV-ATTR:host"
TASK_ATTR = "OS-EXT-STS:task_state"
BUILD_HINT = ("the OpenStack test venv is missing and could not be built; run "
              "`bash tools/openstack-venv.sh` (pip-installs nova, placement and heat "
              "from PyPI into the cache) or set HWAFFINITY_OPENSTACK_PYTHON")


class HarnessError(RuntimeError):
    """A server did not start, died, or a wait timed out."""


class VenvUnavailable(HarnessError):
    """The openstack venv is not there and could not be built."""


# --------------------------------------------------------------------------
# The venv

_PYTHON = None


def openstack_python(build=True, timeout=900):
    """Path of the python in the Nova/Heat venv.

    ``$HWAFFINITY_OPENSTACK_PYTHON`` wins; otherwise runs
    ``tools/openstack-venv.sh`` (a cache hit takes well under a second, a
    cold build ~50 s). Raises :class:`VenvUnavailable` with the reason.
    """
    global _PYTHON
    env_python = os.environ.get("HWAFFINITY_OPENSTACK_PYTHON")
    if env_python:
        if not os.access(env_python, os.X_OK):
            raise VenvUnavailable("HWAFFINITY_OPENSTACK_PYTHON=%s is not executable"
                                  % env_python)
        return env_python
    if _PYTHON:
        return _PYTHON
    if not build:
        raise VenvUnavailable(BUILD_HINT)
    try:
        proc = subprocess.run(["bash", VENV_SCRIPT], capture_output=True, text=True,
                              timeout=timeout, cwd=REPO)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise VenvUnavailable("%s (%s)" % (BUILD_HINT, exc)) from exc
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines or not os.access(lines[-1], os.X_OK):
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise VenvUnavailable("%s\n--- tools/openstack-venv.sh (exit %s) ---\n%s"
                              % (BUILD_HINT, proc.returncode, tail))
    _PYTHON = lines[-1]
    return _PYTHON


def own_cloud(computes):
    """A cloud with COMPUTES fake compute hosts for one module outside ``tests/openstack``
    (a generator for a module-scoped fixture: ``yield from own_cloud(2)``), stopped after."""
    import pytest
    cloud = OpenStackCloud(computes=computes, python=python_or_skip())
    try:
        cloud.start()
    except HarnessError as e:
        pytest.fail("OpenStack did not start (logs in %s): %s" % (cloud.run_dir, e),
                    pytrace=False)
    try:
        yield cloud
    finally:
        cloud.stop()


def python_or_skip():
    """:func:`openstack_python` for tests outside ``tests/openstack``.

    Without the venv: ``pytest.fail`` when ``$CI`` is true (CI must never
    skip these tests), ``pytest.skip`` with the reason otherwise.
    """
    from ci_policy import unavailable
    try:
        return openstack_python()
    except VenvUnavailable as exc:
        unavailable(str(exc))



@contextlib.contextmanager
def heat_clouds(request):
    """For a test module's own harnesses: yields ``start(computes, **options)``,
    which starts Nova with COMPUTES hosts (and ``OpenStackCloud`` OPTIONS, such as
    ``notifications_url``) and Heat and returns the cloud (a start-up failure fails
    the test with the log directory). At the end every cloud stops; its logs are
    kept, and named, when a test of the scope failed."""
    import pytest
    python = python_or_skip()
    clouds, failed_before = [], request.session.testsfailed

    def start(computes, **options):
        cloud = OpenStackCloud(computes=computes, python=python, **options)
        clouds.append(cloud)
        try:
            cloud.start()
            cloud.start_heat()
        except HarnessError as exc:
            pytest.fail("OpenStack did not start (logs in %s): %s" % (cloud.run_dir, exc),
                        pytrace=False)
        return cloud
    try:
        yield start
    finally:
        keep = request.session.testsfailed > failed_before
        for cloud in clouds:
            cloud.stop(keep_logs=keep)
            if keep:
                print("\nOpenStack logs kept in %s" % cloud.run_dir)


# --------------------------------------------------------------------------
# Processes

_LIVE = set()


@contextlib.contextmanager
def serving(make, installed, package, error):
    """A private server for a fixture: MAKE() started, then stopped at the end. Its
    Debian PACKAGE missing (not INSTALLED) is ``ci_policy.unavailable`` (a failure under
    CI); ERROR during start-up fails the test with the reason."""
    import pytest
    from ci_policy import unavailable
    if not installed:
        unavailable("%s is not installed (tools/install-test-packages.sh)" % package)
    server = make()
    try:
        server.start()
    except error as e:
        pytest.fail("%s did not start: %s" % (package, e), pytrace=False)
    try:
        yield server
    finally:
        server.stop()


def tail_of(path, lines=30):
    """The last LINES lines of the log at PATH ("(no log)" if it cannot be read)."""
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no log)"


def rss_of(pid):
    """Resident memory of process PID in bytes (0 when it is gone)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def kill_group(proc, grace=10.0):
    """SIGTERM the process group of ``proc``, then SIGKILL after ``grace``."""
    if proc.poll() is None:
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
    _LIVE.discard(proc)


@atexit.register
def _kill_leftovers():
    for proc in list(_LIVE):
        kill_group(proc, grace=2.0)


class Server:
    """One server subprocess: stdout -> ``<name>.out``, stderr -> ``<name>.log``."""

    def __init__(self, name, argv, run_dir):
        self.name = name
        self.argv = argv
        self.out_path = os.path.join(run_dir, name + ".out")
        self.log_path = os.path.join(run_dir, name + ".log")
        self.proc = None
        self.info = None
        self.startup_seconds = None
        self.last_rss = 0

    def start(self, timeout):
        t0 = time.monotonic()
        with open(self.out_path, "wb") as out, open(self.log_path, "wb") as err:
            self.proc = subprocess.Popen(
                self.argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                cwd=HERE, start_new_session=True,
                env=dict(os.environ, PYTHONUNBUFFERED="1"))
        _LIVE.add(self.proc)
        deadline = t0 + timeout
        while True:
            with open(self.out_path, "r", errors="replace") as f:
                for line in f:
                    if line.startswith("READY "):
                        self.info = json.loads(line[len("READY "):])
                        self.startup_seconds = time.monotonic() - t0
                        return self.info
            if self.proc.poll() is not None:
                raise HarnessError("%s exited with code %s during start-up:\n%s"
                                   % (self.name, self.proc.returncode, self.log_tail()))
            if time.monotonic() > deadline:
                self.stop()
                raise HarnessError("%s not ready within %.0f s:\n%s"
                                   % (self.name, timeout, self.log_tail()))
            time.sleep(0.1)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def rss_bytes(self):
        """Resident memory now; once stopped, what it was just before."""
        if not self.alive():
            return self.last_rss
        return rss_of(self.proc.pid)

    def log_tail(self, lines=40):
        return tail_of(self.log_path, lines)

    def stop(self):
        if self.proc is not None:
            if self.alive():
                self.last_rss = self.rss_bytes()
            kill_group(self.proc)


# --------------------------------------------------------------------------
# The cloud

def _heat_sqlite_keep_ids(db_path):
    """Stop sqlite from reusing ``resource_properties_data`` ids.

    Heat assumes ids are never reused (MySQL's AUTO_INCREMENT, PostgreSQL's
    sequences). sqlite gives a new row max(id)+1, so when the newest row is
    deleted (Heat's attribute store deletes its row at once when it loses a
    race) the next row gets the same id, and a stale reference then updates
    or deletes another resource's properties: a scale-down then failed with
    "ResourcePropertiesData with id N not found". A trigger keeps a
    placeholder row (data NULL) when the newest row is deleted. Runs once,
    right after Heat is up and before any stack exists.
    """
    import sqlite3
    with sqlite3.connect(db_path, timeout=30) as conn:
        conn.execute(
            "CREATE TRIGGER IF NOT EXISTS harness_rpd_keep_ids "
            "AFTER DELETE ON resource_properties_data "
            "WHEN old.id > coalesce((SELECT max(id) FROM resource_properties_data), 0) "
            "BEGIN INSERT INTO resource_properties_data (id, data, encrypted) "
            "VALUES (old.id, NULL, 0); END")
    conn.close()


class _NotDeprecated:
    """Logging filter: drop neutronclient's per-client deprecation notice."""

    def filter(self, record):
        return "deprecated in favor of OpenstackSDK" not in record.getMessage()

    def __eq__(self, other):   # addFilter() adds an equal filter once
        return isinstance(other, _NotDeprecated)

    __hash__ = object.__hash__


class OpenStackCloud:
    """Nova (+ optional Heat) on loopback; see the module docstring."""

    def __init__(self, computes=DEFAULT_COMPUTES, python=None, run_dir=None,
                 notifications_url=None):
        self.computes = computes
        self.notifications_url = notifications_url  # a broker for versioned notifications
        self._python = python
        self.run_dir = run_dir or tempfile.mkdtemp(prefix="hwaffinity-openstack-")
        self.cloud = None
        self.heat_server = None

    # -- lifecycle --------------------------------------------------------
    def start(self, timeout=120):
        """Start fakecloud (Nova, Placement, fake Keystone and Glance)."""
        python = self._python or openstack_python()
        argv = [python, os.path.join(HERE, "fakecloud.py"), "--computes", str(self.computes)]
        if self.notifications_url:
            argv += ["--notifications-url", self.notifications_url]
        self.cloud = Server("fakecloud", argv, self.run_dir)
        self.cloud.start(timeout)
        return self

    def start_heat(self, timeout=120, action_retry_limit=0):
        """Start fakeheat (Heat API + engine) against this cloud; idempotent."""
        if self.heat_server is not None and self.heat_server.alive():
            return self
        if self.cloud is None:
            raise HarnessError("start() the cloud before Heat")
        python = self._python or openstack_python()
        self.heat_server = Server("fakeheat", [
            python, os.path.join(HERE, "fakeheat.py"),
            "--identity-url", self.info["base_url"] + "/identity",
            "--run-dir", os.path.join(self.run_dir, "heat"),
            "--action-retry-limit", str(action_retry_limit)], self.run_dir)
        self.heat_server.start(timeout)
        _heat_sqlite_keep_ids(os.path.join(self.run_dir, "heat", "heat.sqlite"))
        return self

    def stop(self, keep_logs=False):
        """Stop every process started here; remove the run dir unless kept."""
        for server in (self.heat_server, self.cloud):
            if server is not None:
                server.stop()
        if not keep_logs:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    # -- facts ------------------------------------------------------------
    @property
    def info(self):
        """The READY record of fakecloud (ports, URLs, hosts, images, flavors)."""
        return self.cloud.info

    @property
    def auth_url(self):
        """Keystone v3 URL, e.g. ``http://127.0.0.1:N/identity/v3``."""
        return self.info["auth_url"]

    @property
    def hosts(self):
        """Compute host names: ``["compute1", ..., "computeN"]``."""
        return list(self.info["hosts"])

    @property
    def image(self):
        """Id of the image named ``cirros``."""
        return self.info["images"]["cirros"]

    flavor = "m1.tiny"

    @property
    def networks(self):
        """{name: {id, subnet_id, cidr, project_id}} of the fake Neutron."""
        return dict(self.info["networks"])

    @property
    def network(self):
        """Name of the tenant network (``private``, owned by project ``demo``;
        ``admin`` may use it too). Templates may use the name or the id."""
        return PRIVATE_NETWORK

    @property
    def network_id(self):
        return self.info["networks"][PRIVATE_NETWORK]["id"]

    @property
    def subnet_id(self):
        """Id of the network's IPv4 subnet (addresses are allocated from it)."""
        return self.info["networks"][PRIVATE_NETWORK]["subnet_id"]

    @property
    def external_network(self):
        """Name of the external network for floating IPs (``public``)."""
        return PUBLIC_NETWORK

    @property
    def network_url(self):
        """Neutron endpoint (without ``/v2.0``), as in the catalog."""
        return self.info["network_url"]

    @property
    def heat_url(self):
        return self.heat_server.info["url"] if self.heat_server else None

    def project_id(self, name):
        return self.info["projects"][name]

    def log_paths(self):
        return [s.log_path for s in (self.cloud, self.heat_server) if s is not None]

    def startup_seconds(self):
        return {s.name: s.startup_seconds for s in (self.cloud, self.heat_server)
                if s is not None and s.startup_seconds is not None}

    def rss_bytes(self):
        return {s.name: s.rss_bytes() for s in (self.cloud, self.heat_server)
                if s is not None}

    # -- clients ----------------------------------------------------------
    def credentials(self, user="admin", project=None):
        """Keyword arguments for ``keystoneauth1.identity.v3.Password``."""
        if user not in USERS:
            raise ValueError("user must be one of %s" % sorted(USERS))
        name, default_project = USERS[user]
        return {"auth_url": self.auth_url, "username": name, "password": PASSWORD,
                "project_name": project or default_project,
                "user_domain_name": DOMAIN, "project_domain_name": DOMAIN}

    def session(self, user="admin", project=None):
        """A fresh keystoneauth1 Session (password auth, project scoped)."""
        from keystoneauth1 import session as ks_session
        from keystoneauth1.identity import v3
        return ks_session.Session(auth=v3.Password(**self.credentials(user, project)),
                                  timeout=60)

    def nova(self, user="admin", version="2.1", project=None):
        """python-novaclient Client; ``version="latest"`` means NOVA_LATEST."""
        from novaclient import client as nova_client
        return nova_client.Client(NOVA_LATEST if version == "latest" else version,
                                  session=self.session(user, project))

    def neutron(self, user="admin", project=None):
        """python-neutronclient v2.0 Client (the fake Neutron), the client
        Heat itself uses."""
        import logging
        from neutronclient.v2_0 import client as neutron_client
        # Each Client() logs "deprecated in favor of OpenstackSDK".
        logging.getLogger(neutron_client.__name__).addFilter(_NotDeprecated())
        return neutron_client.Client(session=self.session(user, project))

    def heat(self, user="admin", project=None):
        """python-heatclient v1 Client (needs :meth:`start_heat`)."""
        if self.heat_server is None:
            raise HarnessError("Heat is not running: call start_heat() "
                               "(or use the openstack_heat fixture)")
        from heatclient import client as heat_client
        return heat_client.Client("1", session=self.session(user, project))

    # -- moving servers (admin, through Nova's API) ------------------------
    def compute(self, method, path, body=None, version=MOVE_VERSION):
        """One admin Nova call at microversion VERSION; the JSON answer (or
        None). Raises HarnessError on HTTP >= 400."""
        if getattr(self, "_admin_session", None) is None:
            self._admin_session = self.session("admin")
        resp = self._admin_session.request(
            path, method, json=body, raise_exc=False, microversion=version,
            endpoint_filter={"service_type": "compute"})
        if resp.status_code >= 400:
            raise HarnessError("Nova %s %s: HTTP %d %s" % (method, path, resp.status_code,
                                                          resp.text[:500]))
        return resp.json() if resp.content else None

    def server(self, server_id):
        """The server as admin sees it (dict, microversion MOVE_VERSION)."""
        return self.compute("GET", "/servers/%s" % server_id)["server"]

    def migrations_in_progress(self, server_id):
        """``GET /servers/{id}/migrations``: the server's live migrations in
        progress (dicts with ``id``, ``status``, ``source_compute``...)."""
        return self.compute("GET", "/servers/%s/migrations" % server_id)["migrations"]

    def live_migrate(self, server_id, host=None, wait=True, timeout=60, force=False):
        """``os-migrateLive`` (``host`` None: the scheduler picks; FORCE: to HOST
        without the scheduler, at compute API 2.67, the last that takes it). With WAIT,
        returns the new host once the server is there with no task; raises
        HarnessError if the migration fails (e.g. to its own host: HTTP 202,
        then migration ``error``). Without WAIT, returns None at once."""
        body = {"host": host, "block_migration": "auto"}
        if force:
            body["force"] = True
        return self._move(server_id, {"os-migrateLive": body}, "live migration", wait,
                          timeout, version="2.67" if force else MOVE_VERSION)

    def hold_migrations(self, hold=True):
        """Keep live migrations in progress (server MIGRATING, migration
        ``running``) until :meth:`complete_migration` (Nova's force-complete)
        or Nova's abort; ``hold_migrations(False)`` completes all held ones.
        Also a context manager that switches the hold off on exit."""
        self._control("PUT", "/migrations", {"hold": bool(hold)})
        cloud = self

        class _Hold:
            def __enter__(self):
                return cloud

            def __exit__(self, *exc):
                cloud._control("PUT", "/migrations", {"hold": False})
        return _Hold()

    def held_migrations(self):
        """Server ids whose live migration the driver is holding now."""
        return self._control("GET", "/migrations")["held"]

    def complete_migration(self, server_id, wait=True, timeout=60):
        """Force-complete SERVER_ID's held live migration through Nova's API
        (``POST /servers/{id}/migrations/{mid}/action {"force_complete":
        null}``) once the driver holds it; with WAIT, returns the new host."""
        def running():
            return [m for m in self.migrations_in_progress(server_id)
                    if m["status"] == "running" and server_id in self.held_migrations()]
        migration = wait_for(running, timeout, what="a held live migration of %s"
                             % server_id)[0]
        before = self._migration_ids(server_id) - {migration["id"]}
        source = self.server(server_id)[HOST_ATTR]
        self.compute("POST", "/servers/%s/migrations/%s/action" % (server_id, migration["id"]),
                     {"force_complete": None})
        return self._wait_moved(server_id, source, before, timeout,
                                "live migration") if wait else None

    def stop_compute(self, host):
        """HOST's nova-compute dies: its service stops, then is forced down
        through Nova's API (as an operator does before evacuating)."""
        self._control("POST", "/computes/%s" % host, {"action": "stop"})
        self._force_down(host, True)

    def start_compute(self, host):
        """Restart HOST's nova-compute (its ``init_host`` destroys the guests
        evacuated from it) and clear ``forced_down``."""
        self._control("POST", "/computes/%s" % host, {"action": "start"})
        self._force_down(host, False)

    def evacuate(self, server_id, host=None, wait=True, timeout=60):
        """Evacuate SERVER_ID: stops and forces down its compute host first
        (:meth:`stop_compute`; :meth:`start_compute` brings it back). With
        WAIT, returns the new host once the server is there with no task."""
        self.stop_compute(self.server(server_id)[HOST_ATTR])
        return self._move(server_id, {"evacuate": {"host": host} if host else {}},
                          "evacuation", wait, timeout)

    def _move(self, server_id, action, what, wait, timeout, version=MOVE_VERSION):
        before = self._migration_ids(server_id)
        source = self.server(server_id)[HOST_ATTR]
        self.compute("POST", "/servers/%s/action" % server_id, action, version=version)
        return self._wait_moved(server_id, source, before, timeout, what) if wait else None

    def _migrations(self, server_id):
        return self.compute("GET", "/os-migrations?instance_uuid=%s" % server_id,
                            version="2.80")["migrations"]

    def _migration_ids(self, server_id):
        return {m["id"] for m in self._migrations(server_id)}

    def _force_down(self, host, down):
        services = self.compute("GET", "/os-services?binary=nova-compute&host=%s" % host)
        for service in services["services"]:
            self.compute("PUT", "/os-services/%s" % service["id"], {"forced_down": down})

    def _wait_moved(self, server_id, source, before, timeout, what):
        """Wait until the server has no task and a host other than SOURCE.
        (An evacuated server is ACTIVE with no task on the source for a
        moment before Nova sets its host.) A new migration record (not in
        BEFORE) that failed raises HarnessError."""
        def settled():
            server = self.server(server_id)
            if server["status"] == "ERROR":
                raise HarnessError("%s of %s: server in ERROR: %s" % (
                    what, server_id, server.get("fault")))
            if server[TASK_ATTR] is not None:
                return None
            if server[HOST_ATTR] != source:
                return server
            failed = [(m["migration_type"], m["status"], m["dest_compute"])
                      for m in self._migrations(server_id) if m["id"] not in before
                      and m["status"] in ("error", "failed", "cancelled")]
            if failed:
                raise HarnessError("%s of %s failed; it stays on %s (migrations: %s)" % (
                    what, server_id, source, failed))
            return None
        return wait_for(settled, timeout, interval=0.1,
                        what="%s of %s" % (what, server_id))[HOST_ATTR]

    def _control(self, method, path, body=None):
        """The fakecloud's ``/_harness`` switches (no token; loopback)."""
        import urllib.error
        import urllib.request
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.info["base_url"] + "/_harness" + path, data=data,
                                     method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            raise HarnessError("harness %s %s: HTTP %d %s" % (
                method, path, exc.code, exc.read()[:500])) from None


# --------------------------------------------------------------------------
# Offline HOT validation (real Heat engine, no servers)

def tacker_post_process(template, image="cirros"):
    """What Tacker v1 does to heat-translator's output before stack create:
    vnfm_info becomes a list, the DESIRED_CAPACITY placeholder the group's
    min_size, and servers without an image or ports without a network get
    IMAGE / ``net0`` (Tacker fills them from the instantiate request)."""
    import copy
    hot = copy.deepcopy(template)
    params = hot.get("parameters") or {}
    if "vnfm_info" in params:
        params["vnfm_info"]["type"] = "comma_delimited_list"
    for res in (hot.get("resources") or {}).values():
        props = res.get("properties")
        if res["type"] == "OS::Heat::AutoScalingGroup" and \
                props.get("desired_capacity") == "DESIRED_CAPACITY":
            props["desired_capacity"] = props["min_size"]
        elif res["type"] == "OS::Nova::Server" and not props.get("image"):
            props["image"] = image
        elif res["type"] == "OS::Neutron::Port" and props.get("network") is None:
            props["network"] = "net0"
    return hot


def validate_heat_many(bundles, python=None, timeout=300):
    """Validate several stacks in ONE Heat process (~3 s import + ~0.2 s each).
    Returns one list of error strings per bundle, in order (see :func:`heat_results_many`).
    """
    return [r["errors"] for r in heat_results_many(bundles, python, timeout)]


def heat_results_many(bundles, python=None, timeout=300):
    """Validate several stacks in ONE Heat process (~3 s import + ~0.2 s each).

    ``bundles``: a list of dicts with ``template`` (HOT text or dict) and
    optional ``files`` ({name: text or dict}: nested templates referenced by
    ``type: name``), ``environment`` (text or dict) and ``parameters``
    ({name: value}). Returns one result per bundle, in order: ``errors`` (a list
    of strings; empty means Heat would accept the stack at create time) and
    ``server_groups`` ({resource: resolved policies}). See ``heat_validate.py`` for
    what is checked and what is stubbed.
    """
    # default=str: yaml.safe_load turns "heat_template_version: 2016-10-14"
    # into a date; Heat wants the string.
    bundles = [dict(b) for b in bundles]
    for b in bundles:
        if "template" not in b:
            raise ValueError("every bundle needs a 'template'")
    python = python or openstack_python()
    try:
        proc = subprocess.run(
            [python, os.path.join(HERE, "heat_validate.py")],
            input=json.dumps({"bundles": bundles}, default=str), capture_output=True, text=True,
            timeout=timeout, cwd=HERE)
    except subprocess.TimeoutExpired as exc:
        raise HarnessError("heat_validate.py timed out after %s s" % timeout) from exc
    if proc.returncode != 0:
        raise HarnessError("heat_validate.py failed (exit %s):\n%s" % (
            proc.returncode, "\n".join(proc.stderr.strip().splitlines()[-30:])))
    return json.loads(proc.stdout)["results"]


def validate_heat(template, files=None, environment=None, parameters=None,
                  python=None, timeout=180):
    """Validate one stack offline with the real Heat engine.

    Returns a list of error strings (empty: valid). Example::

        errors = validate_heat(main_yaml, files={"worker.yaml": worker_yaml},
                               parameters={"image": "cirros"})
        assert errors == []
    """
    bundle = {"template": template}
    if files:
        bundle["files"] = files
    if environment:
        bundle["environment"] = environment
    if parameters:
        bundle["parameters"] = parameters
    return validate_heat_many([bundle], python=python, timeout=timeout)[0]


# --------------------------------------------------------------------------
# Waiting

def template(name):
    """Text of tests/openstack/templates/NAME (the shared Tacker-style stack)."""
    with open(os.path.join(HERE, "templates", name)) as f:
        return f.read()


def wait_for(predicate, timeout, interval=0.2, what="condition"):
    """Call ``predicate()`` until it returns something truthy; return that."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise HarnessError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(interval)


def wait_server(nova, server_id, timeout=60):
    """Wait until a server leaves BUILD; returns the novaclient Server."""
    def done():
        server = nova.servers.get(server_id)
        return server if server.status not in ("BUILD",) else None
    return wait_for(done, timeout, what="server %s to leave BUILD" % server_id)


def cli_env(cloud, user="admin", auth_url=None):
    """The environment of a command that finds the cloud by OS_* variables, as the
    harness USER (AUTH_URL instead of the cloud's: a test of a Keystone that is down),
    with nothing of the caller's own cloud (OS_CLOUD, OS_REGION_NAME)."""
    creds = cloud.credentials(user)
    env = dict(os.environ, OS_AUTH_URL=auth_url or creds["auth_url"],
               OS_USERNAME=creds["username"], OS_PASSWORD=creds["password"],
               OS_PROJECT_NAME=creds["project_name"], OS_USER_DOMAIN_NAME="Default",
               OS_PROJECT_DOMAIN_NAME="Default")
    env.pop("OS_CLOUD", None)
    env.pop("OS_REGION_NAME", None)
    return env


def boot(cloud, name, host=None, user="admin", **create):
    """A server of USER with a port on the tenant network, ACTIVE; returns its id. HOST
    forces the host (admin only, ``nova:<host>``); CREATE: more arguments of
    ``servers.create``."""
    nova = cloud.nova(user, version="2.68")
    kwargs = dict(create, availability_zone="nova:%s" % host) if host else create
    server = nova.servers.create(name, image=cloud.image, flavor="1",
                                 nics=[{"net-id": cloud.network_id}], **kwargs)
    server = wait_server(nova, server.id, timeout=90)
    if server.status != "ACTIVE":
        raise HarnessError("server %s is %s: %s" % (
            server.id, server.status, server.to_dict().get("fault")))
    return server.id


@contextlib.contextmanager
def servers_on_hosts(cloud, names, hosts, **create):
    """Servers NAMES (keyword arguments CREATE for ``servers.create``), the i-th on
    HOSTS[i] (live-migrated there when Nova put it elsewhere), deleted on the way out.
    Yields [(server id, host, first address)] in the order of NAMES."""
    nova = cloud.nova("admin", version="2.68")
    made = [nova.servers.create(name, image=cloud.image, flavor="1",
                                nics=[{"net-id": cloud.network_id}], **create)
            for name in names]
    try:
        placed = []
        for server, host in zip(made, hosts):
            server = wait_server(nova, server.id, timeout=90)
            if server.status != "ACTIVE":
                raise HarnessError("server %s is %s: %s" % (
                    server.id, server.status, server.to_dict().get("fault")))
            if cloud.server(server.id).get(HOST_ATTR) != host:
                cloud.live_migrate(server.id, host=host)
            info = cloud.server(server.id)
            address = next(a["addr"] for nets in info["addresses"].values() for a in nets)
            placed.append((server.id, host, address))
        yield placed
    finally:
        for server in made:
            nova.servers.delete(server.id)


def wait_stack(heat, stack_id, timeout=120):
    """Wait until a stack's status is no longer ``*_IN_PROGRESS``."""
    def done():
        stack = heat.stacks.get(stack_id)
        return None if stack.stack_status.endswith("_IN_PROGRESS") else stack
    return wait_for(done, timeout, interval=0.5, what="stack %s" % stack_id)
