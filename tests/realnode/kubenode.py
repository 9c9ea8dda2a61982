"""A real Kubernetes node on this host: kubelet, containerd 1.7 (CRI, NRI), runc, CNI and
kube-proxy, joined to a test control plane (tests/controlplane/harness.py).

Layout (every address is one this harness creates; nothing leaves the host)::

    bridge hwaffnode0  10.244.77.1/24     the node's InternalIP; pods get .10-.250
                                          (CNI bridge + host-local, Debian's plugins)
    Services           10.96.77.0/24      kube-proxy (iptables) on this host; routed
                                          to the bridge so no packet for them ever
                                          takes the default route
    kubernetes Service 10.96.77.1:443  -> 10.244.77.1:6443 (socat) -> the API server
                                          on 127.0.0.1 (its Endpoints are written here:
                                          the test API server runs without a reconciler)

The kubelet and containerd run in a mount namespace of their own, in which the node's
standard paths are bind mounts of directories in one temp dir: ``/var/lib/kubelet``,
``/var/log/pods``, ``/var/log/containers``, ``/var/run/nri`` and ``/var/lib/hwaffinity``.
So the shipped manifests' hostPath volumes (the agent's NRI socket, kubelet files and
checkpoint) resolve exactly as on a real node, and nothing is written at those paths on
this host. The kubelet's pods go below the cgroup root ``/hwaffinity-node-<hex>`` in every
cgroup hierarchy (cgroupfs driver; cgroup v1 here).

:meth:`KubeNode.stop` stops the kubelet, removes every pod through the CRI (so CNI
releases its addresses and veths), stops containerd and kube-proxy, runs
``kube-proxy --cleanup`` (its iptables chains), ends the mount namespace, and removes
the bridge and its route, the cgroup trees, the mount points it created and the temp
dir; ``leftovers()`` says what is still there (a test asserts it is nothing).
"""
import atexit
import contextlib
import json
import os
import secrets
import shlex
import shutil
import subprocess
import tempfile
import time

from controlplane import harness

from .containerd import Containerd, cgroup_mounts

BRIDGE = "hwaffnode0"
NODE_IP = "10.244.77.1"
POD_CIDR = "10.244.77.0/24"
SERVICE_CIDR = "10.96.77.0/24"
API_FORWARD_PORT = 6443
CNI_PLUGINS_DIR = "/usr/lib/cni"              # Debian's containernetworking-plugins
CNI_PLUGINS = ("bridge", "host-local", "loopback")
NODE_BINARIES = ("kubelet", "kube-proxy")
# The node's standard paths, bind-mounted in its mount namespace (name in the temp dir).
NODE_PATHS = {"/var/lib/kubelet": "kubelet", "/var/log/pods": "pod-logs",
              "/var/log/containers": "container-logs", "/run/nri": "nri",
              "/var/lib/hwaffinity": "hwaffinity"}
NRI_SOCKET = "/var/run/nri/nri.sock"        # containerd's default, as the DaemonSet mounts it


class NodeError(RuntimeError):
    pass


