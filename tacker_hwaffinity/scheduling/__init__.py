"""Pure kube-scheduler semantics: selectors, affinity plugins, filters, planning."""
