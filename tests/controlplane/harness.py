"""A real, kubelet-less Kubernetes control plane for tests.

``ControlPlane`` starts etcd, kube-apiserver, kube-scheduler and
kube-controller-manager on free loopback ports with a fresh data directory,
waits until each one reports healthy, and stops every process it started (by
pid, whole process group) in ``stop()``.

Nodes have no kubelet. ``ControlPlane.add_node`` creates a Node object with
capacity, a Ready condition and loopback addresses; a ``FakeKubelet`` thread
then acts *as that node* (client certificate ``system:node:<name>``, so the
Node authorizer and NodeRestriction admission apply) and does what a kubelet
would do for the scheduler's sake: renews the node Lease and the Ready
heartbeat, marks pods bound to the node Running/Ready, and finishes graceful
deletes.

Only the standard library talks to the API server (``KubeClient``); the
binaries come from ``tools/build-kube.sh``.
"""
import atexit
import datetime
import hashlib
import http.client
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.parse

KUBE_VERSION = "1.20.2"
BUILD_HINT = ("Kubernetes control-plane binaries not found; run "
              "`bash tools/build-kube.sh` (builds them once from Debian's "
              "kubernetes source package into the cache)")
BINARIES = ("kube-apiserver", "kube-scheduler", "kube-controller-manager")
SERVICE_CIDR = "127.96.0.0/20"   # never routed: no kube-proxy, loopback only


class HarnessError(RuntimeError):
    pass


class ApiError(RuntimeError):
    def __init__(self, method, path, status, body):
        self.method, self.path, self.status, self.body = method, path, status, body
        reason = body.get("message") if isinstance(body, dict) else body
        super().__init__("%s %s -> HTTP %s: %s" % (method, path, status, reason))


# --------------------------------------------------------------------------
# Locating the binaries

def cache_root():
    return os.environ.get("HWAFFINITY_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "tacker-hwaffinity")


BUILD_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            os.pardir, os.pardir, "tools", "build-kube.sh")


def recipe_key():
    """The build recipe's cache key, as tools/build-kube.sh computes it: the
    first 12 hex digits of the script's SHA-256."""
    with open(BUILD_SCRIPT, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:12]


def kube_bin_dir():
    return os.environ.get("HWAFFINITY_KUBE_BIN") or os.path.join(
        cache_root(), "kubernetes-%s-%s" % (KUBE_VERSION, recipe_key()), "bin")


def find_binaries():
    """Return {name: path} for etcd and the three Kubernetes binaries (and
    kubectl when one exists), or None when any required one is missing."""
    bindir = kube_bin_dir()
    found = {}
    for name in BINARIES:
        path = os.path.join(bindir, name)
        if not os.access(path, os.X_OK):
            return None
        found[name] = path
    etcd = shutil.which("etcd")
    if not etcd and os.access("/usr/bin/etcd", os.X_OK):
        etcd = "/usr/bin/etcd"
    openssl = shutil.which("openssl")
    if not etcd or not openssl:
        return None
    found["etcd"] = etcd
    found["openssl"] = openssl
    kubectl = os.path.join(bindir, "kubectl")
    found["kubectl"] = kubectl if os.access(kubectl, os.X_OK) else shutil.which("kubectl")
    return found


# Ports for servers the tests start: each pytest process (each xdist worker) takes its
# own band below the kernel's ephemeral range, so that neither another pytest process
# beside it nor an outgoing connection can take a port between free_port() and the
# server's bind, and a port handed out as "nothing listens here" stays unused.
PORT_BASE, PORT_BAND_WIDTH, PORT_BANDS = 20000, 1500, 8
_port_lock = threading.Lock()
_port_next = None


def _port_band():
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")      # gw0, gw1, ... under xdist
    return int(worker[2:]) + 1 if worker[2:].isdigit() else 0


def _ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def free_port(host="127.0.0.1"):
    """A TCP port on HOST that nothing uses now, from this process's band (a port of
    the kernel's ephemeral range where the bands would overlap it)."""
    global _port_next
    start = PORT_BASE + PORT_BAND_WIDTH * (_port_band() % PORT_BANDS)
    low, high = _ephemeral_range()
    if start + PORT_BAND_WIDTH > low and start <= high:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            return s.getsockname()[1]
    with _port_lock:
        if _port_next is None:
            _port_next = secrets.randbelow(PORT_BAND_WIDTH)
        for _ in range(PORT_BAND_WIDTH):
            port = start + _port_next % PORT_BAND_WIDTH
            _port_next += 1
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind((host, port))
                except OSError:
                    continue
            return port
    raise HarnessError("no free port in %d-%d" % (start, start + PORT_BAND_WIDTH - 1))


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --------------------------------------------------------------------------
# PKI (openssl)

