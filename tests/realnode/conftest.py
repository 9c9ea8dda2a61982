"""Fixtures for the real-node tests: one private containerd 1.7 (NRI on) per session.

``containerd17`` is a started :class:`realnode.containerd.Containerd`; its
``.cri`` is a CRI client, ``.nri_socket`` the socket an NRI plugin connects
to. Without root or without containerd 1.7 (tools/install-node-runtime.sh)
the tests skip, and fail under CI (``ci_policy.unavailable``). A containerd
that is installed but does not start is an error, never a skip.
"""
import os
import shutil

import pytest

from ci_policy import unavailable

from .containerd import CONTAINERD, CTR, Containerd, containerd_version
from .images import BUSYBOX_CANDIDATES

INSTALL_HINT = "containerd 1.7 with NRI is not installed (tools/install-node-runtime.sh)"


_LAST_VM_TEST = pytest.StashKey[object]()


def pytest_collection_modifyitems(session, config, items):
    # the item, not its node id: xdist's loadgroup appends "@group" to node ids
    vm_tests = [item for item in items if item.get_closest_marker("vm")]
    config.stash[_LAST_VM_TEST] = vm_tests[-1] if vm_tests else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Power the test VM off after the last test that uses it: an idle TCG guest still
    takes host CPU, which the timing-sensitive tests after it would feel."""
    yield
    if item is item.config.stash.get(_LAST_VM_TEST, None):
        from .vmfixture import close_shared_vm
        close_shared_vm()


def require_node_runtime():
    """Skip (fail under CI) unless this process can run the private containerd."""
    if os.geteuid() != 0:
        unavailable("the real-node tests need root (containerd, cgroups, mounts)")
    version = containerd_version(CONTAINERD)
    if version is None or version < (1, 7) or not os.access(CTR, os.X_OK):
        unavailable("%s (%s says %s)" % (INSTALL_HINT, CONTAINERD,
                                        "%d.%d" % version if version else "nothing"))
    if shutil.which("runc") is None or not any(os.path.exists(p) for p in BUSYBOX_CANDIDATES):
        unavailable("runc or busybox-static is missing: " + INSTALL_HINT)


@pytest.fixture(scope="session")
def containerd17():
    """A running private containerd 1.7 with NRI enabled, the test images imported
    (built once into ~/.cache/tacker-hwaffinity/realnode-images)."""
    require_node_runtime()
    runtime = Containerd()
    try:
        runtime.start()
        yield runtime
    finally:
        runtime.stop()
