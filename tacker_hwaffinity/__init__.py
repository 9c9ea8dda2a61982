"""tacker-hwaffinity: hardware-aware affinity for Kubernetes on OpenStack VMs.

Package map, in the layers ``.importlinter`` keeps (doc/design.md, "Layers"): a
module imports from its own layer and those below, never from one above.

Entry points (thin: arguments, files, exit codes)
    ``cli/``            the ``hwaffinity`` command
    ``mgmt_driver.py``  the Tacker v1 MgmtDriver class; ``mgmt_v2.py`` the v2 script

Components
    ``webhook/``     scheduler extender and admission webhooks (``doc/webhook.md``)
    ``controller/``  keeps host labels true when OpenStack moves VMs; evicts pods whose
                     RequiredDuringExecution rules break
    ``agent/``       the node agent: container NUMA affinity from pod annotations
    ``mgmt/``        the MgmtDriver hooks: label workers with their compute host at
                     instantiate, scale and heal (``kubectl_runner``: where kubectl runs)
    ``csar/``        VNF package build and validation

Intake
    ``intake/``      every way objects come into the commands, one typed result

Analysis
    ``audit/``       ``hwaffinity audit``: what one host's loss would take down
    ``translator/``  heat-translator extension: SOL001 affinity rules -> Nova server groups

Adapters
    ``kube/``        the Kubernetes API (client, lists, informers, leader election,
                     Events, evictions, the metrics and health server)
    ``openstack/``   Keystone, Heat and Nova
    ``ssh/``         paramiko, host keys verified
    ``nri/``         the NRI protocol (ttrpc) the node agent speaks to containerd
    ``vnfpackage/``  TOSCA.meta and bounded zip reading and writing
    ``numa/cgroups.py``, ``agent/cgroupfs.py``  cgroup v1/v2 files, in their packages

Pure core (no I/O)
    ``scheduling/``  kube-scheduler semantics: selectors, terms, the cluster state, the
                     plugins (contract in ``scheduling/plugins/__init__.py``), planning
    ``numa/``        container NUMA affinity (CRI-RM expressions, CPU placement)
    ``labeling/``    host label plans, shared by ``mgmt/``, ``controller/`` and ``audit/``

Objects
    ``objects/``     Kubernetes objects as data: strict loading, pruning, quantities, QoS

Shared leaves
    ``table``, ``errors``, ``constants``, ``redaction``, ``safewrite``, ``extras``,
    ``etsi_types``

The designs this implements ("the seeds"): ``doc/seeds.md``.
"""

__version__ = "0.1.0"
