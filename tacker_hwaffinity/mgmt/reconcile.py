"""The cluster-side use cases, over a kubectl runner (``mgmt.kubectl_runner``).

* ``relabel``: read the nodes (1 command), plan, apply every change in ONE
  server-side apply that also prints the result, and check the labels read
  back; then lift the host-unknown taint (1 command) from the nodes whose labels
  are now Nova's. Correct labels are applied even when some workers fail; the
  failure then lists those workers and why.
* ``evict``: cordon (1 command), drain (1 command for all nodes, PDBs
  honoured, bounded) and, for scale-in, delete (1 command) the nodes of the
  given workers. A node that drain could not empty is not deleted.
* ``uncordon``: after heal, make the healed workers' nodes schedulable.
* ``wait_joined``: read the nodes again (bounded) until every worker has one.
"""
import time

from tacker_hwaffinity.constants import HOST_UNKNOWN_TAINT
from tacker_hwaffinity.labeling import kubectl, plan as planning


class HookFailed(Exception):
    """The hook could not do all of its job; the message lists what and why."""


def _checked(kube, argv, stdin=None, timeout=None, what=None):
    status, out, err = kube.run(argv, stdin=stdin, timeout=timeout)
    if status != 0:
        raise HookFailed("%s failed (%s, exit %d): %s" % (
            what or " ".join(argv[:3]), kube.where, status, _tail(err) or "(no message)"))
    return out


def _tail(text, limit=600):
    text = (text or "").strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def read_nodes(kube):
    """The cluster's nodes (KubeNodes), from one ``kubectl get nodes``."""
    return read_node_objects(kube)[1]


def read_node_objects(kube):
    """(the Node objects, their KubeNodes) from one ``kubectl get nodes``."""
    out = _checked(kube, kubectl.get_nodes(), what="kubectl get nodes")
    try:
        return kubectl.parse_node_objects(out)
    except kubectl.KubectlOutputError as e:
        raise HookFailed("kubectl get nodes (%s): %s" % (kube.where, e)) from None


def relabel(kube, workers, hw, log, dry_run=False, nodes=None, region=None):
    """Label WORKERS' nodes; returns the LabelPlan. Raises HookFailed listing
    the workers it could not handle (after applying what is right). DRY_RUN:
    only read and plan; nothing is applied or raised. NODES: the nodes as
    just read (saves the read). REGION: the VIM's region (``plan.NodeIndex``)."""
    p = planning.plan(workers, read_nodes(kube) if nodes is None else nodes, hw, region)
    changes = p.changes()
    for w in p.warnings:
        log.warning("%s", w)
    if dry_run:
        return p
    if changes:
        argv, stdin = kubectl.apply_labels(p.desired())
        out = _checked(kube, argv, stdin=stdin, what="kubectl apply (labels)")
        try:
            after = {n.name: n.labels for n in kubectl.parse_nodes(out)}
        except kubectl.KubectlOutputError as e:
            raise HookFailed("kubectl apply printed no nodes (%s): %s" % (kube.where, e)) \
                from None
        wrong = ["node %s: label %s is %r, expected %r" % (n, k, after.get(n, {}).get(k), v)
                 for n, labels in sorted(p.desired().items()) for k, v in sorted(labels.items())
                 if after.get(n, {}).get(k) != v]
        if wrong:
            raise HookFailed("labels read back differ from what was applied: "
                             + "; ".join(wrong))
        log.info("labelled %d node(s) %s: %s", len(changes), kube.where,
                 ", ".join("%s %s" % (n, ",".join("%s=%s" % kv for kv in sorted(lv.items())))
                           for n, lv in sorted(changes.items())))
    else:
        log.info("all %d worker node label(s) already correct", len(p.desired()))
    _lift_host_unknown(kube, p.host_known(), log)
    for row in p.mapping():
        log.info("worker %s (server %s) -> host %s (%s) -> node %s%s", row["worker"],
                 row["server"], row["host"], row["hostSource"], row["node"],
                 " ERROR: %s" % row["error"] if row["error"] else "")
    if p.errors:
        raise HookFailed("%d problem(s): %s" % (len(p.errors), "; ".join(p.errors)))
    return p


