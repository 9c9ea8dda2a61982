"""Real OpenStack Nova on loopback, with fake hypervisors: a test server.

Run with the python of the venv built by ``tools/openstack-venv.sh`` (never
import this into the pytest process: Nova monkey-patches with eventlet)::

    <venv>/bin/python tests/openstack/fakecloud.py --computes 3

One process holds the real Nova API (behind the real keystonemiddleware
``authtoken`` + ``keystonecontext`` paste pipeline), conductor, scheduler and
N ``nova-compute`` services (``compute1``..``computeN``) using a fake virt
driver, plus real Placement (``openstack-placement``), all on sqlite and the
``fake://`` oslo.messaging transport. It is built by calling Nova's own
functional-test ``TestCase.setUp()`` by hand and is never torn down: stop the
process (SIGTERM/SIGKILL).

One eventlet WSGI server on ``127.0.0.1:<port>`` serves:

* ``/identity`` a minimal fake Keystone v3 (``fakekeystone.py``);
* ``/compute`` the Nova API (``/compute/v2.1``);
* ``/image`` a small fake Glance v2 (``fakeglance.py``) over Nova's GlanceFixture:
  an image uploaded there is one Nova boots;
* ``/networking`` a fake Neutron v2.0 (``fakeneutron.py``) whose state is
  the very ``NeutronFixture`` instance Nova's own neutron calls use;
* ``/_harness`` test switches (:class:`Control`, no token): hold live
  migrations in progress, stop and restart a compute service (evacuation).

Live migration and evacuation go through Nova's own API; the fake driver
(:class:`HarnessFakeDriver`) completes a live migration at once unless the
harness holds it (then Nova's force-complete or abort ends it).

Nova's functional-test base runs no periodic task. One matters to placement:
after a live migration the source compute reports the moved instance to the
scheduler as still its own (``_post_live_migration`` sends the source's
``update_instance_info``), and only nova-compute's periodic
``_sync_scheduler_instance_info`` (``[DEFAULT] scheduler_instance_sync_interval``,
120 s by default) corrects it; until then an anti-affinity group's new member
cannot go to the host the VM left ("No valid host"). The harness runs that
periodic every ``SCHEDULER_SYNC_S`` (:func:`_sync_scheduler_views`). The other is
the resource audit ``update_available_resource`` (every 60 s in nova-compute):
without it a host's I/O-operation count (``IoOpsWeigher``, multiplier -1.0) stays
as its last build left it, except on a host a live migration left, which is
refreshed; a soft-anti-affinity group's new member then went to that host, though
it holds a member, rather than to a host with none. The harness runs it every
``RESOURCE_AUDIT_S``.

When ready it prints one line ``READY {json}`` on stdout; the JSON has
``port``, ``auth_url``, ``compute_url``, ``image_url``, ``network_url``,
``hosts``, ``images`` ({name: id}: ``cirros`` and VNF-A's
``ubuntu-24.04-server-cloudimg-amd64``), ``flavors`` ({name: id}), ``networks``
({name: {id, subnet_id, cidr, project_id}}), ``pid``.
Logs go to stderr.
"""
import argparse
import json
import os
import sys
import time

_T0 = time.monotonic()

# Monkey-patch first, as nova/tests/functional/__init__.py does. (Importing
# only ``nova.tests`` does not patch in Nova 34: modules imported before the
# patch, e.g. oslo.db's enginefacade, then keep native thread-locals, and
# greenthreads share DB transactions; a reader's rollback then lost the
# compute's writes, such as the instance network info cache.)
import nova.tests.functional  # noqa: E402,F401  (side effect: eventlet.monkey_patch())

import eventlet  # noqa: E402
import eventlet.wsgi  # noqa: E402
import logging  # noqa: E402

from keystonemiddleware import fixture as ksm_fixture  # noqa: E402
from oslo_config import cfg  # noqa: E402

from nova import context as nova_context  # noqa: E402
from nova import objects  # noqa: E402
from nova import test  # noqa: E402
from nova.tests import fixtures as nova_fixtures  # noqa: E402
from nova.tests.functional import fixtures as func_fixtures  # noqa: E402
from nova.tests.functional import integrated_helpers  # noqa: E402
from nova.virt import fake as fake_virt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakeglance  # noqa: E402
import fakekeystone  # noqa: E402
import fakeneutron  # noqa: E402

