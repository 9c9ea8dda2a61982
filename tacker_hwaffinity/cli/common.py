"""Arguments and loading shared by the scheduling subcommands."""
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.k8s.yamlio import load_objects
from tacker_hwaffinity.scheduling.profile import Profile
from tacker_hwaffinity.scheduling.snapshot import load_cluster


def add_cluster_args(parser):
    parser.add_argument("--cluster", action="append", required=True, metavar="FILE",
                        help="cluster snapshot: nodes, pods and namespaces as "
                             "'kubectl get nodes,pods,namespaces -A -o yaml' prints them "
                             "(repeatable; '-' reads standard input)")
    parser.add_argument("--scheduler-config", metavar="FILE",
                        help="a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1); "
                             "its first profile is used")


def load_profile(path):
    if not path:
        return Profile()
    objs = load_objects([path])
    if len(objs) != 1:
        raise InputError("expected exactly one KubeSchedulerConfiguration, found %d objects"
                         % len(objs), source=path)
    return Profile(objs[0][0], source=path)


def load_inputs(args):
    """(snapshot, profile, notes) from the common arguments."""
    if sum(1 for c in args.cluster if c == "-") > 1:
        raise InputError("standard input ('-') can be given only once", field="--cluster")
    snapshot = load_cluster(args.cluster)
    profile = load_profile(args.scheduler_config)
    return snapshot, profile, snapshot.notes + profile.notes
