"""hwaffinity audit: exposure of workloads to one physical host failing."""
