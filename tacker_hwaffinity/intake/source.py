"""Where a command's cluster comes from: snapshot files (directories and standard
input among them) or a live API server through a kubeconfig, resolved as kubectl
resolves it: --kubeconfig, else $KUBECONFIG, else ~/.kube/config if it exists."""
import dataclasses
import os
from collections.abc import Sequence
from typing import Union

from tacker_hwaffinity.errors import InputError

# a path that names standard input
STDIN = "-"
# kubectl's kubeconfig when neither --kubeconfig nor $KUBECONFIG names one
DEFAULT_KUBECONFIG = "~/.kube/config"


@dataclasses.dataclass(frozen=True)
class Files:
    """Snapshot files and directories, in order; ``STDIN`` at most once."""
    paths: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Live:
    """An API server: the kubeconfig (files separated by ':') and its context (None:
    the current one)."""
    kubeconfig: str
    context: str | None = None


Source = Union[Files, Live]


def cluster_source(files: Sequence[str] | None, kubeconfig: str | None,
                   context: str | None) -> Source:
    """The cluster the flags --cluster FILES, --kubeconfig and --context name: the
    files given, or the kubeconfig kubectl would use."""
    if files:
        if context is not None:
            raise InputError("--context selects a kubeconfig context; it cannot apply to "
                             "--cluster snapshot files", field="--context")
        if sum(1 for f in files if f == STDIN) > 1:
            raise InputError("standard input ('-') can be given only once", field="--cluster")
        return Files(tuple(files))
    kubeconfig = kubeconfig or os.environ.get("KUBECONFIG")
    if not kubeconfig:
        default = os.path.expanduser(DEFAULT_KUBECONFIG)
        kubeconfig = default if os.path.isfile(default) else None
    if kubeconfig is None:
        raise InputError("no cluster to read: give --cluster FILE (a 'kubectl get "
                         "nodes,pods,namespaces -A -o yaml' snapshot) or --kubeconfig FILE, "
                         "or set KUBECONFIG")
    return Live(kubeconfig, context)
