"""Fixtures shared by every test directory.

The real Kubernetes control plane is a session resource: defining its
fixtures here (not in tests/controlplane/) lets tests elsewhere (SSH,
labelling) use the same running stack instead of starting a second one.
"""
from controlplane.fixtures import (  # noqa: F401  (fixtures and hooks pytest collects)
    control_plane, host_nodes, namespace, pytest_configure, pytest_runtest_makereport,
    pytest_terminal_summary)