def _lift_host_unknown(kube, names, log):
    """Lift the host-unknown taint from NAMES (their labels are now Nova's). A node that
    lost it meanwhile fails kubectl's call: the nodes are read again, and only a node that
    still carries it is a failure."""
    if not names:
        return
    status, _out, err = kube.run(kubectl.lift_host_unknown(names))
    if status != 0:
        left = [n.name for n in read_nodes(kube) if n.name in names and n.host_unknown]
        if left:
            raise HookFailed("kubectl taint (lift %s) failed (%s, exit %d) on node(s) %s: %s"
                             % (HOST_UNKNOWN_TAINT, kube.where, status, ", ".join(left),
                                _tail(err) or "(no message)"))
    log.info("host known: lifted %s from node(s) %s", HOST_UNKNOWN_TAINT, ", ".join(names))


def nodes_of(workers, nodes):
    """({worker name: node name}, [workers with no node], [why a worker's node is
    ambiguous]): the label plan's rule (``labeling.plan.node_of``), never a guess."""
    index = planning.NodeIndex(nodes)
    found, missing, ambiguous = {}, [], []
    for w in workers:
        node, error = planning.node_of(w, index)
        if node is not None:
            found[w.name] = node.name
        elif index.eligible(w):         # several
            ambiguous.append("worker %s (server %s): %s" % (w.name, w.server_id, error))
        else:
            missing.append(w.name)
    return found, missing, ambiguous


def _refuse_ambiguous(ambiguous, what):
    if ambiguous:
        raise HookFailed("%s refused, no node touched: %s" % (what, "; ".join(ambiguous)))


def wait_joined(kube, workers, timeout, log, nodes=None, poll=2.0, clock=time.monotonic,
                sleep=time.sleep):
    """The nodes, read again every POLL s until every one of WORKERS has a node
    (by providerID or InternalIP: plan.node_of) or TIMEOUT s have passed; then the last
    read, whose plan names the workers still without a node. NODES: the nodes as
    just read (saves the first read)."""
    nodes = read_nodes(kube) if nodes is None else nodes
    _, missing, _ = nodes_of(workers, nodes)
    if not missing or timeout <= 0:
        return nodes
    log.info("waiting up to %g s for worker(s) %s to join the cluster", timeout,
             ", ".join(missing))
    start = clock()
    deadline = start + timeout
    while missing and clock() < deadline:
        sleep(max(0.0, min(poll, deadline - clock())))
        nodes = read_nodes(kube)
        _, missing, _ = nodes_of(workers, nodes)
    if missing:
        log.warning("worker(s) %s still without a node after %g s", ", ".join(missing), timeout)
    else:
        log.info("every worker has a node after %.1f s", clock() - start)
    return nodes


def evict(kube, workers, hw, log, delete):
    """Cordon and drain (and, if DELETE, delete) the nodes of WORKERS."""
    found, missing, ambiguous = nodes_of(workers, read_nodes(kube))
    _refuse_ambiguous(ambiguous, "drain" + (" and delete" if delete else ""))
    for name in missing:
        log.info("worker %s has no Kubernetes node (already removed?): nothing to drain", name)
    names = sorted(set(found.values()))
    if not names:
        return []
    d = hw.drain
    _checked(kube, kubectl.cordon(names), what="kubectl cordon %s" % " ".join(names))
    argv = kubectl.drain(names, d.timeout, d.delete_emptydir_data, d.force)
    try:
        _checked(kube, argv, timeout=d.timeout + 30,
                 what="kubectl drain %s (timeout %d s; PodDisruptionBudgets honoured)"
                 % (" ".join(names), d.timeout))
    except HookFailed as e:
        raise HookFailed("%s; the node(s) stay cordoned and were not deleted" % e) from None
    log.info("drained %s", ", ".join(names))
    if delete:
        _checked(kube, kubectl.delete_nodes(names), what="kubectl delete node")
        log.info("deleted node(s) %s", ", ".join(names))
    return names


def uncordon(kube, workers, log, nodes=None):
    """Make WORKERS' nodes schedulable; (node names, workers without a node).
    NODES: the nodes as just read (saves the read)."""
    found, missing, ambiguous = nodes_of(workers, read_nodes(kube) if nodes is None else nodes)
    _refuse_ambiguous(ambiguous, "uncordon")
    names = sorted(set(found.values()))
    if names:
        _checked(kube, ["kubectl", "uncordon"] + names, what="kubectl uncordon")
        log.info("uncordoned %s", ", ".join(names))
    return names, missing
