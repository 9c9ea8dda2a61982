"""A CRI (``runtime.v1``) client: the calls a kubelet makes, over gRPC, without generated code.

The messages are the subset of kubernetes' ``cri-api`` ``pkg/apis/runtime/v1/api.proto``
the tests need, written as schema tables for the project's own protobuf codec
(:mod:`tacker_hwaffinity.nri.wire`), with the field numbers of that file.
Calls go through grpcio's generic ``unary_unary`` with the codec as
serializer. Fields the schemas do not name are skipped when decoding, as any
proto3 reader does.

The target is either a unix socket path (``/run/x/containerd.sock`` or
``unix:///run/x/containerd.sock``) or ``host:port`` (a TCP forward, e.g. socat
into a VM): nothing here assumes the runtime runs on this host.

Usage::

    cri = CRI("/tmp/x/containerd.sock")
    sandbox = cri.sandbox_config("web-0", "default", uid, cgroup_parent="/tst/pod" + uid)
    pod = cri.run_pod_config(sandbox)                 # or cri.run_pod(name, namespace, uid, ...)
    cid = cri.create_container(pod, sandbox, "app", "localhost/hwaffinity-busybox:1",
                               ["/bin/sh", "-c"], ["sleep 60"],
                               resources={"cpuset_cpus": "0"})
    cri.start(cid)

Every gRPC failure raises :class:`CRIError` naming the method, the status code
and the runtime's message.
"""
import json
import time

import grpc

from tacker_hwaffinity.nri.wire import Field, Map, Message

RUNTIME = "runtime.v1.RuntimeService"
IMAGES = "runtime.v1.ImageService"

# enums (api.proto)
NAMESPACE_POD, NAMESPACE_CONTAINER, NAMESPACE_NODE, NAMESPACE_TARGET = 0, 1, 2, 3
SANDBOX_READY, SANDBOX_NOTREADY = 0, 1
CONTAINER_CREATED, CONTAINER_RUNNING, CONTAINER_EXITED, CONTAINER_UNKNOWN = 0, 1, 2, 3
CONTAINER_STATES = {CONTAINER_CREATED: "CREATED", CONTAINER_RUNNING: "RUNNING",
                    CONTAINER_EXITED: "EXITED", CONTAINER_UNKNOWN: "UNKNOWN"}
SANDBOX_STATES = {SANDBOX_READY: "READY", SANDBOX_NOTREADY: "NOTREADY"}

# -- schemas: field numbers from cri-api pkg/apis/runtime/v1/api.proto --------
STR_MAP = Map("string", "string")

VersionRequest = Message("VersionRequest", [Field(1, "version", "string")])
VersionResponse = Message("VersionResponse", [
    Field(1, "version", "string"), Field(2, "runtime_name", "string"),
    Field(3, "runtime_version", "string"), Field(4, "runtime_api_version", "string")])

DNSConfig = Message("DNSConfig", [
    Field(1, "servers", "string", repeated=True), Field(2, "searches", "string", repeated=True),
    Field(3, "options", "string", repeated=True)])
NamespaceOption = Message("NamespaceOption", [
    Field(1, "network", "enum"), Field(2, "pid", "enum"), Field(3, "ipc", "enum"),
    Field(4, "target_id", "string")])
Int64Value = Message("Int64Value", [Field(1, "value", "int64")])
SecurityProfile = Message("SecurityProfile", [
    Field(1, "profile_type", "enum"), Field(2, "localhost_ref", "string")])
LinuxSandboxSecurityContext = Message("LinuxSandboxSecurityContext", [
    Field(1, "namespace_options", NamespaceOption), Field(3, "run_as_user", Int64Value),
    Field(4, "readonly_rootfs", "bool"), Field(5, "supplemental_groups", "int64", repeated=True),
    Field(6, "privileged", "bool"), Field(8, "run_as_group", Int64Value),
    Field(9, "seccomp", SecurityProfile), Field(10, "apparmor", SecurityProfile)])
