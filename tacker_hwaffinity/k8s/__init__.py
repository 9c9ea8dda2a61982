"""Kubernetes object primitives shared by every engine (no I/O but file reading)."""