CONF = cfg.CONF
LOG = logging.getLogger("fakecloud")

# A named image for templates (Heat's glance.image constraint resolves names).
CIRROS_ID = "c1a7b5c0-0d5e-4f51-9a8d-0c1f2a3b4c5d"
CIRROS_NAME = "cirros"
# The image VNF-A's VNFD names (sw_image_data.name of masterNode and
# workerNode), as an operator would have registered it in Glance.
UBUNTU_ID = "0b5e7a2c-4d1f-4e8a-9c3b-2f6d8e1a7b40"
UBUNTU_NAME = "ubuntu-24.04-server-cloudimg-amd64"


class MigrationHold:
    """Harness switch that keeps live migrations in progress.

    While ``hold`` is on, a live migration that reaches the driver (migration
    status ``running``, server ``MIGRATING``) waits until Nova's own
    force-complete (``POST /servers/{id}/migrations/{mid}/action
    {"force_complete": null}``) or abort (``DELETE
    /servers/{id}/migrations/{mid}``) reaches the source compute, until the
    hold is switched off (which completes every held migration), or until
    ``max_seconds`` have passed (then it completes too).
    """

    def __init__(self, max_seconds=600.0):
        self.hold = False
        self.max_seconds = max_seconds
        self.held = {}   # instance uuid -> None (waiting), "complete" or "abort"

    def set(self, hold):
        self.hold = bool(hold)
        if not self.hold:
            for uuid in self.held:
                self.held[uuid] = self.held[uuid] or "complete"

    def wait(self, uuid):
        """Block (green) until UUID is released; returns "complete" or "abort"."""
        self.held[uuid] = None
        deadline = time.monotonic() + self.max_seconds
        try:
            while self.held[uuid] is None and time.monotonic() < deadline:
                eventlet.sleep(0.05)
            return self.held[uuid] or "complete"
        finally:
            del self.held[uuid]

    def release(self, uuid, outcome):
        if uuid in self.held:
            self.held[uuid] = outcome

    def state(self):
        return {"hold": self.hold, "held": sorted(self.held),
                "max_seconds": self.max_seconds}


MIGRATIONS = MigrationHold()


class HarnessFakeDriver(fake_virt.FakeDriver):
    """Roomy fake hypervisor: capacity never limits the tests, policies do.

    Live migration: completes at once, as FakeDriver's, unless
    :data:`MIGRATIONS` holds it (then it behaves like Nova's
    FakeLiveMigrateDriver: running until force-complete or abort). Unlike
    FakeDriver, the source forgets the guest after the migration (as
    FakeLiveMigrateDriver does), so a server can later be migrated or
    evacuated back to its first host (no ``InstanceExists``), and the
    destination knows the guest's interfaces, as a real hypervisor that moved
    the guest does: FakeDriver spawns it there without them, so detaching a
    port from a migrated server (Heat does, before it deletes a scaled-in or
    healed server) failed with InterfaceDetachFailed and Heat waited on the
    port for ever.
    """

    vcpus = 64
    memory_mb = 131072
    local_gb = 10000

    def live_migration(self, context, instance, dest, post_method, recover_method,
                       block_migration=False, migrate_data=None):
        if MIGRATIONS.hold and MIGRATIONS.wait(instance.uuid) == "abort":
            recover_method(context, instance, dest, migrate_data,
                           migration_status="cancelled")
            return
        post_method(context, instance, dest, block_migration, migrate_data)

    def live_migration_force_complete(self, instance):
        MIGRATIONS.release(instance.uuid, "complete")

    def live_migration_abort(self, instance):
        MIGRATIONS.release(instance.uuid, "abort")

    def post_live_migration_at_destination(self, context, instance, network_info,
                                           block_migration=False, block_device_info=None):
        super().post_live_migration_at_destination(context, instance, network_info,
                                                   block_migration, block_device_info)
        for vif in network_info or ():
            self._interfaces[vif["id"]] = vif

    def post_live_migration(self, context, instance, block_device_info, migrate_data=None):
        # On the source, after the guest runs on the destination.
        if instance.uuid in self.instances:
            self.destroy(context, instance, network_info=None,
                         block_device_info=block_device_info)


