"""What a file must hold to be a cluster snapshot, or a set of workloads: refused at
once, naming the file, when it holds nothing of what it is read for."""
from collections.abc import Collection, Sequence

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import kinds
from tacker_hwaffinity.objects.yamlio import Loaded, expand_paths, source_name
from tacker_hwaffinity.scheduling import workloads
from tacker_hwaffinity.scheduling.model import Node
from tacker_hwaffinity.scheduling.snapshot import CLUSTER_KINDS, workload_objects

# What prints a cluster snapshot: errors about a file that is none say so.
SNAPSHOT_COMMAND = "kubectl get nodes,pods,namespaces -A -o yaml"
# Built-in kinds a cluster file may hold that the engine skips (with a note): a file of
# nothing else, or custom resources, is not a snapshot (workload manifests given as
# --cluster, say).
SKIPPED_CLUSTER_KINDS = frozenset(
    {k for names in kinds.FALLBACK.values() for k in names}
    | set(workloads.WORKLOAD_KINDS) | {"CronJob"}) - set(CLUSTER_KINDS)
WORKLOADS_EXPECTED = ("Pod, Deployment, ReplicaSet, StatefulSet, DaemonSet, Job or "
                      "ReplicationController manifests")


def _held(kinds: Sequence[object]) -> str:
    """'2 Deployment, 1 Service': how many objects of each kind KINDS (a list) holds."""
    counts: dict[object, int] = {}
    for kind in kinds:
        counts[kind] = counts.get(kind, 0) + 1
    return ", ".join("%d %s" % (n, kind) for kind, n in counts.items())


def _by_source(objects: Sequence[Loaded], paths: Sequence[str]) -> dict[str, list[object]]:
    """{source name: [its objects]} for every file of PATHS, in order."""
    found: dict[str, list[object]] = {source_name(p): [] for p in expand_paths(paths)}
    for obj, source in objects:
        found.setdefault(source, []).append(obj)
    return found


def _kind(obj: object) -> object:
    return obj.get("kind") if isinstance(obj, dict) else None


def check_cluster_files(objects: Sequence[Loaded], paths: Sequence[str],
                        skipped: Collection[str] = SKIPPED_CLUSTER_KINDS) -> None:
    """InputError for a cluster file of PATHS (OBJECTS: what load_objects read from them)
    that holds no object, or only objects of the SKIPPED kinds and custom resources: it
    is no snapshot."""
    for source, held in _by_source(objects, paths).items():
        if not held:
            raise InputError("no Kubernetes objects in the file: expected '%s'"
                             % SNAPSHOT_COMMAND, source=source)
        if all(_kind(o) in skipped or (isinstance(o, dict) and kinds.is_custom(o))
               for o in held):
            raise InputError("holds %s and nothing a cluster snapshot is read for (%s): "
                             "expected '%s'" % (_held([_kind(o) for o in held]),
                                                ", ".join(CLUSTER_KINDS), SNAPSHOT_COMMAND),
                             source=source)


def check_nodes(nodes: Sequence[Node] | Sequence[object], paths: Sequence[str]) -> None:
    """InputError when the cluster files PATHS hold no node (NODES: those they hold)."""
    if not nodes:
        raise InputError("no nodes in the cluster snapshot %s: expected '%s'"
                         % (", ".join(source_name(p) for p in paths), SNAPSHOT_COMMAND))


def check_workload_files(objects: Sequence[Loaded], paths: Sequence[str]) -> None:
    """InputError for a workload file of PATHS that holds no object."""
    for source, held in _by_source(objects, paths).items():
        if not held:
            raise InputError("no Kubernetes objects in the file: expected %s"
                             % WORKLOADS_EXPECTED, source=source)


def check_has_workloads(objects: Sequence[Loaded], paths: Sequence[str]) -> None:
    """InputError when none of OBJECTS (read from PATHS) is a workload whose pods are
    planned (``snapshot.workload_objects``): the notes would say what was skipped."""
    planned, skipped = workload_objects(objects)
    if not planned:
        raise InputError("no workloads in %s: expected %s%s"
                         % (", ".join(source_name(p) for p in paths), WORKLOADS_EXPECTED,
                            "".join(" (%s)" % n for n in skipped)))