HugepageLimit = Message("HugepageLimit", [
    Field(1, "page_size", "string"), Field(2, "limit", "uint64")])
LinuxContainerResources = Message("LinuxContainerResources", [
    Field(1, "cpu_period", "int64"), Field(2, "cpu_quota", "int64"),
    Field(3, "cpu_shares", "int64"), Field(4, "memory_limit_in_bytes", "int64"),
    Field(5, "oom_score_adj", "int64"), Field(6, "cpuset_cpus", "string"),
    Field(7, "cpuset_mems", "string"), Field(8, "hugepage_limits", HugepageLimit, repeated=True),
    Field(9, "unified", STR_MAP), Field(10, "memory_swap_limit_in_bytes", "int64")])
LinuxPodSandboxConfig = Message("LinuxPodSandboxConfig", [
    Field(1, "cgroup_parent", "string"),
    Field(2, "security_context", LinuxSandboxSecurityContext), Field(3, "sysctls", STR_MAP),
    Field(4, "overhead", LinuxContainerResources), Field(5, "resources", LinuxContainerResources)])
PodSandboxMetadata = Message("PodSandboxMetadata", [
    Field(1, "name", "string"), Field(2, "uid", "string"), Field(3, "namespace", "string"),
    Field(4, "attempt", "uint32")])
PodSandboxConfig = Message("PodSandboxConfig", [
    Field(1, "metadata", PodSandboxMetadata), Field(2, "hostname", "string"),
    Field(3, "log_directory", "string"), Field(4, "dns_config", DNSConfig),
    Field(6, "labels", STR_MAP), Field(7, "annotations", STR_MAP),
    Field(8, "linux", LinuxPodSandboxConfig)])
RunPodSandboxRequest = Message("RunPodSandboxRequest", [
    Field(1, "config", PodSandboxConfig), Field(2, "runtime_handler", "string")])
RunPodSandboxResponse = Message("RunPodSandboxResponse", [Field(1, "pod_sandbox_id", "string")])
PodSandboxIdRequest = Message("PodSandboxIdRequest", [Field(1, "pod_sandbox_id", "string")])
Empty = Message("Empty")

PodSandboxStatusRequest = Message("PodSandboxStatusRequest", [
    Field(1, "pod_sandbox_id", "string"), Field(2, "verbose", "bool")])
PodSandboxNetworkStatus = Message("PodSandboxNetworkStatus", [Field(1, "ip", "string")])
PodSandboxStatus = Message("PodSandboxStatus", [
    Field(1, "id", "string"), Field(2, "metadata", PodSandboxMetadata), Field(3, "state", "enum"),
    Field(4, "created_at", "int64"), Field(5, "network", PodSandboxNetworkStatus),
    Field(7, "labels", STR_MAP), Field(8, "annotations", STR_MAP),
    Field(9, "runtime_handler", "string")])
PodSandboxStatusResponse = Message("PodSandboxStatusResponse", [
    Field(1, "status", PodSandboxStatus), Field(2, "info", STR_MAP)])
PodSandboxStateValue = Message("PodSandboxStateValue", [Field(1, "state", "enum")])
PodSandboxFilter = Message("PodSandboxFilter", [
    Field(1, "id", "string"), Field(2, "state", PodSandboxStateValue),
    Field(3, "label_selector", STR_MAP)])
ListPodSandboxRequest = Message("ListPodSandboxRequest", [Field(1, "filter", PodSandboxFilter)])
PodSandbox = Message("PodSandbox", [
    Field(1, "id", "string"), Field(2, "metadata", PodSandboxMetadata), Field(3, "state", "enum"),
    Field(4, "created_at", "int64"), Field(5, "labels", STR_MAP),
    Field(6, "annotations", STR_MAP), Field(7, "runtime_handler", "string")])
ListPodSandboxResponse = Message("ListPodSandboxResponse", [
    Field(1, "items", PodSandbox, repeated=True)])