def _load_driver(virtapi, compute_driver=None):
    return HarnessFakeDriver(virtapi)



class Cloud(test.TestCase, integrated_helpers.InstanceHelperMixin):
    """Nova's functional-test environment, used as a long-lived server."""

    REQUIRES_LOCKING = True

    def __init__(self, computes):
        super().__init__("runTest")
        self.n_computes = computes

    def runTest(self):  # pragma: no cover - never run as a test
        pass

    def setUp(self):
        super().setUp()
        venv_etc = os.path.join(sys.prefix, "etc", "nova", "api-paste.ini")
        self.flags(api_paste_config=venv_etc, group="wsgi")
        # Production default; "error" (the fixture's) turns a Nova
        # response-schema bug on ERROR servers into HTTP 400.
        self.flags(response_validation="warn", group="api")
        self.flags(cpu_allocation_ratio=16.0, ram_allocation_ratio=1.5,
                   disk_allocation_ratio=1.0)
        for opt in ("instances", "cores", "ram", "server_groups", "server_group_members",
                    "key_pairs", "metadata_items"):
            self.flags(**{opt: -1, "group": "quota"})
        self.flags(www_authenticate_uri="http://127.0.0.1/identity",
                   group="keystone_authtoken")

        self.useFixture(nova_fixtures.RealPolicyFixture())
        self.glance = self.useFixture(nova_fixtures.GlanceFixture(self))
        self.glance.create(None, dict(self.glance.image1, id=CIRROS_ID, name=CIRROS_NAME))
        self.glance.create(None, dict(
            self.glance.image1, id=UBUNTU_ID, name=UBUNTU_NAME, container_format="bare",
            disk_format="qcow2", size=2 ** 30, min_disk=10, tags=[]))  # as the VNFD says
        # Nova's NeutronFixture (subclassed: deterministic IPs, per-project
        # default security groups, an external network); fakeneutron.py
        # serves this same instance over HTTP.
        self.neutron = self.useFixture(fakeneutron.HarnessNeutronFixture(
            self, fakekeystone.PROJECTS["admin"]))
        self.useFixture(func_fixtures.PlacementFixture())
        self.authtoken = self.useFixture(ksm_fixture.AuthTokenFixture())
        self.api_fixture = self.useFixture(
            nova_fixtures.OSAPIFixture(api_version="v2.1", stub_keystone=False))

        self.start_service("conductor")
        # One select_destinations at a time, as a nova-scheduler with one worker and
        # ``[DEFAULT] executor_thread_pool_size = 1`` handles them: each request's
        # claim is in the host states the next one weighs. With the default pool (64)
        # requests that arrive together (Heat creates a group's members together) are
        # weighed in parallel: a hard group's late check on the compute reschedules a
        # collision, but a soft group has no check and its members can share a host
        # while others are free. The order of the stories' placements is what the
        # tests check; that race is documented (doc/packages.md), not tested.
        self.flags(executor_thread_pool_size=1)
        self.start_service("scheduler")
        self.flags(executor_thread_pool_size=64)
        self.stub_out("nova.virt.driver.load_compute_driver", _load_driver)
        self.hosts = []
        for i in range(1, self.n_computes + 1):
            host = "compute%d" % i
            self._start_compute(host)   # -> self.computes[host]
            self.hosts.append(host)

    def stop_compute(self, host):
        """Stop HOST's nova-compute service (its guests stay on the fake
        hypervisor), as when a compute host dies."""
        service = self.computes[host]
        if not getattr(service, "harness_stopped", False):
            service.stop()
            service.harness_stopped = True

    def start_compute(self, host):
        """Start HOST's nova-compute again: a new service and manager on the
        same fake hypervisor; its ``init_host`` destroys guests that were
        evacuated meanwhile, as a real restart does."""
        service = self.computes[host]
        if getattr(service, "harness_stopped", False):
            current = CONF.host
            self.computes[host] = self.restart_compute_service(service)
            self.flags(host=current)   # start_service() patches CONF.host


