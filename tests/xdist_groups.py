"""The integration pass on two cores (tools/test.sh: ``-p xdist -n 2 --by-group``).

With ``--by-group`` every test belongs to one of two groups, and each xdist worker runs
one group from start to end, so a session fixture (a control plane, a Tacker, the QEMU
guest) starts in one worker only and a module's tests stay together:

- "cp": the control-plane tests, then Tacker's end-to-end tests, then the control-plane
  tests that time leases, watches and the extender's cost;
- "vm": the QEMU guest's tests first, then everything else.

The order keeps the two CPU-heavy blocks apart: the guest (TCG, about 1.6 cores while
it boots) runs beside the control-plane tests, which mostly wait on the API server;
Tacker runs beside the light tail of "vm"; the timing-tight tests come last, when "vm"
has (nearly) finished.

The groups reach xdist through its ``pytest_xdist_make_scheduler`` hook: a scheduler
whose scope of a test is its group, as xdist's own LoadFileScheduling makes a file the
scope. (``--dist loadgroup`` with ``xdist_group`` marks would say the same, but
pytest-xdist 3.8 renames node ids in a way pytest 9 no longer reads, so the marks are
lost.)
"""
import pytest
from xdist.scheduler import LoadScopeScheduling

CP_GROUP = ("tests/controlplane/", "tests/tacker_e2e/")
VM_FIRST = "tests/realnode/test_vm_"
TIMING_TIGHT = ("tests/controlplane/test_kube_leader.py",
                "tests/controlplane/test_kube_informer.py",
                "tests/controlplane/test_bench_extender_cost.py")


def group_of(nodeid):
    """The group ("cp" or "vm") of a test by its node id."""
    return "cp" if nodeid.startswith(CP_GROUP) else "vm"


def rank_of(nodeid):
    """Where a test runs within its group (lower first; pytest's order within a rank)."""
    if nodeid.startswith(VM_FIRST):
        return 0
    if nodeid.startswith("tests/tacker_e2e/"):
        return 1
    if nodeid.startswith(TIMING_TIGHT):
        return 2
    return 0 if group_of(nodeid) == "cp" else 1


class GroupScheduling(LoadScopeScheduling):
    """xdist's scope scheduling with a test's group as its scope."""

    def _split_scope(self, nodeid):
        return group_of(nodeid)


def pytest_addoption(parser):
    parser.addoption("--by-group", action="store_true",
                     help="with xdist: one worker per group of integration modules, in the "
                          "order of tests/xdist_groups.py")


@pytest.hookimpl(optionalhook=True)      # xdist's hook: unknown when xdist is not loaded
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("--by-group"):
        return GroupScheduling(config, log)
    return None


@pytest.hookimpl(tryfirst=True)     # before the conftests' hooks see the order
def pytest_collection_modifyitems(config, items):
    if config.getoption("--by-group"):
        items.sort(key=lambda item: rank_of(item.nodeid))   # stable: pytest's order within