ImageSpec = Message("ImageSpec", [
    Field(1, "image", "string"), Field(2, "annotations", STR_MAP),
    Field(18, "user_specified_image", "string"), Field(19, "runtime_handler", "string"),
    Field(20, "image_ref", "string")])
# value is `bytes` in cri-api from Kubernetes 1.37 (`string` before, as in containerd 1.7): the
# same wire type, so a str is sent as UTF-8 either way
KeyValue = Message("KeyValue", [Field(1, "key", "string"), Field(2, "value", "string")])
Mount = Message("Mount", [
    Field(1, "container_path", "string"), Field(2, "host_path", "string"),
    Field(3, "readonly", "bool"), Field(4, "selinux_relabel", "bool"),
    Field(5, "propagation", "enum")])
LinuxContainerSecurityContext = Message("LinuxContainerSecurityContext", [
    Field(2, "privileged", "bool"), Field(3, "namespace_options", NamespaceOption),
    Field(5, "run_as_user", Int64Value), Field(7, "readonly_rootfs", "bool")])
LinuxContainerConfig = Message("LinuxContainerConfig", [
    Field(1, "resources", LinuxContainerResources),
    Field(2, "security_context", LinuxContainerSecurityContext)])
ContainerMetadata = Message("ContainerMetadata", [
    Field(1, "name", "string"), Field(2, "attempt", "uint32")])
ContainerConfig = Message("ContainerConfig", [
    Field(1, "metadata", ContainerMetadata), Field(2, "image", ImageSpec),
    Field(3, "command", "string", repeated=True), Field(4, "args", "string", repeated=True),
    Field(5, "working_dir", "string"), Field(6, "envs", KeyValue, repeated=True),
    Field(7, "mounts", Mount, repeated=True), Field(9, "labels", STR_MAP),
    Field(10, "annotations", STR_MAP), Field(11, "log_path", "string"),
    Field(12, "stdin", "bool"), Field(13, "stdin_once", "bool"), Field(14, "tty", "bool"),
    Field(15, "linux", LinuxContainerConfig)])
CreateContainerRequest = Message("CreateContainerRequest", [
    Field(1, "pod_sandbox_id", "string"), Field(2, "config", ContainerConfig),
    Field(3, "sandbox_config", PodSandboxConfig)])
CreateContainerResponse = Message("CreateContainerResponse", [Field(1, "container_id", "string")])
ContainerIdRequest = Message("ContainerIdRequest", [Field(1, "container_id", "string")])
StopContainerRequest = Message("StopContainerRequest", [
    Field(1, "container_id", "string"), Field(2, "timeout", "int64")])

ContainerStateValue = Message("ContainerStateValue", [Field(1, "state", "enum")])
ContainerFilter = Message("ContainerFilter", [
    Field(1, "id", "string"), Field(2, "state", ContainerStateValue),
    Field(3, "pod_sandbox_id", "string"), Field(4, "label_selector", STR_MAP)])
ListContainersRequest = Message("ListContainersRequest", [Field(1, "filter", ContainerFilter)])
Container = Message("Container", [
    Field(1, "id", "string"), Field(2, "pod_sandbox_id", "string"),
    Field(3, "metadata", ContainerMetadata), Field(4, "image", ImageSpec),
    Field(5, "image_ref", "string"), Field(6, "state", "enum"), Field(7, "created_at", "int64"),
    Field(8, "labels", STR_MAP), Field(9, "annotations", STR_MAP), Field(10, "image_id", "string")])
ListContainersResponse = Message("ListContainersResponse", [
    Field(1, "containers", Container, repeated=True)])

ContainerStatusRequest = Message("ContainerStatusRequest", [
    Field(1, "container_id", "string"), Field(2, "verbose", "bool")])
