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
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--cluster", action="append", metavar="FILE",
                        help="cluster snapshot: nodes, pods and namespaces as "
                             "'kubectl get nodes,pods,namespaces -A -o yaml' prints them; "
                             "add services,replicasets,statefulsets,replicationcontrollers "
                             "for default topology spreading (repeatable; '-' reads "
                             "standard input)")
    source.add_argument("--kubeconfig", metavar="FILE",
                        help="read the snapshot from the cluster's API server instead "
                             "(needs get/list: deploy/rbac/plan-reader.yaml)")
    parser.add_argument("--context", metavar="NAME",
                        help="the kubeconfig context to use (default: its current context)")
    parser.add_argument("--scheduler-config", metavar="FILE",
                        help="a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1); "
                             "its first profile is used")


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


def load_inputs(args, times=None):
    """(snapshot, profile, notes) from the common arguments.

    TIMES (a PhaseTimes) gets the phases "parse" (reading the files) and
    "snapshot" (building the scheduler's nodes and pods).
    """
    kubeconfig = getattr(args, "kubeconfig", None)      # commands without live mode lack it
    context = getattr(args, "context", None)
    if context is not None and kubeconfig is None:
        raise InputError("--context needs --kubeconfig", field="--context")
    if args.cluster and sum(1 for c in args.cluster if c == "-") > 1:
        raise InputError("standard input ('-') can be given only once", field="--cluster")
    live_notes = []
    with gc_paused():
        if kubeconfig is not None:
            objects, live_notes = read_live_cluster(kubeconfig, context)
        else:
            objects = load_objects(args.cluster, keep=SNAPSHOT_FIELDS)
            check_cluster_files(objects, args.cluster)
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


def read_live_cluster(kubeconfig, context):
    """[(object, source)] and notes from the API server; connection problems
    are bad input (one line, exit 2) like a bad file."""
    from tacker_hwaffinity.kube import client, cluster
    from tacker_hwaffinity.objects import pruning
    try:
        conn = client.connect(kubeconfig, context)
        try:
            return cluster.read_cluster(conn, pruning.pruner(SNAPSHOT_FIELDS))
        finally:
            conn.close()
    except client.KubeError as e:
        raise InputError(str(e), field="--kubeconfig")
