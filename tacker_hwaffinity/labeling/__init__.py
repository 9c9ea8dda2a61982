"""Pure core of host labelling: which worker runs on which compute host, which
Kubernetes node it is, and which labels to set. No I/O here; the OpenStack,
SSH and Kubernetes adapters feed it data and carry out its plan.

Shared by the MgmtDriver (``mgmt/``: labels at instantiate, scale and heal), the
during-execution controller (``controller/``: the same plan when OpenStack moves a
VM) and ``hwaffinity audit`` (``audit/stale.py``: what label a node should carry)."""
