"""The NRI protocol's messages and services (``nri.pkg.api.v1alpha1``), as schema tables.

Field numbers are those of containerd/nri's ``pkg/api/api.proto`` (v0.3 to v0.8,
the range containerd 1.7 and 2.x and CRI-O ship; later additions are skipped on
read by ``wire``). Only what a resource plugin reads or sends is declared.
"""
import typing

from tacker_hwaffinity.nri.wire import Field as F, Map, Message

PLUGIN_SERVICE = "nri.pkg.api.v1alpha1.Plugin"
RUNTIME_SERVICE = "nri.pkg.api.v1alpha1.Runtime"
DEFAULT_SOCKET = "/var/run/nri/nri.sock"

# enum Event
RUN_POD_SANDBOX, STOP_POD_SANDBOX, REMOVE_POD_SANDBOX = 1, 2, 3
CREATE_CONTAINER, POST_CREATE_CONTAINER, START_CONTAINER, POST_START_CONTAINER = 4, 5, 6, 7
UPDATE_CONTAINER, POST_UPDATE_CONTAINER, STOP_CONTAINER, REMOVE_CONTAINER = 8, 9, 10, 11
EVENT_NAMES = {1: "RunPodSandbox", 2: "StopPodSandbox", 3: "RemovePodSandbox",
               4: "CreateContainer", 5: "PostCreateContainer", 6: "StartContainer",
               7: "PostStartContainer", 8: "UpdateContainer", 9: "PostUpdateContainer",
               10: "StopContainer", 11: "RemoveContainer"}

# enum ContainerState
CONTAINER_CREATED, CONTAINER_PAUSED, CONTAINER_RUNNING, CONTAINER_STOPPED = 1, 2, 3, 4


def event_mask(*events: int) -> int:
    """The ConfigureResponse.events bit mask subscribing to EVENTS."""
    mask = 0
    for e in events:
        mask |= 1 << (e - 1)
    return mask


def _optional(kind):
    return Message("Optional" + kind.title(), [F(1, "value", kind)])


OptionalString, OptionalInt = _optional("string"), _optional("int64")
OptionalInt64, OptionalUInt64 = _optional("int64"), _optional("uint64")
OptionalUInt32, OptionalBool = _optional("uint32"), _optional("bool")

Empty = Message("Empty")
KeyValue = Message("KeyValue", [F(1, "key", "string"), F(2, "value", "string")])

LinuxMemory = Message("LinuxMemory", [
    F(1, "limit", OptionalInt64), F(2, "reservation", OptionalInt64),
    F(3, "swap", OptionalInt64), F(4, "kernel", OptionalInt64),
    F(5, "kernel_tcp", OptionalInt64), F(6, "swappiness", OptionalUInt64),
    F(7, "disable_oom_killer", OptionalBool), F(8, "use_hierarchy", OptionalBool)])
LinuxCPU = Message("LinuxCPU", [
    F(1, "shares", OptionalUInt64), F(2, "quota", OptionalInt64),
    F(3, "period", OptionalUInt64), F(4, "realtime_runtime", OptionalInt64),
    F(5, "realtime_period", OptionalUInt64), F(6, "cpus", "string"), F(7, "mems", "string")])
HugepageLimit = Message("HugepageLimit", [F(1, "page_size", "string"), F(2, "limit", "uint64")])
LinuxResources = Message("LinuxResources", [
    F(1, "memory", LinuxMemory), F(2, "cpu", LinuxCPU),
    F(3, "hugepage_limits", HugepageLimit, repeated=True),
    F(4, "blockio_class", OptionalString), F(5, "rdt_class", OptionalString),
    F(6, "unified", Map("string", "string"))])
LinuxNamespace = Message("LinuxNamespace", [F(1, "type", "string"), F(2, "path", "string")])

LinuxPodSandbox = Message("LinuxPodSandbox", [
    F(1, "pod_overhead", LinuxResources), F(2, "pod_resources", LinuxResources),
    F(3, "cgroup_parent", "string"), F(4, "cgroups_path", "string"),
    F(5, "namespaces", LinuxNamespace, repeated=True), F(6, "resources", LinuxResources)])
# Fields a pod sandbox and a container may hold (labels, annotations, args, env, mounts:
# one each), so that what a pod's creator writes bounds the time its messages take to
# read (a few ms each; wire.py): a real pod has tens, a container hundreds (its env).
MAX_SANDBOX_FIELDS, MAX_CONTAINER_FIELDS = 2048, 8192

PodSandbox = Message("PodSandbox", max_fields=MAX_SANDBOX_FIELDS, fields=[
    F(1, "id", "string"), F(2, "name", "string"), F(3, "uid", "string"),
    F(4, "namespace", "string"), F(5, "labels", Map("string", "string")),
    F(6, "annotations", Map("string", "string")), F(7, "runtime_handler", "string"),
    F(8, "linux", LinuxPodSandbox), F(9, "pid", "uint32"), F(10, "ips", "string", True)])

