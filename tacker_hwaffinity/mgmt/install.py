"""Kubernetes installation for the hooks, when ``hwaffinity_param.install.enabled``.

* instantiate_end, and heal_end of the whole VNF: every master and worker
  (``init`` on the first master, then joins);
* scale_end (out): the masters and workers whose address no node of the
  cluster has yet, joined with a fresh token (``refresh-join`` on a master
  that is in the cluster);
* heal_end of VNFCs: the healed workers (their old nodes were removed by
  heal_start), joined the same way.

The script comes from the VNF package (``install.script``, else the
reference block's ``script_path``, else ``Scripts/install_k8s.sh``).
Labelling does not depend on any of this: it runs the same way on a cluster
installed otherwise.
"""
import os

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.mgmt import install_plan
from tacker_hwaffinity.mgmt.install_ssh import Installer
from tacker_hwaffinity.mgmt.reconcile import HookFailed


def script_bytes(job):
    """The installation script's content, read from the VNF package."""
    rel = (job.params["hwaffinity"].install.get("script") or job.params.get("script_path")
           or install_plan.DEFAULT_SCRIPT)
    base = job.package_dir() if callable(job.package_dir) else job.package_dir
    if not base:
        raise InputError("the VNF package directory is unknown, so the installation script "
                         "cannot be read", field="hwaffinity_param.install.script")
    root = os.path.realpath(base)
    path = os.path.realpath(os.path.join(root, rel))
    if os.path.commonpath([root, path]) != root:
        raise InputError("%s leaves the VNF package" % rel,
                         field="hwaffinity_param.install.script")
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise InputError("cannot read %s in the VNF package: %s" % (rel, e.strerror),
                         field="hwaffinity_param.install.script") from None


def _opts(job):
    """The install parameters with the reference block's CIDRs as defaults."""
    opts = dict(job.params["hwaffinity"].install)
    master = job.params["master"]
    opts["pod_cidr"] = opts.get("pod_cidr") or master.get("pod_cidr")
    opts["service_cidr"] = opts.get("service_cidr") or master.get("cluster_cidr")
    return opts


def _vip(ctx):
    """The fixed address of master_node.cluster_cp_name (a port of the top stack)."""
    cp = ctx.job.params["master"].get("cluster_cp_name")
    if not cp:
        return None
    if not ctx.job.stack_id:
        raise InputError("cluster_cp_name needs the VNF's Heat stack; give "
                         "hwaffinity_param.install.control_plane_endpoint instead",
                         field="k8s_cluster_installation_param.master_node.cluster_cp_name")
    attrs = ctx.openstack.resource(ctx.job.stack_id, cp).get("attributes") or {}
    ip = next((f.get("ip_address") for f in attrs.get("fixed_ips") or ()
               if f.get("ip_address")), None)
    if not ip:
        raise HookFailed("k8s_cluster_installation_param.master_node.cluster_cp_name: port %s "
                         "of the stack has no fixed address" % cp)
    return ip


def _run(ctx, plan, opts, log):
    installer = Installer(ctx.job.params, opts, script_bytes(ctx.job), log)
    try:
        return installer.install(plan)
    finally:
        installer.close()


def install(ctx, inv, log):
    """Every node: a new cluster (instantiate_end, full heal)."""
    opts = _opts(ctx.job)
    plan = install_plan.make_plan(inv.masters, inv.workers, inv.servers, opts, vip=_vip(ctx))
    log.info("installing Kubernetes: init on %s, %d more master(s), %d worker(s), endpoint %s",
             plan.first.name, len(plan.masters), len(plan.workers), plan.endpoint)
    return _run(ctx, plan, opts, log)


def join_missing(ctx, inv, nodes, healed, log):
    """Join what the cluster lacks: the VMs whose address no node has (scale
    out), or the HEALED server ids. NODES: the cluster's nodes as read."""
    opts = _opts(ctx.job)
    known = {ip for n in nodes for ip in n.internal_ips}

    def address(w):
        found = install_plan.node_addresses(inv.servers.get(w.server_id) or {},
                                            opts.get("network"))
        return found[0] if found else None
    if healed is not None:
        bad = [m.name for m in inv.masters if m.server_id in healed]
        if bad:
            raise HookFailed("install: a healed control-plane node (%s) is not reinstalled: "
                             "remove its etcd member first (kubeadm reset on it, or etcdctl "
                             "member remove), then heal with install disabled and join it "
                             "by hand" % ", ".join(bad))
        masters, workers = [], [w for w in inv.workers if w.server_id in healed]
    else:
        masters = [m for m in inv.masters if address(m) not in known]
        workers = [w for w in inv.workers if address(w) not in known]
    if not masters and not workers:
        log.info("install: every VM is a node of the cluster; nothing to join")
        return {"nodes": []}
    live = [m for m in inv.masters if address(m) in known and m not in masters]
    if not live:
        raise HookFailed("install: no master of the VNF is a node of the cluster, so nothing "
                         "can issue a join token (masters: %s)"
                         % (", ".join(m.name for m in inv.masters) or "none found"))
    plan = install_plan.make_plan(masters, workers, inv.servers, opts, vip=_vip(ctx),
                                  installed_master=live[0])
    log.info("installing Kubernetes: refresh-join on %s, joining %d master(s) and %d "
             "worker(s)", plan.first.name, len(plan.masters), len(plan.workers))
    return _run(ctx, plan, opts, log)