def missing_capabilities():
    """What this host lacks to run a node (empty when nothing)."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root")
    for tool in ("iptables", "socat", "unshare", "nsenter", "ip"):
        if shutil.which(tool) is None:
            missing.append(tool)
    for plugin in CNI_PLUGINS:
        if not os.access(os.path.join(CNI_PLUGINS_DIR, plugin), os.X_OK):
            missing.append("CNI plugin %s/%s (containernetworking-plugins)"
                           % (CNI_PLUGINS_DIR, plugin))
    bindir = harness.kube_bin_dir()
    for b in NODE_BINARIES:
        if not os.access(os.path.join(bindir, b), os.X_OK):
            missing.append("%s in %s (tools/build-kube.sh)" % (b, bindir))
    return missing


def _run(*argv, check=True):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if check and r.returncode != 0:
        raise NodeError("%s failed (%d): %s%s" % (" ".join(argv), r.returncode, r.stdout,
                                                   r.stderr))
    return r


def _write(path, text, mode=0o644):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


IPTABLES_TABLES = ("nat", "filter", "mangle")


def iptables_chains():
    """The KUBE-* chains, as "table/chain" (kube-proxy's and the kubelet's)."""
    found = []
    for table in IPTABLES_TABLES:
        out = _run("iptables", "-t", table, "-S", check=False).stdout
        found += ["%s/%s" % (table, line.split()[1]) for line in out.splitlines()
                  if line.startswith("-N KUBE-")]
    return found


def remove_kube_chains():
    """Delete every rule that jumps to a KUBE-* chain, then those chains: what
    ``kube-proxy --cleanup`` leaves (the kubelet's KUBE-MARK-*, KUBE-FIREWALL and canary
    chains). Only called when no KUBE-* chain existed before the node started."""
    for table in IPTABLES_TABLES:
        rules = _run("iptables", "-t", table, "-S", check=False).stdout.splitlines()
        for rule in rules:
            words = shlex.split(rule)       # comments are quoted: "-m comment --comment ..."
            if (words[:1] == ["-A"] and not words[1].startswith("KUBE-")
                    and "-j" in words and words[words.index("-j") + 1].startswith("KUBE-")):
                _run("iptables", "-t", table, "-D", *words[1:], check=False)
        chains = [r.split()[1] for r in rules if r.startswith("-N KUBE-")]
        for chain in chains:
            _run("iptables", "-t", table, "-F", chain, check=False)
        for chain in chains:
            _run("iptables", "-t", table, "-X", chain, check=False)


class KubeNode:
    """``KubeNode(control_plane, name, images=[OCI archive, ...]).start()``; ``.stop()``;
    ``.runtime`` is its :class:`Containerd` (the archives imported for its pods).
    REGISTER_WITH_TAINTS: ["key:Effect", ...], the kubelet's ``--register-with-taints``."""

    def __init__(self, control_plane, name="realnode-1", images=(), register_with_taints=()):
        if control_plane.service_cidr != SERVICE_CIDR:
            raise NodeError("the control plane's service CIDR must be %s (ControlPlane("
                            "service_cidr=kubenode.SERVICE_CIDR))" % SERVICE_CIDR)
        self.cp, self.name, self.images = control_plane, name, list(images)
        self.register_with_taints = list(register_with_taints)
        self.bin = harness.kube_bin_dir()
        self.dir = tempfile.mkdtemp(prefix="hwaffinity-node-")
        os.chmod(self.dir, 0o755)
        self.log_dir = os.path.join(self.dir, "logs")
        os.makedirs(self.log_dir)
        self.cgroup_root = "hwaffinity-node-" + secrets.token_hex(4)
        self.components = []
        self.runtime = None
        self.holder = None
        self._made_dirs = []
        self._bridge = False
        self._iptables = False
        self._stopped = False
        atexit.register(self.stop)

    # -- start -----------------------------------------------------------
    def start(self, timeout=120):
        try:
            self._start(timeout)
        except BaseException as exc:  # noqa: BLE001 - even an interrupt stops the half-started node
            kept = self.stop(keep_logs=True)
            raise NodeError("%s\nthe node's logs are kept in %s" % (exc, kept)) from None
        return self

    def _start(self, timeout):
        deadline = time.monotonic() + timeout
        self._make_bridge()
        self._start_mount_namespace()
        self._start_containerd()
        self._forward_api_server()
        self._start_kubelet()
        self._start_kube_proxy()
        harness.wait_until(self._ready, max(1.0, deadline - time.monotonic()), interval=0.5,
                           what="node %s Ready (kubelet log %s)" % (self.name, self.kubelet_log))

    def _make_bridge(self):
        chains = iptables_chains()
        if chains:
            raise NodeError("iptables has KUBE-* chains already (another node's?): %s"
                            % ", ".join(chains))
        self._iptables = True
        if _run("ip", "link", "show", BRIDGE, check=False).returncode == 0:
            raise NodeError("a link named %s exists already (a node of another run?)" % BRIDGE)
        _run("ip", "link", "add", BRIDGE, "type", "bridge")
        self._bridge = True
        _run("ip", "addr", "add", NODE_IP + "/24", "dev", BRIDGE)
        _run("ip", "link", "set", BRIDGE, "up")
        _run("ip", "route", "add", SERVICE_CIDR, "dev", BRIDGE, "src", NODE_IP)

    def _start_mount_namespace(self):
        binds = []
        for target, name in sorted(NODE_PATHS.items()):
            source = os.path.join(self.dir, name)
            os.makedirs(source, exist_ok=True)
            if not os.path.exists(target):
                os.makedirs(target)
                self._made_dirs.append(target)
            binds.append("mount --bind %s %s" % (source, target))
        script = "set -e; %s; echo ready; exec sleep infinity" % "; ".join(binds)
        self.holder = self._component("mount-namespace", [
            "unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script])
        harness.wait_until(lambda: "ready" in self.holder.tail() or not self.holder.alive(),
                           10, interval=0.05, what="the node's mount namespace")
        if not self.holder.alive():
            raise NodeError("the mount namespace did not start: %s" % self.holder.tail())

    def nsenter(self):
        return ["nsenter", "--mount=/proc/%d/ns/mnt" % self.holder.pid, "--"]

    def _start_containerd(self):
        self.runtime = Containerd(nri_socket=NRI_SOCKET, spawn_prefix=self.nsenter(),
                                  nri_socket_seen_at=os.path.join(
                                      self.dir, NODE_PATHS["/run/nri"], "nri.sock"),
                                  cgroup_prefix=self.cgroup_root, base_dir=self.dir)
        for sub in ("bin", "conf"):
            os.makedirs(os.path.join(self.runtime.dir, "cni", sub), exist_ok=True)
        for plugin in CNI_PLUGINS:
            os.symlink(os.path.join(CNI_PLUGINS_DIR, plugin),
                       os.path.join(self.runtime.dir, "cni", "bin", plugin))
        _write(os.path.join(self.runtime.dir, "cni", "conf", "10-hwaffinity.conflist"),
               json.dumps(self.cni_config(), indent=1))
        self.runtime.start(timeout=60)
        for path in self.images:
            self.runtime.import_image(path)

    def cni_config(self):
        return {"cniVersion": "0.4.0", "name": "hwaffinity-node", "plugins": [{
            "type": "bridge", "bridge": BRIDGE, "isGateway": False, "ipMasq": False,
            "hairpinMode": True,
            "ipam": {"type": "host-local", "dataDir": os.path.join(self.dir, "cni-ipam"),
                     "ranges": [[{"subnet": POD_CIDR, "rangeStart": "10.244.77.10",
                                  "rangeEnd": "10.244.77.250", "gateway": NODE_IP}]],
                     "routes": [{"dst": "0.0.0.0/0", "gw": NODE_IP}]}}]}

    def _forward_api_server(self):
        """The ``kubernetes`` Service: 10.96.77.1:443 -> NODE_IP:6443 -> the API server."""
        api = self.cp.server.rsplit(":", 1)[1]
        self._component("api-forward", [
            "socat", "TCP-LISTEN:%d,bind=%s,reuseaddr,fork" % (API_FORWARD_PORT, NODE_IP),
            "TCP:127.0.0.1:%s" % api])
        body = {"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": "kubernetes", "namespace": "default"},
                "subsets": [{"addresses": [{"ip": NODE_IP}],
                             "ports": [{"name": "https", "port": API_FORWARD_PORT,
                                        "protocol": "TCP"}]}]}
        status, _ = self.cp.admin.request("POST", "/api/v1/namespaces/default/endpoints",
                                          body, ok=(201, 409))
        if status == 409:
            self.cp.admin.request("PUT", "/api/v1/namespaces/default/endpoints/kubernetes",
                                  body)
        # kube-proxy 1.20 reads EndpointSlices; the mirroring controller is off here
        self.cp.admin.request(
            "POST", "/apis/discovery.k8s.io/v1beta1/namespaces/default/endpointslices", {
                "apiVersion": "discovery.k8s.io/v1beta1", "kind": "EndpointSlice",
                "metadata": {"name": "kubernetes", "namespace": "default",
                             "labels": {"kubernetes.io/service-name": "kubernetes"}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": [NODE_IP], "conditions": {"ready": True}}],
                "ports": [{"name": "https", "port": API_FORWARD_PORT, "protocol": "TCP"}]},
            ok=(201, 409))

    def _kubeconfig(self, name, subject):
        crt, key = self.cp.pki.issue(name, subject)
        return self.cp._kubeconfig(name, name, crt, key)

    @property
    def kubelet_log(self):
        return os.path.join(self.log_dir, "kubelet.log")

    def _make_cgroup_root(self):
        """The kubelet's --cgroup-root must exist in every hierarchy (cpuset: with the
        parent's CPUs and memory nodes, which a new v1 cpuset cgroup does not inherit)."""
        for mount in cgroup_mounts():
            path = os.path.join(mount, self.cgroup_root)
            os.makedirs(path, exist_ok=True)
            for name in ("cpuset.cpus", "cpuset.mems"):
                if os.path.exists(os.path.join(path, name)):
                    with open(os.path.join(mount, name)) as f:
                        value = f.read().strip()
                    with open(os.path.join(path, name), "w") as f:
                        f.write(value)

    def _start_kubelet(self):
        self._make_cgroup_root()
        root = os.path.join(self.dir, NODE_PATHS["/var/lib/kubelet"])
        ca = os.path.join(root, "ca.crt")
        shutil.copy(self.cp.pki.ca_crt, ca)
        self.kubelet_config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "address": NODE_IP, "port": 10250, "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1", "healthzPort": harness.free_port(),
            "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                               "x509": {"clientCAFile": "/var/lib/kubelet/ca.crt"}},
            "authorization": {"mode": "Webhook"},
            "cgroupDriver": "cgroupfs", "cgroupRoot": "/" + self.cgroup_root,
            "cgroupsPerQOS": True, "enforceNodeAllocatable": ["pods"],
            "failSwapOn": False, "cpuManagerPolicy": "none",
            "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%",
                             "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
            "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
            "nodeStatusUpdateFrequency": "4s", "syncFrequency": "10s",
            "volumePluginDir": os.path.join(self.dir, "volume-plugins"),
            "serializeImagePulls": False, "maxPods": 30,
            "resolvConf": "/etc/resolv.conf", "clusterDomain": "cluster.local"}
        _write(os.path.join(root, "config.yaml"), json.dumps(self.kubelet_config, indent=1))
        kubeconfig = self._kubeconfig("kubelet-" + self.name,
                                      "/O=system:nodes/CN=system:node:" + self.name)
        self._component("kubelet", self.nsenter() + [
            os.path.join(self.bin, "kubelet"), "--config", "/var/lib/kubelet/config.yaml",
            "--kubeconfig", kubeconfig, "--container-runtime", "remote",
            "--container-runtime-endpoint", "unix://" + self.runtime.cri_socket,
            "--runtime-request-timeout", "5m", "--hostname-override", self.name,
            "--node-ip", NODE_IP, "--pod-infra-container-image", _pause_ref(),
            "--logtostderr=true", "--v=1"] + (
            ["--register-with-taints=" + ",".join(self.register_with_taints)]
            if self.register_with_taints else []))

    def _start_kube_proxy(self):
        kubeconfig = self._kubeconfig("kube-proxy-" + self.name, "/CN=system:kube-proxy")
        self.proxy_health = harness.free_port()
        config = {"apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
                  "kind": "KubeProxyConfiguration", "mode": "iptables",
                  "clientConnection": {"kubeconfig": kubeconfig},
                  "hostnameOverride": self.name, "bindAddress": NODE_IP,
                  "clusterCIDR": POD_CIDR,
                  "healthzBindAddress": "127.0.0.1:%d" % self.proxy_health,
                  "metricsBindAddress": "127.0.0.1:%d" % harness.free_port(),
                  "conntrack": {"maxPerCore": 0, "min": 0,
                                "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
                  "iptables": {"syncPeriod": "5s", "minSyncPeriod": "0s",
                               "masqueradeBit": 14}}
        path = _write(os.path.join(self.dir, "kube-proxy.json"), json.dumps(config))
        self._component("kube-proxy", [os.path.join(self.bin, "kube-proxy"), "--config",
                                       path, "--v=1"])

    def _component(self, name, argv):
        comp = harness.Component(name, argv, os.path.join(self.log_dir, name + ".log"))
        self.components.append(comp)
        return comp

    def _ready(self):
        for comp in self.components:
            if not comp.alive():
                raise NodeError("%s exited (%s); log %s:\n%s" % (
                    comp.name, comp.proc.returncode, comp.log_path, comp.tail(30)))
        status, node = self.cp.admin.request("GET", "/api/v1/nodes/" + self.name, ok=None)
        if status != 200:
            return False
        return any(c["type"] == "Ready" and c["status"] == "True"
                   for c in node.get("status", {}).get("conditions", []))

    # -- use ---------------------------------------------------------------
    def container_pid(self, container_id):
        return self.runtime.cri.pid(container_id)

    # -- stop --------------------------------------------------------------
    def stop(self, keep_logs=False):
        """Stop and remove everything; with KEEP_LOGS, the components' logs move to a
        directory of their own first (returned)."""
        if self._stopped:
            return None
        self._stopped = True
        by_name = {c.name: c for c in self.components}
        if "kubelet" in by_name:
            by_name["kubelet"].stop(timeout=15)
        if self.runtime is not None:
            self.runtime.stop()       # every pod through the CRI: CNI DEL, then containerd
        for comp in reversed(self.components):
            comp.stop(timeout=10)
        if "kube-proxy" in by_name:
            _run(os.path.join(self.bin, "kube-proxy"), "--cleanup", check=False)
        if self._iptables:
            remove_kube_chains()
        if self._bridge:
            _run("ip", "link", "del", BRIDGE, check=False)   # its address and route go too
        for d in reversed(self._made_dirs):
            with contextlib.suppress(OSError):
                os.rmdir(d)
        kept = None
        if keep_logs and os.path.isdir(self.log_dir):
            kept = tempfile.mkdtemp(prefix="hwaffinity-node-logs-")
            for name in os.listdir(self.log_dir):
                shutil.move(os.path.join(self.log_dir, name), kept)
        shutil.rmtree(self.dir, ignore_errors=True)
        atexit.unregister(self.stop)
        return kept

    def leftovers(self):
        """What this node left on the host (after stop): links, chains, cgroups, dirs."""
        found = []
        if _run("ip", "link", "show", BRIDGE, check=False).returncode == 0:
            found.append("link " + BRIDGE)
        found += ["iptables chain " + c for c in iptables_chains()]
        found += ["cgroup " + p for p in self.runtime.cgroup_dirs()] if self.runtime else []
        found += ["dir " + d for d in self._made_dirs if os.path.exists(d)]
        if os.path.exists(self.dir):
            found.append("dir " + self.dir)
        return found


def _pause_ref():
    from .images import image_ref
    return image_ref("pause")


@contextlib.contextmanager
def cluster_of_one(name, images=(), register_with_taints=()):
    """A test control plane and one real node NAME joined to it (``KubeNode``'s IMAGES and
    REGISTER_WITH_TAINTS), as (control plane, node, seconds the node took to start);
    both stopped after, and the node must leave nothing behind. Not available (skipped,
    failed under CI) where this process cannot run them."""
    from ci_policy import unavailable

    from .conftest import require_node_runtime
    require_node_runtime()
    missing = missing_capabilities()
    if missing:
        unavailable("a real node needs: " + ", ".join(missing))
    binaries = harness.find_binaries()
    if binaries is None:
        unavailable(harness.BUILD_HINT)
    cp = harness.ControlPlane(binaries, service_cidr=SERVICE_CIDR)
    node = None
    try:
        cp.start(timeout=90)
        started = time.monotonic()
        node = KubeNode(cp, name, images=images,
                        register_with_taints=register_with_taints).start(timeout=180)
        yield cp, node, time.monotonic() - started
    finally:
        if node is not None:
            node.stop()
            left = node.leftovers()
        cp.stop(keep_logs=False)
        if node is not None:
            assert left == [], "the node left %s" % left