class Pki:
    """A throw-away CA and the certificates/keys the stack needs. Files are
    0600 in a 0700 directory; nothing here is ever printed."""

    def __init__(self, directory, openssl):
        self.dir = directory
        self.openssl = openssl
        os.makedirs(directory, mode=0o700, exist_ok=True)
        self.ca_crt = self.path("ca.crt")
        self.ca_key = self.path("ca.key")
        self._lock = threading.Lock()
        self._serial = 1

    def path(self, name):
        return os.path.join(self.dir, name)

    def _run(self, *args, stdin=None):
        subprocess.run([self.openssl] + list(args), check=True, input=stdin,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)

    def _key(self, out):
        self._run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", out)
        os.chmod(out, 0o600)

    def make_ca(self):
        self._key(self.ca_key)
        self._run("req", "-x509", "-new", "-key", self.ca_key, "-sha256", "-days", "2",
                  "-subj", "/CN=hwaffinity-test-ca", "-out", self.ca_crt,
                  "-addext", "basicConstraints=critical,CA:TRUE",
                  "-addext", "keyUsage=critical,keyCertSign,cRLSign")

    def issue(self, name, subject, server=False, service_ip="127.96.0.1"):
        """Issue a client (or server) certificate; return (crt, key) paths. A server
        certificate names loopback, the ``kubernetes`` Service's DNS names and SERVICE_IP
        (its ClusterIP: what pods dial)."""
        key, csr, crt, ext = (self.path(name + s) for s in (".key", ".csr", ".crt", ".ext"))
        self._key(key)
        self._run("req", "-new", "-key", key, "-subj", subject, "-out", csr)
        with open(ext, "w") as f:
            if server:
                f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                        "extendedKeyUsage=serverAuth\n"
                        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,"
                        "DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:%s\n" % service_ip)
            else:
                f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                        "extendedKeyUsage=clientAuth\n")
        with self._lock:
            serial = self._serial = self._serial + 1
        self._run("x509", "-req", "-in", csr, "-CA", self.ca_crt, "-CAkey", self.ca_key,
                  "-set_serial", str(serial), "-days", "2", "-sha256", "-extfile", ext, "-out", crt)
        for p in (csr, ext):
            os.unlink(p)
        return crt, key

    def service_account_keys(self):
        key, pub = self.path("sa.key"), self.path("sa.pub")
        self._run("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key)
        os.chmod(key, 0o600)
        self._run("pkey", "-in", key, "-pubout", "-out", pub)
        return key, pub


# --------------------------------------------------------------------------
# A tiny API client (standard library only)

class KubeClient:
    """JSON over HTTPS to one API server, as one identity (client cert or
    bearer token)."""

    def __init__(self, server, ca_file, cert=None, key=None, token=None, timeout=15):
        u = urllib.parse.urlsplit(server)
        self.host, self.port = u.hostname, u.port
        self.server = server
        self.timeout = timeout
        self._token = token
        self.ctx = ssl.create_default_context(cafile=ca_file)
        if cert:
            self.ctx.load_cert_chain(cert, key)

    def request(self, method, path, body=None, content_type="application/json",
                ok=(200, 201, 202), query=None):
        if query:
            path = path + "?" + urllib.parse.urlencode(query)
        headers = {"Accept": "application/json"}
        if self._token:
            headers["Authorization"] = "Bearer " + self._token
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            headers["Content-Type"] = content_type
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                           timeout=self.timeout)
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = raw.decode("utf-8", "replace")
        if ok is not None and resp.status not in ok:
            raise ApiError(method, path, resp.status, payload)
        return resp.status, payload

    def get(self, path, **query):
        return self.request("GET", path, query=query or None)[1]

    def create(self, path, obj):
        return self.request("POST", path, obj)[1]

    def patch(self, path, patch, kind="merge"):
        ctype = {"merge": "application/merge-patch+json",
                 "strategic": "application/strategic-merge-patch+json",
                 "json": "application/json-patch+json"}[kind]
        return self.request("PATCH", path, patch, content_type=ctype)[1]

    def delete(self, path, body=None, ok=(200, 202)):
        return self.request("DELETE", path, body, ok=ok)


# --------------------------------------------------------------------------
# Panics in component logs
#
# A Kubernetes component that recovers a panic logs (klog, k8s.io/apimachinery
# util/runtime) "Observed a panic: <value>" and a stack trace. When the panic
# happened while kube-apiserver served a request, its panic-recovery filter
# (k8s.io/apiserver server/filters/wrap.go) also logs
# "apiserver panic'd on <METHOD> <request URI>", and the client sees a reset
# stream ("stream error: ... INTERNAL_ERROR").

_OBSERVED_PANIC = re.compile(r"Observed a panic: (.*)")
_FATAL = re.compile(r"^fatal error: (.*)")      # the Go runtime ends the process
_REQUEST_PANIC = re.compile(r"apiserver panic'd on (\S+) (\S+)")


def find_panics(text):
    """The panics a component log records, one description each: the request
    (when the apiserver names one) and the panic value."""
    found, pending, fatal = [], [], None
    for line in text.splitlines():
        if fatal is not None and fatal[1] is None and "github.com/" in line:
            fatal[1] = line.strip()          # the first library frame of the crash
        m = _FATAL.match(line)
        if m and fatal is None:
            fatal = [m.group(1).strip(), None]
            continue
        m = _OBSERVED_PANIC.search(line)
        if m:
            pending.append(m.group(1).strip())
            continue
        m = _REQUEST_PANIC.search(line)
        if m:
            value = pending.pop(0) if pending else "panic value not logged"
            found.append("%s %s: %s" % (m.group(1), m.group(2), value))
    found.extend("(no request): %s" % value for value in pending)
    if fatal is not None:
        found.append("(process died) fatal error: %s%s"
                     % (fatal[0], " in %s" % fatal[1] if fatal[1] else ""))
    return found


# --------------------------------------------------------------------------
# Processes

