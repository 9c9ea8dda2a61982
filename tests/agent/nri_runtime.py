"""The runtime's end of an NRI connection, for tests and benchmarks: a real unix socket,
the multiplexer and ttrpc framing of ``tacker_hwaffinity.nri``, with the roles the
runtime plays (listen; ttrpc client on connection 1, server on connection 2).
The real runtime (containerd 1.7) is exercised in tests/realnode."""
import os
import socket
import threading

from tacker_hwaffinity.nri import api, ttrpc
from tacker_hwaffinity.nri.mux import PLUGIN_CONN, RUNTIME_CONN, Mux


class Runtime:
    def __init__(self, path, name="fake-runtime", version="1.7.24"):
        self.path, self.name, self.version = path, name, version
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(4)
        self.registered = threading.Event()
        self.registration = None
        self.updates = []           # UpdateContainersRequest dicts received
        self.updated = threading.Event()
        self.fail_updates = False
        self.mux = None
        self.closed = threading.Event()
        self._lock = threading.Lock()
        self._pending = {}
        self._next = 1
        self._from_plugin = ttrpc.FrameReader()
        self._to_plugin = ttrpc.FrameReader()

    def accept(self, timeout=10):
        self.listener.settimeout(timeout)
        conn, _ = self.listener.accept()
        conn.settimeout(None)
        self.closed.clear()
        self._from_plugin, self._to_plugin = ttrpc.FrameReader(), ttrpc.FrameReader()
        self.mux = Mux(conn, {RUNTIME_CONN: self._runtime_bytes,
                              PLUGIN_CONN: self._plugin_bytes}, lambda e: self.closed.set())
        self.mux.start()
        if not self.registered.wait(timeout):
            raise AssertionError("the plugin did not register")

    def drop(self):
        """Close the plugin's connection, as a runtime does after a request timeout."""
        self.registered.clear()
        self.mux.close()

    def close(self):
        if self.mux is not None:
            self.mux.close()
        self.listener.close()
        if os.path.exists(self.path):
            os.unlink(self.path)

    # -- calling the plugin ----------------------------------------------
    def call(self, method, msg, timeout=5.0):
        request, response = api.PLUGIN_METHODS[method]
        done = threading.Event()
        slot = [done, None]
        with self._lock:
            sid = self._next
            self._next += 2
            self._pending[sid] = slot
        self.mux.send(PLUGIN_CONN, ttrpc.request_frame(sid, api.PLUGIN_SERVICE, method,
                                                       request.encode(msg)))
        if not done.wait(timeout):
            raise TimeoutError("the plugin did not answer %s in %s s" % (method, timeout))
        code, text, payload = slot[1]
        if code:
            raise ttrpc.RemoteError(method, code, text)
        return response.decode(payload)

    def start(self, pods=(), containers=(), request_timeout_ms=2000):
        """Configure and Synchronize, as the runtime does after registration."""
        events = self.call("Configure", {"runtime_name": self.name,
                                         "runtime_version": self.version,
                                         "registration_timeout": 5000,
                                         "request_timeout": request_timeout_ms})["events"]
        sync = self.call("Synchronize", {"pods": list(pods), "containers": list(containers)})
        return events, sync.get("update", [])

    def create(self, pod, container):
        return self.call("CreateContainer", {"pod": pod, "container": container})

    def _plugin_bytes(self, data):
        for sid, kind, _f, body in self._to_plugin.feed(data):
            if kind == ttrpc.RESPONSE:
                with self._lock:
                    slot = self._pending.pop(sid, None)
                if slot is not None:
                    slot[1] = ttrpc.parse_response(body)
                    slot[0].set()

    # -- serving the plugin ------------------------------------------------
    def _runtime_bytes(self, data):
        for sid, kind, _f, body in self._from_plugin.feed(data):
            if kind != ttrpc.REQUEST:
                continue
            req = ttrpc.parse_request(body)
            method = req.get("method")
            request, response = api.RUNTIME_METHODS[method]
            msg = request.decode(req.get("payload", b""))
            if method == "RegisterPlugin":
                self.registration = msg
                out = {}
            else:
                self.updates.append(msg)
                out = {"failed": msg.get("update", []) if self.fail_updates else []}
            self.mux.send(RUNTIME_CONN, ttrpc.response_frame(sid, response.encode(out)))
            if method == "RegisterPlugin":
                self.registered.set()
            else:
                self.updated.set()


def sandbox(name, uid, qos="burstable", annotations=None, namespace="default", sid=None):
    parent = {"guaranteed": "/kubepods/pod%s" % uid,
              "burstable": "/kubepods/burstable/pod%s" % uid,
              "besteffort": "/kubepods/besteffort/pod%s" % uid}[qos]
    return {"id": sid or "sb-" + uid, "name": name, "uid": uid, "namespace": namespace,
            "annotations": dict(annotations or {}), "labels": {},
            "linux": {"cgroup_parent": parent}}


def container(pod, name, cid, milli=0, limit_milli=0, memory=0, state=api.CONTAINER_CREATED,
              cpus="", mems=""):
    cpu = {"shares": {"value": max(2, milli * 1024 // 1000)}, "period": {"value": 100000}}
    if limit_milli:
        cpu["quota"] = {"value": limit_milli * 100}
    if cpus:
        cpu["cpus"] = cpus
    if mems:
        cpu["mems"] = mems
    res = {"cpu": cpu}
    if memory:
        res["memory"] = {"limit": {"value": memory}}
    return {"id": cid, "pod_sandbox_id": pod["id"], "name": name, "state": state,
            "linux": {"resources": res}}
