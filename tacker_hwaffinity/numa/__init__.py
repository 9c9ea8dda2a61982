"""Container NUMA affinity engine: CRI Resource Manager affinity annotations,
expressions and topology-aware placement (see doc/numa.md)."""