class Component:
    def __init__(self, name, argv, log_path, env=None):
        self.name, self.argv, self.log_path = name, argv, log_path
        self._log = open(log_path, "ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     env=env)
        self.pid = self.proc.pid
        self._panic_offset = 0

    def new_panics(self):
        """Panics logged since the last call (see :func:`find_panics`)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._panic_offset)
                data = f.read()
        except OSError:
            return []
        # Only whole lines: a line still being written is read next time.
        end = data.rfind(b"\n") + 1
        self._panic_offset += end
        return find_panics(data[:end].decode("utf-8", "replace"))

    def alive(self):
        return self.proc.poll() is None

    def rss_kib(self):
        """Resident memory of the process and its descendants (KiB)."""
        total = 0
        for pid in _descendants(self.pid):
            try:
                with open("/proc/%d/status" % pid) as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            total += int(line.split()[1])
            except OSError:
                pass
        return total

    def stop(self, timeout=10):
        if self.proc.poll() is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(self.pid, sig)   # its own group: start_new_session
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(timeout=timeout)
                    break
                except subprocess.TimeoutExpired:
                    continue
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        self._log.close()

    def tail(self, lines=20):
        try:
            with open(self.log_path, "rb") as f:
                return b"".join(f.readlines()[-lines:]).decode("utf-8", "replace")
        except OSError:
            return ""


def _descendants(pid):
    pids = [pid]
    try:
        children = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open("/proc/%s/stat" % entry) as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                    children.setdefault(ppid, []).append(int(entry))
                except (OSError, ValueError, IndexError):
                    pass
        stack = [pid]
        while stack:
            for c in children.get(stack.pop(), []):
                pids.append(c)
                stack.append(c)
    except OSError:
        pass
    return pids


def wait_until(predicate, timeout, interval=0.2, what="condition"):
    """Poll ``predicate`` until it returns a truthy value; raise after
    ``timeout`` seconds. Exceptions inside the predicate count as 'not yet',
    except HarnessError, which ends the wait at once."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except HarnessError:
            raise                 # fatal (e.g. the process died): stop waiting
        except Exception as e:  # noqa: BLE001 - keep polling, report the last one
            last = e
        if time.monotonic() >= deadline:
            raise HarnessError("timed out after %.0fs waiting for %s%s"
                               % (timeout, what, " (last error: %s)" % last if last else ""))
        time.sleep(interval)


def node_object(name, labels, address, cpu, memory, pods, taints=()):
    """A Ready Node as a kubelet registers it (capacity = allocatable, the
    pressure conditions, InternalIP/Hostname addresses, nodeInfo), with TAINTS
    (the kubelet's --register-with-taints)."""
    all_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                  "kubernetes.io/arch": "amd64"}
    all_labels.update(labels or {})
    now = now_rfc3339()
    capacity = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "spec": {"taints": list(taints)} if taints else {},
        "status": {
            "capacity": capacity, "allocatable": dict(capacity),
            "conditions": [
                {"type": t, "status": "False", "reason": "KubeletHasSufficient" + t[:-8],
                 "lastHeartbeatTime": now, "lastTransitionTime": now}
                for t in ("MemoryPressure", "DiskPressure", "PIDPressure")] + [
                {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "message": "fake kubelet of the hwaffinity test harness",
                 "lastHeartbeatTime": now, "lastTransitionTime": now}],
            "addresses": [{"type": "InternalIP", "address": address},
                          {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux",
                         "kubeletVersion": "v" + KUBE_VERSION,
                         "kubeProxyVersion": "v" + KUBE_VERSION,
                         "containerRuntimeVersion": "fake://0", "osImage": "fake",
                         "kernelVersion": "", "bootID": "", "machineID": "",
                         "systemUUID": ""}}}


# --------------------------------------------------------------------------
# Fake kubelet

