"""Kubernetes objects as data: strict YAML/JSON loading, field pruning, quantities, QoS
classes and validation, shared by every engine. No API access (that is ``kube/``) and
no I/O but reading the files a user names."""
