"""kube-scheduler's node sampling (``percentageOfNodesToScore``).

On a cluster of at least 100 nodes kube-scheduler stops filtering once it
has found ``numFeasibleNodesToFind`` feasible nodes, starting where the
previous pod's search stopped, and scores only those. Upstream's rule
(pkg/scheduler/schedule_one.go, ``numFeasibleNodesToFind``): under 100 nodes,
all of them; else the profile's percentage, or the configuration's, or when
that is 0 (the default) the adaptive ``50 - nodes/125`` with a floor of 5 %;
and never fewer than 100 nodes.

What it changes: never whether a pod fits (the search goes on until enough
feasible nodes are found or every node was tried), nor any required rule,
nor the per-domain counts that required anti-affinity fixes. It changes
which node is chosen when more nodes are feasible than are scored: the best
of kube-scheduler's sample rather than the best of all, so preferred rules
and scores decide over a subset. The planner scores every feasible node and
says so in a note whenever the sample would have been smaller.
"""
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def adaptive_percentage(num_all_nodes: int) -> int:
    return max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes kube-scheduler looks for (PERCENTAGE None or 0:
    adaptive)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if not percentage:
        percentage = adaptive_percentage(num_all_nodes)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def exceeds_sample(percentage: int | None, num_all_nodes: int, num_feasible: int) -> bool:
    """True when kube-scheduler would score fewer nodes than are feasible."""
    return num_feasible > num_feasible_nodes_to_find(percentage, num_all_nodes)


def describe(percentage: int | None, num_all_nodes: int) -> str:
    if percentage:
        return "%d%%" % percentage
    return "adaptive: %d%%" % adaptive_percentage(num_all_nodes)


def sampling_note(percentage: int | None, num_all_nodes: int, pods_affected: int) -> str | None:
    """The note for a plan where PODS_AFFECTED pods had more feasible nodes
    than kube-scheduler scores, or None."""
    if not pods_affected:
        return None
    limit = num_feasible_nodes_to_find(percentage, num_all_nodes)
    return ("kube-scheduler scores only the first %d feasible of the %d nodes "
            "(percentageOfNodesToScore %s), searching from where the previous pod stopped; "
            "%d pod(s) here had more feasible nodes. Exact regardless: whether each pod fits, "
            "its required (anti-)affinity and the pods per domain under required "
            "anti-affinity. The node chosen is the best of kube-scheduler's sample, which can "
            "differ from the best over every feasible node shown here"
            % (limit, num_all_nodes, describe(percentage, num_all_nodes), pods_affected))
