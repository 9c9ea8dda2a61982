"""The MgmtDriver core shared by Tacker v1, v2 and the CLI: the hooks
(lifecycle), the cluster use cases (reconcile), kubectl access (kube), and
the adapters from Tacker's inputs (tacker_v1, tacker_v2)."""
