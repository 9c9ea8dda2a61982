"""Arguments shared by the scheduling subcommands, and what they ask the intake for
(``tacker_hwaffinity.intake``): the cluster's source and the schema check."""
import argparse
import os
import sys
import time
from collections.abc import Iterable

from tacker_hwaffinity.cli import warnings
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.intake.read import Phase
from tacker_hwaffinity.intake.source import Source, cluster_source
from tacker_hwaffinity.objects import schema
from tacker_hwaffinity.scheduling import workloads

# Set (to anything non-empty) to get one "timing:" line on stderr; benchmarks read it.
TIMING_ENV = "HWAFFINITY_TIMING"


class PhaseTimes:
    """Wall time of each phase of a command, reported on stderr when TIMING_ENV is set."""

    def __init__(self) -> None:
        self.enabled = bool(os.environ.get(TIMING_ENV))
        self.last = time.perf_counter()
        self.phases: list[tuple[str, float]] = []

    def done(self, phase: str) -> None:
        now = time.perf_counter()
        self.phases.append((phase, now - self.last))
        self.last = now

    def ended(self, phases: Iterable[Phase]) -> None:
        """Take in PHASES that ended since the last one (the intake's)."""
        for phase in phases:
            self.phases.append((phase.name, phase.end - self.last))
            self.last = phase.end

    def report(self, command: str) -> None:
        if self.enabled:
            sys.stderr.write("hwaffinity %s: timing: %s\n" % (command, " ".join(
                "%s=%.3f" % p for p in self.phases)))


def add_cluster_args(parser: argparse.ArgumentParser) -> None:
    """The cluster to plan on: snapshot files, or an API server through a kubeconfig
    found as kubectl finds it (``source``)."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--cluster", action="append", metavar="FILE|DIR",
                        help="cluster snapshot: nodes, pods and namespaces as "
                             "'kubectl get nodes,pods,namespaces -A -o yaml' prints them; "
                             "add services,replicasets,statefulsets,replicationcontrollers "
                             "for default topology spreading (repeatable; a directory "
                             "gives its .yaml, .yml and .json files; '-' reads standard "
                             "input)")
    source.add_argument("--kubeconfig", metavar="FILE",
                        help="read the cluster from its API server (the identity needs "
                             "get and list on nodes, pods, namespaces, services, replicasets, "
                             "statefulsets, replicationcontrollers; audit also deployments, "
                             "daemonsets, jobs, poddisruptionbudgets). Without --cluster or "
                             "this, $KUBECONFIG, then ~/.kube/config, as kubectl")
    parser.add_argument("--context", metavar="NAME",
                        help="the kubeconfig context to use (default: its current context)")
    parser.add_argument("--scheduler-config", metavar="FILE",
                        help="a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1); "
                             "its first profile is used")


def source(args: argparse.Namespace) -> Source:
    """The cluster the arguments name: --cluster files, or the kubeconfig that
    --kubeconfig, $KUBECONFIG or ~/.kube/config gives, as kubectl finds it."""
    return cluster_source(args.cluster, getattr(args, "kubeconfig", None),
                          getattr(args, "context", None))


def add_namespace_arg(parser: argparse.ArgumentParser) -> None:
    """-n/--namespace: where the manifests' objects that name no namespace land, as
    kubectl's (``objects.namespaces``)."""
    parser.add_argument("-n", "--namespace", metavar="NS",
                        help="the namespace of the manifests' objects that name none, as "
                             "kubectl's -n (an object naming another is refused); default: "
                             "the kubeconfig context's namespace when reading a live "
                             "cluster, else 'default'")


def add_schema_args(parser: argparse.ArgumentParser) -> None:
    """--kubernetes-version and --strict: the schema check (doc/cli.md, "Schema check")."""
    parser.add_argument("--kubernetes-version", metavar="1.N",
                        help="check manifests against this Kubernetes release's OpenAPI "
                             "schema (1.30 to the newest this version has, as "
                             "'hwaffinity --version' says; default: the newest)")
    parser.add_argument("--strict", action="store_true",
                        help="unknown fields are errors (exit 2), not warnings")


def schema_check(args: argparse.Namespace) -> schema.Check:
    """The objects.schema.Check the schema arguments ask for; its warnings go to stderr
    as they are found."""
    return schema.Check.from_flags(args.kubernetes_version, args.strict, report=warnings.emit)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError("expected a positive integer, got %r" % text)
    return value


def add_limit_args(parser: argparse.ArgumentParser) -> None:
    """--max-pods: the most pods the command plans (the replicas of every workload)."""
    parser.add_argument("--max-pods", type=_positive_int, default=workloads.MAX_PODS,
                        metavar="N",
                        help="refuse, before making any pod, workloads that create more than "
                             "N pods in all (the sum of their replicas)")


def worker_metadata(items: Iterable[str]) -> dict[str, str]:
    """{key: value} of the --worker-metadata KEY=VALUE items."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError("expected KEY=VALUE, got %r" % item, field="--worker-metadata")
        out[key] = value
    return out
