"""Project-wide defaults. Each default lives here and nowhere else."""

# Node label that names the physical compute host a Kubernetes worker VM
# runs on. Tacker's reference Kubernetes MgmtDriver uses this key.
DEFAULT_HOST_LABEL = "CIS-node"
