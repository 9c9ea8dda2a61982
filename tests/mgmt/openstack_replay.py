"""Heat and Nova answers replayed from JSON captured on the real harness,
for what a real cloud here cannot do: hundreds of workers, injected latency,
5xx answers and hangs (fault tests and benchmarks/bench_mgmt.py).

``tests/mgmt/data/heat_resources.json`` and ``nova_servers.json`` were
captured by ``capture.py`` from real Heat 27 and Nova 34 (doc/mgmt-driver.md);
``scaled(n)`` clones their worker member (member resource, nested server,
Nova server) N times with fresh ids, addresses and hosts, keeping every field
as captured. Keystone is the harness's fake Keystone (tests/openstack).
"""
import copy
import json
import os
import sys
import threading
import time
import urllib.parse
import uuid
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from socketserver import ThreadingMixIn

from tacker_hwaffinity.labeling import inventory

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
sys.path.insert(0, os.path.join(os.path.dirname(DATA), "..", "openstack"))


def load(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


def scaled(n, hosts=None):
    """(heat resources list, nova servers list, stack id) with N workers.
    HOSTS: host name of worker i (default: compute<i>)."""
    doc = load("heat_resources.json")
    resources, servers = doc["resources"], load("nova_servers.json")["servers"]
    aspect = doc["aspect_id"]
    members = [r for r in resources if r.get("parent_resource") == aspect]
    member, names = members[0], {m["resource_name"] for m in members}
    inner = [r for r in resources if r.get("parent_resource") == member["resource_name"]]
    dropped = {r["physical_resource_id"] for r in resources if r.get("parent_resource") in names}
    out_res = [r for r in resources if r.get("parent_resource") not in names | {aspect}]
    out_srv = [s for s in servers if s["id"] not in dropped]
    server_tpl = next(s for s in servers
                      if s["id"] in {r["physical_resource_id"] for r in inner})
    for i in range(n):
        new_stack, server_id = str(uuid.uuid4()), str(uuid.uuid4())
        m = dict(copy.deepcopy(member), resource_name="m%05d" % i,
                 physical_resource_id=new_stack)
        out_res.append(m)
        for r in inner:
            c = json.loads(json.dumps(r).replace(member["physical_resource_id"], new_stack))
            c["parent_resource"] = m["resource_name"]
            c["physical_resource_id"] = server_id if r["resource_type"] == \
                "OS::Nova::Server" else str(uuid.uuid4())
            out_res.append(c)
        srv = copy.deepcopy(server_tpl)
        srv["id"], srv["name"] = server_id, "worker-%d" % i
        host = hosts[i] if hosts else "compute%d" % i
        srv["OS-EXT-SRV-ATTR:host"] = srv["OS-EXT-SRV-ATTR:hypervisor_hostname"] = host
        srv["hostId"] = uuid.uuid5(uuid.NAMESPACE_DNS, host).hex[:28] * 2
        for entries in srv.get("addresses", {}).values():
            for a in entries:
                a["addr"] = worker_address(i)
        out_srv.append(srv)
    return out_res, out_srv, doc["stack_id"]


def worker_address(i):
    return "10.%d.%d.%d" % (100 + i // 65024, (i // 254) % 256, i % 254 + 1)


class _Threading(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


class ReplayCloud:
    """Keystone + Heat + Nova on 127.0.0.1 serving RESOURCES and SERVERS.

    LATENCY seconds are added to every Heat/Nova answer; FAULTS maps
    ("heat"|"nova") to a list of actions consumed one per request: an int
    (answer that HTTP status) or ("hang", seconds)."""

    def __init__(self, resources, servers, stack_id, latency=0.0, faults=None):
        import fakekeystone
        self.resources, self.servers, self.stack_id = resources, servers, stack_id
        self.latency, self.faults = latency, {k: list(v) for k, v in (faults or {}).items()}
        self.requests = {"keystone": 0, "heat": 0, "nova": 0}
        self._lock = threading.Lock()
        self.server = make_server("127.0.0.1", 0, self, server_class=_Threading,
                                  handler_class=_Quiet)
        self.url = "http://127.0.0.1:%d" % self.server.server_port
        self.keystone = fakekeystone.FakeKeystone(services={
            "orchestration": self.url + "/heat/v1/%(tenant_id)s",
            "compute": self.url + "/compute/v2.1"})
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def access(self, user="admin"):
        return {"auth_url": self.url + "/identity/v3", "username": user,
                "password": "secret", "project_name": "admin" if user == "admin" else "demo",
                "user_domain_name": "Default", "project_domain_name": "Default",
                "region_name": None, "verify": True}

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path.startswith("/identity"):
            with self._lock:
                self.requests["keystone"] += 1
            if self.latency:
                time.sleep(self.latency)        # pacing: the replayed latency, not a wait
            environ = dict(environ, SCRIPT_NAME="/identity", PATH_INFO=path[len("/identity"):])
            return self.keystone(environ, start_response)
        service = "heat" if path.startswith("/heat") else "nova"
        with self._lock:
            self.requests[service] += 1
            action = self.faults.get(service, []).pop(0) if self.faults.get(service) else None
        if self.latency:
            time.sleep(self.latency)            # pacing: the replayed latency, not a wait
        if isinstance(action, tuple) and action[0] == "hang":
            time.sleep(action[1])               # pacing: the injected hang, not a wait
        elif isinstance(action, int):
            return _json(start_response, action, {"code": action, "title": "Service Unavailable",
                                                  "explanation": "injected fault",
                                                  "error": {"message": "injected fault %d"
                                                            % action}})
        query = dict(urllib.parse.parse_qsl(environ.get("QUERY_STRING", "")))
        if service == "heat":
            tail = path.split("/stacks/", 1)[-1].split("/")
            if tail[-1] == "resources":
                return _json(start_response, 200, {"resources": self._stack_resources(
                    tail[-2], int(query.get("nested_depth", 0)))})
            if len(tail) == 1:          # GET /stacks/<id>: Heat redirects to name/id
                return _json(start_response, 200, {"stack": {
                    "id": tail[0], "stack_name": "stack-" + tail[0][:8]}})
            if len(tail) != 4:          # as Heat's router: a resource only under name/id
                return _json(start_response, 404, {"error": {"message": "not found"}})
            found = [r for r in self._stack_resources(tail[-3], 0)
                     if r["resource_name"] == urllib.parse.unquote(tail[-1])]
            if not found:
                return _json(start_response, 404, {"error": {"message": "no %s" % tail[-1]}})
            return _json(start_response, 200, {"resource": found[0]})
        if path.endswith("/servers/detail"):
            limit = int(query.get("limit", 1000))
            ids = [s["id"] for s in self.servers]
            start = ids.index(query["marker"]) + 1 if query.get("marker") in ids else 0
            return _json(start_response, 200, {"servers": self.servers[start:start + limit]})
        return _json(start_response, 404, {"itemNotFound": {"message": path, "code": 404}})


    def _stack_resources(self, stack_id, depth):
        """What Heat lists for STACK_ID down to DEPTH (the top stack or a nested one)."""
        if stack_id == self.stack_id:
            return [r for r in self.resources
                    if depth >= 2 or not r.get("parent_resource")]
        return [r for r in self.resources if inventory.stack_id_of(r) == stack_id]


def _json(start_response, status, body):
    data = json.dumps(body).encode()
    reason = {200: "OK", 404: "Not Found", 500: "Internal Server Error",
              502: "Bad Gateway", 503: "Service Unavailable"}.get(status, "Error")
    start_response("%d %s" % (status, reason), [("Content-Type", "application/json"),
                                                ("Content-Length", str(len(data)))])
    return [data]
