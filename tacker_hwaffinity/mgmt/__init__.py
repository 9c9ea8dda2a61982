"""The MgmtDriver core shared by Tacker v1, v2 and the CLI: the hooks
(lifecycle), the cluster use cases (reconcile), where kubectl runs (kubectl_runner), and
the adapters from Tacker's inputs (tacker_v1, tacker_v2)."""