ContainerResources = Message("ContainerResources", [Field(1, "linux", LinuxContainerResources)])
ContainerStatus = Message("ContainerStatus", [
    Field(1, "id", "string"), Field(2, "metadata", ContainerMetadata), Field(3, "state", "enum"),
    Field(4, "created_at", "int64"), Field(5, "started_at", "int64"),
    Field(6, "finished_at", "int64"), Field(7, "exit_code", "int32"),
    Field(8, "image", ImageSpec), Field(9, "image_ref", "string"), Field(10, "reason", "string"),
    Field(11, "message", "string"), Field(12, "labels", STR_MAP),
    Field(13, "annotations", STR_MAP), Field(14, "mounts", Mount, repeated=True),
    Field(15, "log_path", "string"), Field(16, "resources", ContainerResources),
    Field(17, "image_id", "string")])
ContainerStatusResponse = Message("ContainerStatusResponse", [
    Field(1, "status", ContainerStatus), Field(2, "info", STR_MAP)])

UpdateContainerResourcesRequest = Message("UpdateContainerResourcesRequest", [
    Field(1, "container_id", "string"), Field(2, "linux", LinuxContainerResources),
    Field(4, "annotations", STR_MAP)])

ExecSyncRequest = Message("ExecSyncRequest", [
    Field(1, "container_id", "string"), Field(2, "cmd", "string", repeated=True),
    Field(3, "timeout", "int64")])
ExecSyncResponse = Message("ExecSyncResponse", [
    Field(1, "stdout", "bytes"), Field(2, "stderr", "bytes"), Field(3, "exit_code", "int32")])

ImageFilter = Message("ImageFilter", [Field(1, "image", ImageSpec)])
ListImagesRequest = Message("ListImagesRequest", [Field(1, "filter", ImageFilter)])
Image = Message("Image", [
    Field(1, "id", "string"), Field(2, "repo_tags", "string", repeated=True),
    Field(3, "repo_digests", "string", repeated=True), Field(4, "size", "uint64"),
    Field(7, "spec", ImageSpec), Field(8, "pinned", "bool")])
ListImagesResponse = Message("ListImagesResponse", [Field(1, "images", Image, repeated=True)])

# method -> (service, request schema, response schema)
METHODS = {
    "Version": (RUNTIME, VersionRequest, VersionResponse),
    "RunPodSandbox": (RUNTIME, RunPodSandboxRequest, RunPodSandboxResponse),
    "StopPodSandbox": (RUNTIME, PodSandboxIdRequest, Empty),
    "RemovePodSandbox": (RUNTIME, PodSandboxIdRequest, Empty),
    "PodSandboxStatus": (RUNTIME, PodSandboxStatusRequest, PodSandboxStatusResponse),
    "ListPodSandbox": (RUNTIME, ListPodSandboxRequest, ListPodSandboxResponse),
    "CreateContainer": (RUNTIME, CreateContainerRequest, CreateContainerResponse),
    "StartContainer": (RUNTIME, ContainerIdRequest, Empty),
    "StopContainer": (RUNTIME, StopContainerRequest, Empty),
    "RemoveContainer": (RUNTIME, ContainerIdRequest, Empty),
    "ListContainers": (RUNTIME, ListContainersRequest, ListContainersResponse),
    "ContainerStatus": (RUNTIME, ContainerStatusRequest, ContainerStatusResponse),
    "UpdateContainerResources": (RUNTIME, UpdateContainerResourcesRequest, Empty),
    "ExecSync": (RUNTIME, ExecSyncRequest, ExecSyncResponse),
    "ListImages": (IMAGES, ListImagesRequest, ListImagesResponse),
}

# the keys of LinuxContainerResources a caller may pass (plus the short memory_limit)
RESOURCE_KEYS = ("cpu_period", "cpu_quota", "cpu_shares", "memory_limit_in_bytes",
                 "oom_score_adj", "cpuset_cpus", "cpuset_mems", "unified",
                 "memory_swap_limit_in_bytes")


class CRIError(RuntimeError):
    """A CRI call failed: ``method``, ``code`` (a ``grpc.StatusCode``) and ``details``."""

    def __init__(self, method, code, details):
        self.method, self.code, self.details = method, code, details
        name = code.name if code is not None else "UNKNOWN"
        super().__init__("CRI %s failed: %s: %s" % (method, name, details))


