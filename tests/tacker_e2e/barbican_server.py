"""Real Barbican API (key manager) on loopback for the Tacker tests; a subprocess.

Run with the python that has the barbican wheel (the test venv), by
``barbicanharness.py``, never imported by pytest. It

* writes ``barbican.conf`` under ``<run-dir>/.barbican/`` and runs with ``HOME`` set to
  the run directory: each Barbican module parses its own configuration at import from
  oslo's default locations (``~/.barbican/barbican.conf`` first), with no way to pass
  ``--config-file`` through;
* stores secrets in sqlite through the ``store_crypto`` secret store and the
  ``simple_crypto`` plugin, with a key-encryption key made for this run;
* creates the schema by Barbican's own start-up code (``db_auto_create``: the models'
  tables, then alembic stamped at head; Barbican's alembic migrations have only
  "limited support" for sqlite);
* serves the stock ``barbican-api-paste.ini`` pipelines (``/v1`` behind
  keystonemiddleware, validating tokens against the harness's fake Keystone as the
  ``barbican`` service user) with wsgiref, one thread per request;
* adds ``key-manager`` (service name ``barbican``) to the fake Keystone's catalog, which
  is where Tacker's ``BarbicanKeyManager`` looks for it.

When ready it prints ``READY {json}`` on stdout (``pid``, ``port``, ``url``,
``startup_seconds``).
"""
import argparse
import base64
import json
import os
import socketserver
import sys
import time
import urllib.request
from wsgiref import simple_server

_T0 = time.monotonic()

CONF = """\
[DEFAULT]
debug = false
use_stderr = true
db_auto_create = true

[database]
connection = sqlite:///{db}

[secretstore]
enabled_secretstore_plugins = store_crypto

[crypto]
enabled_crypto_plugins = simple_crypto

[simple_crypto_plugin]
kek = {kek}

[keystone_authtoken]
auth_type = password
auth_url = {identity}
www_authenticate_uri = {identity}/v3
username = barbican
password = secret
user_domain_id = default
project_name = service
project_domain_id = default
service_token_roles_required = false
interface = public
"""


class ThreadingWSGIServer(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True
    allow_reuse_address = False


class QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, fmt, *args):
        sys.stderr.write("barbican-api %s %s\n" % (self.address_string(), fmt % args))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--identity-url", required=True,
                        help="fake Keystone base URL, e.g. http://127.0.0.1:N/identity")
    parser.add_argument("--run-dir", required=True, help="barbican.conf and sqlite go here")
    args = parser.parse_args(argv)

    run_dir = os.path.abspath(args.run_dir)
    os.makedirs(os.path.join(run_dir, ".barbican"), exist_ok=True)
    server = simple_server.make_server("127.0.0.1", 0, None,
                                       server_class=ThreadingWSGIServer,
                                       handler_class=QuietHandler)
    port = server.server_address[1]
    url = "http://127.0.0.1:%d" % port
    identity = args.identity_url.rstrip("/")
    with open(os.path.join(run_dir, ".barbican", "barbican.conf"), "w") as f:
        f.write(CONF.format(db=os.path.join(run_dir, "barbican.sqlite"), identity=identity,
                            kek=base64.urlsafe_b64encode(os.urandom(32)).decode()))
    os.environ["HOME"] = run_dir

    from paste import deploy
    paste = os.path.join(sys.prefix, "etc", "barbican", "barbican-api-paste.ini")
    server.set_app(deploy.loadapp("config:%s" % paste))

    req = urllib.request.Request(
        identity + "/_harness/services",
        data=json.dumps({"type": "key-manager", "name": "barbican", "url": url}).encode(),
        headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        resp.read()

    info = {"pid": os.getpid(), "port": port, "url": url,
            "startup_seconds": round(time.monotonic() - _T0, 2)}
    sys.stderr.write("barbican ready in %.1f s on %s\n" % (time.monotonic() - _T0, url))
    sys.stdout.write("READY %s\n" % json.dumps(info))
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
