"""The one way in: read a source into an ``Intake``.

Every entry checks what it reads against the schema when given a ``Check`` (its
warnings are reported as found, and the ones this read added are the result's
``warnings``), names the file, object and field of any bad input (``InputError``), and
gathers the notes of each source: the API server's reads, the snapshot built, the
scheduler profile.
"""
import dataclasses
import time
from collections.abc import Collection, Sequence
from typing import Generic, Literal, TypeVar

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.intake.files import (
    SKIPPED_CLUSTER_KINDS, check_cluster_files, check_has_workloads, check_nodes,
    check_workload_files)
from tacker_hwaffinity.intake.source import Files, Live, Source
from tacker_hwaffinity.objects import namespaces
from tacker_hwaffinity.objects.namespaces import Target
from tacker_hwaffinity.objects.pruning import KeptFields
from tacker_hwaffinity.objects.schema import Check
from tacker_hwaffinity.objects.yamlio import (
    Loaded, expand_paths, gc_paused, load_objects, parse_documents, read_text, source_name)
from tacker_hwaffinity.scheduling import diagnosis
from tacker_hwaffinity.scheduling import workloads as workloads_
from tacker_hwaffinity.scheduling.profile import Profile
from tacker_hwaffinity.scheduling.snapshot import (
    SNAPSHOT_FIELDS, Snapshot, cluster_from_objects, count_pods, workload_objects)


@dataclasses.dataclass(frozen=True)
class Phase:
    """A phase of the read that ended at END (``time.perf_counter``)."""
    name: str
    end: float


@dataclasses.dataclass(frozen=True)
class Cluster:
    """The scheduler's snapshot of a cluster, and the scheduler profile to plan with."""
    snapshot: Snapshot
    profile: Profile


Content = TypeVar("Content", list[Loaded], Cluster)


@dataclasses.dataclass(frozen=True)
class Intake(Generic[Content]):
    """What came in (CONTENT: the objects, each with its source name, or the Cluster
    built of them), the notes of every source, the schema check's warnings that this
    read added, and the PHASES of the read."""
    content: Content
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    phases: tuple[Phase, ...] = ()


def _added(check: Check | None, before: int) -> tuple[str, ...]:
    return tuple(check.warnings[before:]) if check is not None else ()


def _load_checked(paths: Sequence[str], kept: KeptFields, check: Check | None) -> list[Loaded]:
    """The objects of PATHS pruned to KEPT, their keys checked meanwhile by CHECK."""
    known = check.snapshot(kept) if check is not None else None
    found = load_objects(paths, keep=kept, known=known)
    if check is not None:
        check.snapshot_done(known)
    return found


def objects(source: Source, kept: KeptFields, check: Check | None = None,
            lists: Literal["plan", "audit"] = "plan",
            skipped: Collection[str] = SKIPPED_CLUSTER_KINDS) -> Intake[list[Loaded]]:
    """The cluster's objects, pruned to KEPT: from its files (each must hold something
    besides the SKIPPED kinds; CHECK checks their keys while they load) or from its API
    server (LISTS: what ``plan`` or ``audit`` lists, ``intake.live``; what the server
    sends it validated itself)."""
    before = len(check.warnings) if check is not None else 0
    if isinstance(source, Live):
        from tacker_hwaffinity.intake import live  # the API client: only for a live read
        found, notes = live.read_live(source.kubeconfig, source.context, kept, lists)
    else:
        found, notes = _load_checked(source.paths, kept, check), []
        check_cluster_files(found, source.paths, skipped)
    return Intake(found, tuple(notes), _added(check, before))


def cluster(source: Source, check: Check | None = None,
            scheduler_config: str | None = None) -> Intake[Cluster]:
    """The scheduler's snapshot of the cluster and the profile of SCHEDULER_CONFIG (None:
    the default one); its phases "parse" (reading) and "snapshot" (building the
    scheduler's nodes and pods)."""
    with gc_paused():
        raw = objects(source, SNAPSHOT_FIELDS, check)
        parsed = Phase("parse", time.perf_counter())
        snapshot = cluster_from_objects(raw.content)
        notes, warnings = raw.notes, raw.warnings
        del raw     # the objects: the snapshot holds what it read of them
        if isinstance(source, Files):
            check_nodes(snapshot.nodes, source.paths)
        built = Phase("snapshot", time.perf_counter())
    scheduler = profile(scheduler_config)
    return Intake(Cluster(snapshot, scheduler),
                  notes + tuple(snapshot.notes) + tuple(scheduler.notes), warnings,
                  (parsed, built))