# -- harness control ---------------------------------------------------------
class Control:
    """``/_harness``: switches for tests (loopback only, no token).

    * ``GET /_harness/migrations`` -> ``{"hold", "held", "max_seconds"}``;
      ``PUT`` with ``{"hold": true|false}`` (false completes held migrations);
    * ``POST /_harness/computes/<host>`` with ``{"action": "stop"|"start"}``:
      stop or (re)start that host's nova-compute service.
    """

    def __init__(self, cloud):
        self.cloud = cloud

    def __call__(self, environ, start_response):
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "").rstrip("/")
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = json.loads(environ["wsgi.input"].read(length) or b"{}") if length else {}
            status, out = self.route(method, path, body)
        except Exception as exc:
            LOG.exception("harness control %s %s", method, path)
            status, out = "500 Internal Server Error", {"error": repr(exc)}
        data = json.dumps(out).encode()
        start_response(status, [("Content-Type", "application/json"),
                                ("Content-Length", str(len(data)))])
        return [data]

    def route(self, method, path, body):
        if path == "/migrations":
            if method == "PUT":
                MIGRATIONS.set(body.get("hold"))
            return "200 OK", MIGRATIONS.state()
        if path.startswith("/computes/") and method == "POST":
            host = path.rsplit("/", 1)[1]
            if host not in self.cloud.computes:
                return "404 Not Found", {"error": "no compute %s" % host}
            action = body.get("action")
            if action == "stop":
                self.cloud.stop_compute(host)
            elif action == "start":
                self.cloud.start_compute(host)
            else:
                return "400 Bad Request", {"error": "action must be stop or start"}
            return "200 OK", {"host": host,
                              "stopped": getattr(self.cloud.computes[host], "harness_stopped",
                                                 False)}
        return "404 Not Found", {"error": "unknown harness path %s" % path}


class Dispatcher:
    """Route by path prefix; the prefix moves from PATH_INFO to SCRIPT_NAME."""

    def __init__(self, routes):
        self.routes = routes

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        for prefix, app in self.routes:
            if path == prefix or path.startswith(prefix + "/"):
                environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + prefix
                environ["PATH_INFO"] = path[len(prefix):]
                return app(environ, start_response)
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"unknown prefix; try /identity, /compute, /image, /networking\n"]


def _nova_notifier(keystone, base):
    """Neutron's nova notifier: POST server external events to Nova's API as
    the ``nova`` service user, in a greenthread (as Neutron batches them
    asynchronously). Used by the fake Neutron after port changes."""
    import urllib.request

    host = base.split("://", 1)[1]

    def send(events):
        req = urllib.request.Request(
            base + "/compute/v2.1/os-server-external-events",
            data=json.dumps({"events": events}).encode(), method="POST",
            headers={"Content-Type": "application/json",
                     "X-Auth-Token": keystone.issue_token(host)})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                resp.read()
        except Exception as exc:  # noqa: BLE001 - Neutron only logs failures too
            LOG.warning("nova notifier: %s for %s", exc, events)

    return lambda events: eventlet.spawn_n(send, events)


class _LogWriter:
    """eventlet.wsgi access log into the standard logger."""

    def write(self, line):
        LOG.info(line.rstrip())


def _publish_notifications(url):
    """Nova's own versioned notifier, on a real broker: the test setup replaces
    ``nova.rpc.NOTIFIER``'s in-memory ``test`` driver; this puts a ``messagingv2``
    notifier on URL in its place (exchange ``nova``, topic
    ``versioned_notifications``, Nova's defaults), with Nova's serializer. So what
    a listener receives is what a production Nova sends."""
    import oslo_messaging as messaging
    from nova import rpc
    transport = messaging.get_notification_transport(CONF, url=url)
    rpc.NOTIFIER = messaging.Notifier(
        transport, serializer=rpc.NOTIFIER._serializer, driver="messagingv2",
        topics=CONF.notifications.versioned_notifications_topics)
    LOG.info("versioned notifications go to %s too", url.split("@")[-1])


SCHEDULER_SYNC_S = 5
RESOURCE_AUDIT_S = 10


