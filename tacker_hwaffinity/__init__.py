"""tacker-hwaffinity: hardware-aware affinity for Kubernetes on OpenStack VMs.

Package map (entry points -> features -> pure core -> adapters):

Entry points (thin: arguments, files, exit codes)
    ``cli/``            the ``hwaffinity`` command
    ``mgmt_driver.py``  the Tacker v1 MgmtDriver class; ``mgmt_v2.py`` the v2 script

Features
    ``mgmt/``        the MgmtDriver hooks: label workers with their compute host at
                     instantiate, scale and heal (``kubectl_runner``: where kubectl runs)
    ``controller/``  keeps host labels true when OpenStack moves VMs; evicts pods whose
                     RequiredDuringExecution rules break
    ``webhook/``     scheduler extender and admission webhooks (``doc/webhook.md``)
    ``agent/``       the node agent: container NUMA affinity from pod annotations
    ``audit/``       ``hwaffinity audit``: what one host's loss would take down
    ``translator/``  heat-translator extension: SOL001 affinity rules -> Nova server groups
    ``csar/``        VNF package build and validation

Pure core (no I/O)
    ``scheduling/``  kube-scheduler semantics: selectors, terms, the cluster state, the
                     plugins (contract in ``scheduling/plugins/__init__.py``), planning
    ``numa/``        container NUMA affinity (CRI-RM expressions, CPU placement)
    ``labeling/``    host label plans, shared by ``mgmt/``, ``controller/`` and ``audit/``
    ``objects/``     Kubernetes objects as data: strict loading, pruning, quantities, QoS

Adapters
    ``kube/``        the Kubernetes API (client, lists, informers, leader election,
                     Events, evictions, the metrics and health server)
    ``openstack/``   Keystone, Heat and Nova
    ``ssh/``         paramiko, host keys verified
    ``numa/cgroups.py``, ``agent/cgroupfs.py``  cgroup v1/v2 files

The designs this implements ("the seeds"): ``doc/seeds.md``.
"""

__version__ = "0.1.0"
