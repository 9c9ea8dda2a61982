"""Real OpenStack Heat (API + convergence engine) on loopback: a test server.

Run with the python of the venv built by ``tools/openstack-venv.sh``, after
``fakecloud.py`` is up (Heat authenticates against its fake Keystone and
calls its Nova and Glance over HTTP)::

    <venv>/bin/python tests/openstack/fakeheat.py \\
        --identity-url http://127.0.0.1:<cloud port>/identity --run-dir DIR

One process, oslo.service THREADING backend: heat-api (the real paste
pipeline, with keystonemiddleware validating tokens over HTTP against the
fake Keystone) served by a threaded ``wsgiref`` server on
``127.0.0.1:<port>``, and heat-engine (``EngineService`` plus the
convergence worker) on the ``fake://`` oslo.messaging transport, with a
sqlite database in ``--run-dir``. Deferred auth uses real Keystone trusts.

On start it registers itself as the ``orchestration`` service in the fake
Keystone catalog (``POST /identity/_harness/services``), then prints one line
``READY {json}`` on stdout (``port``, ``url``, ``pid``, ``startup_seconds``).
Logs go to stderr. Stop the process to stop Heat.
"""
import argparse
import json
import os
import socketserver
import sqlite3
import sys
import time
import urllib.request
from wsgiref import simple_server

_T0 = time.monotonic()

from oslo_service import backend  # noqa: E402

backend.init_backend(backend.BackendType.THREADING)

HEAT_CONF = """\
[DEFAULT]
host = fakeheat
transport_url = fake://
convergence_engine = true
num_engine_workers = 1
deferred_auth_method = trusts
reauthentication_auth_method = trusts
action_retry_limit = {action_retry_limit}
client_retry_limit = 0
# a port moved to a heal's new server is detached, then attached, each polled every 0.5 s
# this many times; the default 10 (5 s) is shorter than a detach takes on 2 loaded cores
# (a story heal failed InterfaceDetachFailed with a CI run beside it)
max_interface_check_attempts = 120
auth_encryption_key = 0123456789abcdef0123456789abcdef
region_name_for_services = RegionOne
heat_metadata_server_url = {url}
heat_waitcondition_server_url = {url}/v1/waitcondition
debug = {debug}
use_stderr = true
default_log_levels = amqp=WARN,sqlalchemy=WARN,oslo_messaging=INFO,iso8601=WARN,\
requests.packages.urllib3.connectionpool=WARN,urllib3.connectionpool=WARN,\
keystonemiddleware=WARN,routes.middleware=WARN,stevedore=WARN,\
oslo_policy=INFO,keystoneauth=WARN

[database]
connection = sqlite:///{db}?timeout=60

[paste_deploy]
api_paste_config = {paste}

[keystone_authtoken]
auth_type = password
auth_url = {identity}
www_authenticate_uri = {identity}/v3
username = heat
password = secret
user_domain_id = default
project_name = service
project_domain_id = default
service_token_roles_required = false

[trustee]
auth_type = password
auth_url = {identity}
username = heat
password = secret
user_domain_id = default

[clients_keystone]
auth_uri = {identity}

[clients]
endpoint_type = publicURL

[oslo_policy]
enforce_scope = false
enforce_new_defaults = false

[oslo_messaging_notifications]
driver = noop

[heat_api]
workers = 1
"""


class ThreadingWSGIServer(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True
    allow_reuse_address = False


class QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, fmt, *args):
        sys.stderr.write("heat-api %s %s\n" % (self.address_string(), fmt % args))


def _serialise_sqlite_writers():
    """Make every sqlite transaction ``BEGIN IMMEDIATE`` with a busy timeout.

    The convergence engine writes from many threads. With pysqlite's default
    deferred transactions, a reader that later writes gets SQLITE_BUSY at
    once ("database is locked"); taking the write lock up front makes
    writers wait in turn instead (the SQLAlchemy pysqlite recipe).
    """
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    @event.listens_for(Engine, "connect")
    def _connect(dbapi_connection, connection_record):
        if isinstance(dbapi_connection, sqlite3.Connection):
            dbapi_connection.isolation_level = None
            dbapi_connection.execute("PRAGMA busy_timeout = 60000")

    # Class-level listeners run before oslo.db's per-engine one, which emits
    # a plain BEGIN unless conn.info says a transaction is open already.
    @event.listens_for(Engine, "begin")
    def _begin(conn):
        if conn.dialect.name == "sqlite" and "in_transaction" not in conn.info:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            conn.info["in_transaction"] = True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--identity-url", required=True,
                        help="fake Keystone base URL, e.g. http://127.0.0.1:N/identity")
    parser.add_argument("--run-dir", required=True, help="heat.conf and sqlite go here")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--action-retry-limit", type=int, default=0)
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args(argv)

    os.makedirs(args.run_dir, exist_ok=True)
    # Bind first: heat.conf needs the URL (metadata server URL for user_data).
    server = simple_server.make_server("127.0.0.1", args.port, None,
                                       server_class=ThreadingWSGIServer,
                                       handler_class=QuietHandler)
    port = server.server_address[1]
    url = "http://127.0.0.1:%d" % port

    # WAL lets readers proceed while one writer holds the lock.
    db = os.path.join(os.path.abspath(args.run_dir), "heat.sqlite")
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.close()

    conf_path = os.path.join(args.run_dir, "heat.conf")
    with open(conf_path, "w") as f:
        f.write(HEAT_CONF.format(
            action_retry_limit=args.action_retry_limit,
            debug=str(args.debug).lower(),
            db=db, url=url,
            paste=os.path.join(sys.prefix, "etc", "heat", "api-paste.ini"),
            identity=args.identity_url.rstrip("/")))

    # heat-api's init_application() parses sys.argv for --config-file.
    sys.argv = [sys.argv[0], "--config-file", conf_path]

    from heat.api.openstack import wsgi as heat_wsgi
    app = heat_wsgi.init_application()

    from heat.common import config as heat_config
    from heat.db import migration
    from heat.engine import service as engine_service
    from heat.rpc import api as rpc_api
    from oslo_config import cfg

    heat_config.startup_sanity_check()
    migration.db_sync()
    # After db_sync: alembic holds one connection open while it uses another.
    _serialise_sqlite_writers()
    engine = engine_service.EngineService(cfg.CONF.host, rpc_api.ENGINE_TOPIC)
    engine.start()

    server.set_app(app)
    req = urllib.request.Request(
        args.identity_url.rstrip("/") + "/_harness/services",
        data=json.dumps({"type": "orchestration",
                         "url": url + "/v1/%(tenant_id)s"}).encode(),
        headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        resp.read()

    info = {"pid": os.getpid(), "port": port, "url": url,
            "startup_seconds": round(time.monotonic() - _T0, 2)}
    sys.stderr.write("fakeheat ready in %.1f s on %s\n" % (time.monotonic() - _T0, url))
    sys.stdout.write("READY %s\n" % json.dumps(info))
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