class FakeKubelet(threading.Thread):
    """Keeps kubelet-less nodes alive for the control plane: renews each
    node's Lease, refreshes the Ready condition heartbeat, moves pods bound to
    the node to Running/Ready and completes graceful pod deletion. Acts as
    each node with that node's own client certificate.

    Runtime hooks (for tests whose containers are real processes): when set,
    ``start_pod(node, pod)`` is called before a pod is reported Running and
    returns {container name: container ID} ("containerd://<id>", reported in
    its containerStatuses), or None to keep the pod Pending this round; and
    ``stop_pod(node, pod)`` is called before a pod's deletion is completed."""

    def __init__(self, interval=1.0, status_every=8.0):
        super().__init__(name="fake-kubelet", daemon=True)
        self.interval = interval
        self.status_every = status_every
        self._nodes = {}            # name -> (client, address, last status push)
        self._lock = threading.Lock()
        self._halt = threading.Event()
        # Leases and heartbeats on a thread of their own: a slow runtime hook
        # (a pod started in a VM takes seconds) must never let the node
        # lifecycle controller see another node's lease expire.
        self._liveness = threading.Thread(target=self._keep_alive, name="fake-kubelet-leases",
                                          daemon=True)
        self.errors = []
        self.start_pod = None
        self.stop_pod = None

    def start(self):
        super().start()
        self._liveness.start()

    def add(self, name, client, address):
        with self._lock:
            self._nodes[name] = [client, address, 0.0]
        self.tick_node(name)

    def remove(self, name):
        with self._lock:
            self._nodes.pop(name, None)

    def stop(self, timeout=10):
        self._halt.set()
        for thread in (self, self._liveness):
            if thread.is_alive():
                thread.join(timeout)

    def run(self):
        self._each_node(self._sync_node)

    def _keep_alive(self):
        self._each_node(self._live_node)

    def _each_node(self, tick):
        while not self._halt.wait(self.interval):
            with self._lock:
                names = list(self._nodes)
            for name in names:
                if self._halt.is_set():
                    return
                try:
                    tick(name)
                except Exception as e:  # noqa: BLE001 - keep the loop alive
                    self.errors.append("%s: %s" % (name, e))
                    del self.errors[:-50]

    def tick_node(self, name):
        self._live_node(name)
        self._sync_node(name)

    def _live_node(self, name):
        with self._lock:
            entry = self._nodes.get(name)
        if entry is not None:
            client, _, last = entry
            self._renew_lease(client, name)
            if time.monotonic() - last >= self.status_every:
                self._heartbeat(client, name)
                entry[2] = time.monotonic()

    def _sync_node(self, name):
        with self._lock:
            client, address, _ = self._nodes.get(name) or (None, None, None)
        if client is not None:
            self._sync_pods(client, name, address)

    @staticmethod
    def _renew_lease(client, name):
        path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + name
        status, lease = client.request("GET", path, ok=(200, 404))
        if status == 404:
            # 409: the loop's tick and add()'s first tick raced, and the other one made it
            client.request("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/"
                           "leases", {
                               "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                               "metadata": {"name": name, "namespace": "kube-node-lease"},
                               "spec": {"holderIdentity": name, "leaseDurationSeconds": 40,
                                        "renewTime": now_micro()}}, ok=(201, 409))
        else:
            lease["spec"]["renewTime"] = now_micro()
            lease["spec"]["holderIdentity"] = name
            client.request("PUT", path, lease, ok=(200, 409))

    @staticmethod
    def _heartbeat(client, name):
        now = now_rfc3339()
        client.patch("/api/v1/nodes/%s/status" % name, {"status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady",
             "message": "fake kubelet of the hwaffinity test harness",
             "lastHeartbeatTime": now}]}}, kind="strategic")

    def _sync_pods(self, client, name, address):
        pods = client.get("/api/v1/pods", fieldSelector="spec.nodeName=" + name)["items"]
        for pod in pods:
            meta, status = pod["metadata"], pod.get("status", {})
            ns, pname = meta["namespace"], meta["name"]
            if meta.get("deletionTimestamp"):
                if self.stop_pod is not None:
                    self.stop_pod(name, pod)
                client.delete("/api/v1/namespaces/%s/pods/%s" % (ns, pname),
                              {"kind": "DeleteOptions", "apiVersion": "v1",
                               "gracePeriodSeconds": 0,
                               "preconditions": {"uid": meta["uid"]}},
                              ok=(200, 202, 404, 409))
            elif status.get("phase", "Pending") == "Pending":
                ids = {}
                if self.start_pod is not None:
                    ids = self.start_pod(name, pod)
                    if ids is None:
                        continue
                now = now_rfc3339()
                containers = pod["spec"].get("containers", [])
                status_path = "/api/v1/namespaces/%s/pods/%s/status" % (ns, pname)
                client.request("PATCH", status_path, {"status": {
                    "phase": "Running", "hostIP": address, "podIP": address,
                    "startTime": now,
                    "conditions": [
                        {"type": t, "status": "True", "lastTransitionTime": now}
                        for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
                    "containerStatuses": [
                        dict({"name": c["name"], "image": c.get("image", ""), "imageID": "",
                              "ready": True, "restartCount": 0, "started": True,
                              "state": {"running": {"startedAt": now}}},
                             **({"containerID": ids[c["name"]]} if c["name"] in ids else {}))
                        for c in containers]}},
                    content_type="application/strategic-merge-patch+json",
                    ok=(200, 404, 409))   # the pod may be going away meanwhile


# --------------------------------------------------------------------------
# The control plane

# What a cluster snapshot lists (README): the scheduler's objects, and the ones whose
# selectors default topology spreading reads.
SNAPSHOT_KINDS = "nodes,pods,namespaces,services,replicationcontrollers,replicasets,statefulsets"


class ControlPlane:
    def __init__(self, binaries, run_dir=None, log=print, node_lifecycle=True, api_qps=None,
                 service_cidr=SERVICE_CIDR):
        """SERVICE_CIDR: the Services' ClusterIP range; the default is never routed
        (loopback, no kube-proxy); a real node (tests/realnode/kubenode.py) passes a private
        range its kube-proxy serves. The API server always has a kubelet client
        certificate (``.kubelet_client``: logs, exec on a real kubelet).

        NODE_LIFECYCLE False starts the controller manager without the
        node-lifecycle controller, so nodes made by :meth:`add_static_nodes`
        stay schedulable without heartbeats (benchmarks with thousands of
        nodes); the fake kubelet is for the tests. API_QPS raises the client
        rate limits of the scheduler and the controller manager (defaults 50
        and 20 requests/s), so that a benchmark measures scheduling, not them."""
        self.bin = binaries
        self.service_cidr = service_cidr
        self.node_lifecycle = node_lifecycle
        self.qps_args = ([] if api_qps is None else
                         ["--kube-api-qps", str(api_qps), "--kube-api-burst", str(api_qps)])
        self.run_dir = run_dir or tempfile.mkdtemp(prefix="hwaffinity-controlplane-")
        os.makedirs(self.run_dir, mode=0o700, exist_ok=True)
        os.chmod(self.run_dir, 0o700)
        self.log_dir = os.path.join(self.run_dir, "logs")
        self.secret_dir = os.path.join(self.run_dir, "pki")
        os.makedirs(self.log_dir, exist_ok=True)
        self.components = []
        self.kubelet = None
        self.log = log
        self.startup_seconds = None
        self.ready_at = None
        self.nodes = {}
        self._stopped = False
        atexit.register(self.stop)

    # -- helpers ----------------------------------------------------------
    def _kubeconfig(self, name, user, cert=None, key=None, token=None):
        path = os.path.join(self.secret_dir, name + ".kubeconfig")
        cred = {"client-certificate": cert, "client-key": key} if cert else {"token": token}
        cfg = {"apiVersion": "v1", "kind": "Config",
               "clusters": [{"name": "hwaffinity", "cluster": {
                   "server": self.server, "certificate-authority": self.pki.ca_crt}}],
               "users": [{"name": user, "user": cred}],
               "contexts": [{"name": "hwaffinity",
                             "context": {"cluster": "hwaffinity", "user": user}}],
               "current-context": "hwaffinity"}
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(cfg, f, indent=1)   # JSON is valid kubeconfig YAML
        return path

    def _start(self, name, argv):
        comp = Component(name, argv, os.path.join(self.log_dir, name + ".log"))
        self.components.append(comp)
        return comp

    def _wait_https(self, comp, port, path, timeout, client=None):
        def probe():
            if not comp.alive():
                raise HarnessError("%s exited with %s; log %s:\n%s" % (
                    comp.name, comp.proc.returncode, comp.log_path, comp.tail()))
            if client is not None:
                status, _ = client.request("GET", path, ok=None)
            else:
                ctx = ssl.create_default_context()
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE   # self-signed in-memory serving cert
                conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=2)
                try:
                    conn.request("GET", path)
                    resp = conn.getresponse()
                    status = resp.status
                    resp.read()
                finally:
                    conn.close()
            return status == 200
        try:
            wait_until(probe, timeout, interval=0.1, what="%s %s" % (comp.name, path))
        except HarnessError as e:
            if not comp.alive():
                raise
            raise HarnessError("%s; log %s:\n%s" % (e, comp.log_path, comp.tail())) from None

    # -- lifecycle ----------------------------------------------------------
    def start(self, timeout=60):
        t0 = time.monotonic()
        try:
            self._start_all(timeout)
        except BaseException:
            self.stop(keep_logs=True)
            raise
        self.ready_at = time.monotonic()
        self.startup_seconds = self.ready_at - t0
        return self

    def uptime(self):
        """Seconds since every component was ready."""
        return time.monotonic() - self.ready_at

    def restart_apiserver(self, down_for=0.0, timeout=60, grace=3.0):
        """Stop kube-apiserver, keep it down for DOWN_FOR seconds, start it
        again with the same arguments on the same port and wait until it serves
        /readyz. Its log continues in the same file; the panic scan goes on
        from where it was.

        SIGTERM first, SIGKILL after GRACE seconds (by its process group): on
        SIGTERM, v1.20 stops listening at once but keeps open watches served
        for up to a minute, so a graceful stop would take that long."""
        index = next(i for i, c in enumerate(self.components) if c.name == "kube-apiserver")
        old = self.components[index]
        old.stop(timeout=grace)
        time.sleep(down_for)            # the condition is time itself: the outage asked for
        new = Component(old.name, old.argv, old.log_path)
        new._panic_offset = old._panic_offset   # lines already scanned stay scanned
        self.components[index] = new
        port = urllib.parse.urlsplit(self.server).port
        self._wait_https(new, port, "/readyz", timeout, client=self.admin)
        return new

    def _start_all(self, timeout):
        deadline = time.monotonic() + timeout

        def left():
            return max(1.0, deadline - time.monotonic())

        self.pki = Pki(self.secret_dir, self.bin["openssl"])
        pki = self.pki
        pki.make_ca()
        network = ipaddress.ip_network(self.service_cidr)
        self.kubernetes_service_ip = str(network.network_address + 1)
        api_crt, api_key = pki.issue("apiserver", "/CN=kube-apiserver", server=True,
                                     service_ip=self.kubernetes_service_ip)
        # what kube-apiserver shows a kubelet (logs, exec): a client in system:masters
        self.kubelet_client = pki.issue("apiserver-kubelet-client",
                                        "/O=system:masters/CN=kube-apiserver-kubelet-client")
        admin_crt, admin_key = pki.issue("admin", "/O=system:masters/CN=hwaffinity-admin")
        sched_crt, sched_key = pki.issue("scheduler", "/CN=system:kube-scheduler")
        kcm_crt, kcm_key = pki.issue("controller-manager", "/CN=system:kube-controller-manager")
        sa_key, sa_pub = pki.service_account_keys()
        # Static tokens: a read-only identity used to take cluster snapshots.
        self._reader_token = secrets.token_hex(24)
        token_file = pki.path("tokens.csv")
        fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write('%s,hwaffinity-snapshot-reader,hwaffinity-snapshot-reader,"hwaffinity:readers"\n'
                    % self._reader_token)

        etcd_client, etcd_peer = free_port(), free_port()
        self.etcd_url = "http://127.0.0.1:%d" % etcd_client
        data_dir = os.path.join(self.run_dir, "etcd-data")
        etcd = self._start("etcd", [
            self.bin["etcd"], "--name", "hwaffinity", "--data-dir", data_dir,
            "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
            "--listen-peer-urls", "http://127.0.0.1:%d" % etcd_peer,
            "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % etcd_peer,
            "--initial-cluster", "hwaffinity=http://127.0.0.1:%d" % etcd_peer,
            "--initial-cluster-state", "new",
            "--snapshot-count", "5000", "--quota-backend-bytes", str(512 * 1024 * 1024),
            "--logger", "zap", "--log-level", "warn"])

        def etcd_ok():
            if not etcd.alive():
                raise HarnessError("etcd exited; log %s:\n%s" % (etcd.log_path, etcd.tail()))
            conn = http.client.HTTPConnection("127.0.0.1", etcd_client, timeout=2)
            try:
                conn.request("GET", "/health")
                r = conn.getresponse()
                return r.status == 200 and b'"true"' in r.read()
            finally:
                conn.close()
        wait_until(etcd_ok, left(), interval=0.1, what="etcd /health")

        api_port = free_port()
        self.server = "https://127.0.0.1:%d" % api_port
        api = self._start("kube-apiserver", [
            self.bin["kube-apiserver"],
            "--etcd-servers", self.etcd_url,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
            "--secure-port", str(api_port), "--insecure-port", "0",
            "--tls-cert-file", api_crt, "--tls-private-key-file", api_key,
            "--client-ca-file", pki.ca_crt, "--token-auth-file", token_file,
            "--anonymous-auth=false",
            "--authorization-mode", "Node,RBAC",
            "--enable-admission-plugins", "NodeRestriction",
            "--service-account-key-file", sa_pub,
            "--service-account-signing-key-file", sa_key,
            "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
            "--api-audiences", "https://kubernetes.default.svc.cluster.local",
            "--service-cluster-ip-range", self.service_cidr,
            "--kubelet-client-certificate", self.kubelet_client[0],
            "--kubelet-client-key", self.kubelet_client[1],
            "--kubelet-preferred-address-types", "InternalIP",
            "--endpoint-reconciler-type", "none",
            "--enable-priority-and-fairness=false",
            "--profiling=false", "--logtostderr=true", "--v=1"])
        self.admin = KubeClient(self.server, pki.ca_crt, admin_crt, admin_key)
        self._wait_https(api, api_port, "/readyz", left(), client=self.admin)
        self.kubeconfig = self._kubeconfig("admin", "hwaffinity-admin", admin_crt, admin_key)
        self.reader_kubeconfig = self._kubeconfig("reader", "hwaffinity-snapshot-reader",
                                                  token=self._reader_token)
        self._grant_reader()

        sched_port, kcm_port = free_port(), free_port()
        sched_kc = self._kubeconfig("scheduler", "system:kube-scheduler", sched_crt, sched_key)
        kcm_kc = self._kubeconfig("controller-manager", "system:kube-controller-manager",
                                  kcm_crt, kcm_key)
        sched = self._start("kube-scheduler", [
            self.bin["kube-scheduler"], "--kubeconfig", sched_kc,
            "--authentication-kubeconfig", sched_kc, "--authorization-kubeconfig", sched_kc,
            "--leader-elect=false", "--port", "0"] + self.qps_args + [
            "--bind-address", "127.0.0.1", "--secure-port", str(sched_port),
            "--profiling=false", "--logtostderr=true", "--v=2"])
        kcm = self._start("kube-controller-manager", [
            self.bin["kube-controller-manager"], "--kubeconfig", kcm_kc,
            "--authentication-kubeconfig", kcm_kc, "--authorization-kubeconfig", kcm_kc,
            "--leader-elect=false", "--port", "0"] + self.qps_args + [
            "--bind-address", "127.0.0.1", "--secure-port", str(kcm_port),
            "--use-service-account-credentials=true",
            "--service-account-private-key-file", sa_key, "--root-ca-file", pki.ca_crt,
            "--service-cluster-ip-range", self.service_cidr,
            "--node-monitor-period", "2s", "--node-monitor-grace-period", "40s",
            "--controllers", "*,-nodeipam,-cloud-node-lifecycle,-service,-route,"
                             "-persistentvolume-binder,-attachdetach,-pvc-protection,"
                             "-pv-protection,-ttl,-bootstrapsigner,-tokencleaner,"
                             "-csrsigning,-csrapproving,-csrcleaner,-root-ca-cert-publisher,"
                             "-ephemeral-volume,-endpointslicemirroring"
                             + ("" if self.node_lifecycle else ",-nodelifecycle"),
            "--profiling=false", "--logtostderr=true", "--v=1"])
        self._wait_https(sched, sched_port, "/healthz", left())
        self._wait_https(kcm, kcm_port, "/healthz", left())
        # The ServiceAccount admission plugin needs the default ServiceAccount
        # (and, in v1.20, its token Secret) before pods can be created.
        self.wait_namespace_ready("default", timeout=left())
        self.kubelet = FakeKubelet()
        self.kubelet.start()

    def _grant_reader(self):
        name = "hwaffinity:snapshot-reader"
        self.admin.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": [{"apiGroups": [""], "resources": ["nodes", "pods", "namespaces",
                                                        "services", "replicationcontrollers"],
                       "verbs": ["get", "list", "watch"]},
                      {"apiGroups": ["apps"], "resources": ["deployments", "replicasets",
                                                            "statefulsets"],
                       "verbs": ["get", "list", "watch"]}]}, ok=(201, 409))
        self.bind_cluster_role(name, name, "Group", "hwaffinity:readers")

    def bind_cluster_role(self, binding, role, subject_kind, subject):
        """A ClusterRoleBinding of ROLE to a User, a Group or a ServiceAccount (SUBJECT
        "namespace/name"); kept if it exists."""
        if subject_kind == "ServiceAccount":
            namespace, _, name = subject.partition("/")
            who = {"kind": subject_kind, "namespace": namespace, "name": name}
        else:
            who = {"apiGroup": "rbac.authorization.k8s.io", "kind": subject_kind,
                   "name": subject}
        self.admin.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": binding},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": role},
            "subjects": [who]}, ok=(201, 409))

    def start_scheduler(self, name, extenders=(), timeout=60, qps=200, burst=400):
        """Another kube-scheduler, with a profile of its own (schedulerName NAME) and
        the given ``extenders`` entries (KubeSchedulerConfiguration v1beta1), as the
        system:kube-scheduler identity, no leader election, its API client limited to QPS
        requests/s (bursts of BURST). Pods pick it with ``spec.schedulerName: NAME``.
        Stopped with the control plane (or ``.stop()``)."""
        port, healthz = free_port(), free_port()
        kc = os.path.join(self.secret_dir, "scheduler.kubeconfig")
        config = {"apiVersion": "kubescheduler.config.k8s.io/v1beta1",
                  "kind": "KubeSchedulerConfiguration",
                  "clientConnection": {"kubeconfig": kc, "qps": qps, "burst": burst},
                  "leaderElection": {"leaderElect": False},
                  "healthzBindAddress": "127.0.0.1:%d" % healthz,
                  "metricsBindAddress": "127.0.0.1:%d" % healthz,
                  "profiles": [{"schedulerName": name}],
                  "extenders": list(extenders)}
        path = os.path.join(self.run_dir, "scheduler-%s.json" % name)
        with open(path, "w") as f:
            json.dump(config, f)
        comp = self._start("kube-scheduler-" + name, [
            self.bin["kube-scheduler"], "--config", path,
            "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
            "--bind-address", "127.0.0.1", "--secure-port", str(port),
            "--profiling=false", "--logtostderr=true", "--v=2"])
        self._wait_https(comp, port, "/healthz", timeout)
        return comp

    def user_kubeconfig(self, name, cluster_role=None):
        """A kubeconfig for a new user NAME (client certificate), bound to
        CLUSTER_ROLE, or to nothing at all."""
        crt, key = self.pki.issue("user-" + name, "/CN=" + name)
        if cluster_role:
            self.bind_cluster_role(name, cluster_role, "User", name)
        return self._kubeconfig("user-" + name, name, crt, key)

    def new_panics(self):
        """{component: [panic, ...]} for the panics logged since the last call."""
        found = {}
        for comp in self.components:
            panics = comp.new_panics()
            if panics:
                found[comp.name] = panics
        return found

    @property
    def stopped(self):
        return self._stopped

    def rss_bytes(self):
        return sum(c.rss_kib() for c in self.components if c.alive()) * 1024

    def rss_by_component(self):
        return {c.name: c.rss_kib() * 1024 for c in self.components}

    def stop(self, keep_logs=True):
        """Stop the fake kubelet and every process started, by pid/process
        group. Removes keys and etcd data; logs stay unless keep_logs is
        False (then the whole run directory goes)."""
        if self._stopped:
            return
        self._stopped = True
        if self.kubelet is not None:
            try:
                self.kubelet.stop()
            except Exception:  # noqa: BLE001 - the processes must go regardless
                pass
        # Reverse start order: controllers first, etcd last.
        for comp in reversed(self.components):
            try:
                comp.stop()
            except Exception:  # noqa: BLE001 - stop the rest regardless
                pass
        for d in (self.secret_dir, os.path.join(self.run_dir, "etcd-data")):
            shutil.rmtree(d, ignore_errors=True)
        if not keep_logs:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    # -- cluster helpers -----------------------------------------------------
    def wait_namespace_ready(self, namespace, timeout=30):
        def ready():
            status, sa = self.admin.request(
                "GET", "/api/v1/namespaces/%s/serviceaccounts/default" % namespace, ok=(200, 404))
            return status == 200 and sa.get("secrets")
        wait_until(ready, timeout, what="default ServiceAccount token in %s" % namespace)

    def create_namespace(self, name, timeout=30, labels=None):
        meta = {"name": name}
        if labels:
            meta["labels"] = dict(labels)
        self.admin.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": meta})
        self.wait_namespace_ready(name, timeout)
        return name

    def delete_namespace(self, name):
        self.admin.request("DELETE", "/api/v1/namespaces/" + name, ok=(200, 202, 404))

    def add_node(self, name, labels=None, cpu="4", memory="8Gi", pods="110", wait=True,
                 timeout=30, address=None, taints=()):
        """Create a kubelet-less Ready node with the given labels (and InternalIP
        ADDRESS, default 127.0.1.N), registered with TAINTS, and let the fake kubelet
        keep it alive; wait until it is schedulable."""
        index = len(self.nodes) + 1
        address = address or "127.0.1.%d" % (index % 250 + 1)
        self.admin.create("/api/v1/nodes", node_object(name, labels, address, cpu, memory, pods,
                                                       taints))
        crt, key = self.pki.issue("node-" + name, "/O=system:nodes/CN=system:node:" + name)
        node_client = KubeClient(self.server, self.pki.ca_crt, crt, key)
        self.nodes[name] = address
        self.kubelet.add(name, node_client, address)
        if wait:
            self.wait_node_schedulable(name, timeout)
        return name

    def add_static_nodes(self, names, labels_of, cpu="4", memory="32Gi", pods="110"):
        """Create Ready nodes that no kubelet keeps alive and remove the
        not-ready taint admission put on them. Only with node_lifecycle=False
        (otherwise the controller taints them again)."""
        if self.node_lifecycle:
            raise HarnessError("add_static_nodes needs ControlPlane(node_lifecycle=False)")
        for i, name in enumerate(names):
            self.admin.create("/api/v1/nodes", node_object(
                name, labels_of(name), "127.2.%d.%d" % (i // 250, i % 250 + 1), cpu, memory,
                pods))
            self.admin.patch("/api/v1/nodes/" + name, {"spec": {"taints": None}})

    def wait_node_schedulable(self, name, timeout=30):
        def ok():
            node = self.admin.get("/api/v1/nodes/" + name)
            return not node["spec"].get("taints") and not node["spec"].get("unschedulable")
        wait_until(ok, timeout, what="node %s to lose its not-ready taint" % name)

    def delete_node(self, name):
        self.kubelet.remove(name)
        self.nodes.pop(name, None)
        self.admin.request("DELETE", "/api/v1/nodes/" + name, ok=(200, 202, 404))

    def label_node(self, name, labels):
        """Merge-patch node labels (value None removes a label)."""
        return self.admin.patch("/api/v1/nodes/" + name, {"metadata": {"labels": labels}})

    def evict(self, namespace, pod):
        """Evict a pod: policy/v1 first, then policy/v1beta1 (the only one
        v1.20 serves). Returns the API version that was used."""
        path = "/api/v1/namespaces/%s/pods/%s/eviction" % (namespace, pod)
        for version in ("policy/v1", "policy/v1beta1"):
            body = {"apiVersion": version, "kind": "Eviction",
                    "metadata": {"name": pod, "namespace": namespace}}
            status, payload = self.admin.request("POST", path, body, ok=None)
            if status in (200, 201):
                return version
            if status in (400, 404, 406, 415) and version == "policy/v1":
                continue   # this server does not know policy/v1 Eviction
            raise ApiError("POST", path, status, payload)
        raise HarnessError("eviction not served")   # pragma: no cover

    def wait_quiet(self, timeout=90):
        """Until no namespace is being deleted and no pod is terminating anywhere: earlier
        tests' leftovers, which would make two reads of the cluster differ."""
        def quiet():
            spaces = self.admin.get("/api/v1/namespaces")["items"]
            if any(n.get("status", {}).get("phase") == "Terminating" for n in spaces):
                return False
            pods = self.admin.get("/api/v1/pods")["items"]
            return not any(p["metadata"].get("deletionTimestamp") for p in pods)
        wait_until(quiet, timeout, what="no namespace or pod being deleted")

    def pods(self, namespace, selector=None):
        q = {"labelSelector": selector} if selector else {}
        return self.admin.get("/api/v1/namespaces/%s/pods" % namespace, **q)["items"]

    def events(self, namespace, reason=None, name=None):
        fs = ["involvedObject.kind=Pod"]
        if reason:
            fs.append("reason=" + reason)
        if name:
            fs.append("involvedObject.name=" + name)
        return self.admin.get("/api/v1/namespaces/%s/events" % namespace,
                              fieldSelector=",".join(fs))["items"]

    def kubectl(self, *args, kubeconfig=None, timeout=60):
        exe = self.bin.get("kubectl")
        if not exe:
            raise HarnessError("no kubectl found (tools/build-kube.sh caches Debian's)")
        return subprocess.run([exe, "--kubeconfig", kubeconfig or self.kubeconfig] + list(args),
                              check=True, capture_output=True, text=True, timeout=timeout).stdout

    def snapshot_yaml(self):
        """The cluster as `kubectl get SNAPSHOT_KINDS -A -o yaml` prints it, taken
        with the read-only identity."""
        return self.kubectl("get", SNAPSHOT_KINDS, "-A", "-o", "yaml",
                            kubeconfig=self.reader_kubeconfig)

    def component_logs(self):
        return {c.name: c.log_path for c in self.components}


def register_webhooks(cp, url, bundle, namespace_labels):
    """deploy/webhook/webhooks.yaml pointed at the webhook process at URL (BUNDLE: its CA,
    base64) and limited to the namespaces labelled NAMESPACE_LABELS (the node-registration
    webhook, whose Nodes have no namespace: to the Nodes labelled so); returned once the
    API server calls each (it picks them up asynchronously): the paths to delete them by."""
    import copy
    import yaml
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "deploy", "webhook", "webhooks.yaml")) as f:
        docs = list(yaml.safe_load_all(f))
    made = []
    for doc in docs:
        doc = copy.deepcopy(doc)
        for hook in doc["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": url + path, "caBundle": bundle}
            if "namespaceSelector" in hook:
                hook["namespaceSelector"]["matchLabels"] = dict(namespace_labels)
            else:       # cluster-scoped: only this test's nodes
                hook["objectSelector"] = {"matchLabels": dict(namespace_labels)}
        plural = "/apis/admissionregistration.k8s.io/v1/%ss" % doc["kind"].lower()
        cp.admin.create(plural, doc)
        made.append("%s/%s" % (plural, doc["metadata"]["name"]))
    _wait_webhooks_called(cp, namespace_labels)
    return made


