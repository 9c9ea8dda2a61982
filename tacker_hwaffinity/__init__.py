"""tacker-hwaffinity: hardware-aware affinity for Kubernetes on OpenStack VMs."""

__version__ = "0.1.0"
