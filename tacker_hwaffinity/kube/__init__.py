"""Kubernetes API adapter: the one place that talks to an API server with the
official ``kubernetes`` client (client set-up, paged lists, errors). Every
in-cluster component and ``plan --kubeconfig`` goes through it."""