LinuxContainer = Message("LinuxContainer", [
    F(1, "namespaces", LinuxNamespace, repeated=True), F(3, "resources", LinuxResources),
    F(4, "oom_score_adj", OptionalInt), F(5, "cgroups_path", "string")])
Container = Message("Container", max_fields=MAX_CONTAINER_FIELDS, fields=[
    F(1, "id", "string"), F(2, "pod_sandbox_id", "string"), F(3, "name", "string"),
    F(4, "state", "enum"), F(5, "labels", Map("string", "string")),
    F(6, "annotations", Map("string", "string")),
    F(11, "linux", LinuxContainer), F(12, "pid", "uint32")])

LinuxContainerAdjustment = Message("LinuxContainerAdjustment", [
    F(2, "resources", LinuxResources), F(3, "cgroups_path", "string"),
    F(4, "oom_score_adj", OptionalInt)])
ContainerAdjustment = Message("ContainerAdjustment", [
    F(2, "annotations", Map("string", "string")), F(4, "env", KeyValue, repeated=True),
    F(6, "linux", LinuxContainerAdjustment)])
LinuxContainerUpdate = Message("LinuxContainerUpdate", [F(1, "resources", LinuxResources)])
ContainerUpdate = Message("ContainerUpdate", [
    F(1, "container_id", "string"), F(2, "linux", LinuxContainerUpdate),
    F(3, "ignore_failure", "bool")])
ContainerEviction = Message("ContainerEviction", [
    F(1, "container_id", "string"), F(2, "reason", "string")])

# -- the runtime's service (the plugin calls it) ------------------------------
RegisterPluginRequest = Message("RegisterPluginRequest", [
    F(1, "plugin_name", "string"), F(2, "plugin_idx", "string")])
UpdateContainersRequest = Message("UpdateContainersRequest", [
    F(1, "update", ContainerUpdate, repeated=True),
    F(2, "evict", ContainerEviction, repeated=True)])
UpdateContainersResponse = Message("UpdateContainersResponse", [
    F(1, "failed", ContainerUpdate, repeated=True)])

# -- the plugin's service (the runtime calls it) ------------------------------
ConfigureRequest = Message("ConfigureRequest", [
    F(1, "config", "string"), F(2, "runtime_name", "string"),
    F(3, "runtime_version", "string"), F(4, "registration_timeout", "int64"),
    F(5, "request_timeout", "int64")])
ConfigureResponse = Message("ConfigureResponse", [F(2, "events", "int32")])
SynchronizeRequest = Message("SynchronizeRequest", [        # one bad pod: its error
    F(1, "pods", PodSandbox, repeated=True, isolated=True),
    F(2, "containers", Container, repeated=True, isolated=True),
    F(3, "more", "bool")])
SynchronizeResponse = Message("SynchronizeResponse", [
    F(1, "update", ContainerUpdate, repeated=True), F(2, "more", "bool")])
CreateContainerRequest = Message("CreateContainerRequest", [
    F(1, "pod", PodSandbox), F(2, "container", Container)])
CreateContainerResponse = Message("CreateContainerResponse", [
    F(1, "adjust", ContainerAdjustment), F(2, "update", ContainerUpdate, repeated=True),
    F(3, "evict", ContainerEviction, repeated=True)])
UpdateContainerRequest = Message("UpdateContainerRequest", [
    F(1, "pod", PodSandbox), F(2, "container", Container),
    F(3, "linux_resources", LinuxResources)])
UpdateContainerResponse = Message("UpdateContainerResponse", [
    F(1, "update", ContainerUpdate, repeated=True),
    F(2, "evict", ContainerEviction, repeated=True)])
StopContainerRequest = Message("StopContainerRequest", [
    F(1, "pod", PodSandbox), F(2, "container", Container)])
StopContainerResponse = Message("StopContainerResponse", [
    F(1, "update", ContainerUpdate, repeated=True)])
StateChangeEvent = Message("StateChangeEvent", [
    F(1, "event", "enum"), F(2, "pod", PodSandbox), F(3, "container", Container)])

# method -> (request, response) of each service
PLUGIN_METHODS = {
    "Configure": (ConfigureRequest, ConfigureResponse),
    "Synchronize": (SynchronizeRequest, SynchronizeResponse),
    "Shutdown": (Empty, Empty),
    "CreateContainer": (CreateContainerRequest, CreateContainerResponse),
    "UpdateContainer": (UpdateContainerRequest, UpdateContainerResponse),
    "StopContainer": (StopContainerRequest, StopContainerResponse),
    "StateChange": (StateChangeEvent, Empty),
}
RUNTIME_METHODS = {
    "RegisterPlugin": (RegisterPluginRequest, Empty),
    "UpdateContainers": (UpdateContainersRequest, UpdateContainersResponse),
}


def cpuset_resources(cpus: str, mems: str) -> typing.Dict[str, typing.Dict[str, str]]:
    """LinuxResources that set only the cpuset (kernel list strings)."""
    cpu = {"cpus": cpus}
    if mems:
        cpu["mems"] = mems
    return {"cpu": cpu}