def _sync_scheduler_views(cloud):
    """nova-compute's periodics that the scheduler's view depends on, on every running
    compute: ``_sync_scheduler_instance_info`` every SCHEDULER_SYNC_S, and the resource
    audit ``update_available_resource`` every RESOURCE_AUDIT_S (see the module's
    docstring)."""
    last_audit = 0.0
    while True:
        eventlet.sleep(SCHEDULER_SYNC_S)
        audit = time.monotonic() - last_audit >= RESOURCE_AUDIT_S
        if audit:
            last_audit = time.monotonic()
        ctxt = nova_context.get_admin_context()
        for host, service in list(cloud.computes.items()):
            if getattr(service, "harness_stopped", False):
                continue
            try:
                with nova_context.target_cell(ctxt, cloud.host_mappings[host].cell_mapping) \
                        as cctxt:
                    service.manager._sync_scheduler_instance_info(cctxt)
                    if audit:
                        service.manager.update_available_resource(cctxt)
            except Exception:   # a periodic task: log it, run again
                LOG.exception("scheduler view periodics of %s failed", host)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--computes", type=int, default=3)
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--debug", action="store_true")
    parser.add_argument("--notifications-url", metavar="TRANSPORT_URL",
                        help="also publish Nova's versioned notifications there "
                             "(e.g. rabbit://guest:guest@127.0.0.1:5672/)")
    args = parser.parse_args(argv)

    cloud = Cloud(args.computes)
    cloud.setUp()
    eventlet.spawn_n(_sync_scheduler_views, cloud)
    if args.notifications_url:
        _publish_notifications(args.notifications_url)

    # Nova's StandardLogging captures logs in memory; also send them to stderr.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(
        "%(asctime)s %(process)d %(levelname)s %(name)s %(message)s"))
    handler.setLevel(logging.DEBUG if args.debug else logging.INFO)
    logging.getLogger().addHandler(handler)

    # Never reuse_port: a stale server would silently get half the requests.
    sock = eventlet.listen(("127.0.0.1", args.port), reuse_port=False)
    port = sock.getsockname()[1]
    base = "http://127.0.0.1:%d" % port
    cloud.flags(www_authenticate_uri=base + "/identity", group="keystone_authtoken")

    keystone = fakekeystone.FakeKeystone(
        services={
            "identity": "/identity",
            "compute": "/compute/v2.1",
            "image": "/image",
            "network": "/networking",
        },
        on_token=lambda tid, tok: cloud.authtoken.add_token(tok, token_id=tid))
    _, neutron_app = fakeneutron.make_app(cloud.neutron, _nova_notifier(keystone, base))
    app = Dispatcher([
        ("/identity", keystone),
        ("/compute", cloud.api_fixture.app()),
        ("/image", fakeglance.make_app(cloud.glance)),
        ("/networking", neutron_app),
        ("/_harness", Control(cloud)),
    ])

    ctxt = nova_context.get_admin_context()
    flavors = {f.name: f.flavorid for f in objects.FlavorList.get_all(ctxt)}
    info = {
        "pid": os.getpid(),
        "port": port,
        "base_url": base,
        "auth_url": base + "/identity/v3",
        "compute_url": base + "/compute/v2.1",
        "image_url": base + "/image",
        "network_url": base + "/networking",
        "hosts": cloud.hosts,
        "images": {CIRROS_NAME: CIRROS_ID, UBUNTU_NAME: UBUNTU_ID},
        "flavors": flavors,
        "projects": fakekeystone.PROJECTS,
        "networks": {net["name"]: {"id": net["id"], "subnet_id": net["subnets"][0],
                                   "cidr": cloud.neutron._subnets[net["subnets"][0]]["cidr"],
                                   "project_id": net["project_id"]}
                     for net in cloud.neutron._networks.values()},
        "startup_seconds": round(time.monotonic() - _T0, 2),
    }
    LOG.info("fakecloud ready in %.1f s on %s", time.monotonic() - _T0, base)
    sys.stdout.write("READY %s\n" % json.dumps(info))
    sys.stdout.flush()
    eventlet.wsgi.server(sock, app, log=_LogWriter(), log_output=True,
                         keepalive=True, socket_timeout=300, debug=False)


if __name__ == "__main__":
    main()