def namespace(flag: str | None, source: Source | None = None) -> Target:
    """Where the manifests' objects that name no namespace land, as kubectl decides:
    -n/--namespace FLAG, else the namespace of a live SOURCE's kubeconfig context, else
    ``default`` (``objects.namespaces``)."""
    context_namespace = None
    if flag is None and isinstance(source, Live):
        from tacker_hwaffinity.intake import live  # the API client: only for a live read
        context_namespace = live.context_namespace(source.kubeconfig, source.context)
    return namespaces.target(flag, context_namespace)


def workloads(paths: Sequence[str], check: Check | None = None,
              max_pods: int = workloads_.MAX_PODS,
              where: Target = Target()) -> Intake[list[Loaded]]:
    """The workload files PATHS, refused at once when a file holds no object, or a Node,
    when none of them holds a workload, or when the workloads would create more than
    MAX_PODS pods (counted before any is made). A kind the API server would refuse is
    refused first (``workload_objects``); CHECK runs before the count: the schema names a
    wrong type as the API server does. Objects that name no namespace land in WHERE's (a
    note says so)."""
    before = len(check.warnings) if check is not None else 0
    found = load_objects(paths)
    check_workload_files(found, paths)
    workload_objects(found)
    if check is not None:
        check.objects(found)
    count_pods(found, max_pods)
    check_has_workloads(found, paths)
    found, notes = namespaces.place(found, where)
    return Intake(found, tuple(notes), _added(check, before))


def manifests(paths: Sequence[str], check: Check | None = None,
              where: Target = Target()) -> Intake[list[Loaded]]:
    """Every object of the files PATHS (none for no path), fully checked by CHECK; those
    that name no namespace land in WHERE's (a note says so)."""
    before = len(check.warnings) if check is not None else 0
    found = load_objects(paths) if paths else []
    if check is not None:
        check.objects(found)
    found, notes = namespaces.place(found, where)
    return Intake(found, tuple(notes), _added(check, before))


def check_answerable(manifests: Intake[list[Loaded]], cluster: Intake[Cluster],
                     topology_key: str | None = None) -> list[str]:
    """InputError when a plan of MANIFESTS on CLUSTER would answer another question than
    asked: no node carries TOPOLOGY_KEY (the domain to report; None: none asked). The
    warning when an object names a namespace the cluster lacks (when its snapshot lists
    namespaces): the API server would refuse it until it is created."""
    snapshot = cluster.content.snapshot
    if topology_key is not None:
        diagnosis.check_carried(snapshot.nodes, topology_key)
    if snapshot.namespaces:
        try:
            namespaces.check_exist(manifests.content, {n.name for n in snapshot.namespaces})
        except InputError as e:
            return [str(e)]
    return []


def annotated(paths: Sequence[str], where: Target = Target(), empty: str | None = None
              ) -> tuple[Intake[list[Loaded]], dict[str, str]]:
    """The objects of the files PATHS, as ``manifests`` reads them (unchecked), and the
    text of each file by its source name: an error inside a value (an annotation's) can
    then name the file's line. EMPTY: the error for a file that holds no object (None:
    no error)."""
    found: list[Loaded] = []
    texts: dict[str, str] = {}
    for path in expand_paths(paths):
        source = source_name(path)
        texts[source] = read_text(path)
        objects = parse_documents(texts[source], source)
        if empty is not None and not objects:
            raise InputError(empty, source=source)
        found += [(obj, source) for obj in objects]
    found, notes = namespaces.place(found, where)
    return Intake(found, tuple(notes)), texts


def documents(path: str) -> Intake[list[Loaded]]:
    """The documents of the one file PATH ('-': standard input), named PATH in errors."""
    return Intake([(doc, path) for doc in parse_documents(read_text(path), path)])


def profile(path: str | None) -> Profile:
    """The scheduler profile of the KubeSchedulerConfiguration file PATH (None: the
    default profile)."""
    if not path:
        return Profile()
    found = load_objects([path])
    if len(found) != 1:
        raise InputError("expected exactly one KubeSchedulerConfiguration, found %d objects"
                         % len(found), source=path)
    return Profile(found[0][0], source=path)