def grpc_target(target):
    """A grpc channel target for a socket path, ``unix:`` URI or ``host:port``."""
    target = str(target)
    if target.startswith(("unix:", "dns:", "ipv4:", "ipv6:")):
        return target
    if target.startswith("tcp://"):
        return target[len("tcp://"):]
    if target.startswith("/") or target.startswith("."):
        return "unix:" + target
    return target


def resources_message(resources):
    """LinuxContainerResources from a dict with its field names (``memory_limit`` allowed)."""
    if resources is None:
        return None
    out = {}
    for key, value in resources.items():
        if key == "memory_limit":
            key = "memory_limit_in_bytes"
        if key not in RESOURCE_KEYS:
            raise KeyError("unknown container resource %r (one of %s)"
                           % (key, ", ".join(RESOURCE_KEYS)))
        if value is not None:
            out[key] = value
    return out


class CRI:
    """A client of one CRI runtime endpoint (RuntimeService and ImageService v1)."""

    def __init__(self, target, timeout=30.0):
        self.target = grpc_target(target)
        self.timeout = timeout
        self._channel = grpc.insecure_channel(self.target, options=[
            ("grpc.max_receive_message_length", 16 * 1024 * 1024),
            ("grpc.enable_http_proxy", 0)])
        self._stubs = {}

    # -- plumbing ------------------------------------------------------
    def call(self, method, request, timeout=None):
        """Call METHOD (a key of ``METHODS``) with REQUEST (a dict); return the decoded reply."""
        service, req_schema, resp_schema = METHODS[method]
        stub = self._stubs.get(method)
        if stub is None:
            stub = self._channel.unary_unary(
                "/%s/%s" % (service, method), request_serializer=req_schema.encode,
                response_deserializer=resp_schema.decode)
            self._stubs[method] = stub
        try:
            return stub(request, timeout=self.timeout if timeout is None else timeout)
        except grpc.RpcError as exc:
            code = exc.code() if hasattr(exc, "code") else None
            details = exc.details() if hasattr(exc, "details") else str(exc)
            raise CRIError(method, code, details) from None

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def wait_ready(self, timeout=30.0, alive=None):
        """Call Version until it answers (or TIMEOUT passes); ALIVE() False stops early."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            try:
                return self.version(timeout=min(2.0, max(0.1, deadline - time.monotonic())))
            except CRIError as exc:
                last = exc
            if alive is not None and not alive():
                raise CRIError("Version", None, "the runtime exited (last error: %s)" % last)
            if time.monotonic() >= deadline:
                raise TimeoutError("no CRI answer at %s within %.0f s: %s"
                                   % (self.target, timeout, last))
            time.sleep(0.1)

    # -- runtime -------------------------------------------------------
    def version(self, timeout=None):
        """``{"version", "runtime_name", "runtime_version", "runtime_api_version"}``."""
        return self.call("Version", {"version": "v1"}, timeout=timeout)

    @staticmethod
    def sandbox_config(name, namespace, uid, annotations=None, labels=None, cgroup_parent=None,
                       log_directory=None, hostname=None, attempt=0, host_network=True):
        """A PodSandboxConfig dict as the kubelet builds it (host network unless told).

        As the kubelet, no hostname for a host-network pod (it shares the node's UTS
        namespace: runc refuses to set one); HOSTNAME (default NAME) otherwise."""
        ns = NAMESPACE_NODE if host_network else NAMESPACE_POD
        linux = {"security_context": {"namespace_options": {
            "network": ns, "pid": NAMESPACE_CONTAINER, "ipc": NAMESPACE_POD}}}
        if cgroup_parent:
            linux["cgroup_parent"] = cgroup_parent
        config = {"metadata": {"name": name, "uid": uid, "namespace": namespace,
                               "attempt": attempt},
                  "labels": dict(labels or {}),
                  "annotations": dict(annotations or {}), "linux": linux}
        if not host_network:
            config["hostname"] = hostname or name
        if log_directory:
            config["log_directory"] = log_directory
        return config

    def run_pod_config(self, config, runtime_handler=""):
        """RunPodSandbox with a full PodSandboxConfig dict; returns the sandbox id."""
        return self.call("RunPodSandbox", {"config": config,
                                           "runtime_handler": runtime_handler})["pod_sandbox_id"]

    def run_pod(self, name, namespace, uid, annotations=None, labels=None, cgroup_parent=None,
                log_directory=None, attempt=0):
        """Run a host-network pod sandbox; returns its id (see :meth:`sandbox_config`)."""
        return self.run_pod_config(self.sandbox_config(
            name, namespace, uid, annotations=annotations, labels=labels,
            cgroup_parent=cgroup_parent, log_directory=log_directory, attempt=attempt))

    def stop_pod(self, sandbox_id):
        self.call("StopPodSandbox", {"pod_sandbox_id": sandbox_id})

    def remove_pod(self, sandbox_id):
        self.call("RemovePodSandbox", {"pod_sandbox_id": sandbox_id})

    def pod_status(self, sandbox_id, verbose=False):
        """``{"status": PodSandboxStatus, "info": {...}}`` (info["info"] is JSON when verbose)."""
        return self.call("PodSandboxStatus", {"pod_sandbox_id": sandbox_id, "verbose": verbose})

    def list_pods(self, labels=None, state=None):
        """PodSandbox dicts, optionally filtered by label selector and state (SANDBOX_*)."""
        filt = {}
        if labels:
            filt["label_selector"] = dict(labels)
        if state is not None:
            filt["state"] = {"state": state}
        return self.call("ListPodSandbox", {"filter": filt} if filt else {}).get("items", [])

    def create_container(self, sandbox_id, sandbox_config, name, image, command=None, args=None,
                         resources=None, annotations=None, log_path=None, labels=None, envs=None,
                         attempt=0, mounts=None, working_dir=None, share_pid=False):
        """CreateContainer in SANDBOX_ID (SANDBOX_CONFIG is the pod's config, as the kubelet
        sends it again); RESOURCES is a dict of LinuxContainerResources fields; LOG_PATH is
        relative to the sandbox's log_directory. Returns the container id.

        Namespaces as the kubelet sets them: the pod's network and IPC, and a PID
        namespace of the container's own (its first process is PID 1 there, so it
        ignores SIGTERM unless it traps it) unless SHARE_PID (shareProcessNamespace)
        or the pod uses the node's."""
        pod_ns = (((sandbox_config or {}).get("linux") or {}).get("security_context") or {}) \
            .get("namespace_options") or {}
        if pod_ns.get("pid") == NAMESPACE_NODE:
            pid = NAMESPACE_NODE
        else:
            pid = NAMESPACE_POD if share_pid else NAMESPACE_CONTAINER
        config = {"metadata": {"name": name, "attempt": attempt}, "image": {"image": image},
                  "command": list(command or []), "args": list(args or []),
                  "labels": dict(labels or {}), "annotations": dict(annotations or {}),
                  "envs": [{"key": k, "value": v} for k, v in sorted((envs or {}).items())],
                  "mounts": list(mounts or []),
                  "linux": {"resources": resources_message(resources or {}),
                            "security_context": {"namespace_options": {
                                "network": pod_ns.get("network", NAMESPACE_POD),
                                "ipc": pod_ns.get("ipc", NAMESPACE_POD), "pid": pid}}}}
        if log_path:
            config["log_path"] = log_path
        if working_dir:
            config["working_dir"] = working_dir
        return self.call("CreateContainer", {"pod_sandbox_id": sandbox_id, "config": config,
                                             "sandbox_config": sandbox_config})["container_id"]

    def start(self, container_id):
        self.call("StartContainer", {"container_id": container_id})

    def stop(self, container_id, timeout=10):
        """StopContainer: SIGTERM (or the image's stop signal), SIGKILL after TIMEOUT s."""
        self.call("StopContainer", {"container_id": container_id, "timeout": int(timeout)},
                  timeout=max(self.timeout, timeout + 15))

    def remove(self, container_id):
        self.call("RemoveContainer", {"container_id": container_id})

    def update_resources(self, container_id, cpuset_cpus=None, cpuset_mems=None,
                         cpu_shares=None, cpu_quota=None, cpu_period=None, memory_limit=None,
                         annotations=None, **more):
        """UpdateContainerResources with the given LinuxContainerResources fields.

        Fields left out are sent as zero (absent on the wire); containerd 1.7 keeps
        the container's previous value for those (tested: updating only the cpuset
        leaves cpu.shares, the CFS quota and the memory limit as they were). The
        kubelet always sends the full set."""
        linux = resources_message(dict(
            more, cpuset_cpus=cpuset_cpus, cpuset_mems=cpuset_mems, cpu_shares=cpu_shares,
            cpu_quota=cpu_quota, cpu_period=cpu_period, memory_limit_in_bytes=memory_limit))
        request = {"container_id": container_id, "linux": linux}
        if annotations:
            request["annotations"] = dict(annotations)
        self.call("UpdateContainerResources", request)

    def status(self, container_id, verbose=False):
        """ContainerStatus dict; with VERBOSE, ``["info"]`` holds the runtime's info map
        (containerd: ``info["info"]`` a JSON document with ``pid``, ``runtimeSpec``, ...)."""
        reply = self.call("ContainerStatus", {"container_id": container_id, "verbose": verbose})
        status = reply.get("status", {})
        if verbose:
            status = dict(status, info=reply.get("info", {}))
        return status

    def state(self, container_id):
        """The container's state name: CREATED, RUNNING, EXITED or UNKNOWN."""
        return CONTAINER_STATES.get(self.status(container_id).get("state", 0), "UNKNOWN")

    def pid(self, container_id):
        """The host PID of the container's first process (containerd's verbose info), or None."""
        info = self.status(container_id, verbose=True).get("info", {}).get("info")
        if not info:
            return None
        pid = json.loads(info).get("pid")
        return pid or None

    def list_containers(self, sandbox_id=None, labels=None, state=None):
        """Container dicts, optionally filtered by sandbox, label selector and state."""
        filt = {}
        if sandbox_id:
            filt["pod_sandbox_id"] = sandbox_id
        if labels:
            filt["label_selector"] = dict(labels)
        if state is not None:
            filt["state"] = {"state": state}
        return self.call("ListContainers", {"filter": filt} if filt else {}).get("containers", [])

    def exec_sync(self, container_id, cmd, timeout=10):
        """ExecSync: ``{"stdout": bytes, "stderr": bytes, "exit_code": int}``."""
        reply = self.call("ExecSync", {"container_id": container_id, "cmd": list(cmd),
                                       "timeout": int(timeout)}, timeout=timeout + 15)
        return {"stdout": reply.get("stdout", b""), "stderr": reply.get("stderr", b""),
                "exit_code": reply.get("exit_code", 0)}

    # -- images --------------------------------------------------------
    def list_images(self):
        """Image dicts (``id``, ``repo_tags``, ``repo_digests``, ``size``)."""
        return self.call("ListImages", {}).get("images", [])


def parse_log(text):
    """CRI log lines (``TIMESTAMP STREAM P|F TEXT``) -> [(stream, text)], partial lines joined."""
    out, partial = [], {}
    for line in text.splitlines():
        parts = line.split(" ", 3)
        if len(parts) < 3:
            continue
        stream, tag = parts[1], parts[2]
        body = parts[3] if len(parts) > 3 else ""
        partial[stream] = partial.get(stream, "") + body
        if tag.startswith("F"):
            out.append((stream, partial.pop(stream)))
    return out