def _wait_webhooks_called(cp, namespace_labels):
    """Until the API server calls each webhook: dry-run creations (nothing stored; the
    webhooks are sideEffects: None): of pods in a labelled namespace, one /validate must
    deny and one /mutate must patch; of a labelled Node, /register-node must taint."""
    probe = "wh-probe-" + secrets.token_hex(4)
    cp.admin.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": probe, "labels": dict(namespace_labels)}})
    cp.wait_namespace_ready(probe)
    path = "/api/v1/namespaces/%s/pods" % probe
    rde = {"nodeAffinity": [{"matchExpressions": [{"key": "kubernetes.io/hostname",
                                                   "operator": "Exists"}]}]}

    def pod(name, annotations):
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "annotations": annotations},
                "spec": {"containers": [{"name": "c", "image": "registry.invalid/pause"}]}}

    def validating():
        status, body = cp.admin.request("POST", path, pod("probe-v", {
            "hwaffinity.io/pod-affinity": "{not json"}), ok=None, query={"dryRun": "All"})
        return status == 403 and "hwaffinity.io/pod-affinity" in body["message"]

    def mutating():
        _, made = cp.admin.request("POST", path, pod("probe-m", {
            "hwaffinity.io/required-during-execution": json.dumps(rde)}),
            query={"dryRun": "All"})
        return "nodeAffinity" in (made["spec"].get("affinity") or {})
    def registering():
        node = node_object(probe, namespace_labels, "127.9.9.9", "1", "1Gi", "10")
        _, made = cp.admin.request("POST", "/api/v1/nodes", node, query={"dryRun": "All"})
        return any(t.get("key") == "hwaffinity.io/host-unknown"
                   for t in made["spec"].get("taints") or ())
    try:
        wait_until(validating, 30, what="the API server calling /validate")
        wait_until(mutating, 30, what="the API server calling /mutate")
        wait_until(registering, 30, what="the API server calling /register-node")
    finally:
        cp.delete_namespace(probe)


def serve_webhook(args, certs, log, what="the webhook", timeout=60):
    """``hwaffinity webhook serve`` with ARGS (beyond the address and the pair in CERTS, a
    directory as ``webhook certs --out`` writes it) as a process logging to LOG, returned
    once its /healthz answers 200: (process, https URL, an SSL context trusting its CA)."""
    import sys
    import urllib.request
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tacker_hwaffinity.cli.main", "webhook", "serve",
         "--address", "127.0.0.1:%d" % port, "--cert", str(certs / "tls.crt"),
         "--key", str(certs / "tls.key")] + list(args),
        stdout=open(log, "wb"), stderr=subprocess.STDOUT, cwd=root, start_new_session=True)
    url = "https://127.0.0.1:%d" % port
    context = ssl.create_default_context(cafile=str(certs / "ca.crt"))

    def healthy():
        assert proc.poll() is None, log.read_text()
        try:
            with urllib.request.urlopen(url + "/healthz", context=context, timeout=2) as r:
                return r.status == 200
        except OSError:
            return False
    wait_until(healthy, timeout, what=what)
    return proc, url, context
