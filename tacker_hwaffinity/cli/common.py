"""Arguments and loading shared by the scheduling subcommands."""
import argparse
import os
import sys
import time

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects.yamlio import gc_paused, load_objects
from tacker_hwaffinity.scheduling.profile import Profile
from tacker_hwaffinity.scheduling import workloads
from tacker_hwaffinity.scheduling.snapshot import (
    SNAPSHOT_FIELDS, check_cluster_files, check_nodes, cluster_from_objects)

# Set (to anything non-empty) to get one "timing:" line on stderr; benchmarks read it.
TIMING_ENV = "HWAFFINITY_TIMING"
# kubectl's kubeconfig when neither --kubeconfig nor $KUBECONFIG names one
DEFAULT_KUBECONFIG = "~/.kube/config"


class PhaseTimes:
    """Wall time of each phase of a command, reported on stderr when TIMING_ENV is set."""

    def __init__(self):
        self.enabled = bool(os.environ.get(TIMING_ENV))
        self.last = time.perf_counter()
        self.phases = []

    def done(self, phase):
        now = time.perf_counter()
        self.phases.append((phase, now - self.last))
        self.last = now

    def report(self, command):
        if self.enabled:
            sys.stderr.write("hwaffinity %s: timing: %s\n" % (command, " ".join(
                "%s=%.3f" % p for p in self.phases)))


def add_cluster_args(parser):
    """The cluster to plan on: snapshot files, or an API server through a kubeconfig
    found as kubectl finds it (``cluster_source``)."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--cluster", action="append", metavar="FILE|DIR",
                        help="cluster snapshot: nodes, pods and namespaces as "
                             "'kubectl get nodes,pods,namespaces -A -o yaml' prints them; "
                             "add services,replicasets,statefulsets,replicationcontrollers "
                             "for default topology spreading (repeatable; a directory "
                             "gives its .yaml, .yml and .json files; '-' reads standard "
                             "input)")
    source.add_argument("--kubeconfig", metavar="FILE",
                        help="read the cluster from its API server (get/list: "
                             "deploy/rbac/plan-reader.yaml). Without --cluster or this, "
                             "$KUBECONFIG, then ~/.kube/config, as kubectl")
    parser.add_argument("--context", metavar="NAME",
                        help="the kubeconfig context to use (default: its current context)")
    parser.add_argument("--scheduler-config", metavar="FILE",
                        help="a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1); "
                             "its first profile is used")


def cluster_source(args):
    """(FILES, None, None) or (None, KUBECONFIG, CONTEXT): the snapshot files given, or
    the kubeconfig kubectl would use: --kubeconfig, else $KUBECONFIG (a list of files
    separated by ':'), else ~/.kube/config if it exists."""
    context = getattr(args, "context", None)
    if args.cluster:
        if context is not None:
            raise InputError("--context selects a kubeconfig context; it cannot apply to "
                             "--cluster snapshot files", field="--context")
        if sum(1 for c in args.cluster if c == "-") > 1:
            raise InputError("standard input ('-') can be given only once", field="--cluster")
        return args.cluster, None, None
    kubeconfig = getattr(args, "kubeconfig", None) or os.environ.get("KUBECONFIG")
    if not kubeconfig:
        default = os.path.expanduser(DEFAULT_KUBECONFIG)
        kubeconfig = default if os.path.isfile(default) else None
    if kubeconfig is None:
        raise InputError("no cluster to read: give --cluster FILE (a 'kubectl get "
                         "nodes,pods,namespaces -A -o yaml' snapshot) or --kubeconfig FILE, "
                         "or set KUBECONFIG")
    return None, kubeconfig, context


def read_live(kubeconfig, context, kept, lists=None):
    """[(object, source)] and notes from the API server, pruned to KEPT (a kept-fields
    table); connection problems are bad input (one line, exit 2) like a bad file."""
    from tacker_hwaffinity.kube import client, cluster
    from tacker_hwaffinity.objects import pruning
    try:
        conn = client.connect(kubeconfig, context)
        try:
            return cluster.read_cluster(conn, pruning.pruner(kept),
                                        **({"lists": lists} if lists else {}))
        finally:
            conn.close()
    except client.KubeError as e:
        raise InputError(str(e), field="--kubeconfig")


def add_schema_args(parser):
    """--kubernetes-version and --strict: the schema check (doc/cli.md, "Schema check")."""
    parser.add_argument("--kubernetes-version", metavar="1.N",
                        help="check manifests against this Kubernetes release's OpenAPI "
                             "schema (1.30 to the newest the schema extra has; default: "
                             "the newest)")
    parser.add_argument("--strict", action="store_true",
                        help="unknown fields are errors (exit 2), not warnings")


def schema_check(args):
    """The objects.schema.Check the schema arguments ask for; its warnings go to stderr
    as they are found."""
    from tacker_hwaffinity import extras
    from tacker_hwaffinity.cli import warnings
    from tacker_hwaffinity.objects import schema
    return schema.Check.from_flags(args.kubernetes_version, args.strict, report=warnings.emit,
                                   hint=extras.install_hint(schema.EXTRA))
def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError("expected a positive integer, got %r" % text)
    return value


def add_limit_args(parser):
    """--max-pods: the most pods the command plans (the replicas of every workload)."""
    parser.add_argument("--max-pods", type=_positive_int, default=workloads.MAX_PODS,
                        metavar="N",
                        help="refuse, before making any pod, workloads that create more than "
                             "N pods in all (the sum of their replicas)")


def load_profile(path):
    if not path:
        return Profile()
    objs = load_objects([path])
    if len(objs) != 1:
        raise InputError("expected exactly one KubeSchedulerConfiguration, found %d objects"
                         % len(objs), source=path)
    return Profile(objs[0][0], source=path)


def load_inputs(args, times=None, check=None):
    """(snapshot, profile, notes) from the common arguments.

    TIMES (a PhaseTimes) gets the phases "parse" (reading the files) and
    "snapshot" (building the scheduler's nodes and pods). CHECK (an
    ``objects.schema.Check``) checks the snapshot files' keys while they load.
    """
    files, kubeconfig, context = cluster_source(args)
    live_notes = []
    with gc_paused():
        if kubeconfig is not None:
            objects, live_notes = read_live(kubeconfig, context, SNAPSHOT_FIELDS)
        else:
            known = check.snapshot(SNAPSHOT_FIELDS) if check is not None else None
            objects = load_objects(files, keep=SNAPSHOT_FIELDS, known=known)
            if check is not None:
                check.snapshot_done(known)
            check_cluster_files(objects, files)
        if times is not None:
            times.done("parse")
        snapshot = cluster_from_objects(objects)
        del objects
        if kubeconfig is None:
            check_nodes(snapshot.nodes, args.cluster)
        if times is not None:
            times.done("snapshot")
    profile = load_profile(args.scheduler_config)
    return snapshot, profile, live_notes + snapshot.notes + profile.notes
