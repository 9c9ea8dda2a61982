"""Pure core of the MgmtDriver: which worker runs on which compute host, which
Kubernetes node it is, and which labels to set. No I/O here; the OpenStack,
SSH and Kubernetes adapters feed it data and carry out its plan."""
